//go:build cgo && !purego

package sketch

import (
	"unsafe"

	"github.com/shmsketch/sketch/csrc"
)

// The binding to the C core in csrc/. Keep in sync with countmin_core.go.

// countMinCgo serves batches and whole-array walks from C.
type countMinCgo struct{}

func (countMinCgo) name() string { return "cgo" }

func grid(l *cmsLayout) *csrc.Grid {
	return &csrc.Grid{Cells: l.cells, Stripes: l.stripes, Seed: l.seed, Mask: l.mask, Rows: l.rows, Prefetch: l.prefetch}
}

func (countMinCgo) add(l *cmsLayout, key []byte, n uint64) uint64 {
	return grid(l).Add(key, n, l.stripe())
}
func (countMinCgo) estimate(l *cmsLayout, key []byte) uint64 { return grid(l).Estimate(key) }

func (countMinCgo) addBatch(l *cmsLayout, keys [][]byte, n uint64, est []uint64) {
	var stripe unsafe.Pointer // nil: the add count stays as it is
	if !l.uncounted {
		stripe = l.stripe()
	}
	grid(l).AddBatch(keys, n, est, stripe)
}

func (countMinCgo) estimateBatch(l *cmsLayout, keys [][]byte, est []uint64) {
	grid(l).EstimateBatch(keys, est)
}

func (countMinCgo) rowSums(l *cmsLayout, sums []uint64) bool { return grid(l).RowSums(sums) }
func (countMinCgo) adds(l *cmsLayout) uint64                 { return grid(l).Adds() }
func (countMinCgo) reset(l *cmsLayout)                       { grid(l).Reset() }

// cHash128 is XXH3-128 of key computed by the C core.
func cHash128(key []byte, seed uint64) (lo, hi uint64) { return csrc.Hash128(key, seed) }

// emptyCall is a bare cgo crossing, for the benchmarks.
func emptyCall() { csrc.Noop() }

// The C core takes one add-count chunk per crossing: the two sizes must be
// equal for the cores to move the add count alike (a compile-time check).
var (
	_ [csrc.Batch - batchChunk]struct{}
	_ [batchChunk - csrc.Batch]struct{}
)
