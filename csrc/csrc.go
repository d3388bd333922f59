//go:build cgo && !purego

// Package csrc is the C core of package sketch: XXH3-128, the Count-Min
// counter updates and estimates, batch entry points and walks over whole
// arrays, on words that package sketch's pure-Go core touches with
// sync/atomic. Use package sketch; this API follows it and is not stable.
//
// It is a package of its own so that cgo compiles its .c files and the Go
// build cache tracks them.
package csrc

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
#cgo noescape sk_cms_raise_batch
#cgo nocallback sk_cms_raise_batch
#cgo noescape sk_cms_estimate_batch
#cgo nocallback sk_cms_estimate_batch
#cgo noescape sk_cms_row_sums
#cgo nocallback sk_cms_row_sums
#cgo nocallback sk_cms_adds
#cgo nocallback sk_cms_reset
#cgo nocallback sk_noop
#include "sketch.h"
*/
import "C"

import "unsafe"

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

// Batch is how many keys one crossing carries, one add-count chunk of
// package sketch (its batchChunk): enough that the crossing's
// cost is well under a nanosecond a key, few enough for the stack.
const Batch = 256

// Grid locates a Count-Min sketch's words: Cells holds Rows x (Mask+1)
// counters, row-major; Stripes the add-count stripes; Fleet the fleet
// part, a grid of Cells' shape that reads add to Cells' (nil without
// one). Prefetch asks batches to hash and fetch keys ahead.
type Grid struct {
	Cells, Stripes unsafe.Pointer
	Fleet          unsafe.Pointer
	Seed, Mask     uint64
	Rows           int
	Prefetch       bool
}

func keyPtr(key []byte) *C.uint8_t {
	if len(key) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&key[0]))
}

func (g *Grid) cells() *C.uint64_t   { return (*C.uint64_t)(g.Cells) }
func (g *Grid) stripes() *C.uint64_t { return (*C.uint64_t)(g.Stripes) }
func (g *Grid) fleet() *C.uint64_t   { return (*C.uint64_t)(g.Fleet) }

func (g *Grid) prefetch() C.int {
	if g.Prefetch {
		return 1
	}
	return 0
}

// Hash128 is XXH3-128 of key with seed.
func Hash128(key []byte, seed uint64) (lo, hi uint64) {
	var out C.sk_u128
	C.sk_hash128(keyPtr(key), C.size_t(len(key)), C.uint64_t(seed), &out)
	return uint64(out.lo), uint64(out.hi)
}

// Add counts key n times, and n in the add-count stripe at stripe, and
// returns the key's new estimate.
func (g *Grid) Add(key []byte, n uint64, stripe unsafe.Pointer) uint64 {
	return uint64(C.sk_cms_add(g.cells(), g.fleet(), (*C.uint64_t)(stripe), C.uint64_t(g.Seed), C.uint64_t(g.Mask), C.uint32_t(g.Rows),
		keyPtr(key), C.size_t(len(key)), C.uint64_t(n)))
}

// Estimate returns key's estimate.
func (g *Grid) Estimate(key []byte) uint64 {
	return uint64(C.sk_cms_estimate(g.cells(), g.fleet(), C.uint64_t(g.Seed), C.uint64_t(g.Mask), C.uint32_t(g.Rows),
		keyPtr(key), C.size_t(len(key))))
}

func fillKeys(buf *[Batch]cKey, keys [][]byte) {
	for i, k := range keys {
		buf[i] = cKey{n: uint64(len(k))}
		if len(k) > 0 {
			buf[i].p = uintptr(unsafe.Pointer(&k[0]))
		}
	}
}

// The batch is passed through a pointer computed beforehand: written as
// &buf[0] in the call, cgo would box the whole array to check it, and
// allocate.

// AddBatch counts each key n times, and what it counted in the add-count
// stripe at stripe; est, if not nil, receives each key's estimate right
// after its add.
func (g *Grid) AddBatch(keys [][]byte, n uint64, est []uint64, stripe unsafe.Pointer) {
	var buf [Batch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += Batch {
		chunk := keys[base:min(base+Batch, len(keys))]
		fillKeys(&buf, chunk)
		var out *C.uint64_t
		if est != nil {
			out = (*C.uint64_t)(unsafe.Pointer(&est[base]))
		}
		C.sk_cms_add_batch(g.cells(), g.fleet(), (*C.uint64_t)(stripe), C.uint64_t(g.Seed), C.uint64_t(g.Mask), C.uint32_t(g.Rows),
			g.prefetch(), ckeys, C.size_t(len(chunk)), C.uint64_t(n), out)
	}
}

// RaiseBatch raises each key by n in lane, a grid of g's shape that only
// the caller writes (conservative update), then counts the chunk in the
// add-count stripe at stripe.
func (g *Grid) RaiseBatch(lane unsafe.Pointer, keys [][]byte, n uint64, stripe unsafe.Pointer) {
	var buf [Batch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += Batch {
		chunk := keys[base:min(base+Batch, len(keys))]
		fillKeys(&buf, chunk)
		C.sk_cms_raise_batch((*C.uint64_t)(lane), (*C.uint64_t)(stripe), C.uint64_t(g.Seed), C.uint64_t(g.Mask), C.uint32_t(g.Rows),
			g.prefetch(), ckeys, C.size_t(len(chunk)), C.uint64_t(n))
	}
}

// EstimateBatch stores each key's estimate in est.
func (g *Grid) EstimateBatch(keys [][]byte, est []uint64) {
	var buf [Batch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += Batch {
		chunk := keys[base:min(base+Batch, len(keys))]
		fillKeys(&buf, chunk)
		out := (*C.uint64_t)(unsafe.Pointer(&est[base]))
		C.sk_cms_estimate_batch(g.cells(), g.fleet(), C.uint64_t(g.Seed), C.uint64_t(g.Mask), C.uint32_t(g.Rows),
			g.prefetch(), ckeys, C.size_t(len(chunk)), out)
	}
}

// RowSums stores each row's sum (saturating) in sums and reports whether a
// counter has saturated.
func (g *Grid) RowSums(sums []uint64) bool {
	out := (*C.uint64_t)(unsafe.Pointer(&sums[0]))
	return C.sk_cms_row_sums(g.cells(), C.uint64_t(g.Mask), C.uint32_t(g.Rows), out) != 0
}

// Adds returns the sum of the add-count stripes, saturating at 2^63.
func (g *Grid) Adds() uint64 { return uint64(C.sk_cms_adds(g.stripes())) }

// Reset zeroes every counter and stripe, one word at a time.
func (g *Grid) Reset() {
	C.sk_cms_reset(g.cells(), g.stripes(), C.uint64_t(g.Mask), C.uint32_t(g.Rows))
}

// Noop crosses into C and back doing nothing: a bare cgo call, for the
// benchmarks.
func Noop() { C.sk_noop() }
