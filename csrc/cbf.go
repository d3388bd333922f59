//go:build cgo && !purego

package csrc

// The binding to cbf.c, the counting Bloom filter in C. Keys reach C as in
// csrc.go's batches: (address, length) pairs in a stack array. C keeps no
// pointer after it returns and calls nothing in Go.

/*
#cgo noescape sk_cbf_add_batch
#cgo nocallback sk_cbf_add_batch
#cgo noescape sk_cbf_count_set
#cgo nocallback sk_cbf_count_set
#cgo noescape sk_cbf_merge
#cgo nocallback sk_cbf_merge
#cgo noescape sk_cbf_reset
#cgo nocallback sk_cbf_reset
#include "sketch.h"
*/
import "C"

import "unsafe"

// Filter locates a counting Bloom filter's words: Words holds (Mask+1)/8
// uint32 words of eight 4-bit counters, Sealed is the file's sealed word,
// Adds (when not nil) the uint64 add-count word a batch adds its keys to
// under the lock. Prefetch asks batches to hash and fetch keys ahead.
type Filter struct {
	Words, Sealed, Adds unsafe.Pointer
	Seed, Mask          uint64
	K                   int
	Prefetch            bool
}

func (f *Filter) words() *C.uint32_t  { return (*C.uint32_t)(f.Words) }
func (f *Filter) nwords() C.uint64_t  { return C.uint64_t((f.Mask + 1) / 8) }
func (f *Filter) sealed() *C.uint32_t { return (*C.uint32_t)(f.Sealed) }

func (f *Filter) prefetch() C.int {
	if f.Prefetch {
		return 1
	}
	return 0
}

// AddBatch adds each key once, Batch keys per crossing, and returns how
// many were new; already, when not nil, receives each key's answer (true:
// it was not new). The caller holds the file's read lock; frozen reports a
// sealed file (then nothing was added).
func (f *Filter) AddBatch(keys [][]byte, already []bool) (added int, frozen bool) {
	for base := 0; base < len(keys); base += Batch {
		n := f.addChunk(keys[base:min(base+Batch, len(keys))], boolPtr(already, base), nil)
		if n == C.SK_CBF_FROZEN {
			return added, true
		}
		added += int(n)
	}
	return added, false
}

// smallChunk keys fit a small array: Go zeroes the key array on every
// call, and at Batch keys that is 4 KiB, more than a small batch's adds.
const smallChunk = 16

// addChunk adds at most Batch keys in one crossing, under lock when it is
// not nil (C takes and releases it). It returns how many were new, or
// SK_CBF_FROZEN or SK_CBF_TIMEDOUT (lock's wait timed out), adding nothing.
func (f *Filter) addChunk(chunk [][]byte, already *C.uint8_t, lock *C.sk_lock) C.int64_t {
	if len(chunk) <= smallChunk {
		var buf [smallChunk]cKey
		return f.cross(buf[:len(chunk)], chunk, already, lock)
	}
	var buf [Batch]cKey
	return f.cross(buf[:len(chunk)], chunk, already, lock)
}

// cross passes the keys through a pointer computed beforehand, as
// csrc.go's batches do, so that buf stays on the stack.
func (f *Filter) cross(buf []cKey, chunk [][]byte, already *C.uint8_t, lock *C.sk_lock) C.int64_t {
	for i, k := range chunk {
		buf[i] = cKey{n: uint64(len(k))}
		if len(k) > 0 {
			buf[i].p = uintptr(unsafe.Pointer(&k[0]))
		}
	}
	var ckeys *C.sk_key
	if len(buf) > 0 {
		ckeys = (*C.sk_key)(unsafe.Pointer(&buf[0]))
	}
	return C.sk_cbf_add_batch(f.words(), f.sealed(), lock, C.uint64_t(f.Seed), C.uint64_t(f.Mask), C.uint32_t(f.K),
		f.prefetch(), ckeys, C.size_t(len(chunk)), already, (*C.uint64_t)(f.Adds))
}

// CountSet returns how many counters are above zero.
func (f *Filter) CountSet() uint64 { return uint64(C.sk_cbf_count_set(f.words(), f.nwords())) }

// Merge adds src, another filter's words as native-endian bytes, into the
// counters, saturating. The caller holds the write lock.
func (f *Filter) Merge(src []byte) {
	if uint64(len(src)) < uint64(f.nwords())*4 {
		panic("csrc: merge source shorter than the filter")
	}
	C.sk_cbf_merge(f.words(), (*C.uint8_t)(unsafe.Pointer(&src[0])), f.nwords())
}

// Reset zeroes every counter. The caller holds the write lock.
func (f *Filter) Reset() { C.sk_cbf_reset(f.words(), f.nwords()) }
