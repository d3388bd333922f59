//go:build cgo && !purego

package sketch

import (
	"runtime"

	"github.com/shmsketch/sketch/csrc"
)

// The binding of the Bloom filter to the C core (csrc/bloom.c). Keep in
// sync with bloom_core.go.

// bloomCgo serves batches from C. Each method keeps l, which points into the
// handle and so keeps its mapping reachable, alive until C has returned.
type bloomCgo struct{}

func (bloomCgo) name() string { return "cgo" }

// filter is a value, not a pointer, so that it stays on the stack.
func bloomFilter(l *bloomLayout) csrc.Bloom {
	return csrc.Bloom{Words: l.words, Seed: l.seed, Blocks: l.blocks, K: l.k, Prefetch: l.prefetch}
}

func (bloomCgo) addBatch(l *bloomLayout, keys [][]byte, already []bool) uint64 {
	f := bloomFilter(l)
	added := f.AddBatch(keys, already)
	runtime.KeepAlive(l)
	return added
}

func (bloomCgo) checkBatch(l *bloomLayout, keys [][]byte, out []bool) {
	f := bloomFilter(l)
	f.CheckBatch(keys, out)
	runtime.KeepAlive(l)
}
