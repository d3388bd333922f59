package main

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

// floor is the bare reference a shared Count-Min cannot beat (as in
// bench/floor_test.go): a shared mapping of rows x width counters,
// XXH3-128 of the key, one atomic add per row, sketch.CountMin's column
// rule, and nothing else (no header, no add count, no closed check, no
// saturation).
type floor struct {
	data  []byte
	cells unsafe.Pointer
	mask  uint64
	rows  int
	row   uintptr
	seed  uint64
}

// newFloor maps the grid, every page touched first when touch is set.
func newFloor(rows, width int, touch bool) (*floor, error) {
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
		clear(data) // every page in, as the sketches' Reset does
	}
	return &floor{data: data, cells: unsafe.Pointer(&data[0]), mask: uint64(width - 1), rows: rows, row: uintptr(width * 8), seed: keySeed}, nil
}

func (f *floor) close() { unix.Munmap(f.data) }

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

// boomEpsilon and boomDelta give the arguments for which BoomFilters'
// NewCountMinSketch makes width columns and rows rows (it takes
// ceil(e/ε) and ceil(ln 1/δ)).
func boomEpsilon(width int) float64 { return math.E / (float64(width) - 0.5) }
func boomDelta(rows int) float64    { return math.Exp(-(float64(rows) - 0.5)) }
