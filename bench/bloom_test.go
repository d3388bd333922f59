package bench

import (
	"sync"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"

	"github.com/shmsketch/sketch"
)

// Bloom filters for 1M keys at 1%: sketch.Bloom (a shared file, blocked,
// lock-free atomic ORs, XXH3) beside bits-and-blooms/bloom/v3
// (NewWithEstimates; heap, classic layout, murmur3, not safe for
// concurrent use) and a sync.Mutex + map[string]struct{}. Each holds the
// uniform stream's first half before the timer starts; ops then run over
// the whole stream (half present).
const (
	bloomCapacity = 1_000_000
	bloomFPRate   = 0.01
)

type setMap struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// bloomPeers returns the three filters, each holding the uniform stream's
// first half.
func bloomPeers(b *testing.B) (*sketch.Bloom, *bloom.BloomFilter, *setMap) {
	ours := openHalf(b, func(p sketch.Place) (*sketch.Bloom, error) {
		return sketch.OpenBloom(p, sketch.BloomConfig{Capacity: bloomCapacity, FPRate: bloomFPRate, Seed: seed})
	})
	keys, strs := firstHalf()
	theirs := bloom.NewWithEstimates(bloomCapacity, bloomFPRate)
	m := &setMap{m: make(map[string]struct{}, len(keys))}
	for i, k := range keys {
		theirs.Add(k)
		m.m[strs[i]] = struct{}{}
	}
	return ours, theirs, m
}

// BenchmarkBloomAdd adds one key per op (TestAndAdd for bits-and-blooms,
// which answers what Add answers).
func BenchmarkBloomAdd(b *testing.B) {
	keys, strs, mask := uniformKeys()
	ours, theirs, m := bloomPeers(b)
	n := 0
	runOps(b, op{"sketch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if already, _ := ours.Add(keys[i&mask]); already {
				n++
			}
		}
	}}, op{"bitsandblooms", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if theirs.TestAndAdd(keys[i&mask]) {
				n++
			}
		}
	}}, op{"bitsandblooms-noanswer", func(b *testing.B) {
		// Add, which does not say whether the key was there.
		for i := 0; i < b.N; i++ {
			theirs.Add(keys[i&mask])
		}
	}}, op{"mutexmap", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			m.m[strs[i&mask]] = struct{}{}
			m.mu.Unlock()
		}
	}})
	sink += uint64(n)
}

// BenchmarkBloomCheck tests one key per op (Test for bits-and-blooms).
func BenchmarkBloomCheck(b *testing.B) {
	keys, strs, mask := uniformKeys()
	ours, theirs, m := bloomPeers(b)
	n := 0
	runOps(b, op{"sketch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if ours.Contains(keys[i&mask]) {
				n++
			}
		}
	}}, op{"bitsandblooms", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if theirs.Test(keys[i&mask]) {
				n++
			}
		}
	}}, op{"mutexmap", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			if _, ok := m.m[strs[i&mask]]; ok {
				n++
			}
			m.mu.Unlock()
		}
	}})
	sink += uint64(n)
}

// BenchmarkBloomBatch is sketch.Bloom's AddBatch and CheckBatch, 256 keys
// a call, per key, beside the single calls above.
func BenchmarkBloomBatch(b *testing.B) {
	keys, _, mask := uniformKeys()
	ours, _, _ := bloomPeers(b)
	out := make([]bool, 256)
	runOps(b, op{"AddBatch256", func(b *testing.B) {
		for i := 0; i < b.N; i += 256 {
			ours.AddBatch(keys[i&mask:i&mask+256], nil)
		}
	}}, op{"CheckBatch256", func(b *testing.B) {
		for i := 0; i < b.N; i += 256 {
			ours.ContainsBatch(keys[i&mask:i&mask+256], out)
		}
	}})
}
