//go:build linux

package sketch

// Benchmarks of the Count-Min window beside a plain Count-Min sketch of the
// same shape, in the same run, so that the ratios come from one run:
//
//	go test -run='^$' -bench='CountMinWindow' -count=5 -benchtime=200ms . | tee window.txt
//	CGO_ENABLED=0 go test -run='^$' -bench='CountMinWindow' -count=5 -benchtime=200ms . | tee -a window.txt
//
// Names are BenchmarkCountMinWindow<Op>/<shape>/<structure>[/<core>]:
// structure plain (a CountMin) or keep=2 (a window of two periods of an
// hour). Single keys are served in Go in both builds; batches by each core
// (go, and c in cgo builds). ns/op is per key.

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchSpan is the window the benchmarks run: two periods of an hour, so
// that no period turns during a run.
var benchSpan = Window{Period: time.Hour, Keep: 2}

var benchWindows benchByShape[*CountMinWindow]

// benchWindow returns the process's window of the given shape, created
// once in a memfd with the plain sketch's seed; three Rotates clear every
// slot, so no benchmark pays the page faults.
func benchWindow(b *testing.B, sh benchShape) *CountMinWindow {
	return benchWindows.get(b, sh, func() (*CountMinWindow, error) {
		w, err := OpenCountMinWindow(Memfd("bench-window-"+sh.name), CountMinWindowConfig{Window: benchSpan, CountMin: sh.config()})
		for i := 0; i < 3 && err == nil; i++ {
			err = w.Rotate()
		}
		return w, err
	})
}

// benchWindowShapes are the shapes the window runs: in L2 and past it.
var benchWindowShapes = []benchShape{benchDefaultShape, benchShapes[2]}

// runPlainWindow runs plain and window as the sub-benchmarks <name>/plain
// and <name>/keep=2.
func runPlainWindow(b *testing.B, name string, plain, window benchLoop) {
	b.Run(name, func(b *testing.B) { runOps(b, "", benchOp{"plain", plain}, benchOp{"keep=2", window}) })
}

// forWindowShapes runs the plain and window loops mk makes per shape, over
// the zipf stream.
func forWindowShapes(b *testing.B, mk func(c *CountMin, w *CountMinWindow, keys [][]byte, mask int) (plain, window benchLoop)) {
	z, _, _ := benchStreams()
	for _, sh := range benchWindowShapes {
		plain, window := mk(benchSketch(b, sh), benchWindow(b, sh), z.bytes, z.mask())
		runPlainWindow(b, sh.name, plain, window)
	}
}

// withCoreSet is loop run with *field set to core, and set back after.
func withCoreSet[C any](field *C, core C, loop benchLoop) benchLoop {
	return func(b *testing.B) uint64 {
		old := *field
		*field = core
		defer func() { *field = old }()
		return loop(b)
	}
}

// benchBatches calls op on batches of benchBatch keys (fewer in the last)
// until b.N keys are done, from the stream's start again where it ends.
func benchBatches(b *testing.B, keys [][]byte, op func(keys [][]byte)) {
	for done, pos := 0, 0; done < b.N; {
		n := min(benchBatch, b.N-done)
		if pos+n > len(keys) {
			pos = 0
		}
		op(keys[pos : pos+n])
		pos += n
		done += n
	}
}

// BenchmarkCountMinWindowAdd is Add, which returns the estimate: over the
// window for the window.
func BenchmarkCountMinWindowAdd(b *testing.B) {
	forWindowShapes(b, func(c *CountMin, w *CountMinWindow, keys [][]byte, mask int) (plain, window benchLoop) {
		plain = func(b *testing.B) (sum uint64) {
			for i := 0; b.Loop(); i++ {
				v, _ := c.Add(keys[i&mask])
				sum += v
			}
			return sum
		}
		window = func(b *testing.B) (sum uint64) {
			for i := 0; b.Loop(); i++ {
				v, _ := w.Add(keys[i&mask])
				sum += v
			}
			return sum
		}
		return plain, window
	})
}

// BenchmarkCountMinWindowEstimate is Estimate: over the window's two
// slots for the window.
func BenchmarkCountMinWindowEstimate(b *testing.B) {
	forWindowShapes(b, func(c *CountMin, w *CountMinWindow, keys [][]byte, mask int) (plain, window benchLoop) {
		plain = func(b *testing.B) (sum uint64) {
			for i := 0; b.Loop(); i++ {
				sum += c.Estimate(keys[i&mask])
			}
			return sum
		}
		window = func(b *testing.B) (sum uint64) {
			for i := 0; b.Loop(); i++ {
				sum += w.Estimate(keys[i&mask])
			}
			return sum
		}
		return plain, window
	})
}

// BenchmarkCountMinWindowAllow is Allow of keys under a limit no key
// reaches, beside Add of the same keys in the same window (the decision's
// cost over the add): Allow/Add of ns/op is the ratio Allow's doc quotes.
// Each also reports cpu-ns/op, the thread's CPU time per call, which a
// machine shared with other work does not inflate by descheduling the
// benchmark (it still shares the caches).
func BenchmarkCountMinWindowAllow(b *testing.B) {
	z, _, _ := benchStreams()
	w := benchWindow(b, benchWindowShapes[0])
	keys, mask := z.bytes, len(z.bytes)-1
	b.Run("Add", func(b *testing.B) {
		b.ReportAllocs()
		var sum uint64
		withThreadCPU(b, func() {
			for i := 0; b.Loop(); i++ {
				v, _ := w.Add(keys[i&mask])
				sum += v
			}
		})
		benchSink.Add(sum)
	})
	for _, count := range []bool{true, false} {
		b.Run(fmt.Sprintf("Allow/countRefused=%v", count), func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			withThreadCPU(b, func() {
				for i := 0; b.Loop(); i++ {
					d, _ := w.Allow(keys[i&mask], math.MaxUint64, count)
					sum += d.Estimate()
				}
			})
			benchSink.Add(sum)
		})
	}
}

// BenchmarkCountMinWindowAllowFleet is Allow on windows of shape A (in
// L1 and L2) and the default shape without a fleet part (local) and with
// one (fleet: every counter
// read is own + fleet, a second cache line a row), in one run, so the
// ratio fleet/local is what syncing a window costs its decisions:
//
//	go test -run='^$' -bench='CountMinWindowAllowFleet' -count=8 -benchtime=300ms .
func BenchmarkCountMinWindowAllowFleet(b *testing.B) {
	z, _, _ := benchStreams()
	keys, mask := z.bytes, len(z.bytes)-1
	for _, sh := range []benchShape{benchShapes[0], benchDefaultShape} {
		b.Run(sh.name, func(b *testing.B) { allowFleetShape(b, sh, keys, mask) })
	}
}

// allowFleetShape runs BenchmarkCountMinWindowAllowFleet's two windows of
// shape sh.
func allowFleetShape(b *testing.B, sh benchShape, keys [][]byte, mask int) {
	for _, fleet := range []bool{false, true} {
		cfg := sh.config()
		cfg.Fleet = fleet
		w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: benchSpan, CountMin: cfg})
		if err != nil {
			b.Fatal(err)
		}
		for range 3 { // every slot cleared: no page faults in the loop
			if err := w.Rotate(); err != nil {
				b.Fatal(err)
			}
		}
		name := map[bool]string{false: "local", true: "fleet"}[fleet]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			for i := 0; b.Loop(); i++ {
				d, _ := w.Allow(keys[i&mask], math.MaxUint64, true)
				sum += d.Estimate()
			}
			benchSink.Add(sum)
		})
		w.Close()
	}
}

// withThreadCPU runs loop, a b.Loop loop, on one thread and reports that
// thread's CPU time per iteration as cpu-ns/op.
func withThreadCPU(b *testing.B, loop func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var t0, t1 unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
	loop()
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
	if b.N > 0 {
		b.ReportMetric(float64(t1.Nano()-t0.Nano())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkCountMinWindowTotal is Total: the add count for the plain
// sketch; for the window, its cache (served) or a walk of one row of each
// slot (refreshed: every call after the cache's life).
func BenchmarkCountMinWindowTotal(b *testing.B) {
	forWindowShapes(b, func(c *CountMin, w *CountMinWindow, _ [][]byte, _ int) (plain, window benchLoop) {
		plain = func(b *testing.B) (sum uint64) {
			for b.Loop() {
				sum += c.Total()
			}
			return sum
		}
		window = func(b *testing.B) uint64 {
			runOps(b, "", benchOp{"served", func(b *testing.B) (sum uint64) {
				for b.Loop() {
					sum += w.Total()
				}
				return sum
			}}, benchOp{"refreshed", func(b *testing.B) (sum uint64) {
				for b.Loop() {
					w.totals.at.Store(0)
					sum += w.Total()
				}
				return sum
			}})
			return 0
		}
		return plain, window
	})
}

// BenchmarkCountMinWindowAddBatch is AddBatch of benchBatch keys with
// estimates, through each core.
func BenchmarkCountMinWindowAddBatch(b *testing.B) {
	est := make([]uint64, benchBatch)
	for _, core := range countMinCores() {
		b.Run(coreName(core), func(b *testing.B) {
			forWindowShapes(b, func(c *CountMin, w *CountMinWindow, keys [][]byte, _ int) (plain, window benchLoop) {
				plain = withCoreSet(&c.core, core, func(b *testing.B) uint64 {
					benchBatches(b, keys, func(k [][]byte) { c.AddBatch(k, est[:len(k)]) })
					return 0
				})
				window = withCoreSet(&w.core, core, func(b *testing.B) uint64 {
					benchBatches(b, keys, func(k [][]byte) { w.AddBatch(k, est[:len(k)]) })
					return 0
				})
				return plain, window
			})
		})
	}
}

// BenchmarkCountMinWindowRotate is one turn: the epoch moves and the spare
// slot is cleared (the default shape: 160 KiB).
func BenchmarkCountMinWindowRotate(b *testing.B) {
	w := benchWindow(b, benchDefaultShape)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Rotate(); err != nil {
			b.Fatal(err)
		}
	}
}

// Benchmarks of the Bloom window beside a plain Bloom filter of the same
// size, in the same run, so that the ratios come from one run:
//
//	go test -run='^$' -bench='BloomWindow' -count=5 -benchtime=200ms . | tee bwindow.txt
//	CGO_ENABLED=0 go test -run='^$' -bench='BloomWindow' -count=5 -benchtime=200ms . | tee -a bwindow.txt
//
// Names are BenchmarkBloomWindow<Op>/[<core>/]<size>/<structure>: size the
// bits of one filter (1% for 10k keys: in cache; for 1M: past L2),
// structure plain (a Bloom) or keep=2 (a window of two periods of an
// hour). The plain filter holds the uniform stream's first half; the
// window its first quarter in the previous period and its second quarter
// in the current one, so half the keys are in either, and an absent key
// costs the window a check of both slots. Single keys are served in Go in
// both builds; batches by each core. ns/op is per key.

// benchBloomPair returns a new plain filter and window of one capacity,
// filled as above, with the plain filter's seed.
func benchBloomPair(b *testing.B, capacity uint64) (*Bloom, *BloomWindow) {
	u := benchUniform()
	cfg := BloomConfig{Capacity: capacity, FPRate: 0.01, Seed: benchSeed}
	f, err := OpenBloom(Memory(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	w, err := OpenBloomWindow(Memfd("bench-bloom-window"), BloomWindowConfig{Window: benchSpan, Bloom: cfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	n := len(u.bytes)
	for i := range 3 { // every slot touched: no benchmark pays the page faults
		if err := w.Rotate(); err != nil {
			b.Fatal(err)
		}
		if err := w.AddBatch(u.bytes[i*n/4:(i+1)*n/4], nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.AddBatch(u.bytes[:n/2], nil); err != nil {
		b.Fatal(err)
	}
	return f, w
}

// forBloomWindowSizes runs the plain and window loops mk makes per size,
// over the uniform stream.
func forBloomWindowSizes(b *testing.B, mk func(f *Bloom, w *BloomWindow, keys [][]byte, mask int) (plain, window benchLoop)) {
	u := benchUniform()
	for _, capacity := range []uint64{10_000, 1_000_000} {
		f, w := benchBloomPair(b, capacity)
		plain, window := mk(f, w, u.bytes, u.mask())
		runPlainWindow(b, bloomBenchName(f), plain, window)
	}
}

// BenchmarkBloomWindowAdd is Add, which answers for the window: a key the
// current slot lacks is looked for in the previous one.
func BenchmarkBloomWindowAdd(b *testing.B) {
	forBloomWindowSizes(b, func(f *Bloom, w *BloomWindow, keys [][]byte, mask int) (plain, window benchLoop) {
		plain = func(b *testing.B) (n uint64) {
			for i := 0; b.Loop(); i++ {
				if a, _ := f.Add(keys[i&mask]); a {
					n++
				}
			}
			return n
		}
		window = func(b *testing.B) (n uint64) {
			for i := 0; b.Loop(); i++ {
				if a, _ := w.Add(keys[i&mask]); a {
					n++
				}
			}
			return n
		}
		return plain, window
	})
}

// BenchmarkBloomWindowCheck is Check: up to both slots for the window.
func BenchmarkBloomWindowCheck(b *testing.B) {
	forBloomWindowSizes(b, func(f *Bloom, w *BloomWindow, keys [][]byte, mask int) (plain, window benchLoop) {
		plain = func(b *testing.B) (n uint64) {
			for i := 0; b.Loop(); i++ {
				if f.Contains(keys[i&mask]) {
					n++
				}
			}
			return n
		}
		window = func(b *testing.B) (n uint64) {
			for i := 0; b.Loop(); i++ {
				if w.Contains(keys[i&mask]) {
					n++
				}
			}
			return n
		}
		return plain, window
	})
}

// forBloomWindowBatches runs AddBatch (add) or CheckBatch with answers
// through each core, benchBatch keys a call.
func forBloomWindowBatches(b *testing.B, add bool) {
	out := make([]bool, benchBatch)
	for _, core := range bloomCores() {
		b.Run(coreName(core), func(b *testing.B) {
			forBloomWindowSizes(b, func(f *Bloom, w *BloomWindow, keys [][]byte, _ int) (plain, window benchLoop) {
				plain = func(b *testing.B) uint64 {
					f := f.withCore(core)
					op := func(k [][]byte) { f.ContainsBatch(k, out[:len(k)]) }
					if add {
						op = func(k [][]byte) { f.AddBatch(k, out[:len(k)]) }
					}
					benchBatches(b, keys, op)
					return 0
				}
				window = withCoreSet(&w.core, core, func(b *testing.B) uint64 {
					op := func(k [][]byte) { w.ContainsBatch(k, out[:len(k)]) }
					if add {
						op = func(k [][]byte) { w.AddBatch(k, out[:len(k)]) }
					}
					benchBatches(b, keys, op)
					return 0
				})
				return plain, window
			})
		})
	}
}

// BenchmarkBloomWindowAddBatch is AddBatch with answers, through each
// core.
func BenchmarkBloomWindowAddBatch(b *testing.B) { forBloomWindowBatches(b, true) }

// BenchmarkBloomWindowCheckBatch is CheckBatch, through each core.
func BenchmarkBloomWindowCheckBatch(b *testing.B) { forBloomWindowBatches(b, false) }

// BenchmarkBloomWindowRotate is one turn: the epoch moves and the spare
// slot (1% for 1M keys: 1.2 MiB) is cleared.
func BenchmarkBloomWindowRotate(b *testing.B) {
	_, w := benchBloomPair(b, 1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Rotate(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCountMinWindowLanes is BenchmarkCountMinLanes on a Count-Min
// window of two periods (turned by Rotate only, so none turns during a
// run): the zipf stream added blind (AddBatch without estimates, 64 keys
// a call) to the default shape from 1 or 2 writers, goroutines each with
// a handle of its own on one file (as processes have) or of one handle,
// with 1 lane (a window's layout without lanes) and with 2. ns/op is wall
// time a key: writers=1 over writers=2 is the speed-up.
func BenchmarkCountMinWindowLanes(b *testing.B) {
	z, _, _ := benchStreams()
	for _, lanes := range []int{1, 2} {
		for _, mode := range []string{"handles", "onehandle"} {
			for _, writers := range []int{1, 2} {
				if mode == "onehandle" && writers == 1 {
					continue // the same as one handle
				}
				b.Run(fmt.Sprintf("lanes=%d/%s/writers=%d", lanes, mode, writers), func(b *testing.B) {
					benchWindowLaneWriters(b, z.bytes, lanes, writers, mode == "onehandle")
				})
			}
		}
	}
}

func benchWindowLaneWriters(b *testing.B, keys [][]byte, lanes, writers int, oneHandle bool) {
	path := filepath.Join(b.TempDir(), "lanes")
	cfg := CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: benchDefaultShape.rows, Width: benchDefaultShape.width, Lanes: lanes}}
	hs := make([]*CountMinWindow, writers)
	for i := range hs {
		if i > 0 && oneHandle {
			hs[i] = hs[0]
			continue
		}
		w, err := OpenCountMinWindow(Path(path), cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		hs[i] = w
	}
	const batch = 64
	var wg sync.WaitGroup
	b.ResetTimer()
	for i, w := range hs {
		n := (i+1)*b.N/writers - i*b.N/writers
		off := i * len(keys) / writers
		wg.Go(func() {
			for done := 0; done < n; done += batch {
				at := (off + done) % (len(keys) - batch)
				w.AddBatch(keys[at:at+min(batch, n-done)], nil)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "keys/s")
	}
}
