package main

import (
	"github.com/bits-and-blooms/bloom/v3"

	"github.com/shmsketch/sketch"
)

// Bloom rows, at 1% for 1M keys (about 1.2 MiB: past L2, in L3) and for
// 100M (about 120 MiB: past the caches), uniform keys: Add and Check
// single and in batches on each build, one against two writers, beside
// bits-and-blooms/bloom/v3 (classic layout, heap, not safe for concurrent
// use). Checks run on filters holding the stream's first half.
func bloomRows(builds []string) []subject {
	var rows []subject
	for _, b := range builds {
		for _, capacity := range bloomCapacities {
			for _, op := range []string{"add", "check"} {
				rows = append(rows, bloomRow(b, op, capacity, 1, 1, 1), bloomRow(b, op, capacity, 256, 1, 1))
			}
		}
		rows = append(rows, bloomRow(b, "add", "1M", 16, 1, 1), bloomRow(b, "add", "1M", 4096, 1, 1))
		rows = append(rows, bloomRow(b, "add", "1M", 1, 2, 1), bloomRow(b, "add", "1M", 1, 1, 2), bloomRow(b, "add", "1M", 256, 2, 1))
	}
	for _, capacity := range bloomCapacities {
		for _, op := range []string{"add", "check"} {
			rows = append(rows, bitsBloomRow(op, capacity))
		}
	}
	return rows
}

var bloomCapacities = []string{"1M", "100M"}

func capacityOf(name string) uint64 {
	return map[string]uint64{"1M": 1_000_000, "100M": 100_000_000}[name]
}

func bloomKey(op, impl, build, capacity string, batch, writers, procs int) Key {
	return Key{Struct: "bloom", Op: op, Impl: impl, Build: build, Shape: capacity, Dist: "uniform", Batch: batch, Writers: writers, Procs: procs}
}

// bloomOf returns this build's Bloom filter of a capacity at 1%, named
// "query" or "add" (keepFilter).
func (e *env) bloomOf(capacity, name string) (*sketch.Bloom, error) {
	return cachedErr(e, "bloom-"+capacity+"-"+name, func() (*sketch.Bloom, error) {
		f, err := sketch.OpenBloom(sketch.Path(e.file("bloom", capacity+"-"+name)), sketch.BloomConfig{Capacity: capacityOf(capacity), FPRate: cbfFPRate, Seed: keySeed})
		if err != nil {
			return nil, err
		}
		return f, e.keepFilter(f, name, func() { f.Stats() })
	})
}

func bloomRow(build, op, capacity string, batch, writers, procs int) subject {
	k := bloomKey(op, "sketch", build, capacity, batch, writers, procs)
	return subject{Key: k, open: func(e *env) (opener, error) {
		f, err := e.bloomOf(capacity, filterFor(op))
		return overKeys(e, "uniform", err, func() func([][]byte) uint64 { return bloomOp(f, op, batch) })
	}}
}

func bloomOp(f *sketch.Bloom, op string, batch int) func([][]byte) uint64 {
	switch {
	case op == "add" && batch == 1:
		return func(keys [][]byte) (n uint64) {
			for _, k := range keys {
				if already, _ := f.Add(k); already {
					n++
				}
			}
			return n
		}
	case op == "add":
		return func(keys [][]byte) uint64 {
			for i := 0; i < len(keys); i += batch {
				f.AddBatch(keys[i:i+batch], nil)
			}
			return 0
		}
	case batch == 1:
		return func(keys [][]byte) (n uint64) {
			for _, k := range keys {
				if f.Contains(k) {
					n++
				}
			}
			return n
		}
	}
	out := make([]bool, batch)
	return func(keys [][]byte) (n uint64) {
		for i := 0; i < len(keys); i += batch {
			f.ContainsBatch(keys[i:i+batch], out)
			if out[0] {
				n++
			}
		}
		return n
	}
}

// bitsBloomRow is bits-and-blooms/bloom/v3 at 1% (heap, classic layout,
// murmur3, not safe for concurrent use): Add and Test.
func bitsBloomRow(op, capacity string) subject {
	k := bloomKey(op, "bitsblooms", "", capacity, 1, 1, 1)
	return subject{Key: k, open: func(e *env) (opener, error) {
		keys := e.stream("uniform").Bytes
		f := cached(e, "bitsbloom-"+capacity+"-"+op, func() *bloom.BloomFilter {
			f := bloom.NewWithEstimates(uint(capacityOf(capacity)), cbfFPRate)
			// Every page in first, as for this module's structures: adds
			// touch random pages, and a fresh 120 MiB heap array takes
			// hundreds of thousands of them to fault in.
			words := f.BitSet().Words()
			for i := 0; i < len(words); i += 512 {
				words[i] = 0
			}
			if op != "add" {
				for _, k := range keys[:len(keys)/2] {
					f.Add(k)
				}
			}
			return f
		})
		return over(keys, func() func([][]byte) uint64 {
			if op == "add" {
				return func(keys [][]byte) uint64 {
					for _, k := range keys {
						f.Add(k)
					}
					return 0
				}
			}
			return func(keys [][]byte) (n uint64) {
				for _, k := range keys {
					if f.Test(k) {
						n++
					}
				}
				return n
			}
		}), nil
	}}
}
