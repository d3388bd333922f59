// Package floor is the bare reference a shared Count-Min sketch cannot
// beat, which the benchmarks and the report measure the product against:
// a shared mapping of rows x width counters, XXH3-128 of the key, one
// atomic add per row, sketch.CountMin's column rule, and nothing else (no
// header, no add count, no closed check, no saturation).
package floor

import (
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// Grid is the floor's counters in a shared memfd mapping.
type Grid struct {
	data  []byte
	cells unsafe.Pointer
	mask  uint64
	rows  int
	row   uintptr
	seed  uint64
}

// New maps a grid of rows x width counters (width a power of two) hashed
// with seed, every page touched first when touch is set, as the sketches'
// Reset does.
func New(rows, width int, seed uint64, touch bool) (*Grid, error) {
	fd, err := unix.MemfdCreate("floor", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	size := rows * width * 8
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return nil, err
	}
	data, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	if touch {
		clear(data)
	}
	return &Grid{data: data, cells: unsafe.Pointer(&data[0]), mask: uint64(width - 1), rows: rows, row: uintptr(width * 8), seed: seed}, nil
}

// Close unmaps the grid.
func (g *Grid) Close() error { return unix.Munmap(g.data) }

// Add counts key once and returns the minimum of its counters.
func (g *Grid) Add(key []byte) uint64 {
	h := xxh3.Hash128Seed(key, g.seed)
	h2 := h.Hi | 1
	est := ^uint64(0)
	row := g.cells
	for i := 0; i < g.rows; i++ {
		col := spread(h.Lo+uint64(i)*h2) & g.mask
		est = min(est, atomic.AddUint64((*uint64)(unsafe.Add(row, col*8)), 1))
		row = unsafe.Add(row, g.row)
	}
	return est
}

// Estimate returns the minimum of key's counters.
func (g *Grid) Estimate(key []byte) uint64 {
	h := xxh3.Hash128Seed(key, g.seed)
	h2 := h.Hi | 1
	est := ^uint64(0)
	row := g.cells
	for i := 0; i < g.rows; i++ {
		col := spread(h.Lo+uint64(i)*h2) & g.mask
		est = min(est, atomic.LoadUint64((*uint64)(unsafe.Add(row, col*8))))
		row = unsafe.Add(row, g.row)
	}
	return est
}

// spread is sketch.CountMin's column finaliser (murmur3's fmix64, the
// package's column.go): row i's column is spread(lo + i·(hi|1)) & mask.
func spread(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
