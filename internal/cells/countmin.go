package cells

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// The pure-Go core. It is always compiled: it serves single keys in every
// build (one cgo crossing costs more than a whole add), every operation in
// the pure-Go build, and the parity suite runs it beside the C core.
// Keep in sync with csrc/cms.c.

// CountMin locates a Count-Min sketch's words in the mapping.
type CountMin struct {
	Cells unsafe.Pointer // rows x width uint64 counters, row-major
	// Lanes is the number of grids a sketch with lanes keeps, LaneBytes
	// apart from Cells on: a counter is the sum of its lanes' (saturating
	// at MaxCount), so every read sums them; an add goes to Lane only,
	// the grid this handle writes. Lanes <= 1 (and a nil Lane): one grid,
	// Cells. A window sets these in each slot.
	Lanes     int
	LaneBytes uintptr
	Lane      unsafe.Pointer
	// Fleet is the fleet part, a grid of Cells' shape holding the rest of
	// a fleet's counts, which every read adds to Cells' (saturating at
	// MaxCount) and no add writes; nil without one. Every function that
	// reads cells for an answer branches once on it, to a loop of its own.
	Fleet    unsafe.Pointer
	Stripes  unsafe.Pointer // stripeCount add counters, one per cache line
	Seed     uint64
	Salt     uint64 // the handle's own, random: mixed into stripe
	Mask     uint64 // width - 1
	Rows     int
	RowBytes uintptr
	Prefetch bool // the grid is larger than L2: batches fetch ahead
	// Uncounted: batches leave the add count alone (a window's slots,
	// whose totals come from their rows); single adds call addCells.
	Uncounted bool
}

const (
	// MaxCount is where a counter saturates: an add that would pass it
	// leaves the counter at maxCount, so a counter never wraps to a small
	// number. A stream would need ~290 years at a billion adds a second.
	MaxCount uint64 = 1 << 63
	// FastAdd is the largest n added with a single fetch-add. Concurrent
	// fetch-adds can carry a counter past maxCount before one of them clamps
	// it, by at most fastAdd per racing add: 2^43 racers would be needed to
	// wrap, so a plain fetch-add is safe below this size.
	FastAdd uint64 = 1 << 20

	StripeCount  = 64
	StripeBytes  = 64 // a cache line (header.go's cacheLine)
	StripesBytes = StripeCount * StripeBytes
	// stripeShift keeps the top 6 bits of a hash: a stripe index.
	stripeShift = 64 - 6
	// batchAhead is how many keys a batch hashes and fetches ahead.
	batchAhead = 8
	// BatchChunk is how many keys a batch counts in one add-count update:
	// one atomic add for the chunk instead of one a key. The C core takes
	// one chunk per crossing (csrc.Batch), so both cores move the add count
	// alike.
	BatchChunk = 256
)

// AddHashed counts n for the key hashing to (lo, hi) and returns the
// minimum of the counters after its own increments: one atomic add per
// row, nothing to roll back; then adds n to the add count.
func (l *CountMin) AddHashed(lo, hi, n uint64) uint64 {
	est := l.AddCells(lo, hi, n)
	l.CountAdds(n)
	return est
}

// AddCells adds n to the key's counter in every row and returns the
// minimum of their new values.
func (l *CountMin) AddCells(lo, hi, n uint64) uint64 {
	if l.Lanes > 1 {
		l.AddLane(lo, hi, n)
		return l.EstimateHashed(lo, hi)
	}
	if l.Fleet != nil {
		return l.addCellsFleet(lo, hi, n)
	}
	h2 := hi | 1
	est := ^uint64(0)
	row := l.Cells
	for i := 0; i < l.Rows; i++ {
		col := Spread(lo+uint64(i)*h2) & l.Mask
		est = min(est, AddCell((*uint64)(unsafe.Add(row, col*8)), n))
		row = unsafe.Add(row, l.RowBytes)
	}
	return est
}

// AddLane adds n to the key's counter in every row of this handle's lane
// and reads nothing else: a blind add. Reading the other lanes' lines,
// which other cores keep writing, costs what writing them does, so only a
// blind add scales with the writers.
func (l *CountMin) AddLane(lo, hi, n uint64) {
	h2 := hi | 1
	row := l.Lane
	for i := 0; i < l.Rows; i++ {
		col := Spread(lo+uint64(i)*h2) & l.Mask
		AddCell((*uint64)(unsafe.Add(row, col*8)), n)
		row = unsafe.Add(row, l.RowBytes)
	}
}

// RaiseLane is a conservative update of lane, a grid of the sketch's
// shape: the key's counters are raised to the least of them plus n
// (saturating at MaxCount), and a counter already that high is left
// alone. Each counter still holds at least every count of every key that
// maps to it, so no estimate is low, and a counter shared with a heavy key
// is not raised by a light one's adds: estimates of light keys come out
// lower than plain adds leave them. Only for a lane with one writer:
// between this load and store another writer's add would be lost.
func (l *CountMin) RaiseLane(lane unsafe.Pointer, lo, hi, n uint64) {
	h2 := hi | 1
	least := ^uint64(0)
	row := lane
	for i := 0; i < l.Rows; i++ {
		col := Spread(lo+uint64(i)*h2) & l.Mask
		least = min(least, atomic.LoadUint64((*uint64)(unsafe.Add(row, col*8))))
		row = unsafe.Add(row, l.RowBytes)
	}
	to := least + n
	if to > MaxCount || to < least {
		to = MaxCount
	}
	row = lane
	for i := 0; i < l.Rows; i++ {
		p := (*uint64)(unsafe.Add(row, (Spread(lo+uint64(i)*h2)&l.Mask)*8))
		if atomic.LoadUint64(p) < to {
			atomic.StoreUint64(p, to)
		}
		row = unsafe.Add(row, l.RowBytes)
	}
}

// WriteGrid is the grid this handle adds to: its lane, or the one grid.
func (l *CountMin) WriteGrid() unsafe.Pointer {
	if l.Lanes > 1 {
		return l.Lane
	}
	return l.Cells
}

// Load is the counter at byte offset off of a grid, summed over the
// lanes when there are several.
func (l *CountMin) Load(off uintptr) uint64 {
	if l.Lanes > 1 {
		return l.laneSum(off)
	}
	return atomic.LoadUint64((*uint64)(unsafe.Add(l.Cells, off)))
}

// laneSum is the counter at byte offset off of lane 0's grid, summed over
// the lanes, saturating at MaxCount.
func (l *CountMin) laneSum(off uintptr) uint64 {
	p := unsafe.Add(l.Cells, off)
	sum := atomic.LoadUint64((*uint64)(p))
	for range l.Lanes - 1 {
		p = unsafe.Add(p, l.LaneBytes)
		s := sum + atomic.LoadUint64((*uint64)(p))
		if s < sum {
			return MaxCount // carried past 2^64
		}
		sum = s
	}
	return min(sum, MaxCount)
}

// addCellsFleet is AddCells with a fleet part: the minimum of the rows'
// new own counters each plus the fleet's.
func (l *CountMin) addCellsFleet(lo, hi, n uint64) uint64 {
	h2 := hi | 1
	est := ^uint64(0)
	row, fleet := l.Cells, l.Fleet
	for i := 0; i < l.Rows; i++ {
		off := uintptr(Spread(lo+uint64(i)*h2)&l.Mask) * 8
		v := AddCell((*uint64)(unsafe.Add(row, off)), n)
		est = min(est, SumCells(v, atomic.LoadUint64((*uint64)(unsafe.Add(fleet, off)))))
		row = unsafe.Add(row, l.RowBytes)
		fleet = unsafe.Add(fleet, l.RowBytes)
	}
	return est
}

// SumCells is an own counter plus the fleet part's, saturating at
// MaxCount: what a read counts for a cell of a structure with a fleet
// part.
func SumCells(own, fleet uint64) uint64 {
	s, carry := bits.Add64(own, fleet, 0)
	if carry != 0 || s > MaxCount {
		return MaxCount
	}
	return s
}

// CountAdds adds k, what was counted, to the add count, in the calling
// goroutine's stripe, saturating as a counter does.
func (l *CountMin) CountAdds(k uint64) {
	AddCell((*uint64)(l.Stripe()), k)
}

// Stripe returns the add-count stripe for the calling goroutine. The add
// count is the sum of the stripes, so which one an add moves is free; what
// matters is that two cores adding at once move different cache lines,
// or the add count would be the one line they both write. The stripe is
// picked from the goroutine's stack address (stacks are distinct
// allocations of at least 8 KiB, so two goroutines differ) mixed with the
// handle's random salt (processes map their stacks at the same addresses).
func (l *CountMin) Stripe() unsafe.Pointer {
	var here byte
	sp := uint64(uintptr(unsafe.Pointer(&here))) >> 13
	i := ((sp ^ l.Salt) * 0x9E3779B97F4A7C15) >> stripeShift
	return unsafe.Add(l.Stripes, uintptr(i)*StripeBytes)
}

// AddCell adds n to one counter, saturating at maxCount, and returns the
// counter's new value (at most maxCount).
func AddCell(c *uint64, n uint64) uint64 {
	if n <= FastAdd {
		if v := atomic.AddUint64(c, n); v <= MaxCount {
			return v
		}
		return ClampCell(c)
	}
	for {
		old := atomic.LoadUint64(c)
		if old >= MaxCount {
			return MaxCount
		}
		v := MaxCount
		if n < MaxCount-old {
			v = old + n
		}
		if atomic.CompareAndSwapUint64(c, old, v) {
			return v
		}
	}
}

// ClampCell brings a counter that fetch-adds carried past maxCount back to
// maxCount.
func ClampCell(c *uint64) uint64 {
	for {
		old := atomic.LoadUint64(c)
		if old <= MaxCount || atomic.CompareAndSwapUint64(c, old, MaxCount) {
			return MaxCount
		}
	}
}

// EstimateHashed returns the minimum of the key's counters.
func (l *CountMin) EstimateHashed(lo, hi uint64) uint64 {
	if l.Fleet != nil {
		return l.estimateFleet(lo, hi)
	}
	if l.Lanes > 1 {
		return l.estimateLanes(lo, hi)
	}
	h2 := hi | 1
	est := ^uint64(0)
	row := l.Cells
	for i := 0; i < l.Rows; i++ {
		col := Spread(lo+uint64(i)*h2) & l.Mask
		est = min(est, atomic.LoadUint64((*uint64)(unsafe.Add(row, col*8))))
		row = unsafe.Add(row, l.RowBytes)
	}
	return min(est, MaxCount)
}

// estimateLanes is EstimateHashed with lanes: the minimum over the rows
// of the counter summed over the lanes.
func (l *CountMin) estimateLanes(lo, hi uint64) uint64 {
	h2 := hi | 1
	est := ^uint64(0)
	for i := 0; i < l.Rows; i++ {
		off := uintptr(i)*l.RowBytes + uintptr(Spread(lo+uint64(i)*h2)&l.Mask)*8
		est = min(est, l.laneSum(off))
	}
	return est
}

// estimateFleet is EstimateHashed with a fleet part: the minimum over the
// rows of own (the lanes summed) + fleet.
func (l *CountMin) estimateFleet(lo, hi uint64) uint64 {
	h2 := hi | 1
	if l.Lanes > 1 {
		est := ^uint64(0)
		for i := 0; i < l.Rows; i++ {
			off := uintptr(i)*l.RowBytes + uintptr(Spread(lo+uint64(i)*h2)&l.Mask)*8
			est = min(est, SumCells(l.laneSum(off), atomic.LoadUint64((*uint64)(unsafe.Add(l.Fleet, off)))))
		}
		return est
	}
	est := ^uint64(0)
	row, fleet := l.Cells, l.Fleet
	for i := 0; i < l.Rows; i++ {
		off := uintptr(Spread(lo+uint64(i)*h2)&l.Mask) * 8
		v := SumCells(atomic.LoadUint64((*uint64)(unsafe.Add(row, off))), atomic.LoadUint64((*uint64)(unsafe.Add(fleet, off))))
		est = min(est, v)
		row = unsafe.Add(row, l.RowBytes)
		fleet = unsafe.Add(fleet, l.RowBytes)
	}
	return est
}

// EstimatePair returns the key's estimates in two sketches of one shape
// (two slots of a window), read row by row: one column computed for both,
// and the two loads of a row issued together, which costs less than two
// estimates one after the other.
func EstimatePair(a, b *CountMin, lo, hi uint64) (uint64, uint64) {
	if a.Fleet != nil { // the slots of one window: both have one or neither
		return a.estimateFleet(lo, hi), b.estimateFleet(lo, hi)
	}
	h2 := hi | 1
	ea, eb := ^uint64(0), ^uint64(0)
	ra, rb := a.Cells, b.Cells
	mask, rowBytes, x := a.Mask, a.RowBytes, lo
	for range a.Rows {
		off := uintptr(Spread(x)&mask) * 8
		ea = min(ea, atomic.LoadUint64((*uint64)(unsafe.Add(ra, off))))
		eb = min(eb, atomic.LoadUint64((*uint64)(unsafe.Add(rb, off))))
		ra = unsafe.Add(ra, rowBytes)
		rb = unsafe.Add(rb, rowBytes)
		x += h2 // the next row's column is spread(lo + i·h2): a running sum
	}
	return min(ea, MaxCount), min(eb, MaxCount)
}

// EstimateTouch returns the key's estimate in other and loads its
// counters in cur, a sketch of the same shape about to be added to, so
// that the lines of both are on their way before cur's atomic adds, which
// wait for every earlier load.
func EstimateTouch(other, cur *CountMin, lo, hi uint64) (est, sink uint64) {
	if other.Fleet != nil {
		return other.estimateFleet(lo, hi), cur.TouchHashed(lo, hi)
	}
	h2 := hi | 1
	est = ^uint64(0)
	ro, rc := other.Cells, cur.Cells
	for i := 0; i < other.Rows; i++ {
		off := uintptr(Spread(lo+uint64(i)*h2)&other.Mask) * 8
		est = min(est, atomic.LoadUint64((*uint64)(unsafe.Add(ro, off))))
		sink += atomic.LoadUint64((*uint64)(unsafe.Add(rc, off)))
		ro = unsafe.Add(ro, other.RowBytes)
		rc = unsafe.Add(rc, other.RowBytes)
	}
	return min(est, MaxCount), sink
}

// ReadThenAdd is estimateTouch followed by cur.addCells in one call: the
// window's add when one other slot is read. It returns the key's estimate
// in other and its new estimate in cur. n must be 1 to fastAdd. The column
// of row i is spread(lo + i·(hi|1)); lo + i·(hi|1) is kept as a running
// sum, and the adds start again from where the reads started, computed
// back and spread again, not kept: fewer values live, fewer spilled. The
// adds go from the first row to the last, as every add does
// (docs/FORMAT.md).
func ReadThenAdd(other, cur *CountMin, lo, hi, n uint64) (otherEst, curEst uint64) {
	if other.Fleet != nil {
		return other.estimateFleet(lo, hi), cur.addCellsFleet(lo, hi, n)
	}
	h2 := hi | 1
	otherEst, curEst = ^uint64(0), ^uint64(0)
	ro, rc := other.Cells, cur.Cells
	mask, rowBytes, rows := other.Mask, other.RowBytes, other.Rows
	x := lo
	for range rows {
		off := uintptr(Spread(x)&mask) * 8
		otherEst = min(otherEst, atomic.LoadUint64((*uint64)(unsafe.Add(ro, off))))
		atomic.LoadUint64((*uint64)(unsafe.Add(rc, off))) // on its way before the adds
		ro = unsafe.Add(ro, rowBytes)
		rc = unsafe.Add(rc, rowBytes)
		x += h2
	}
	rc = unsafe.Add(rc, -rows*int(rowBytes))
	x -= uint64(rows) * h2
	for range rows {
		c := (*uint64)(unsafe.Add(rc, uintptr(Spread(x)&mask)*8))
		v := atomic.AddUint64(c, n)
		if v > MaxCount {
			v = ClampCell(c)
		}
		curEst = min(curEst, v)
		rc = unsafe.Add(rc, rowBytes)
		x += h2
	}
	return min(otherEst, MaxCount), curEst
}

// TouchHashed loads the key's counters so that their cache lines are on
// their way before the atomic adds, which on most CPUs wait for every
// earlier load: the loads of several keys overlap instead.
func (l *CountMin) TouchHashed(lo, hi uint64) uint64 {
	h2 := hi | 1
	var sink uint64
	row := l.Cells
	if l.Lanes > 1 {
		row = l.Lane
	}
	for i := 0; i < l.Rows; i++ {
		col := Spread(lo+uint64(i)*h2) & l.Mask
		sink += atomic.LoadUint64((*uint64)(unsafe.Add(row, col*8)))
		row = unsafe.Add(row, l.RowBytes)
	}
	return sink
}

// CountMinGo is the pure-Go implementation of every Count-Min operation.
type CountMinGo struct{}

func (CountMinGo) Name() string { return "purego" }

func (CountMinGo) Add(l *CountMin, key []byte, n uint64) uint64 {
	lo, hi := Hash(key, l.Seed)
	return l.AddHashed(lo, hi, n)
}

func (CountMinGo) Estimate(l *CountMin, key []byte) uint64 {
	lo, hi := Hash(key, l.Seed)
	return l.EstimateHashed(lo, hi)
}

func (CountMinGo) AddBatch(l *CountMin, keys [][]byte, n uint64, est []uint64) {
	for base := 0; base < len(keys); base += BatchChunk {
		chunk := keys[base:min(base+BatchChunk, len(keys))]
		var out []uint64
		if est != nil {
			out = est[base : base+len(chunk)]
		}
		l.AddChunk(chunk, n, out)
	}
}

func (CountMinGo) RaiseBatch(l *CountMin, lane unsafe.Pointer, keys [][]byte, n uint64) {
	for base := 0; base < len(keys); base += BatchChunk {
		chunk := keys[base:min(base+BatchChunk, len(keys))]
		for _, k := range chunk {
			lo, hi := Hash(k, l.Seed)
			l.RaiseLane(lane, lo, hi, n)
		}
		if !l.Uncounted {
			l.CountAdds(n * uint64(len(chunk)))
		}
	}
}

// AddChunk counts one chunk of a batch: the keys' counters, then the
// chunk's size in the add count.
func (l *CountMin) AddChunk(keys [][]byte, n uint64, est []uint64) {
	if len(keys) == 0 {
		return
	}
	if est == nil && l.Lanes > 1 {
		for _, k := range keys {
			lo, hi := Hash(k, l.Seed)
			l.AddLane(lo, hi, n)
		}
	} else if !l.Prefetch {
		for i, k := range keys {
			lo, hi := Hash(k, l.Seed)
			v := l.AddCells(lo, hi, n)
			if est != nil {
				est[i] = v
			}
		}
	} else {
		var h [batchAhead][2]uint64
		for base := 0; base < len(keys); base += batchAhead {
			group := keys[base:min(base+batchAhead, len(keys))]
			for j, k := range group {
				h[j][0], h[j][1] = Hash(k, l.Seed)
				l.TouchHashed(h[j][0], h[j][1])
			}
			for j := range group {
				v := l.AddCells(h[j][0], h[j][1], n)
				if est != nil {
					est[base+j] = v
				}
			}
		}
	}
	if !l.Uncounted {
		l.CountAdds(uint64(len(keys)) * n)
	}
}

// EstimateBatch is a plain loop: estimates only load, and the CPU already
// overlaps the loads of consecutive keys (touching ahead measured slower).
func (CountMinGo) EstimateBatch(l *CountMin, keys [][]byte, est []uint64) {
	for i, k := range keys {
		lo, hi := Hash(k, l.Seed)
		est[i] = l.EstimateHashed(lo, hi)
	}
}

// RowSums stores each row's sum in sums (saturating at the largest uint64)
// and reports whether any counter has saturated. The loop keeps the carry
// and an OR of the counters instead of branching on each one.
func (CountMinGo) RowSums(l *CountMin, sums []uint64) (saturated bool) {
	if l.Lanes > 1 {
		return l.laneRowSums(sums)
	}
	return rowSums(l.Cells, l, sums)
}

// laneRowSums is RowSums over lanes: each lane's row sums added,
// saturating.
func (l *CountMin) laneRowSums(sums []uint64) (saturated bool) {
	clear(sums)
	lane := make([]uint64, len(sums))
	for j := range l.Lanes {
		if rowSums(unsafe.Add(l.Cells, uintptr(j)*l.LaneBytes), l, lane) {
			saturated = true
		}
		for i, v := range lane {
			s, c := bits.Add64(sums[i], v, 0)
			if c != 0 {
				s = ^uint64(0)
			}
			sums[i] = s
		}
	}
	return saturated
}

// rowSums is RowSums of one grid of l's shape.
func rowSums(grid unsafe.Pointer, l *CountMin, sums []uint64) (saturated bool) {
	width := uintptr(l.Mask + 1)
	var seen uint64
	row := grid
	for i := 0; i < l.Rows; i++ {
		var sum, carry uint64
		for j := uintptr(0); j < width; j++ {
			v := atomic.LoadUint64((*uint64)(unsafe.Add(row, j*8)))
			seen |= v
			var c uint64
			sum, c = bits.Add64(sum, v, 0)
			carry |= c
		}
		if carry != 0 {
			sum = ^uint64(0)
		}
		sums[i] = sum
		row = unsafe.Add(row, l.RowBytes)
	}
	return seen >= MaxCount
}

func (CountMinGo) Adds(l *CountMin) uint64 { return l.AddCount() }

// AddCount sums the add count's stripes, saturating at maxCount.
func (l *CountMin) AddCount() uint64 {
	var sum uint64
	for i := uintptr(0); i < StripeCount; i++ {
		var carry uint64
		sum, carry = bits.Add64(sum, atomic.LoadUint64((*uint64)(unsafe.Add(l.Stripes, i*StripeBytes))), 0)
		if carry != 0 {
			return MaxCount
		}
	}
	return min(sum, MaxCount)
}

// Reset zeroes every counter and the add count. It is not atomic (the
// package documents that): it clears the grid with plain aligned 8-byte
// stores, each of which lands before or after a concurrent atomic add,
// never in the middle of one; an atomic store a word would cost a locked
// instruction each on amd64, for nothing.
func (CountMinGo) Reset(l *CountMin) {
	clear(unsafe.Slice((*uint64)(l.Cells), uintptr(max(l.Lanes, 1))*uintptr(l.Rows)*uintptr(l.Mask+1)))
	for i := uintptr(0); i < StripeCount; i++ {
		atomic.StoreUint64((*uint64)(unsafe.Add(l.Stripes, i*StripeBytes)), 0)
	}
}

// The reset generation lives in a spare word of the first stripe's cache
// line, which adds never touch: it is odd while a reset runs (or after one
// was cut short) and changes at each reset's start and end, so Check can
// tell that a reset ran while it summed the rows, or stopped part way.
const ResetGenOff = 8

func (l *CountMin) ResetGen() *uint64 { return (*uint64)(unsafe.Add(l.Stripes, ResetGenOff)) }

// Resets returns the reset generation.
func (l *CountMin) Resets() uint64 { return atomic.LoadUint64(l.ResetGen()) }

// BumpGen moves the generation to the next value of the given parity (odd:
// a reset runs), changing it even when it already had that parity, as it
// does when two resets overlap.
func (l *CountMin) BumpGen(odd bool) {
	gen := l.ResetGen()
	for {
		g := atomic.LoadUint64(gen)
		n := g + 1
		if (g%2 == 1) == odd {
			n = g + 2
		}
		if atomic.CompareAndSwapUint64(gen, g, n) {
			return
		}
	}
}

// ResetTracked is the public Reset. It clears the rows from the last to
// the first, with a full fence after each (an atomic add on the
// generation), while every add writes its rows from the first to the last.
// So an add that races the reset survives in a suffix of its rows: rows
// that sum to more than an earlier row are a reset's leftovers, while an
// add cut short by a killed process leaves a prefix, rows that sum to
// less. Check tells the two apart by that. The reset stops, leaving the
// generation odd, when open turns false (the handle was closed: its pages
// are being swapped for a placeholder) and reports whether it completed.
func (l *CountMin) ResetTracked(open *atomic.Bool) bool {
	l.BumpGen(true)
	width := uintptr(l.Mask + 1)
	for i := l.Rows - 1; i >= 0; i-- {
		if !open.Load() {
			return false
		}
		for j := range max(l.Lanes, 1) {
			clear(unsafe.Slice((*uint64)(unsafe.Add(l.Cells, uintptr(j)*l.LaneBytes+uintptr(i)*l.RowBytes)), width))
		}
		atomic.AddUint64(l.ResetGen(), 0)
	}
	for i := uintptr(0); i < StripeCount; i++ {
		atomic.StoreUint64((*uint64)(unsafe.Add(l.Stripes, i*StripeBytes)), 0)
	}
	l.BumpGen(false)
	return true
}

// CountMinCore is one implementation of the Count-Min operations; CountMinGo and
// (with cgo) cellsc.CountMin must agree bit for bit.
type CountMinCore interface {
	Name() string
	Add(l *CountMin, key []byte, n uint64) uint64
	Estimate(l *CountMin, key []byte) uint64
	AddBatch(l *CountMin, keys [][]byte, n uint64, est []uint64)
	// RaiseBatch is a blind batch of conservative updates into lane, a
	// grid of l's shape that only the caller writes (RaiseLane).
	RaiseBatch(l *CountMin, lane unsafe.Pointer, keys [][]byte, n uint64)
	EstimateBatch(l *CountMin, keys [][]byte, est []uint64)
	RowSums(l *CountMin, sums []uint64) (saturated bool)
	Adds(l *CountMin) uint64
	Reset(l *CountMin)
}
