//go:build cgo && !purego

package sketch

/*
#cgo CFLAGS: -O2 -Wall -Werror -std=c11
#cgo noescape sk_hash128
#cgo nocallback sk_hash128
#cgo noescape sk_cms_add
#cgo nocallback sk_cms_add
#cgo noescape sk_cms_estimate
#cgo nocallback sk_cms_estimate
#cgo noescape sk_cms_add_batch
#cgo nocallback sk_cms_add_batch
#cgo noescape sk_cms_estimate_batch
#cgo nocallback sk_cms_estimate_batch
#cgo noescape sk_cms_row_sums
#cgo nocallback sk_cms_row_sums
#cgo nocallback sk_cms_adds
#cgo nocallback sk_cms_reset
#cgo nocallback sk_noop
#include "csrc/sketch.c"
#include "csrc/cms.c"
*/
import "C"

import "unsafe"

// The binding to the C core in csrc/. Keep in sync with core_go.go.
//
// Keys reach C where they already are, never copied: a batch is passed as
// (address, length) pairs in a stack array of integers, so the array holds
// no Go pointers for cgo to object to, and the keys stay alive because the
// caller's slice does for the whole call (Go's heap does not move, and a
// goroutine's stack does not move while it is in C).

// cKey has the layout of sk_key.
type cKey struct {
	p uintptr
	n uint64
}

// cBatch is how many keys one crossing carries: enough that the crossing's
// ~45 ns is well under a nanosecond a key, few enough for the stack.
const cBatch = 256

func keyPtr(key []byte) *C.uint8_t {
	if len(key) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&key[0]))
}

// cHash128 is XXH3-128 of key computed by the C core.
func cHash128(key []byte, seed uint64) (lo, hi uint64) {
	var out C.sk_u128
	C.sk_hash128(keyPtr(key), C.size_t(len(key)), C.uint64_t(seed), &out)
	return uint64(out.lo), uint64(out.hi)
}

// cCore serves batches and whole-array walks from C.
type cCore struct{}

func (cCore) name() string { return "cgo" }

func cells(l *cmsLayout) *C.uint64_t   { return (*C.uint64_t)(l.cells) }
func stripes(l *cmsLayout) *C.uint64_t { return (*C.uint64_t)(l.stripes) }

func (cCore) add(l *cmsLayout, key []byte, n uint64) uint64 {
	return uint64(C.sk_cms_add(cells(l), stripes(l), C.uint64_t(l.seed), C.uint64_t(l.mask), C.uint32_t(l.rows),
		keyPtr(key), C.size_t(len(key)), C.uint64_t(n)))
}

func (cCore) estimate(l *cmsLayout, key []byte) uint64 {
	return uint64(C.sk_cms_estimate(cells(l), C.uint64_t(l.seed), C.uint64_t(l.mask), C.uint32_t(l.rows),
		keyPtr(key), C.size_t(len(key))))
}

func fillKeys(buf *[cBatch]cKey, keys [][]byte) {
	for i, k := range keys {
		buf[i] = cKey{n: uint64(len(k))}
		if len(k) > 0 {
			buf[i].p = uintptr(unsafe.Pointer(&k[0]))
		}
	}
}

func prefetchFlag(l *cmsLayout) C.int {
	if l.prefetch {
		return 1
	}
	return 0
}

// The batch is passed through a pointer computed beforehand: written as
// &buf[0] in the call, cgo would box the whole array to check it, and
// allocate.

func (cCore) addBatch(l *cmsLayout, keys [][]byte, n uint64, est []uint64) {
	var buf [cBatch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += cBatch {
		chunk := keys[base:min(base+cBatch, len(keys))]
		fillKeys(&buf, chunk)
		var out *C.uint64_t
		if est != nil {
			out = (*C.uint64_t)(unsafe.Pointer(&est[base]))
		}
		C.sk_cms_add_batch(cells(l), stripes(l), C.uint64_t(l.seed), C.uint64_t(l.mask), C.uint32_t(l.rows),
			prefetchFlag(l), ckeys, C.size_t(len(chunk)), C.uint64_t(n), out)
	}
}

func (cCore) estimateBatch(l *cmsLayout, keys [][]byte, est []uint64) {
	var buf [cBatch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += cBatch {
		chunk := keys[base:min(base+cBatch, len(keys))]
		fillKeys(&buf, chunk)
		C.sk_cms_estimate_batch(cells(l), C.uint64_t(l.seed), C.uint64_t(l.mask), C.uint32_t(l.rows),
			prefetchFlag(l), ckeys, C.size_t(len(chunk)), (*C.uint64_t)(unsafe.Pointer(&est[base])))
	}
}

func (cCore) rowSums(l *cmsLayout, sums []uint64) bool {
	out := (*C.uint64_t)(unsafe.Pointer(&sums[0]))
	return C.sk_cms_row_sums(cells(l), C.uint64_t(l.mask), C.uint32_t(l.rows), out) != 0
}

func (cCore) adds(l *cmsLayout) uint64 {
	return uint64(C.sk_cms_adds(stripes(l)))
}

func (cCore) reset(l *cmsLayout) {
	C.sk_cms_reset(cells(l), stripes(l), C.uint64_t(l.mask), C.uint32_t(l.rows))
}

// emptyCall crosses into C and back doing nothing, for the benchmarks'
// measure of a crossing.
func emptyCall() { C.sk_noop() }
