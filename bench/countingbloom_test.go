package bench

import (
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

type rwMap struct {
	mu sync.RWMutex
	m  map[string]uint8
}

// cbfPeers returns the three filters, each holding the uniform stream's
// first half.
func cbfPeers(b *testing.B) (*sketch.CountingBloom, *boom.CountingBloomFilter, *rwMap) {
	ours := openHalf(b, func(p sketch.Place) (*sketch.CountingBloom, error) {
		return sketch.OpenCountingBloom(p, sketch.CountingBloomConfig{Capacity: cbfCapacity, FPRate: cbfFPRate, Seed: seed})
	})
	keys, strs := firstHalf()
	theirs := boom.NewCountingBloomFilter(cbfCapacity, 4, cbfFPRate)
	m := &rwMap{m: make(map[string]uint8, len(keys))}
	for i, k := range keys {
		theirs.Add(k)
		m.m[strs[i]]++
	}
	return ours, theirs, m
}

// BenchmarkCountingBloomAdd adds one key per op.
func BenchmarkCountingBloomAdd(b *testing.B) {
	keys, strs, mask := uniformKeys()
	ours, theirs, m := cbfPeers(b)
	runOps(b, op{"sketch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ours.Add(keys[i&mask])
		}
	}}, op{"boom", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			theirs.Add(keys[i&mask])
		}
	}}, op{"rwmutexmap", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			m.m[strs[i&mask]]++
			m.mu.Unlock()
		}
	}})
}

// BenchmarkCountingBloomContains tests one key per op (Test for
// BoomFilters).
func BenchmarkCountingBloomContains(b *testing.B) {
	keys, strs, mask := uniformKeys()
	ours, theirs, m := cbfPeers(b)
	n := 0
	runOps(b, op{"sketch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if ours.Contains(keys[i&mask]) {
				n++
			}
		}
	}}, op{"sketch-countof", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			n += int(ours.Estimate(keys[i&mask]))
		}
	}}, op{"boom", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if theirs.Test(keys[i&mask]) {
				n++
			}
		}
	}}, op{"rwmutexmap", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			m.mu.RLock()
			if m.m[strs[i&mask]] > 0 {
				n++
			}
			m.mu.RUnlock()
		}
	}})
	sink += uint64(n)
}

// BenchmarkCountingBloomRemove adds and removes one key per op (a remove
// needs the item present): ns/op is an add plus a remove.
func BenchmarkCountingBloomRemove(b *testing.B) {
	keys, _, mask := uniformKeys()
	ours, theirs, _ := cbfPeers(b)
	runOps(b, op{"sketch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ours.Add(keys[i&mask])
			ours.Remove(keys[i&mask])
		}
	}}, op{"boom", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			theirs.Add(keys[i&mask])
			theirs.TestAndRemove(keys[i&mask])
		}
	}})
}
