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
// dists zipf and uniform; cores go (the public call, or cells.CountMinGo for batches
// and walks) and c (cellsc.CountMin, cgo builds only; bench_cgo_test.go).
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

	"github.com/shmsketch/sketch/internal/cells"
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

// config is the shape's Count-Min config, with the benchmarks' seed.
func (sh benchShape) config() CountMinConfig {
	return CountMinConfig{Rows: sh.rows, Width: sh.width, Seed: benchSeed}
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

// mask is what the benchmarks mask a key's index with: the stream's
// length is a power of two.
func (s *benchStream) mask() int { return len(s.bytes) - 1 }

// firstHalf is the keys of the stream's first half, which the filter
// benchmarks' filters hold.
func (s *benchStream) firstHalf() [][]byte { return s.bytes[:len(s.bytes)/2] }

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

// benchUniform returns the uniform stream over benchSpace keys, which the
// filter benchmarks run: their filters hold its first half.
func benchUniform() *benchStream {
	_, u, _ := benchStreams()
	return u
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

// benchOnce is a structure a benchmark process makes on first use and
// keeps until it exits.
type benchOnce[T any] struct {
	once sync.Once
	v    T
	err  error
}

// get returns what mk made, failing b if it failed.
func (o *benchOnce[T]) get(b testing.TB, mk func() (T, error)) T {
	o.once.Do(func() { o.v, o.err = mk() })
	if o.err != nil {
		b.Fatal(o.err)
	}
	return o.v
}

// benchByShape is a structure of each shape, each made on first use and
// kept until the process exits.
type benchByShape[T any] struct {
	mu sync.Mutex
	m  map[benchShape]T
}

// get returns the structure of shape sh, which open makes if there is
// none yet, failing b if open fails.
func (s *benchByShape[T]) get(b testing.TB, sh benchShape, open func() (T, error)) T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[sh]; ok {
		return v
	}
	v, err := open()
	if err != nil {
		b.Fatalf("%s: %v", sh.name, err)
	}
	if s.m == nil {
		s.m = make(map[benchShape]T)
	}
	s.m[sh] = v
	return v
}

// benchFilter is a Bloom or counting Bloom filter.
type benchFilter interface {
	AddBatch(keys [][]byte, already []bool) error
	Close() error
}

// newBenchFilter returns the filter open makes for capacity, holding keys.
func newBenchFilter[F benchFilter](open func(capacity uint64) (F, error), capacity uint64, keys [][]byte) (F, error) {
	f, err := open(capacity)
	if err == nil && len(keys) > 0 {
		err = f.AddBatch(keys, nil)
	}
	return f, err
}

// openBenchFilter is newBenchFilter for one benchmark, which closes the
// filter when it ends.
func openBenchFilter[F benchFilter](b *testing.B, open func(capacity uint64) (F, error), capacity uint64, keys [][]byte) F {
	f, err := newBenchFilter(open, capacity, keys)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

var benchSketches benchByShape[*CountMin]

// benchSketch returns the process's sketch of the given shape, creating it
// on first use in a memfd (a shared mapping, like a file's, without
// writeback) and touching every page so that no benchmark pays the faults.
// The sketches live until the process exits.
func benchSketch(b *testing.B, sh benchShape) *CountMin {
	return benchSketches.get(b, sh, func() (*CountMin, error) {
		c, err := OpenCountMin(Memfd("bench-"+sh.name), sh.config())
		if err != nil {
			return nil, fmt.Errorf("OpenCountMin(%+v): %w", sh.config(), err)
		}
		return c, c.Reset()
	})
}

// coreName is the benchmark name of a core of any kind: go or c.
func coreName(core interface{ Name() string }) string {
	if core.Name() == "purego" {
		return "go"
	}
	return "c"
}

// benchLoop is a sub-benchmark's timed loop. It returns what benchSink
// keeps, so that no loop is optimised away.
type benchLoop func(b *testing.B) uint64

// runLoop runs loop as b's timed loop, reporting allocations; what was
// done before it is not timed.
func runLoop(b *testing.B, loop benchLoop) {
	b.ReportAllocs()
	b.ResetTimer()
	benchSink.Add(loop(b))
}

// benchOp is one sub-benchmark of a table: its name and its timed loop,
// nil where this build lacks it.
type benchOp struct {
	name string
	loop benchLoop
}

// runOps runs each op's loop as sub-benchmark prefix+name.
func runOps(b *testing.B, prefix string, ops ...benchOp) {
	for _, op := range ops {
		if op.loop != nil {
			b.Run(prefix+op.name, func(b *testing.B) { runLoop(b, op.loop) })
		}
	}
}

// forCores runs the loop mk makes for each Count-Min core as sub-benchmark
// go or c.
func forCores(b *testing.B, mk func(core cells.CountMinCore) benchLoop) {
	for _, core := range countMinCores() {
		runOps(b, "", benchOp{coreName(core), mk(core)})
	}
}

// The C core's single-key loops, set by bench_cgo_test.go in cgo builds
// (one crossing a key), so that the go and c loops are alike.
var benchCAdd, benchCEstimate func(c *CountMin, keys [][]byte) benchLoop

// cLoop is the loop mk makes, nil where this build has no C core.
func cLoop(mk func(c *CountMin, keys [][]byte) benchLoop, c *CountMin, keys [][]byte) benchLoop {
	if mk == nil {
		return nil
	}
	return mk(c, keys)
}

// forShapes runs f as a sub-benchmark per shape, on that shape's sketch.
func forShapes(b *testing.B, shapes []benchShape, f func(b *testing.B, c *CountMin)) {
	for _, sh := range shapes {
		c := benchSketch(b, sh)
		b.Run(sh.name, func(b *testing.B) { f(b, c) })
	}
}

// forShapesDists runs f as <shape>/<dist> sub-benchmarks.
func forShapesDists(b *testing.B, f func(b *testing.B, c *CountMin, s *benchStream)) {
	dists := benchDists()
	forShapes(b, benchShapes, func(b *testing.B, c *CountMin) {
		for _, s := range dists {
			b.Run(s.name, func(b *testing.B) { f(b, c, s) })
		}
	})
}

func BenchmarkCountMinAdd(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		keys, mask := s.bytes, s.mask()
		runOps(b, "", benchOp{"go", func(b *testing.B) (sum uint64) {
			for i := 0; i < b.N; i++ {
				v, _ := c.Add(keys[i&mask])
				sum += v
			}
			return sum
		}}, benchOp{"c", cLoop(benchCAdd, c, keys)})
	})
}

func BenchmarkCountMinEstimate(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		keys, mask := s.bytes, s.mask()
		runOps(b, "", benchOp{"go", func(b *testing.B) (sum uint64) {
			for i := 0; i < b.N; i++ {
				sum += c.Estimate(keys[i&mask])
			}
			return sum
		}}, benchOp{"c", cLoop(benchCEstimate, c, keys)})
	})
}

func BenchmarkCountMinAddString(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		strs, mask := s.strs, s.mask()
		runLoop(b, func(b *testing.B) (sum uint64) {
			for i := 0; i < b.N; i++ {
				v, _ := c.AddString(strs[i&mask])
				sum += v
			}
			return sum
		})
	})
}

// BenchmarkCountMinAddBatch calls each core's addBatch with benchBatch keys
// at a time (fewer in the last call) until b.N keys are counted: ns/op is
// per key.
func BenchmarkCountMinAddBatch(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		keys := s.bytes
		forCores(b, func(core cells.CountMinCore) benchLoop {
			return func(b *testing.B) uint64 {
				for done, pos := 0, 0; done < b.N; {
					n := min(benchBatch, b.N-done)
					if pos+n > len(keys) {
						pos = 0
					}
					core.AddBatch(&c.l, keys[pos:pos+n], 1, nil)
					pos += n
					done += n
				}
				return 0
			}
		})
	})
}

// BenchmarkCountMinEstimateBatch is BenchmarkCountMinAddBatch for
// estimates.
func BenchmarkCountMinEstimateBatch(b *testing.B) {
	forShapesDists(b, func(b *testing.B, c *CountMin, s *benchStream) {
		keys := s.bytes
		forCores(b, func(core cells.CountMinCore) benchLoop {
			est := make([]uint64, benchBatch)
			return func(b *testing.B) (sum uint64) {
				for done, pos := 0, 0; done < b.N; {
					n := min(benchBatch, b.N-done)
					if pos+n > len(keys) {
						pos = 0
					}
					core.EstimateBatch(&c.l, keys[pos:pos+n], est[:n])
					sum += est[0]
					pos += n
					done += n
				}
				return sum
			}
		})
	})
}

// BenchmarkCountMinAddParallel counts b.N keys of the stream with the
// public Add on the default shape and on C, split evenly across 1 or 2 goroutines
// started once per run, each at its own place in the stream. ns/op is wall
// time per key, so goroutines=1 over goroutines=2 is the speed-up; keys/s
// says the same as a throughput. In the zipf stream both goroutines keep
// hitting the hot keys' cells.
func BenchmarkCountMinAddParallel(b *testing.B) {
	forShapes(b, []benchShape{benchDefaultShape, benchShapes[3]}, benchAddParallel)
}

func benchAddParallel(b *testing.B, c *CountMin) {
	for _, s := range benchDists() {
		b.Run(s.name, func(b *testing.B) {
			for _, g := range []int{1, 2} {
				b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
					b.ReportAllocs()
					keys, mask := s.bytes, s.mask()
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
	forShapes(b, benchShapes, func(b *testing.B, c *CountMin) {
		forCores(b, func(core cells.CountMinCore) benchLoop {
			view := c.withCore(core)
			return func(b *testing.B) uint64 {
				for i := 0; i < b.N; i++ {
					benchSink.Add(view.Stats().Total)
				}
				return 0
			}
		})
	})
}

// BenchmarkCountMinReset is each core's reset (the public Reset uses the
// faster: Go's clear).
func BenchmarkCountMinReset(b *testing.B) {
	forShapes(b, benchShapes, func(b *testing.B, c *CountMin) {
		forCores(b, func(core cells.CountMinCore) benchLoop {
			return func(b *testing.B) uint64 {
				for i := 0; i < b.N; i++ {
					core.Reset(&c.l)
				}
				return 0
			}
		})
	})
}

// mutexMap is the baseline: an exact counter behind one lock.
type mutexMap struct {
	mu sync.Mutex
	m  map[string]uint64
}

// benchMaps are the baselines over 10k and 1M keys.
var benchMaps benchOnce[[2]*mutexMap]

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
	maps := benchMaps.get(b, func() ([2]*mutexMap, error) {
		return [2]*mutexMap{newBenchMap(benchSmallSpace), newBenchMap(benchSpace)}, nil
	})
	for _, bm := range []struct {
		name string
		m    *mutexMap
		s    *benchStream
	}{
		{"10k", maps[0], u10k},
		{"1M", maps[1], u1M},
	} {
		m, keys, mask := bm.m, bm.s.strs, bm.s.mask()
		b.Run(bm.name, func(b *testing.B) {
			runOps(b, "", benchOp{"insert", func(b *testing.B) uint64 {
				for i := 0; i < b.N; i++ {
					m.mu.Lock()
					m.m[keys[i&mask]]++
					m.mu.Unlock()
				}
				return 0
			}}, benchOp{"lookup", func(b *testing.B) (sum uint64) {
				for i := 0; i < b.N; i++ {
					m.mu.Lock()
					sum += m.m[keys[i&mask]]
					m.mu.Unlock()
				}
				return sum
			}})
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
