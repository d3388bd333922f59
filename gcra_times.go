package sketch

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// A rate limiter's busy times, as one host exports them for the others:
// only the cells whose time is still ahead matter (a cell at or before
// now lets every key through as if it were never written), and those are
// few next to the grid, so the export lists them, not the grid.
//
// Layout: the magic "SKGCRAT1"; the limiter's rows, width, interval and
// window (ns) and the export's time (Unix ns), each a little-endian
// uint64; then for each busy cell, in order, the uvarint of its index
// less the previous one's (the first: its index) and the uvarint of its
// time less the export's.

const gcraTimesMagic = "SKGCRAT1"

// gcraTimesHead is the export's size before its cells.
const gcraTimesHead = 8 + 5*8

// ExportTimes returns the limiter's busy cells, those whose time is after
// now, for another limiter of the same shape, rate, burst and seed to
// merge (MergeTimes): a host's decisions as the others need them. Its
// size is 6 to 7 bytes a busy cell (measured by the fleet module's
// BenchmarkSync_GCRA); a grid where no key is busy exports 48 bytes. Read without a lock while every process decides: each cell as
// it was at some moment of the export.
func (g *GCRA) ExportTimes() ([]byte, error) {
	if !g.open.Load() {
		return nil, g.closedErr("export")
	}
	now := uint64(unixClock.now())
	b := make([]byte, gcraTimesHead, gcraTimesHead+1024)
	copy(b, gcraTimesMagic)
	for i, v := range []uint64{uint64(g.l.Rows), g.l.Mask + 1, g.l.Interval, g.l.Window, now} {
		binary.LittleEndian.PutUint64(b[8+8*i:], v)
	}
	n := uintptr(g.l.Rows) * g.l.RowBytes / 8
	var last uint64
	for i := uintptr(0); i < n; i++ {
		v := atomic.LoadUint64((*uint64)(unsafe.Add(g.l.Cells, i*8)))
		if v <= now {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i)-last)
		b = binary.AppendUvarint(b, v-now)
		last = uint64(i)
	}
	if !g.open.Load() {
		return nil, g.closedErr("export") // what was read may be the placeholder
	}
	return b, nil
}

// MergeTimes raises each cell of the limiter to the time an export of
// another limiter gives it (ExportTimes), where that is later: afterwards
// every key is at least as busy as it was there. The export must come
// from a limiter of the same shape, rate and burst (ErrIncompatible) and
// be whole (ErrInvalidArgument, before anything changes); the seed
// cannot be checked from it, and must be the same for the cells to mean
// the same keys. A time further ahead of now than the window, which no
// decision leaves (a host whose clock runs ahead), is taken as now plus
// the window. Each cell changes with a CAS, so every process may go on
// deciding meanwhile.
func (g *GCRA) MergeTimes(b []byte) error {
	if err := g.refuse("merge"); err != nil {
		return err
	}
	base, err := g.timesHeader(b)
	if err != nil {
		return g.m.errorf("merge", err)
	}
	idx, tat, err := g.timesCells(b[gcraTimesHead:], base)
	if err != nil {
		return g.m.errorf("merge", err)
	}
	limit := uint64(unixClock.now()) + g.l.Window
	for k, i := range idx {
		c := (*uint64)(unsafe.Add(g.l.Cells, uintptr(i)*8))
		v := min(tat[k], limit)
		for old := atomic.LoadUint64(c); old < v && !atomic.CompareAndSwapUint64(c, old, v); old = atomic.LoadUint64(c) {
		}
	}
	return g.after("merge")
}

// timesHeader checks an export's header against the limiter and returns
// the export's time.
func (g *GCRA) timesHeader(b []byte) (uint64, error) {
	if len(b) < gcraTimesHead || string(b[:8]) != gcraTimesMagic {
		return 0, fmt.Errorf("%w: not a rate limiter's times (%d bytes)", ErrInvalidArgument, len(b))
	}
	var h [5]uint64
	for i := range h {
		h[i] = binary.LittleEndian.Uint64(b[8+8*i:])
	}
	if h[0] != uint64(g.l.Rows) || h[1] != g.l.Mask+1 || h[2] != g.l.Interval || h[3] != g.l.Window {
		return 0, fmt.Errorf("%w: times of a %d x %d limiter at %v a request, window %v; this one is %s", ErrIncompatible,
			h[0], h[1], time.Duration(h[2]), time.Duration(h[3]), g.shape())
	}
	if h[4] > gcraDamage {
		return 0, fmt.Errorf("%w: times exported at %d, past any clock", ErrInvalidArgument, h[4])
	}
	return h[4], nil
}

// timesCells decodes the cells of an export whose time is base: each
// cell's index (below the grid's size, increasing) and time.
func (g *GCRA) timesCells(b []byte, base uint64) (idx, tat []uint64, err error) {
	cells := uint64(g.l.Rows) * (g.l.Mask + 1)
	var at uint64
	for first := true; len(b) > 0; first = false {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, nil, fmt.Errorf("%w: a cell's index is cut short", ErrInvalidArgument)
		}
		b = b[n:]
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, nil, fmt.Errorf("%w: a cell's time is cut short", ErrInvalidArgument)
		}
		b = b[n:]
		if (!first && d == 0) || d >= cells-at {
			return nil, nil, fmt.Errorf("%w: cell index %d after %d, in a grid of %d", ErrInvalidArgument, d, at, cells)
		}
		at += d
		// MergeTimes takes no time past its now plus the window; this
		// bound only keeps the sum from overflowing.
		idx, tat = append(idx, at), append(tat, base+min(v, gcraMaxWindow))
	}
	return idx, tat, nil
}
