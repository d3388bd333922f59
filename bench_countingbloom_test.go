package sketch

import (
	"fmt"
	"sync"
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
)

// cbfAt opens a counting filter at 1% for capacity, in memory (a memfd on
// Linux: a shared mapping, like a file's).
func cbfAt(capacity uint64) (*CountingBloom, error) {
	return OpenCountingBloom(Memory(), CountingBloomConfig{Capacity: capacity, FPRate: 0.01, Seed: benchSeed})
}

var benchCBFs benchOnce[*CountingBloom]

// benchCBF returns a filter for 1M items at 1% (2^24 counters, 8 MiB, 7
// hashes), holding the first half of the uniform stream's keys.
func benchCBF(b *testing.B) *CountingBloom {
	return benchCBFs.get(b, func() (*CountingBloom, error) {
		return newBenchFilter(cbfAt, 1_000_000, benchUniform().firstHalf())
	})
}

// BenchmarkCountingBloom times each operation per key on a 1M-item 1%
// filter, single keys in Go (every build) and AddMany per core, beside a
// sync.RWMutex + map[string]uint8 (the exact baseline, bench_test.go's
// stream of 1M distinct keys).
func BenchmarkCountingBloom(b *testing.B) {
	f := benchCBF(b)
	u := benchUniform()
	keys, mask := u.bytes, u.mask()
	runOps(b, "", benchOp{"Add", func(b *testing.B) uint64 {
		for i := 0; i < b.N; i++ {
			f.Add(keys[i&mask])
		}
		return 0
	}}, benchOp{"Contains", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if f.Contains(keys[i&mask]) {
				n++
			}
		}
		return n
	}}, benchOp{"CountOf", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			n += uint64(f.Estimate(keys[i&mask]))
		}
		return n
	}}, benchOp{"AddRemove", func(b *testing.B) uint64 {
		// A remove needs the item present: each op adds a key and removes
		// it, so ns/op is one Add plus one Remove.
		for i := 0; i < b.N; i++ {
			f.Add(keys[i&mask])
			f.Remove(keys[i&mask])
		}
		return 0
	}})
	for _, core := range countingBloomCores() {
		runOps(b, "AddMany256/", benchOp{coreName(core), func(b *testing.B) (n uint64) {
			view := f.withCore(core)
			for i := 0; i < b.N; i += 256 {
				start := i & mask &^ 255
				view.AddBatch(keys[start:start+256], nil)
				n++
			}
			return n
		}})
	}
	runOps(b, "RWMutexMap/", benchOp{"Add", func(b *testing.B) uint64 {
		m := benchRWMap(b)
		for i := 0; i < b.N; i++ {
			k := u.strs[i&mask]
			m.mu.Lock()
			m.m[k]++
			m.mu.Unlock()
		}
		return 0
	}}, benchOp{"Contains", func(b *testing.B) (n uint64) {
		m := benchRWMap(b)
		for i := 0; i < b.N; i++ {
			m.mu.RLock()
			if m.m[u.strs[i&mask]] > 0 {
				n++
			}
			m.mu.RUnlock()
		}
		return n
	}})
}

type rwMap struct {
	mu sync.RWMutex
	m  map[string]uint8
}

var benchRWMaps benchOnce[*rwMap]

// benchRWMap holds every key of the uniform stream's first half.
func benchRWMap(b *testing.B) *rwMap {
	return benchRWMaps.get(b, func() (*rwMap, error) {
		return &rwMap{m: benchHalfMap(uint8(1))}, nil
	})
}

// withCore returns another handle on b's mapping and lock that uses core.
func (b *CountingBloom) withCore(core cells.CountingBloomCore) *CountingBloom {
	v := &CountingBloom{l: b.l, core: core, lk: b.lk, stripe: b.stripe}
	v.init(b.m, v)
	v.open.Store(true)
	return v
}

// BenchmarkCountingBloomWalks times the whole-array operations per core on
// the 1M-item filter (8 MiB of counters): Stats (which counts the
// counters set), Merge of another filter into a copy (a snapshot of the
// other under its read lock, then the merge under the write lock) and
// Clear. ns/op is one operation; MB/s is counter bytes per second.
func BenchmarkCountingBloomWalks(b *testing.B) {
	src := benchCBF(b)
	size := int64(src.Counters() / 2)
	for _, core := range countingBloomCores() {
		name := "/" + coreName(core)
		runOps(b, "", benchOp{"Stats" + name, func(b *testing.B) (n uint64) {
			view := src.withCore(core)
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				n += view.Stats().Set
			}
			return n
		}})
		b.Run("Merge"+name, func(b *testing.B) {
			dst := benchCBFCopy(b, core)
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := dst.Merge(src); err != nil {
					b.Fatal(err)
				}
			}
		})
		runOps(b, "", benchOp{"MergeCore" + name, func(b *testing.B) uint64 {
			// The merge alone, under the write lock, without the snapshot.
			dst := benchCBFCopy(b, core)
			snap, err := src.snapshot()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst.lk.lock()
				core.Merge(&dst.l, snap)
				dst.lk.unlock()
			}
			return 0
		}}, benchOp{"Clear" + name, func(b *testing.B) uint64 {
			dst := benchCBFCopy(b, core)
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := dst.Reset(); err != nil {
					b.Fatal(err)
				}
			}
			return 0
		}})
	}
}

// benchCBFCopy returns a filter of benchCBF's geometry and seed holding
// its items, that uses core.
func benchCBFCopy(b *testing.B, core cells.CountingBloomCore) *CountingBloom {
	f := openBenchFilter(b, cbfAt, 1_000_000, nil)
	f.core = core
	if err := f.Merge(benchCBF(b)); err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkCountingBloomBatch times AddMany per key, per core, by batch
// size, on a filter that fits in L2 (10k items at 1%: 64 KiB) and on one
// that does not (1M items: 8 MiB): where a cgo crossing pays and where
// fetching ahead does.
func BenchmarkCountingBloomBatch(b *testing.B) {
	u := benchUniform()
	keys, mask := u.bytes, u.mask()
	for _, capacity := range []uint64{10_000, 1_000_000} {
		f := openBenchFilter(b, cbfAt, capacity, keys[:capacity/2])
		for _, n := range []int{1, 2, 4, 8, 16, 256} {
			for _, core := range countingBloomCores() {
				runOps(b, "", benchOp{fmt.Sprintf("%dKiB/AddMany%d/%s", f.Counters()/2048, n, coreName(core)), func(b *testing.B) uint64 {
					view := f.withCore(core)
					added := 0
					for i := 0; i < b.N; i += n {
						start := i & mask // n divides the stream's length
						view.AddBatch(keys[start:start+n], nil)
						added++
					}
					return uint64(added)
				}})
			}
		}
	}
}
