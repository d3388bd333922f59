package sketch

import (
	"fmt"
	"sync"
	"testing"
)

// cbfCoreName is the benchmark name of a core: go or c.
func cbfCoreName(core countingBloomCore) string {
	if core.name() == "purego" {
		return "go"
	}
	return "c"
}

// benchCBF returns a filter for 1M items at 1% (2^24 counters, 8 MiB, 7
// hashes), holding the first half of the uniform stream's keys, in memory
// (a memfd on Linux: a shared mapping, like a file's).
var benchCBFs struct {
	once sync.Once
	b    *CountingBloom
	err  error
}

func benchCBF(b *testing.B) *CountingBloom {
	s := &benchCBFs
	s.once.Do(func() {
		s.b, s.err = OpenCountingBloom(Memory(), CountingBloomConfig{Capacity: 1_000_000, FPRate: 0.01, Seed: benchSeed})
		if s.err == nil {
			_, u, _ := benchStreams()
			s.err = s.b.AddBatch(u.bytes[:len(u.bytes)/2], nil)
		}
	})
	if s.err != nil {
		b.Fatal(s.err)
	}
	return s.b
}

// BenchmarkCountingBloom times each operation per key on a 1M-item 1%
// filter, single keys in Go (every build) and AddMany per core, beside a
// sync.RWMutex + map[string]uint8 (the exact baseline, bench_test.go's
// stream of 1M distinct keys).
func BenchmarkCountingBloom(b *testing.B) {
	f := benchCBF(b)
	_, u, _ := benchStreams()
	keys, mask := u.bytes, len(u.bytes)-1
	b.Run("Add", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			f.Add(keys[i&mask])
		}
	})
	b.Run("Contains", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := 0; i < b.N; i++ {
			if f.Contains(keys[i&mask]) {
				n++
			}
		}
		benchSink.Add(uint64(n))
	})
	b.Run("CountOf", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for i := 0; i < b.N; i++ {
			n += int(f.Estimate(keys[i&mask]))
		}
		benchSink.Add(uint64(n))
	})
	b.Run("AddRemove", func(b *testing.B) {
		// A remove needs the item present: each op adds a key and removes
		// it, so ns/op is one Add plus one Remove.
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			f.Add(keys[i&mask])
			f.Remove(keys[i&mask])
		}
	})
	for _, core := range countingBloomCores() {
		b.Run(fmt.Sprintf("AddMany256/%s", cbfCoreName(core)), func(b *testing.B) {
			b.ReportAllocs()
			view := f.withCore(core)
			n := 0
			for i := 0; i < b.N; i += 256 {
				start := i & mask &^ 255
				view.AddBatch(keys[start:start+256], nil)
				n++
			}
			benchSink.Add(uint64(n))
		})
	}
	b.Run("RWMutexMap/Add", func(b *testing.B) {
		m := benchRWMap()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k := u.strs[i&mask]
			m.mu.Lock()
			m.m[k]++
			m.mu.Unlock()
		}
	})
	b.Run("RWMutexMap/Contains", func(b *testing.B) {
		m := benchRWMap()
		b.ReportAllocs()
		n := 0
		for i := 0; i < b.N; i++ {
			m.mu.RLock()
			if m.m[u.strs[i&mask]] > 0 {
				n++
			}
			m.mu.RUnlock()
		}
		benchSink.Add(uint64(n))
	})
}

type rwMap struct {
	mu sync.RWMutex
	m  map[string]uint8
}

var benchRWMaps struct {
	once sync.Once
	m    *rwMap
}

// benchRWMap holds every key of the uniform stream's first half.
func benchRWMap() *rwMap {
	s := &benchRWMaps
	s.once.Do(func() {
		_, u, _ := benchStreams()
		s.m = &rwMap{m: make(map[string]uint8, len(u.strs))}
		for _, k := range u.strs[:len(u.strs)/2] {
			s.m.m[k] = 1
		}
	})
	return s.m
}

// withCore returns another handle on b's mapping and lock that uses core.
func (b *CountingBloom) withCore(core countingBloomCore) *CountingBloom {
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
	for _, core := range countingBloomCores() {
		name := cbfCoreName(core)
		b.Run("Stats/"+name, func(b *testing.B) {
			view := src.withCore(core)
			b.SetBytes(int64(src.Counters() / 2))
			b.ReportAllocs()
			var n uint64
			for i := 0; i < b.N; i++ {
				n += view.Stats().CountersSet
			}
			benchSink.Add(n)
		})
		b.Run("Merge/"+name, func(b *testing.B) {
			dst := benchCBFCopy(b, core)
			b.SetBytes(int64(src.Counters() / 2))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := dst.Merge(src); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("MergeCore/"+name, func(b *testing.B) {
			// The merge alone, under the write lock, without the snapshot.
			dst := benchCBFCopy(b, core)
			snap := src.snapshot()
			b.SetBytes(int64(src.Counters() / 2))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst.lk.lock()
				core.merge(&dst.l, snap)
				dst.lk.unlock()
			}
		})
		b.Run("Clear/"+name, func(b *testing.B) {
			dst := benchCBFCopy(b, core)
			b.SetBytes(int64(src.Counters() / 2))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := dst.Reset(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchCBFCopy returns a filter of benchCBF's geometry and seed holding
// its items, that uses core.
func benchCBFCopy(b *testing.B, core countingBloomCore) *CountingBloom {
	f, err := OpenCountingBloom(Memory(), CountingBloomConfig{Capacity: 1_000_000, FPRate: 0.01, Seed: benchSeed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
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
	_, u, _ := benchStreams()
	keys, mask := u.bytes, len(u.bytes)-1
	for _, capacity := range []uint64{10_000, 1_000_000} {
		f, err := OpenCountingBloom(Memory(), CountingBloomConfig{Capacity: capacity, FPRate: 0.01, Seed: benchSeed})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := f.AddBatch(keys[:capacity/2], nil); err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{1, 2, 4, 8, 16, 256} {
			for _, core := range countingBloomCores() {
				b.Run(fmt.Sprintf("%dKiB/AddMany%d/%s", f.Counters()/2048, n, cbfCoreName(core)), func(b *testing.B) {
					view := f.withCore(core)
					b.ReportAllocs()
					added := 0
					for i := 0; i < b.N; i += n {
						start := i & mask // n divides the stream's length
						view.AddBatch(keys[start:start+n], nil)
						added++
					}
					benchSink.Add(uint64(added))
				})
			}
		}
	}
}
