//go:build cgo && !purego

package csrc

// The binding to gcra.c, the rate limiter's batches in C. Keys reach C as
// in csrc.go's batches: (address, length) pairs in a stack array. C keeps
// no pointer after it returns and calls nothing in Go.

/*
#cgo noescape sk_gcra_allow_batch
#cgo nocallback sk_gcra_allow_batch
#include "sketch.h"
*/
import "C"

import "unsafe"

// GCRAMaxRows is the most rows sk_gcra_allow_batch takes.
const GCRAMaxRows = C.SK_GCRA_MAX_ROWS

// GCRA locates a rate limiter's times: Cells holds Rows x (Mask+1)
// uint64 TATs, row-major; Interval and Window are the limiter's emission
// interval and (burst+1)·Interval, in nanoseconds.
type GCRA struct {
	Cells            unsafe.Pointer
	Seed, Mask       uint64
	Rows             int
	Interval, Window uint64
}

// AllowBatch decides each key at now with cost, Batch keys per crossing,
// filling allowed and tats (the TAT after each decision); it returns how
// many were allowed.
func (g *GCRA) AllowBatch(keys [][]byte, now, cost uint64, allowed []bool, tats []uint64) (n uint64) {
	var buf [Batch]cKey
	ckeys := (*C.sk_key)(unsafe.Pointer(&buf))
	for base := 0; base < len(keys); base += Batch {
		chunk := keys[base:min(base+Batch, len(keys))]
		fillKeys(&buf, chunk)
		n += uint64(C.sk_gcra_allow_batch((*C.uint64_t)(g.Cells), C.uint64_t(g.Seed), C.uint64_t(g.Mask), C.uint32_t(g.Rows),
			C.uint64_t(g.Interval), C.uint64_t(g.Window), C.uint64_t(now), C.uint64_t(cost), ckeys, C.size_t(len(chunk)),
			boolPtr(allowed, base), (*C.uint64_t)(unsafe.Pointer(&tats[base]))))
	}
	return n
}
