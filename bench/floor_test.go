package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"

	"github.com/shmsketch/sketch"
)

// floor is the bare reference a shared Count-Min cannot beat: a shared
// mapping of rows x width counters, XXH3-128 of the key, one atomic add
// per row, the same column rule as sketch.CountMin, and nothing else (no
// header, no add count, no closed check, no saturation).
type floor struct {
	cells unsafe.Pointer
	mask  uint64
	rows  int
	row   uintptr
	seed  uint64
}

func newFloor(b *testing.B, rows, width int) *floor {
	fd, err := unix.MemfdCreate("floor", unix.MFD_CLOEXEC)
	if err != nil {
		b.Skipf("memfd: %v", err)
	}
	size := rows * width * 8
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		b.Fatal(err)
	}
	data, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	unix.Close(fd)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Munmap(data) })
	return &floor{cells: unsafe.Pointer(&data[0]), mask: uint64(width - 1), rows: rows, row: uintptr(width * 8), seed: seed}
}

func (f *floor) add(key []byte) uint64 {
	h := xxh3.Hash128Seed(key, f.seed)
	h2 := h.Hi | 1
	est := ^uint64(0)
	row := f.cells
	for i := 0; i < f.rows; i++ {
		col := (h.Lo + uint64(i)*h2) & f.mask
		est = min(est, atomic.AddUint64((*uint64)(unsafe.Add(row, col*8)), 1))
		row = unsafe.Add(row, f.row)
	}
	return est
}

func (f *floor) estimate(key []byte) uint64 {
	h := xxh3.Hash128Seed(key, f.seed)
	h2 := h.Hi | 1
	est := ^uint64(0)
	row := f.cells
	for i := 0; i < f.rows; i++ {
		col := (h.Lo + uint64(i)*h2) & f.mask
		est = min(est, atomic.LoadUint64((*uint64)(unsafe.Add(row, col*8))))
		row = unsafe.Add(row, f.row)
	}
	return est
}

// defaultShape is sketch's default shape: 5 rows of 4096.
func defaultShape() (rows, width int) { return 5, 4096 }

// BenchmarkFloor measures sketch.CountMin's Add and Estimate beside the
// bare floor in one run: "sketch" against "floor" is what the product's
// header, add count and checks cost.
func BenchmarkFloor(b *testing.B) {
	rows, width := defaultShape()
	for _, s := range keyStreams() {
		keys, mask := s.bytes, len(s.bytes)-1
		b.Run(s.name+"/add/floor", func(b *testing.B) {
			f := newFloor(b, rows, width)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sink += f.add(keys[i&mask])
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
			for _, k := range keys {
				f.add(k)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sink += f.estimate(keys[i&mask])
			}
		})
		b.Run(s.name+"/estimate/sketch", func(b *testing.B) {
			c := openSketch(b)
			for _, k := range keys {
				c.Add(k)
			}
			b.ResetTimer()
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
	keys := keyStreams()[1].bytes
	mask := len(keys) - 1
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
			run(b, g, func(int) func([]byte) uint64 { return f.add })
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
				h, err := sketch.OpenCountMin(c.Path(), sketch.CountMinConfig{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { h.Close() })
				return func(k []byte) uint64 { v, _ := h.Add(k); return v }
			})
		})
	}
}
