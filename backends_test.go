package sketch

import (
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
)

// The one switch of backends for tests: the parity suites, the benchmarks
// and every test that compares cores take their lists from here.

// testBackends are the backends this test binary has: the Go cores always,
// and the build's own (the C core) when they are others.
func testBackends() []cells.Cores {
	bs := []cells.Cores{cells.Go}
	if Backend != "purego" {
		bs = append(bs, buildCores)
	}
	return bs
}

// countMinCores are the Count-Min cores of testBackends.
func countMinCores() []cells.CountMinCore {
	var cs []cells.CountMinCore
	for _, b := range testBackends() {
		cs = append(cs, b.CountMin)
	}
	return cs
}

// bloomCores are the Bloom cores of testBackends.
func bloomCores() []cells.BloomCore {
	var cs []cells.BloomCore
	for _, b := range testBackends() {
		cs = append(cs, b.Bloom)
	}
	return cs
}

// countingBloomCores are the counting Bloom cores of testBackends.
func countingBloomCores() []cells.CountingBloomCore {
	var cs []cells.CountingBloomCore
	for _, b := range testBackends() {
		cs = append(cs, b.CountingBloom)
	}
	return cs
}

// addedOf adds keys to b in one batch and returns how many were new, from
// AddBatch's answers.
func addedOf(b *CountingBloom, keys [][]byte) (int, error) {
	already := make([]bool, len(keys))
	err := b.AddBatch(keys, already)
	n := 0
	for _, a := range already {
		if !a {
			n++
		}
	}
	return n, err
}

// TestBatchCore checks which core serves a batch: Go for small batches
// and grids that fit in L2, the default core past L2.
func TestBatchCore(t *testing.T) {
	small := mustOpen(t, tempPath(t, "small"), CountMinConfig{Rows: 2, Width: 64})
	if got := small.batchCore(1000).Name(); got != "purego" {
		t.Errorf("batch core on a grid in L2 = %s, want purego", got)
	}
	big := mustOpen(t, tempPath(t, "big"), CountMinConfig{Rows: 1, Width: int(cells.L2Bytes()/8) * 2})
	if !big.l.Prefetch {
		t.Fatalf("a grid of twice L2 does not fetch ahead")
	}
	if got := big.batchCore(1000).Name(); got != buildCores.CountMin.Name() {
		t.Errorf("batch core past L2 = %s, want %s", got, buildCores.CountMin.Name())
	}
	if got := big.batchCore(cells.CountMinMinBatch - 1).Name(); got != "purego" {
		t.Errorf("batch core for %d keys = %s, want purego", cells.CountMinMinBatch-1, got)
	}
}
