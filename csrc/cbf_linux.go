//go:build cgo && !purego && linux

package csrc

/*
#include "sketch.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// AddBatchLocked is AddBatch in one crossing that takes lock's read lock,
// checks the sealed word, adds and releases the lock: at most Batch keys.
// timedOut reports that the lock's wait ran past lock.Timeout (then
// nothing was added). It is Linux-only, as lock.c is.
func (f *Filter) AddBatchLocked(keys [][]byte, already []bool, lock *Lock) (added int, frozen, timedOut bool) {
	if len(keys) > Batch {
		panic("csrc: AddBatchLocked takes at most Batch keys")
	}
	c := lock.c()
	n := f.addChunk(keys, boolPtr(already, 0), (*C.sk_lock)(unsafe.Pointer(&c)))
	runtime.KeepAlive(lock)
	switch n {
	case C.SK_CBF_FROZEN:
		return 0, true, false
	case C.SK_CBF_TIMEDOUT:
		return 0, false, true
	}
	return int(n), false, false
}
