package sketch

// Benchmarks. Every figure is ns per key: single-key benchmarks do one key
// per op, batch benchmarks count b.N keys (in calls of benchBatch keys), and
// the parallel ones split b.N keys across their goroutines. The baseline
// (sync.Mutex + map) and, in the cgo build, an empty cgo call run in the
// same invocation, so ratios come from one run:
//
//	go test -run='^$' -bench='CountMin|MutexMap|CgoCall' -count=5 -benchtime=200ms . | tee bench.txt
//	benchstat bench.txt
//
// Names are Benchmark<Op>/<shape>/<dist>/<core>: shapes A (in L1/L2), the
// default, B (in L2/L3), C (160 MiB: past the caches on most machines) and
// D (640 MiB: past the 260 MiB L3 some server CPUs report);
// dists zipf and uniform; cores go (the public call, or countMinGo for batches
// and walks) and c (countMinCgo, cgo builds only; bench_cgo_test.go).
//
// Setup (keys, sketches, maps) happens once per process and is shared by
// every benchmark, so that -count=N and -benchtime=1x stay cheap.

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	benchSeed = 0x5eed_c0de_b10c_0001 // sketch seed and key-stream seed
	// benchSpace is the number of distinct keys of the zipf and uniform
	// streams: 5 rows of 1M keys touch more cache lines than shape C has.
	benchSpace = 1 << 20
	// benchSmallSpace is the number of distinct keys of MutexMap/10k.
	benchSmallSpace = 10_000
	// benchStreamLen is the length of the zipf and uniform streams, a power
	// of two so that a benchmark cycles through one with a mask.
	benchStreamLen = 1 << 19
	// benchSmallStreamLen is the length of the stream over 10k keys.
	benchSmallStreamLen = 1 << 16
	// benchBatch is the number of keys a batch call carries.
	benchBatch = 1024
)

// benchSink keeps results alive so that no loop is optimised away.
var benchSink atomic.Uint64

// benchShape is one sketch geometry.
type benchShape struct {
	name        string
	rows, width int
}

var (
	benchShapes = []benchShape{
		{"A=4x1024", 4, 1 << 10},     // 32 KiB: L1/L2
		{"default=5x4096", 5, 4096},  // 160 KiB: L2
		{"B=7x32768", 7, 1 << 15},    // 1.75 MiB: L2/L3
		{"C=5x4194304", 5, 1 << 22},  // 160 MiB: DRAM (or a very large L3)
		{"D=5x16777216", 5, 1 << 24}, // 640 MiB: past any L3
	}
	benchDefaultShape = benchShapes[1]
)

// benchStream is a stream of keys, each key's bytes laid out in stream
// order (so reading the keys is sequential, as from a network buffer), as
// both []byte and string views of the same bytes.
type benchStream struct {
	name  string
	bytes [][]byte
	strs  []string
}

var benchKeys struct {
	once                sync.Once
	zipf, uniform, u10k benchStream
}

// benchStreams returns the zipf and uniform streams over benchSpace keys,
// and a uniform stream over benchSmallSpace keys.
func benchStreams() (zipf, uniform, u10k *benchStream) {
	k := &benchKeys
	k.once.Do(func() {
		r := rand.New(rand.NewPCG(benchSeed, 1))
		z := rand.NewZipf(r, 1.1, 1, benchSpace-1)
		k.zipf = newBenchStream("zipf", benchStreamLen, z.Uint64)
		r = rand.New(rand.NewPCG(benchSeed, 2))
		k.uniform = newBenchStream("uniform", benchStreamLen, func() uint64 { return r.Uint64N(benchSpace) })
		r = rand.New(rand.NewPCG(benchSeed, 3))
		k.u10k = newBenchStream("uniform10k", benchSmallStreamLen, func() uint64 { return r.Uint64N(benchSmallSpace) })
	})
	return &k.zipf, &k.uniform, &k.u10k
}

// benchDists returns the streams every sketch benchmark runs.
func benchDists() []*benchStream {
	z, u, _ := benchStreams()
	return []*benchStream{z, u}
}

func newBenchStream(name string, n int, next func() uint64) benchStream {
	buf := make([]byte, 0, n*18)
	ends := make([]int, n)
	for i := range ends {
		buf = appendBenchKey(buf, next())
		ends[i] = len(buf)
	}
	str := string(buf)
	s := benchStream{name: name, bytes: make([][]byte, n), strs: make([]string, n)}
	start := 0
	for i, end := range ends {
		s.bytes[i] = buf[start:end:end]
		s.strs[i] = str[start:end]
		start = end
	}
	return s
}

// benchSegments are URL path segments, 5.3 bytes long on average.
var benchSegments = [...]string{"api", "v2", "users", "orders", "static", "images", "search", "products", "account", "blog"}

// appendBenchKey appends key number i of the key space: even numbers are
// IPv4 addresses ("203.0.113.7", 13.3 bytes on average), odd ones URL
// paths ("/static/products/rrd4zi", 20.1 bytes): 16.7 bytes on average.
// Keys are distinct because both are made from a bijection of i/2.
func appendBenchKey(dst []byte, i uint64) []byte {
	x := uint32(i>>1) + 0x6A09E667
	x *= 0x9E3779B1
	x ^= x >> 16
	x *= 0x85EBCA6B
	x ^= x >> 13
	if i&1 == 0 {
		for j := 3; j >= 0; j-- {
			dst = strconv.AppendUint(dst, uint64(x>>(8*j)&0xff), 10)
			if j > 0 {
				dst = append(dst, '.')
			}
		}
		return dst
	}
	dst = append(dst, '/')
	dst = append(dst, benchSegments[x%10]...)
	dst = append(dst, '/')
	dst = append(dst, benchSegments[x/10%10]...)
	dst = append(dst, '/')
	return strconv.AppendUint(dst, uint64(x), 36)
}

var benchSketches struct {
	mu sync.Mutex
	m  map[benchShape]*CountMin
}

// benchSketch returns the process's sketch of the given shape, creating it
// on first use in a memfd (a shared mapping, like a file's, without
// writeback) and touching every page so that no benchmark pays the faults.
// The sketches live until the process exits.
func benchSketch(b *testing.B, sh benchShape) *CountMin {
	s := &benchSketches
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.m[sh]; c != nil {
		return c
	}
	cfg := CountMinConfig{Rows: sh.rows, Width: sh.width, Seed: benchSeed}
	c, err := OpenCountMin(Memfd("bench-"+sh.name), cfg)
	if err != nil {
		b.Fatalf("NewCountMinMemfd(%+v): %v", cfg, err)
	}
	if err := c.Reset(); err != nil {
		b.Fatalf("Reset: %v", err)
	}
	if s.m == nil {
		s.m = make(map[benchShape]*CountMin)
	}
	s.m[sh] = c
	return c
}

// coreName is the benchmark name of a core: go or c.
func coreName(core countMinCore) string {
	if core.name() == "purego" {
		return "go"
	}
	return "c"
}

// Single-key C calls, set by bench_cgo_test.go in cgo builds. They loop
// inside, so that the go and c loops are alike.
var (
	benchCAdd      func(b *testing.B, c *CountMin, keys [][]byte)
	benchCEstimate func(b *testing.B, c *CountMin, keys [][]byte)
)

// forShapesDists runs f as <shape>/<dist> sub-benchmarks.
func forShapesDists(b *testing.B, f func(b *testing.B, c *CountMin, s *benchStream)) {
	dists := benchDists()
	for _, sh := range benchShapes {
		c := benchSketch(b, sh)
		b.Run(sh.name, func(b *testing.B) {
			for _, s := range dists {
				b.Run(s.name, func(b *testing.B) { f(b, c, s) })
			}
		})
	}
}

func BenchmarkCountMinAdd(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		b.Run("go", func(b *testing.B) {
			b.ReportAllocs()
			keys, mask := s.bytes, len(s.bytes)-1
			var sum uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, _ := c.Add(keys[i&mask])
				sum += v
			}
			benchSink.Add(sum)
		})
		if benchCAdd != nil {
			b.Run("c", func(b *testing.B) { benchCAdd(b, c, s.bytes) })
		}
	})
}

func BenchmarkCountMinEstimate(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		b.Run("go", func(b *testing.B) {
			b.ReportAllocs()
			keys, mask := s.bytes, len(s.bytes)-1
			var sum uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sum += c.Estimate(keys[i&mask])
			}
			benchSink.Add(sum)
		})
		if benchCEstimate != nil {
			b.Run("c", func(b *testing.B) { benchCEstimate(b, c, s.bytes) })
		}
	})
}

func BenchmarkCountMinAddString(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		b.ReportAllocs()
		keys, mask := s.strs, len(s.strs)-1
		var sum uint64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			v, _ := c.AddString(keys[i&mask])
			sum += v
		}
		benchSink.Add(sum)
	})
}

// BenchmarkCountMinAddBatch calls each core's addBatch with benchBatch keys
// at a time (fewer in the last call) until b.N keys are counted: ns/op is
// per key.
func BenchmarkCountMinAddBatch(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		for _, core := range countMinCores() {
			b.Run(coreName(core), func(b *testing.B) {
				b.ReportAllocs()
				keys := s.bytes
				b.ResetTimer()
				for done, pos := 0, 0; done < b.N; {
					n := min(benchBatch, b.N-done)
					if pos+n > len(keys) {
						pos = 0
					}
					core.addBatch(&c.l, keys[pos:pos+n], 1, nil)
					pos += n
					done += n
				}
			})
		}
	})
}

// BenchmarkCountMinEstimateBatch is BenchmarkCountMinAddBatch for
// estimates.
func BenchmarkCountMinEstimateBatch(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		for _, core := range countMinCores() {
			b.Run(coreName(core), func(b *testing.B) {
				b.ReportAllocs()
				keys := s.bytes
				est := make([]uint64, benchBatch)
				var sum uint64
				b.ResetTimer()
				for done, pos := 0, 0; done < b.N; {
					n := min(benchBatch, b.N-done)
					if pos+n > len(keys) {
						pos = 0
					}
					core.estimateBatch(&c.l, keys[pos:pos+n], est[:n])
					sum += est[0]
					pos += n
					done += n
				}
				benchSink.Add(sum)
			})
		}
	})
}

// BenchmarkCountMinAddParallel counts b.N keys of the stream with the
// public Add on the default shape and on C, split evenly across 1 or 2 goroutines
// started once per run, each at its own place in the stream. ns/op is wall
// time per key, so goroutines=1 over goroutines=2 is the speed-up; keys/s
// says the same as a throughput. In the zipf stream both goroutines keep
// hitting the hot keys' cells.
func BenchmarkCountMinAddParallel(b *testing.B) {
	for _, sh := range []benchShape{benchDefaultShape, benchShapes[3]} {
		c := benchSketch(b, sh)
		b.Run(sh.name, func(b *testing.B) { benchAddParallel(b, c) })
	}
}

func benchAddParallel(b *testing.B, c *CountMin) {
	for _, s := range benchDists() {
		b.Run(s.name, func(b *testing.B) {
			for _, g := range []int{1, 2} {
				b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
					b.ReportAllocs()
					keys, mask := s.bytes, len(s.bytes)-1
					var wg sync.WaitGroup
					b.ResetTimer()
					for w := range g {
						n := (w+1)*b.N/g - w*b.N/g
						off := w * len(keys) / g
						wg.Go(func() {
							var sum uint64
							for i := range n {
								v, _ := c.Add(keys[(off+i)&mask])
								sum += v
							}
							benchSink.Add(sum)
						})
					}
					wg.Wait()
					b.StopTimer()
					if sec := b.Elapsed().Seconds(); sec > 0 {
						b.ReportMetric(float64(b.N)/sec, "keys/s")
					}
				})
			}
		})
	}
}

// BenchmarkCountMinStats is the public Stats, a walk over the whole grid,
// served by each core in turn.
func BenchmarkCountMinStats(b *testing.B) {
	for _, sh := range benchShapes {
		c := benchSketch(b, sh)
		b.Run(sh.name, func(b *testing.B) {
			for _, core := range countMinCores() {
				view := c.withCore(core)
				b.Run(coreName(core), func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						benchSink.Add(view.Stats().Total)
					}
				})
			}
		})
	}
}

// BenchmarkCountMinReset is each core's reset (the public Reset uses the
// faster: Go's clear).
func BenchmarkCountMinReset(b *testing.B) {
	for _, sh := range benchShapes {
		c := benchSketch(b, sh)
		b.Run(sh.name, func(b *testing.B) {
			for _, core := range countMinCores() {
				b.Run(coreName(core), func(b *testing.B) {
					b.ReportAllocs()
					for i := 0; i < b.N; i++ {
						core.reset(&c.l)
					}
				})
			}
		})
	}
}

// mutexMap is the baseline: an exact counter behind one lock.
type mutexMap struct {
	mu sync.Mutex
	m  map[string]uint64
}

var benchMaps struct {
	once      sync.Once
	m10k, m1M *mutexMap
}

// newBenchMap returns a map holding every key of a space of n keys, so
// that the benchmarks measure a counter in its steady state, not growth.
func newBenchMap(n int) *mutexMap {
	m := &mutexMap{m: make(map[string]uint64, n)}
	var buf []byte
	for i := range uint64(n) {
		buf = appendBenchKey(buf[:0], i)
		m.m[string(buf)] = 0
	}
	return m
}

// BenchmarkMutexMap is the baseline: sync.Mutex + map[string]uint64 counting
// the uniform streams over 10k and 1M distinct keys (the latter is the
// sketches' uniform stream). insert is m[k]++ on a key already present,
// lookup is m[k], each under the lock.
func BenchmarkMutexMap(b *testing.B) {
	_, u1M, u10k := benchStreams()
	benchMaps.once.Do(func() {
		benchMaps.m10k = newBenchMap(benchSmallSpace)
		benchMaps.m1M = newBenchMap(benchSpace)
	})
	for _, bm := range []struct {
		name string
		m    *mutexMap
		s    *benchStream
	}{
		{"10k", benchMaps.m10k, u10k},
		{"1M", benchMaps.m1M, u1M},
	} {
		b.Run(bm.name, func(b *testing.B) {
			m, keys, mask := bm.m, bm.s.strs, len(bm.s.strs)-1
			b.Run("insert", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					m.mu.Lock()
					m.m[keys[i&mask]]++
					m.mu.Unlock()
				}
			})
			b.Run("lookup", func(b *testing.B) {
				b.ReportAllocs()
				var sum uint64
				for i := 0; i < b.N; i++ {
					m.mu.Lock()
					sum += m.m[keys[i&mask]]
					m.mu.Unlock()
				}
				benchSink.Add(sum)
			})
		})
	}
}

// BenchmarkCountMinTotal is Total and ErrorBound, which read the add
// count's 64 stripes, beside Stats, which walks the grid.
func BenchmarkCountMinTotal(b *testing.B) {
	c := benchSketch(b, benchDefaultShape)
	b.Run("Total", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			benchSink.Add(c.Total())
		}
	})
	b.Run("ErrorBound", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			benchSink.Add(c.ErrorBound())
		}
	})
	b.Run("Stats", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			benchSink.Add(c.Stats().Total)
		}
	})
}
