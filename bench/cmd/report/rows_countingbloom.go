package main

import (
	"sync"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
)

// Counting Bloom rows, for 1M items at 1% and the uniform stream: each
// operation on each build (AddBatch in batches of 16, 256 and 4096), one
// against two writers, beside BoomFilters' CountingBloomFilter and a
// sync.RWMutex + map[string]uint8. Lookups run on filters holding the stream's
// first half, so half of them find their key.
func countingBloomRows(builds []string) []subject {
	var rows []subject
	for _, b := range builds {
		for _, op := range []string{"add", "contains", "countof", "addremove"} {
			rows = append(rows, cbfRow(b, op, 1, 1, 1))
		}
		for _, batch := range []int{16, 256, 4096} {
			rows = append(rows, cbfRow(b, "add", batch, 1, 1))
		}
		rows = append(rows, cbfRow(b, "add", 1, 2, 1), cbfRow(b, "add", 1, 1, 2), cbfRow(b, "add", 256, 2, 1))
	}
	for _, op := range []string{"add", "contains", "addremove"} {
		rows = append(rows, boomCBFRow(op))
	}
	for _, op := range []string{"add", "contains"} {
		rows = append(rows, rwMapRow(op))
	}
	return rows
}

func cbfKey(op, impl, build string, batch, writers, procs int) Key {
	return Key{Struct: "countingbloom", Op: op, Impl: impl, Build: build, Shape: "1M", Dist: "uniform", Batch: batch, Writers: writers, Procs: procs}
}

// cbfBytes is the size of a filter's counters: 2^24 4-bit counters.
const cbfBytes = 8 << 20

func cbfRow(build, op string, batch, writers, procs int) subject {
	k := cbfKey(op, "sketch", build, batch, writers, procs)
	return subject{Key: k, Bytes: cbfBytes, open: func(e *env) (opener, error) {
		f, err := e.countingBloom(filterFor(op))
		return overKeys(e, "uniform", err, func() func([][]byte) uint64 { return cbfOp(f, op, batch) })
	}}
}

func cbfOp(f *sketch.CountingBloom, op string, batch int) func([][]byte) uint64 {
	switch op {
	case "add":
		if batch > 1 {
			return func(keys [][]byte) uint64 {
				for i := 0; i < len(keys); i += batch {
					f.AddBatch(keys[i:i+batch], nil)
				}
				return 0
			}
		}
		return func(keys [][]byte) uint64 {
			for _, k := range keys {
				f.Add(k)
			}
			return 0
		}
	case "contains":
		return func(keys [][]byte) (n uint64) {
			for _, k := range keys {
				if f.Contains(k) {
					n++
				}
			}
			return n
		}
	case "countof":
		return func(keys [][]byte) (n uint64) {
			for _, k := range keys {
				n += uint64(f.Estimate(k))
			}
			return n
		}
	}
	// addremove: an add and a remove of the same key, which leaves the
	// query filter as it was.
	return func(keys [][]byte) uint64 {
		for _, k := range keys {
			f.Add(k)
			f.Remove(k)
		}
		return 0
	}
}

// boomCBFRow is BoomFilters' CountingBloomFilter (4-bit buckets, heap, not
// safe for concurrent use): Add, Test, Add + TestAndRemove.
func boomCBFRow(op string) subject {
	k := cbfKey(op, "boom", "", 1, 1, 1)
	return subject{Key: k, Bytes: cbfBytes, open: func(e *env) (opener, error) {
		keys := e.stream("uniform").Bytes
		f := cached(e, "boomcbf-"+filterFor(op), func() *boom.CountingBloomFilter {
			f := boom.NewCountingBloomFilter(cbfCapacity, 4, cbfFPRate)
			if op != "add" {
				for _, k := range keys[:len(keys)/2] {
					f.Add(k)
				}
			}
			return f
		})
		return over(keys, func() func([][]byte) uint64 {
			switch op {
			case "add":
				return func(keys [][]byte) uint64 {
					for _, k := range keys {
						f.Add(k)
					}
					return 0
				}
			case "contains":
				return func(keys [][]byte) (n uint64) {
					for _, k := range keys {
						if f.Test(k) {
							n++
						}
					}
					return n
				}
			}
			return func(keys [][]byte) uint64 {
				for _, k := range keys {
					f.Add(k)
					f.TestAndRemove(k)
				}
				return 0
			}
		}), nil
	}}
}

// rwMap is the exact baseline for a counting Bloom filter.
type rwMap struct {
	mu sync.RWMutex
	m  map[string]uint8
}

// rwMapRow is a sync.RWMutex + map[string]uint8 holding the stream's first
// half: m[k]++ under the lock, m[k] > 0 under the read lock.
func rwMapRow(op string) subject {
	k := cbfKey(op, "rwmutexmap", "", 1, 1, 1)
	return subject{Key: k, open: func(e *env) (opener, error) {
		strs := e.stream("uniform").Strs
		m := cached(e, "rwmap", func() *rwMap {
			m := &rwMap{m: make(map[string]uint8, len(strs))}
			for _, k := range strs[:len(strs)/2] {
				m.m[k] = 1
			}
			return m
		})
		return over(strs, func() func([]string) uint64 {
			if op == "add" {
				return func(keys []string) uint64 {
					for _, k := range keys {
						m.mu.Lock()
						m.m[k]++
						m.mu.Unlock()
					}
					return 0
				}
			}
			return func(keys []string) (n uint64) {
				for _, k := range keys {
					m.mu.RLock()
					if m.m[k] > 0 {
						n++
					}
					m.mu.RUnlock()
				}
				return n
			}
		}), nil
	}}
}
