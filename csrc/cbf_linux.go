//go:build cgo && !purego && linux

package csrc

/*
#include "sketch.h"
*/
import "C"

import "unsafe"

// AddManyLocked is AddMany in one crossing that takes lock's read lock,
// checks the sealed word, adds and releases the lock: at most Batch keys.
// It is Linux-only, as lock.c is.
func (f *Filter) AddManyLocked(keys [][]byte, already []bool, lock *Lock) (added int, frozen bool) {
	if len(keys) > Batch {
		panic("csrc: AddManyLocked takes at most Batch keys")
	}
	c := lock.c()
	return f.addChunk(keys, boolPtr(already, 0), (*C.sk_lock)(unsafe.Pointer(&c)))
}
