package bench

import (
	"path/filepath"
	"sync"
	"testing"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
)

// Counting Bloom filters for 1M items at 1%: sketch.CountingBloom (a shared
// file, 4-bit counters, the file's rwlock for adds and removes, lock-free
// lookups) beside BoomFilters' CountingBloomFilter (heap, 4-bit buckets,
// FNV-64, not safe for concurrent use) and a sync.RWMutex +
// map[string]uint8. Each holds the uniform stream's first half before the
// timer starts; ops then run over the whole stream (half present).
const (
	cbfCapacity = 1_000_000
	cbfFPRate   = 0.01
)

func openCBF(b *testing.B) *sketch.CountingBloom {
	f, err := sketch.OpenCountingBloom(sketch.Path(filepath.Join(b.TempDir(), "cbf")), sketch.CountingBloomConfig{Capacity: cbfCapacity, FPRate: cbfFPRate, Seed: seed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

type rwMap struct {
	mu sync.RWMutex
	m  map[string]uint8
}

func cbfPeers(b *testing.B, s *stream) (*sketch.CountingBloom, *boom.CountingBloomFilter, *rwMap) {
	half := len(s.bytes) / 2
	ours := openCBF(b)
	if err := ours.AddBatch(s.bytes[:half], nil); err != nil {
		b.Fatal(err)
	}
	theirs := boom.NewCountingBloomFilter(cbfCapacity, 4, cbfFPRate)
	m := &rwMap{m: make(map[string]uint8, half)}
	for i, k := range s.bytes[:half] {
		theirs.Add(k)
		m.m[s.strs[i]]++
	}
	return ours, theirs, m
}

// BenchmarkCountingBloomAdd adds one key per op.
func BenchmarkCountingBloomAdd(b *testing.B) {
	s := keyStreams()[1]
	keys, strs, mask := s.bytes, s.strs, len(s.bytes)-1
	ours, theirs, m := cbfPeers(b, s)
	b.Run("sketch", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ours.Add(keys[i&mask])
		}
	})
	b.Run("boom", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			theirs.Add(keys[i&mask])
		}
	})
	b.Run("rwmutexmap", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			m.m[strs[i&mask]]++
			m.mu.Unlock()
		}
	})
}

// BenchmarkCountingBloomContains tests one key per op (Test for
// BoomFilters).
func BenchmarkCountingBloomContains(b *testing.B) {
	s := keyStreams()[1]
	keys, strs, mask := s.bytes, s.strs, len(s.bytes)-1
	ours, theirs, m := cbfPeers(b, s)
	n := 0
	b.Run("sketch", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if ours.Contains(keys[i&mask]) {
				n++
			}
		}
	})
	b.Run("sketch-countof", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			n += int(ours.Estimate(keys[i&mask]))
		}
	})
	b.Run("boom", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if theirs.Test(keys[i&mask]) {
				n++
			}
		}
	})
	b.Run("rwmutexmap", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			m.mu.RLock()
			if m.m[strs[i&mask]] > 0 {
				n++
			}
			m.mu.RUnlock()
		}
	})
	sink += uint64(n)
}

// BenchmarkCountingBloomRemove adds and removes one key per op (a remove
// needs the item present): ns/op is an add plus a remove.
func BenchmarkCountingBloomRemove(b *testing.B) {
	s := keyStreams()[1]
	keys, mask := s.bytes, len(s.bytes)-1
	ours, theirs, _ := cbfPeers(b, s)
	b.Run("sketch", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			ours.Add(keys[i&mask])
			ours.Remove(keys[i&mask])
		}
	})
	b.Run("boom", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			theirs.Add(keys[i&mask])
			theirs.TestAndRemove(keys[i&mask])
		}
	})
}
