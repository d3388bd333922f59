//go:build linux

package sketch

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkGCRAAllow: a rate limiter's decision against a Count-Min
// window's Add of the same shape (the default, 5 x 4096: a key's cells in
// five rows), in one run, on the zipf stream: the yardstick is a
// decision at most 1.2 window Adds. The limiter allows everything (so
// every decision writes, the dearer case) or nearly nothing (reads
// only). AllowAt saves the clock read, to show what it costs.
func BenchmarkGCRAAllow(b *testing.B) {
	z, _, _ := benchStreams()
	keys, mask := z.bytes, len(z.bytes)-1
	sh := benchDefaultShape
	w := benchWindow(b, sh)
	b.Run("window-Add", func(b *testing.B) {
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
	for _, tc := range []struct {
		name string
		cfg  GCRAConfig
	}{
		{"allowing", GCRAConfig{Rate: Rate{Count: 1e9, Per: time.Second}, Burst: 1 << 20}},
		{"refusing", GCRAConfig{Rate: Rate{Count: 1, Per: time.Hour}, Burst: 0}},
	} {
		tc.cfg.Rows, tc.cfg.Width, tc.cfg.Seed = sh.rows, sh.width, benchSeed
		g, err := OpenGCRA(Memory(), tc.cfg)
		if err != nil {
			b.Fatal(err)
		}
		defer g.Close()
		b.Run(fmt.Sprintf("GCRA-Allow/%s", tc.name), func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			withThreadCPU(b, func() {
				for i := 0; b.Loop(); i++ {
					d, _ := g.Allow(keys[i&mask], 1)
					sum += d.Remaining
				}
			})
			benchSink.Add(sum)
		})
		at := time.Now()
		b.Run(fmt.Sprintf("GCRA-AllowAt/%s", tc.name), func(b *testing.B) {
			b.ReportAllocs()
			var sum uint64
			withThreadCPU(b, func() {
				for i := 0; b.Loop(); i++ {
					d, _ := g.AllowAt(keys[i&mask], 1, at)
					sum += d.Remaining
				}
			})
			benchSink.Add(sum)
		})
	}
	// Two limits decided together: a rate limiter allowing everything and
	// a window whose limit nothing reaches, so that each decision reads
	// the rate limiter, then counts in the window and the rate limiter.
	g, err := OpenGCRA(Memory(), GCRAConfig{Rate: Rate{Count: 1e9, Per: time.Second}, Burst: 1 << 20, Rows: sh.rows, Width: sh.width, Seed: benchSeed})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ls, err := NewLimits(g, WindowLimit{w, 1 << 62})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Limits-Allow/gcra+window", func(b *testing.B) {
		b.ReportAllocs()
		var sum int
		withThreadCPU(b, func() {
			for i := 0; b.Loop(); i++ {
				d, _ := ls.Allow(keys[i&mask], 1)
				sum += d.Refused
			}
		})
		benchSink.Add(uint64(sum))
	})
}

// BenchmarkGCRAAllowBatch: batches of decisions in each core of the build
// (go, and c in cgo builds) beside a window's AddBatch of the same shape
// in the same core, per key.
func BenchmarkGCRAAllowBatch(b *testing.B) {
	z, _, _ := benchStreams()
	keys := z.bytes
	sh := benchDefaultShape
	w := benchWindow(b, sh)
	g, err := OpenGCRA(Memory(), GCRAConfig{Rate: Rate{Count: 1e9, Per: time.Second}, Burst: 1 << 20, Rows: sh.rows, Width: sh.width, Seed: benchSeed})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	est := make([]uint64, benchBatch)
	out := make([]RateDecision, benchBatch)
	for i, b0 := range testBackends() {
		wc, gc := countMinCores()[i], b0.GCRA
		b.Run(coreName(wc)+"/window-AddBatch", func(b *testing.B) {
			saved := w.core
			w.core = wc
			defer func() { w.core = saved }()
			benchBatches(b, keys, func(k [][]byte) { w.AddBatch(k, est[:len(k)]) })
		})
		b.Run(coreName(wc)+"/GCRA-AllowBatch", func(b *testing.B) {
			g.core = gc
			benchBatches(b, keys, func(k [][]byte) { g.AllowBatch(k, 1, out[:len(k)]) })
		})
	}
}
