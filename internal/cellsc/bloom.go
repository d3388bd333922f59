//go:build cgo && !purego

package cellsc

import (
	"runtime"

	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// The binding of the Bloom filter to the C core (csrc/bloom.c). Keep in
// sync with internal/cells/bloom.go.

// Bloom serves batches from C. Each method keeps l, which points into the
// handle and so keeps its mapping reachable, alive until C has returned.
type Bloom struct{}

func (Bloom) Name() string { return "cgo" }

// filter is a value, not a pointer, so that it stays on the stack.
func bloomFilter(l *cells.Bloom) csrc.Bloom {
	return csrc.Bloom{Words: l.Words, Seed: l.Seed, Blocks: l.Blocks, K: l.K, Prefetch: l.Prefetch}
}

func (Bloom) AddBatch(l *cells.Bloom, keys [][]byte, already []bool) uint64 {
	f := bloomFilter(l)
	added := f.AddBatch(keys, already)
	runtime.KeepAlive(l)
	return added
}

func (Bloom) ContainsBatch(l *cells.Bloom, keys [][]byte, out []bool) {
	f := bloomFilter(l)
	f.ContainsBatch(keys, out)
	runtime.KeepAlive(l)
}
