package sketch

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// Bloom filter benchmarks, ns per key: single keys (Go in every build),
// batches of 256 per core and batches of 1 through a core (one crossing a
// key in the C core), beside a sync.Mutex + map[string]struct{} holding
// the same keys. Filters are sized at 1% for 10k keys (12 KiB: in L1/L2),
// 1M (1.2 MiB: past a 1 MiB L2) and 10M (12 MiB: in a large L3 at most)
// and hold the uniform stream's first half (bench_test.go); ops run over
// the whole stream, so half the keys are present.
//
//	go test -run '^$' -bench 'Bloom' -count 5 -benchtime 200ms . | tee bloom.txt
//	benchstat bloom.txt

var bloomBenchCapacities = []uint64{10_000, 1_000_000, 10_000_000}

// bloomAt opens a filter at 1% for capacity, in memory.
func bloomAt(capacity uint64) (*Bloom, error) {
	return OpenBloom(Memory(), BloomConfig{Capacity: capacity, FPRate: 0.01, Seed: benchSeed})
}

// benchBlooms are the process's filters of bloomBenchCapacities, each
// holding the uniform stream's first half.
var benchBlooms benchOnce[map[uint64]*Bloom]

func benchBloom(b *testing.B, capacity uint64) *Bloom {
	return benchBlooms.get(b, func() (map[uint64]*Bloom, error) {
		fs := map[uint64]*Bloom{}
		for _, c := range bloomBenchCapacities {
			f, err := newBenchFilter(bloomAt, c, benchUniform().firstHalf())
			if err != nil {
				return nil, err
			}
			fs[c] = f
		}
		return fs, nil
	})[capacity]
}

// withCore returns another handle on f's mapping that serves batches with
// core.
func (f *Bloom) withCore(core cells.BloomCore) *Bloom {
	v := &Bloom{l: f.l, core: core, stripe: f.stripe}
	v.init(f.m, v)
	v.open.Store(true)
	return v
}

func bloomBenchName(f *Bloom) string {
	return fmt.Sprintf("%dKiB", f.l.Blocks*cells.BloomBlockBytes/1024)
}

// bloomAdd is f.Add, one key an op.
func bloomAdd(f *Bloom, keys [][]byte, mask int) benchLoop {
	return func(b *testing.B) uint64 {
		for i := 0; i < b.N; i++ {
			f.Add(keys[i&mask])
		}
		return 0
	}
}

// bloomCheck is f.Contains, one key an op.
func bloomCheck(f *Bloom, keys [][]byte, mask int) benchLoop {
	return func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if f.Contains(keys[i&mask]) {
				n++
			}
		}
		return n
	}
}

// BenchmarkBloom times each operation per key, on each filter size.
func BenchmarkBloom(b *testing.B) {
	u := benchUniform()
	keys, strs, mask := u.bytes, u.strs, u.mask()
	for _, capacity := range bloomBenchCapacities {
		f := benchBloom(b, capacity)
		size := bloomBenchName(f) + "/"
		runOps(b, size, benchOp{"Add", bloomAdd(f, keys, mask)}, benchOp{"AddString", func(b *testing.B) uint64 {
			for i := 0; i < b.N; i++ {
				f.AddString(strs[i&mask])
			}
			return 0
		}}, benchOp{"Check", bloomCheck(f, keys, mask)})
		for _, core := range bloomCores() {
			for _, batch := range []int{1, 16, 256} {
				if batch == 1 && core.Name() == "purego" {
					continue // that is Add
				}
				runOps(b, size, benchOp{fmt.Sprintf("AddBatch%d/%s", batch, coreName(core)), func(b *testing.B) (added uint64) {
					for i := 0; i < b.N; i += batch {
						start := i & mask // batch divides the stream's length
						added += core.AddBatch(&f.l, keys[start:start+batch], nil)
					}
					return added
				}}, benchOp{fmt.Sprintf("CheckBatch%d/%s", batch, coreName(core)), func(b *testing.B) uint64 {
					out := make([]bool, batch)
					for i := 0; i < b.N; i += batch {
						start := i & mask
						core.ContainsBatch(&f.l, keys[start:start+batch], out)
					}
					return 0
				}})
			}
		}
	}
	m := benchSetMap(b)
	runOps(b, "MutexMap/1M/", benchOp{"insert", func(b *testing.B) uint64 {
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			m.m[strs[i&mask]] = struct{}{}
			m.mu.Unlock()
		}
		return 0
	}}, benchOp{"lookup", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			m.mu.Lock()
			if _, ok := m.m[strs[i&mask]]; ok {
				n++
			}
			m.mu.Unlock()
		}
		return n
	}})
}

type setMap struct {
	mu sync.Mutex
	m  map[string]struct{}
}

var benchSetMaps benchOnce[*setMap]

// benchSetMap holds every key of the uniform stream's first half.
func benchSetMap(b *testing.B) *setMap {
	return benchSetMaps.get(b, func() (*setMap, error) {
		return &setMap{m: benchHalfMap(struct{}{})}, nil
	})
}

// benchHalfMap returns a map holding every key of the uniform stream's
// first half, each with value v, with room for the whole stream.
func benchHalfMap[V any](v V) map[string]V {
	u := benchUniform()
	m := make(map[string]V, len(u.strs))
	for _, k := range u.strs[:len(u.strs)/2] {
		m[k] = v
	}
	return m
}

// BenchmarkBloomWalks times Stats (which counts the bits set), Merge of
// another filter and Reset on the 1M filter; MB/s is bit bytes a second.
func BenchmarkBloomWalks(b *testing.B) {
	src := benchBloom(b, 1_000_000)
	size := int64(src.l.Blocks * cells.BloomBlockBytes)
	b.Run("Stats", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			benchSink.Add(src.Stats().Set)
		}
	})
	dst := openBenchFilter(b, bloomAt, 1_000_000, nil)
	b.Run("Merge/new", func(b *testing.B) {
		// Each merge into a cleared filter: every word gains bits.
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dst.Reset()
			b.StartTimer()
			if err := dst.Merge(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Merge/again", func(b *testing.B) {
		// Merging what is already there: loads only.
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			if err := dst.Merge(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Reset", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			dst.Reset()
		}
	})
}

// classicBloom is the layout not taken, for BenchmarkBloomLayout: k bits
// anywhere in a power-of-two array (probe i at (h1 + i·h2) mod m), the
// classic sizing, the same hash and atomic OR, on the same kind of memory
// (a shared mapping: 4 KiB pages, where the heap may get huge pages).
type classicBloom struct {
	words []uint64
	mask  uint64
	k     int
	seed  uint64
	mem   *Bloom
}

func newClassicBloom(b *testing.B, n uint64, p float64) *classicBloom {
	k := int(math.Round(-math.Log2(p)))
	m := uint64(nextPow2(int(math.Ceil(float64(n) * -math.Log(p) / (math.Ln2 * math.Ln2)))))
	// A Bloom filter of at least m bits lends its mapping.
	mem, err := OpenBloom(Memory(), BloomConfig{Capacity: m / 8, FPRate: 0.01})
	if err != nil || mem.Bits() < m {
		b.Fatalf("a mapping of %d bits: %v", m, err)
	}
	b.Cleanup(func() { mem.Close() })
	words := unsafe.Slice((*uint64)(mem.l.Words), m/64)
	return &classicBloom{words: words, mask: m - 1, k: k, seed: benchSeed, mem: mem}
}

func (c *classicBloom) add(key []byte) (already bool) {
	h1, hi := cells.Hash(key, c.seed)
	h2 := hi | 1
	already = true
	for i := 0; i < c.k; i++ {
		j := (h1 + uint64(i)*h2) & c.mask
		bit := uint64(1) << (j & 63)
		if atomic.OrUint64(&c.words[j>>6], bit)&bit == 0 {
			already = false
		}
	}
	return already
}

func (c *classicBloom) check(key []byte) bool {
	h1, hi := cells.Hash(key, c.seed)
	h2 := hi | 1
	for i := 0; i < c.k; i++ {
		j := (h1 + uint64(i)*h2) & c.mask
		if atomic.LoadUint64(&c.words[j>>6])&(1<<(j&63)) == 0 {
			return false
		}
	}
	return true
}

// BenchmarkBloomLayout compares the blocked layout (all k bits in one
// cache line) with the classic one (k bits anywhere), single keys in Go,
// at 1% for 1M and 10M keys: what chose the layout.
func BenchmarkBloomLayout(b *testing.B) {
	u := benchUniform()
	keys, mask := u.bytes, u.mask()
	for _, n := range []uint64{1_000_000, 10_000_000} {
		c := newClassicBloom(b, n, 0.01)
		for _, k := range u.firstHalf() {
			c.add(k)
		}
		f := benchBloom(b, n)
		for _, layout := range []struct {
			name       string
			add, check benchLoop
		}{
			{"classic", func(b *testing.B) uint64 {
				for i := 0; i < b.N; i++ {
					c.add(keys[i&mask])
				}
				return 0
			}, func(b *testing.B) (n uint64) {
				for i := 0; i < b.N; i++ {
					if c.check(keys[i&mask]) {
						n++
					}
				}
				return n
			}},
			{"blocked", bloomAdd(f, keys, mask), bloomCheck(f, keys, mask)}, // BenchmarkBloom's loops
		} {
			name := fmt.Sprintf("%dM/%s/", n/1_000_000, layout.name)
			b.Run(name+"Add", func(b *testing.B) { layout.add(b) })
			b.Run(name+"Check", func(b *testing.B) { benchSink.Add(layout.check(b)) })
		}
	}
}

// BenchmarkBloomAhead times batches of 256 per core with and without
// fetching ahead, on filters from a sixteenth of a 1 MiB L2 to twelve
// times it: where fetching ahead starts to pay (newBloom's prefetch).
func BenchmarkBloomAhead(b *testing.B) {
	u := benchUniform()
	keys, mask := u.bytes, u.mask()
	for _, capacity := range []uint64{50_000, 200_000, 400_000, 1_000_000, 10_000_000} {
		f := openBenchFilter(b, bloomAt, capacity, keys[:min(int(capacity), len(keys))/2])
		for _, core := range bloomCores() {
			for _, ahead := range []bool{false, true} {
				l := f.l
				l.Prefetch = ahead
				size, tail := bloomBenchName(f)+"/", fmt.Sprintf("/%s/ahead=%v", coreName(core), ahead)
				b.Run(size+"AddBatch256"+tail, func(b *testing.B) {
					for i := 0; i < b.N; i += 256 {
						core.AddBatch(&l, keys[i&mask:i&mask+256], nil)
					}
				})
				out := make([]bool, 256)
				b.Run(size+"CheckBatch256"+tail, func(b *testing.B) {
					for i := 0; i < b.N; i += 256 {
						core.ContainsBatch(&l, keys[i&mask:i&mask+256], out)
					}
				})
			}
		}
	}
}
