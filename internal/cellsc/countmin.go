//go:build cgo && !purego

// Package cellsc binds the C core (csrc) to the cores' interfaces of
// internal/cells, for the cgo build: batches and whole-array walks cross
// to C once, single keys stay in Go.
package cellsc

import (
	"unsafe"

	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// Keep in sync with internal/cells/countmin.go.

// CountMin serves batches and whole-array walks from C.
type CountMin struct{}

func (CountMin) Name() string { return "cgo" }

func grid(l *cells.CountMin) *csrc.Grid {
	return &csrc.Grid{Cells: l.Cells, Stripes: l.Stripes, Fleet: l.Fleet, Seed: l.Seed, Mask: l.Mask, Rows: l.Rows, Prefetch: l.Prefetch}
}

// A sketch with lanes is read by the Go core, which sums the lanes; the C
// core serves its blind batches, which add to this handle's lane only, a
// grid of the sketch's shape.

func (CountMin) Add(l *cells.CountMin, key []byte, n uint64) uint64 {
	if l.Lanes > 1 {
		return cells.CountMinGo{}.Add(l, key, n)
	}
	return grid(l).Add(key, n, l.Stripe())
}

func (CountMin) Estimate(l *cells.CountMin, key []byte) uint64 {
	if l.Lanes > 1 {
		return cells.CountMinGo{}.Estimate(l, key)
	}
	return grid(l).Estimate(key)
}

func (CountMin) AddBatch(l *cells.CountMin, keys [][]byte, n uint64, est []uint64) {
	var stripe unsafe.Pointer // nil: the add count stays as it is
	if !l.Uncounted {
		stripe = l.Stripe()
	}
	g := grid(l)
	if l.Lanes > 1 {
		if est != nil {
			cells.CountMinGo{}.AddBatch(l, keys, n, est)
			return
		}
		g.Cells, g.Fleet = l.Lane, nil // a blind add reads no other grid
	}
	g.AddBatch(keys, n, est, stripe)
}

func (CountMin) RaiseBatch(l *cells.CountMin, lane unsafe.Pointer, keys [][]byte, n uint64) {
	var stripe unsafe.Pointer // nil: the add count stays as it is
	if !l.Uncounted {
		stripe = l.Stripe()
	}
	grid(l).RaiseBatch(lane, keys, n, stripe)
}

func (CountMin) EstimateBatch(l *cells.CountMin, keys [][]byte, est []uint64) {
	if l.Lanes > 1 {
		cells.CountMinGo{}.EstimateBatch(l, keys, est)
		return
	}
	grid(l).EstimateBatch(keys, est)
}

func (CountMin) RowSums(l *cells.CountMin, sums []uint64) bool {
	if l.Lanes > 1 {
		return cells.CountMinGo{}.RowSums(l, sums)
	}
	return grid(l).RowSums(sums)
}

func (CountMin) Adds(l *cells.CountMin) uint64 { return grid(l).Adds() }

func (CountMin) Reset(l *cells.CountMin) {
	if l.Lanes > 1 {
		cells.CountMinGo{}.Reset(l)
		return
	}
	grid(l).Reset()
}

// cHash128 is XXH3-128 of key computed by the C core.
func cHash128(key []byte, seed uint64) (lo, hi uint64) { return csrc.Hash128(key, seed) }

// EmptyCall is a bare cgo crossing, for the benchmarks.
func EmptyCall() { csrc.Noop() }

// The C core takes one add-count chunk per crossing: the two sizes must be
// equal for the cores to move the add count alike (a compile-time check).
var (
	_ [csrc.Batch - cells.BatchChunk]struct{}
	_ [cells.BatchChunk - csrc.Batch]struct{}
)
