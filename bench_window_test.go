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
	w, err := NewCountMinWindowMemfd("bench-window-"+sh.name, Window{Period: time.Hour, Keep: 2}, cfg)
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
	for _, core := range cores() {
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
