package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/bench/internal/floor"
)

// newFloor maps the bare floor (bench/internal/floor) of rows x width
// counters, unmapped when the benchmark ends.
func newFloor(b *testing.B, rows, width int) *floor.Grid {
	f, err := floor.New(rows, width, seed, false)
	if err != nil {
		b.Skipf("floor: %v", err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// defaultShape is sketch's default shape: 5 rows of 4096.
func defaultShape() (rows, width int) { return 5, 4096 }

// BenchmarkFloor measures sketch.CountMin's Add and Estimate beside the
// bare floor in one run: "sketch" against "floor" is what the product's
// header, add count and checks cost.
func BenchmarkFloor(b *testing.B) {
	rows, width := defaultShape()
	for _, s := range keyStreams() {
		keys, mask := s.bytes, s.mask
		b.Run(s.name+"/add/floor", func(b *testing.B) {
			f := newFloor(b, rows, width)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sink += f.Add(keys[i&mask])
			}
		})
		b.Run(s.name+"/add/sketch", func(b *testing.B) {
			c := openSketch(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, _ := c.Add(keys[i&mask])
				sink += v
			}
		})
		b.Run(s.name+"/estimate/floor", func(b *testing.B) {
			f := newFloor(b, rows, width)
			countAll(b, keys, func(k []byte) { f.Add(k) })
			for i := 0; i < b.N; i++ {
				sink += f.Estimate(keys[i&mask])
			}
		})
		b.Run(s.name+"/estimate/sketch", func(b *testing.B) {
			c := openSketch(b)
			countAll(b, keys, func(k []byte) { c.Add(k) })
			for i := 0; i < b.N; i++ {
				sink += c.Estimate(keys[i&mask])
			}
		})
	}
}

// BenchmarkFloorScaling adds uniform keys to the default shape from one
// and from two goroutines, on the floor and on sketch.CountMin: ns/op is
// wall time per key over all goroutines, so goroutines=1 over goroutines=2
// is the speed-up two cores give.
func BenchmarkFloorScaling(b *testing.B) {
	rows, width := defaultShape()
	keys, _, mask := uniformKeys()
	// run gives goroutine w the add function adder(w) returns.
	run := func(b *testing.B, g int, adder func(w int) func(key []byte) uint64) {
		var wg sync.WaitGroup
		per := b.N / g
		b.ResetTimer()
		for w := range g {
			add := adder(w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				var local uint64
				base := w * (len(keys) / g)
				for i := 0; i < per; i++ {
					local += add(keys[(base+i)&mask])
				}
				atomic.AddUint64(&sink, local)
			}()
		}
		wg.Wait()
	}
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("floor/goroutines=%d", g), func(b *testing.B) {
			f := newFloor(b, rows, width)
			run(b, g, func(int) func([]byte) uint64 { return f.Add })
		})
		b.Run(fmt.Sprintf("sketch/goroutines=%d", g), func(b *testing.B) {
			c := openSketch(b)
			run(b, g, func(int) func([]byte) uint64 {
				return func(k []byte) uint64 { v, _ := c.Add(k); return v }
			})
		})
		b.Run(fmt.Sprintf("sketch-handle-each/goroutines=%d", g), func(b *testing.B) {
			// A handle per goroutine, as separate processes would have.
			c := openSketch(b)
			run(b, g, func(int) func([]byte) uint64 {
				h, err := sketch.OpenCountMin(sketch.Path(c.Path()), sketch.CountMinConfig{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { h.Close() })
				return func(k []byte) uint64 { v, _ := h.Add(k); return v }
			})
		})
	}
}
