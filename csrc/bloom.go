//go:build cgo && !purego

package csrc

// The binding to bloom.c, the Bloom filter's batches in C. Keys reach C as
// in csrc.go's batches: (address, length) pairs in a stack array. C keeps
// no pointer after it returns and calls nothing in Go.

/*
#cgo noescape sk_bloom_add_batch
#cgo nocallback sk_bloom_add_batch
#cgo noescape sk_bloom_contains_batch
#cgo nocallback sk_bloom_contains_batch
#include "sketch.h"
*/
import "C"

import "unsafe"

func init() { C.sk_bloom_init() }

// Bloom locates a Bloom filter's bits: Words holds Blocks x 8 uint64
// words. Prefetch asks batches to hash and fetch keys ahead.
type Bloom struct {
	Words    unsafe.Pointer
	Seed     uint64
	Blocks   uint64
	K        int
	Prefetch bool
}

func (f *Bloom) words() *C.uint64_t { return (*C.uint64_t)(f.Words) }

func (f *Bloom) prefetch() C.int {
	if f.Prefetch {
		return 1
	}
	return 0
}

// boolPtr passes a []bool to C as bytes, which C sets to 0 or 1: the
// values a Go bool may hold.
func boolPtr(b []bool, base int) *C.uint8_t {
	if base >= len(b) { // nil, or an empty batch's answers
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[base]))
}

// AddBatch adds each key, Batch keys per crossing, and returns how many
// set at least one bit; already, when not nil, receives each key's answer
// (true: every bit was already set).
func (f *Bloom) AddBatch(keys [][]byte, already []bool) (added uint64) {
	var buf [Batch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += Batch {
		chunk := keys[base:min(base+Batch, len(keys))]
		fillKeys(&buf, chunk)
		var out *C.uint8_t
		if already != nil {
			out = boolPtr(already, base)
		}
		added += uint64(C.sk_bloom_add_batch(f.words(), C.uint64_t(f.Seed), C.uint64_t(f.Blocks), C.uint32_t(f.K),
			f.prefetch(), ckeys, C.size_t(len(chunk)), out))
	}
	return added
}

// ContainsBatch stores in out[i] whether every bit of keys[i] is set.
func (f *Bloom) ContainsBatch(keys [][]byte, out []bool) {
	var buf [Batch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += Batch {
		chunk := keys[base:min(base+Batch, len(keys))]
		fillKeys(&buf, chunk)
		C.sk_bloom_contains_batch(f.words(), C.uint64_t(f.Seed), C.uint64_t(f.Blocks), C.uint32_t(f.K),
			f.prefetch(), ckeys, C.size_t(len(chunk)), boolPtr(out, base))
	}
}
