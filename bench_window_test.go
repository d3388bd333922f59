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
	"sync"
	"testing"
	"time"
)

var benchWindows struct {
	mu sync.Mutex
	m  map[benchShape]*CountMinWindow
}

// benchWindow returns the process's window of the given shape, created
// once in a memfd with the plain sketch's seed; three Rotates clear every
// slot, so no benchmark pays the page faults.
func benchWindow(b *testing.B, sh benchShape) *CountMinWindow {
	s := &benchWindows
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.m[sh]; w != nil {
		return w
	}
	cfg := CountMinConfig{Rows: sh.rows, Width: sh.width, Seed: benchSeed}
	w, err := OpenCountMinWindow(Memfd("bench-window-"+sh.name), CountMinWindowConfig{Window: Window{Period: time.Hour, Keep: 2}, CountMin: cfg})
	if err != nil {
		b.Fatalf("NewCountMinWindowMemfd(%+v): %v", cfg, err)
	}
	for range 3 {
		if err := w.Rotate(); err != nil {
			b.Fatal(err)
		}
	}
	if s.m == nil {
		s.m = make(map[benchShape]*CountMinWindow)
	}
	s.m[sh] = w
	return w
}

// benchWindowShapes are the shapes the window runs: in L2 and past it.
var benchWindowShapes = []benchShape{benchDefaultShape, benchShapes[2]}

// forWindowShapes runs plain and window sub-benchmarks per shape over the
// zipf stream.
func forWindowShapes(b *testing.B, plain func(b *testing.B, c *CountMin, keys [][]byte), window func(b *testing.B, w *CountMinWindow, keys [][]byte)) {
	z, _, _ := benchStreams()
	for _, sh := range benchWindowShapes {
		c, w := benchSketch(b, sh), benchWindow(b, sh)
		b.Run(sh.name, func(b *testing.B) {
			b.Run("plain", func(b *testing.B) { plain(b, c, z.bytes) })
			b.Run("keep=2", func(b *testing.B) { window(b, w, z.bytes) })
		})
	}
}

// BenchmarkCountMinWindowAdd is Add, which returns the estimate: over the
// window for the window.
func BenchmarkCountMinWindowAdd(b *testing.B) {
	forWindowShapes(b, func(b *testing.B, c *CountMin, keys [][]byte) {
		b.ReportAllocs()
		mask := len(keys) - 1
		var sum uint64
		for i := 0; b.Loop(); i++ {
			v, _ := c.Add(keys[i&mask])
			sum += v
		}
		benchSink.Add(sum)
	}, func(b *testing.B, w *CountMinWindow, keys [][]byte) {
		b.ReportAllocs()
		mask := len(keys) - 1
		var sum uint64
		for i := 0; b.Loop(); i++ {
			v, _ := w.Add(keys[i&mask])
			sum += v
		}
		benchSink.Add(sum)
	})
}

// BenchmarkCountMinWindowEstimate is Estimate: over the window's two
// slots for the window.
func BenchmarkCountMinWindowEstimate(b *testing.B) {
	forWindowShapes(b, func(b *testing.B, c *CountMin, keys [][]byte) {
		b.ReportAllocs()
		mask := len(keys) - 1
		var sum uint64
		for i := 0; b.Loop(); i++ {
			sum += c.Estimate(keys[i&mask])
		}
		benchSink.Add(sum)
	}, func(b *testing.B, w *CountMinWindow, keys [][]byte) {
		b.ReportAllocs()
		mask := len(keys) - 1
		var sum uint64
		for i := 0; b.Loop(); i++ {
			sum += w.Estimate(keys[i&mask])
		}
		benchSink.Add(sum)
	})
}

// BenchmarkCountMinWindowTotal is Total: the add count for the plain
// sketch; for the window, its cache (served) or a walk of one row of each
// slot (refreshed: every call after the cache's life).
func BenchmarkCountMinWindowTotal(b *testing.B) {
	forWindowShapes(b, func(b *testing.B, c *CountMin, keys [][]byte) {
		b.ReportAllocs()
		var sum uint64
		for b.Loop() {
			sum += c.Total()
		}
		benchSink.Add(sum)
	}, func(b *testing.B, w *CountMinWindow, keys [][]byte) {
		b.Run("served", func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			for b.Loop() {
				sum += w.Total()
			}
			benchSink.Add(sum)
		})
		b.Run("refreshed", func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			for b.Loop() {
				w.totals.at.Store(0)
				sum += w.Total()
			}
			benchSink.Add(sum)
		})
	})
}

// BenchmarkCountMinWindowAddBatch is AddBatch of benchBatch keys with
// estimates, through each core.
func BenchmarkCountMinWindowAddBatch(b *testing.B) {
	est := make([]uint64, benchBatch)
	batches := func(b *testing.B, keys [][]byte, add func(keys [][]byte)) {
		b.ReportAllocs()
		for done, pos := 0, 0; done < b.N; {
			n := min(benchBatch, b.N-done)
			if pos+n > len(keys) {
				pos = 0
			}
			add(keys[pos : pos+n])
			pos += n
			done += n
		}
	}
	for _, core := range countMinCores() {
		b.Run(coreName(core), func(b *testing.B) {
			forWindowShapes(b, func(b *testing.B, c *CountMin, keys [][]byte) {
				old := c.core
				c.core = core
				defer func() { c.core = old }()
				batches(b, keys, func(k [][]byte) { c.AddBatch(k, est[:len(k)]) })
			}, func(b *testing.B, w *CountMinWindow, keys [][]byte) {
				old := w.core
				w.core = core
				defer func() { w.core = old }()
				batches(b, keys, func(k [][]byte) { w.AddBatch(k, est[:len(k)]) })
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
	_, u, _ := benchStreams()
	cfg := BloomConfig{Capacity: capacity, FPRate: 0.01, Seed: benchSeed}
	f, err := OpenBloom(Memory(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	w, err := OpenBloomWindow(Memfd("bench-bloom-window"), BloomWindowConfig{Window: Window{Period: time.Hour, Keep: 2}, Bloom: cfg})
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

// forBloomWindowSizes runs plain and window sub-benchmarks per size over
// the uniform stream.
func forBloomWindowSizes(b *testing.B, plain func(b *testing.B, f *Bloom, keys [][]byte), window func(b *testing.B, w *BloomWindow, keys [][]byte)) {
	_, u, _ := benchStreams()
	for _, capacity := range []uint64{10_000, 1_000_000} {
		f, w := benchBloomPair(b, capacity)
		b.Run(bloomBenchName(f), func(b *testing.B) {
			b.Run("plain", func(b *testing.B) { plain(b, f, u.bytes) })
			b.Run("keep=2", func(b *testing.B) { window(b, w, u.bytes) })
		})
	}
}

// BenchmarkBloomWindowAdd is Add, which answers for the window: a key the
// current slot lacks is looked for in the previous one.
func BenchmarkBloomWindowAdd(b *testing.B) {
	forBloomWindowSizes(b, func(b *testing.B, f *Bloom, keys [][]byte) {
		b.ReportAllocs()
		mask, n := len(keys)-1, 0
		for i := 0; b.Loop(); i++ {
			if a, _ := f.Add(keys[i&mask]); a {
				n++
			}
		}
		benchSink.Add(uint64(n))
	}, func(b *testing.B, w *BloomWindow, keys [][]byte) {
		b.ReportAllocs()
		mask, n := len(keys)-1, 0
		for i := 0; b.Loop(); i++ {
			if a, _ := w.Add(keys[i&mask]); a {
				n++
			}
		}
		benchSink.Add(uint64(n))
	})
}

// BenchmarkBloomWindowCheck is Check: up to both slots for the window.
func BenchmarkBloomWindowCheck(b *testing.B) {
	forBloomWindowSizes(b, func(b *testing.B, f *Bloom, keys [][]byte) {
		b.ReportAllocs()
		mask, n := len(keys)-1, 0
		for i := 0; b.Loop(); i++ {
			if f.Contains(keys[i&mask]) {
				n++
			}
		}
		benchSink.Add(uint64(n))
	}, func(b *testing.B, w *BloomWindow, keys [][]byte) {
		b.ReportAllocs()
		mask, n := len(keys)-1, 0
		for i := 0; b.Loop(); i++ {
			if w.Contains(keys[i&mask]) {
				n++
			}
		}
		benchSink.Add(uint64(n))
	})
}

// benchBloomBatches calls op on batches of benchBatch keys until b.N keys
// are done.
func benchBloomBatches(b *testing.B, keys [][]byte, op func(keys [][]byte)) {
	b.ReportAllocs()
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

// BenchmarkBloomWindowAddBatch is AddBatch with answers, through each
// core.
func BenchmarkBloomWindowAddBatch(b *testing.B) {
	out := make([]bool, benchBatch)
	for _, core := range bloomCores() {
		b.Run(bloomCoreName(core), func(b *testing.B) {
			forBloomWindowSizes(b, func(b *testing.B, f *Bloom, keys [][]byte) {
				f = f.withCore(core)
				benchBloomBatches(b, keys, func(k [][]byte) { f.AddBatch(k, out[:len(k)]) })
			}, func(b *testing.B, w *BloomWindow, keys [][]byte) {
				old := w.core
				w.core = core
				defer func() { w.core = old }()
				benchBloomBatches(b, keys, func(k [][]byte) { w.AddBatch(k, out[:len(k)]) })
			})
		})
	}
}

// BenchmarkBloomWindowCheckBatch is CheckBatch, through each core.
func BenchmarkBloomWindowCheckBatch(b *testing.B) {
	out := make([]bool, benchBatch)
	for _, core := range bloomCores() {
		b.Run(bloomCoreName(core), func(b *testing.B) {
			forBloomWindowSizes(b, func(b *testing.B, f *Bloom, keys [][]byte) {
				f = f.withCore(core)
				benchBloomBatches(b, keys, func(k [][]byte) { f.ContainsBatch(k, out[:len(k)]) })
			}, func(b *testing.B, w *BloomWindow, keys [][]byte) {
				old := w.core
				w.core = core
				defer func() { w.core = old }()
				benchBloomBatches(b, keys, func(k [][]byte) { w.ContainsBatch(k, out[:len(k)]) })
			})
		})
	}
}

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
