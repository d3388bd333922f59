//go:build cgo && !purego

package csrc

// The binding to distinct.c, the distinct count's batches in C. Keys reach
// C as in csrc.go's batches: (address, length) pairs in a stack array. C
// keeps no pointer after it returns and calls nothing in Go.

/*
#cgo noescape sk_hll_add_batch
#cgo nocallback sk_hll_add_batch
#cgo noescape sk_murmur64a
#cgo nocallback sk_murmur64a
#cgo noescape sk_murmur3_x64
#cgo nocallback sk_murmur3_x64
#include "sketch.h"
*/
import "C"

import "unsafe"

// Registers locates a distinct count's registers: Regs holds 2^P bytes.
// Profile picks the hash: 0 XXH3 with Seed, 1 Redis's (MurmurHash64A,
// Redis's seed), 2 PostgreSQL's hll extension's (MurmurHash3_x64_128's
// first half, seed 0).
type Registers struct {
	Regs    unsafe.Pointer
	Seed    uint64
	P       uint
	Profile uint64
}

// AddBatch adds each key, Batch keys per crossing, and returns how many
// raised a register.
func (r *Registers) AddBatch(keys [][]byte) (raised uint64) {
	var buf [Batch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += Batch {
		chunk := keys[base:min(base+Batch, len(keys))]
		fillKeys(&buf, chunk)
		raised += uint64(C.sk_hll_add_batch((*C.uint64_t)(r.Regs), C.uint64_t(r.Seed), C.uint32_t(r.P), C.int(r.Profile),
			ckeys, C.size_t(len(chunk))))
	}
	return raised
}

// Murmur64A is MurmurHash64A of key with seed, for the parity tests.
func Murmur64A(key []byte, seed uint64) uint64 {
	return uint64(C.sk_murmur64a(keyPtr(key), C.size_t(len(key)), C.uint64_t(seed)))
}

// Murmur3x64 is the first half of MurmurHash3_x64_128 of key with seed,
// for the parity tests.
func Murmur3x64(key []byte, seed uint32) uint64 {
	return uint64(C.sk_murmur3_x64(keyPtr(key), C.size_t(len(key)), C.uint32_t(seed)))
}
