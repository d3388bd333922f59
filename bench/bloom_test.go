package bench

import (
	"path/filepath"
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

func bloomPeers(b *testing.B, s *stream) (*sketch.Bloom, *bloom.BloomFilter, *setMap) {
	half := len(s.bytes) / 2
	ours, err := sketch.OpenBloom(sketch.Path(filepath.Join(b.TempDir(), "bloom")), sketch.BloomConfig{Capacity: bloomCapacity, FPRate: bloomFPRate, Seed: seed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ours.Close() })
	if err := ours.AddBatch(s.bytes[:half], nil); err != nil {
		b.Fatal(err)
	}
	theirs := bloom.NewWithEstimates(bloomCapacity, bloomFPRate)
	m := &setMap{m: make(map[string]struct{}, half)}
	for i, k := range s.bytes[:half] {
		theirs.Add(k)
		m.m[s.strs[i]] = struct{}{}
	}
	return ours, theirs, m
}

// BenchmarkBloomAdd adds one key per op (TestAndAdd for bits-and-blooms,
// which answers what Add answers).
func BenchmarkBloomAdd(b *testing.B) {
	s := keyStreams()[1]
	keys, strs, mask := s.bytes, s.strs, len(s.bytes)-1
	ours, theirs, m := bloomPeers(b, s)
	n := 0
	b.Run("sketch", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if already, _ := ours.Add(keys[i&mask]); already {
				n++
			}
		}
	})
	b.Run("bitsandblooms", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if theirs.TestAndAdd(keys[i&mask]) {
				n++
			}
		}
	})
	b.Run("bitsandblooms-noanswer", func(b *testing.B) {
		// Add, which does not say whether the key was there.
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			theirs.Add(keys[i&mask])
		}
	})
	b.Run("mutexmap", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			m.m[strs[i&mask]] = struct{}{}
			m.mu.Unlock()
		}
	})
	sink += uint64(n)
}

// BenchmarkBloomCheck tests one key per op (Test for bits-and-blooms).
func BenchmarkBloomCheck(b *testing.B) {
	s := keyStreams()[1]
	keys, strs, mask := s.bytes, s.strs, len(s.bytes)-1
	ours, theirs, m := bloomPeers(b, s)
	n := 0
	b.Run("sketch", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if ours.Contains(keys[i&mask]) {
				n++
			}
		}
	})
	b.Run("bitsandblooms", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if theirs.Test(keys[i&mask]) {
				n++
			}
		}
	})
	b.Run("mutexmap", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			if _, ok := m.m[strs[i&mask]]; ok {
				n++
			}
			m.mu.Unlock()
		}
	})
	sink += uint64(n)
}

// BenchmarkBloomBatch is sketch.Bloom's AddBatch and CheckBatch, 256 keys
// a call, per key, beside the single calls above.
func BenchmarkBloomBatch(b *testing.B) {
	s := keyStreams()[1]
	keys, mask := s.bytes, len(s.bytes)-1
	ours, _, _ := bloomPeers(b, s)
	b.Run("AddBatch256", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i += 256 {
			ours.AddBatch(keys[i&mask:i&mask+256], nil)
		}
	})
	out := make([]bool, 256)
	b.Run("CheckBatch256", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i += 256 {
			ours.ContainsBatch(keys[i&mask:i&mask+256], out)
		}
	})
}
