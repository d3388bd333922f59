package sketch

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// The pure-Go core. It is always compiled: it serves single keys in every
// build (one cgo crossing costs more than a whole add), every operation in
// the pure-Go build, and the parity suite runs it beside the C core.
// Keep in sync with csrc/cms.c.

// cmsLayout locates a Count-Min sketch's words in the mapping.
type cmsLayout struct {
	cells    unsafe.Pointer // rows x width uint64 counters, row-major
	stripes  unsafe.Pointer // stripeCount add counters, one per cache line
	seed     uint64
	salt     uint64 // the handle's own, random: mixed into stripe
	mask     uint64 // width - 1
	rows     int
	rowBytes uintptr
	prefetch bool // the grid is larger than L2: batches fetch ahead
	// uncounted: batches leave the add count alone (a window's slots,
	// whose totals come from their rows); single adds call addCells.
	uncounted bool
}

const (
	// maxCount is where a counter saturates: an add that would pass it
	// leaves the counter at maxCount, so a counter never wraps to a small
	// number. A stream would need ~290 years at a billion adds a second.
	maxCount uint64 = 1 << 63
	// fastAdd is the largest n added with a single fetch-add. Concurrent
	// fetch-adds can carry a counter past maxCount before one of them clamps
	// it, by at most fastAdd per racing add: 2^43 racers would be needed to
	// wrap, so a plain fetch-add is safe below this size.
	fastAdd uint64 = 1 << 20

	stripeCount  = 64
	stripeBytes  = 64 // a cache line (header.go's cacheLine)
	stripesBytes = stripeCount * stripeBytes
	// stripeShift keeps the top 6 bits of a hash: a stripe index.
	stripeShift = 64 - 6
	// batchAhead is how many keys a batch hashes and fetches ahead.
	batchAhead = 8
	// batchChunk is how many keys a batch counts in one add-count update:
	// one atomic add for the chunk instead of one a key. The C core takes
	// one chunk per crossing (csrc.Batch), so both cores move the add count
	// alike.
	batchChunk = 256
)

// addHashed counts n for the key hashing to (lo, hi) and returns the
// minimum of the counters after its own increments: one atomic add per
// row, nothing to roll back; then adds n to the add count.
func (l *cmsLayout) addHashed(lo, hi, n uint64) uint64 {
	est := l.addCells(lo, hi, n)
	l.countAdds(n)
	return est
}

// addCells adds n to the key's counter in every row and returns the
// minimum of their new values.
func (l *cmsLayout) addCells(lo, hi, n uint64) uint64 {
	h2 := hi | 1
	est := ^uint64(0)
	row := l.cells
	for i := 0; i < l.rows; i++ {
		col := spread(lo+uint64(i)*h2) & l.mask
		est = min(est, addCell((*uint64)(unsafe.Add(row, col*8)), n))
		row = unsafe.Add(row, l.rowBytes)
	}
	return est
}

// countAdds adds k, what was counted, to the add count, in the calling
// goroutine's stripe, saturating as a counter does.
func (l *cmsLayout) countAdds(k uint64) {
	addCell((*uint64)(l.stripe()), k)
}

// stripe returns the add-count stripe for the calling goroutine. The add
// count is the sum of the stripes, so which one an add moves is free; what
// matters is that two cores adding at once move different cache lines,
// or the add count would be the one line they both write. The stripe is
// picked from the goroutine's stack address (stacks are distinct
// allocations of at least 8 KiB, so two goroutines differ) mixed with the
// handle's random salt (processes map their stacks at the same addresses).
func (l *cmsLayout) stripe() unsafe.Pointer {
	var here byte
	sp := uint64(uintptr(unsafe.Pointer(&here))) >> 13
	i := ((sp ^ l.salt) * 0x9E3779B97F4A7C15) >> stripeShift
	return unsafe.Add(l.stripes, uintptr(i)*stripeBytes)
}

// addCell adds n to one counter, saturating at maxCount, and returns the
// counter's new value (at most maxCount).
func addCell(c *uint64, n uint64) uint64 {
	if n <= fastAdd {
		if v := atomic.AddUint64(c, n); v <= maxCount {
			return v
		}
		return clampCell(c)
	}
	for {
		old := atomic.LoadUint64(c)
		if old >= maxCount {
			return maxCount
		}
		v := maxCount
		if n < maxCount-old {
			v = old + n
		}
		if atomic.CompareAndSwapUint64(c, old, v) {
			return v
		}
	}
}

// clampCell brings a counter that fetch-adds carried past maxCount back to
// maxCount.
func clampCell(c *uint64) uint64 {
	for {
		old := atomic.LoadUint64(c)
		if old <= maxCount || atomic.CompareAndSwapUint64(c, old, maxCount) {
			return maxCount
		}
	}
}

// estimateHashed returns the minimum of the key's counters.
func (l *cmsLayout) estimateHashed(lo, hi uint64) uint64 {
	h2 := hi | 1
	est := ^uint64(0)
	row := l.cells
	for i := 0; i < l.rows; i++ {
		col := spread(lo+uint64(i)*h2) & l.mask
		est = min(est, atomic.LoadUint64((*uint64)(unsafe.Add(row, col*8))))
		row = unsafe.Add(row, l.rowBytes)
	}
	return min(est, maxCount)
}

// estimatePair returns the key's estimates in two sketches of one shape
// (two slots of a window), read row by row: one column computed for both,
// and the two loads of a row issued together, which costs less than two
// estimates one after the other.
func estimatePair(a, b *cmsLayout, lo, hi uint64) (uint64, uint64) {
	h2 := hi | 1
	ea, eb := ^uint64(0), ^uint64(0)
	ra, rb := a.cells, b.cells
	mask, rowBytes, x := a.mask, a.rowBytes, lo
	for range a.rows {
		off := uintptr(spread(x)&mask) * 8
		ea = min(ea, atomic.LoadUint64((*uint64)(unsafe.Add(ra, off))))
		eb = min(eb, atomic.LoadUint64((*uint64)(unsafe.Add(rb, off))))
		ra = unsafe.Add(ra, rowBytes)
		rb = unsafe.Add(rb, rowBytes)
		x += h2 // the next row's column is spread(lo + i·h2): a running sum
	}
	return min(ea, maxCount), min(eb, maxCount)
}

// estimateTouch returns the key's estimate in other and loads its
// counters in cur, a sketch of the same shape about to be added to, so
// that the lines of both are on their way before cur's atomic adds, which
// wait for every earlier load.
func estimateTouch(other, cur *cmsLayout, lo, hi uint64) (est, sink uint64) {
	h2 := hi | 1
	est = ^uint64(0)
	ro, rc := other.cells, cur.cells
	for i := 0; i < other.rows; i++ {
		off := uintptr(spread(lo+uint64(i)*h2)&other.mask) * 8
		est = min(est, atomic.LoadUint64((*uint64)(unsafe.Add(ro, off))))
		sink += atomic.LoadUint64((*uint64)(unsafe.Add(rc, off)))
		ro = unsafe.Add(ro, other.rowBytes)
		rc = unsafe.Add(rc, other.rowBytes)
	}
	return min(est, maxCount), sink
}

// readThenAdd is estimateTouch followed by cur.addCells in one call: the
// window's add when one other slot is read. It returns the key's estimate
// in other and its new estimate in cur. n must be 1 to fastAdd. The column
// of row i is spread(lo + i·(hi|1)); lo + i·(hi|1) is kept as a running
// sum, and the adds start again from where the reads started, computed
// back and spread again, not kept: fewer values live, fewer spilled. The
// adds go from the first row to the last, as every add does
// (docs/FORMAT.md).
func readThenAdd(other, cur *cmsLayout, lo, hi, n uint64) (otherEst, curEst uint64) {
	h2 := hi | 1
	otherEst, curEst = ^uint64(0), ^uint64(0)
	ro, rc := other.cells, cur.cells
	mask, rowBytes, rows := other.mask, other.rowBytes, other.rows
	x := lo
	for range rows {
		off := uintptr(spread(x)&mask) * 8
		otherEst = min(otherEst, atomic.LoadUint64((*uint64)(unsafe.Add(ro, off))))
		atomic.LoadUint64((*uint64)(unsafe.Add(rc, off))) // on its way before the adds
		ro = unsafe.Add(ro, rowBytes)
		rc = unsafe.Add(rc, rowBytes)
		x += h2
	}
	rc = unsafe.Add(rc, -rows*int(rowBytes))
	x -= uint64(rows) * h2
	for range rows {
		c := (*uint64)(unsafe.Add(rc, uintptr(spread(x)&mask)*8))
		v := atomic.AddUint64(c, n)
		if v > maxCount {
			v = clampCell(c)
		}
		curEst = min(curEst, v)
		rc = unsafe.Add(rc, rowBytes)
		x += h2
	}
	return min(otherEst, maxCount), curEst
}

// touchHashed loads the key's counters so that their cache lines are on
// their way before the atomic adds, which on most CPUs wait for every
// earlier load: the loads of several keys overlap instead.
func (l *cmsLayout) touchHashed(lo, hi uint64) uint64 {
	h2 := hi | 1
	var sink uint64
	row := l.cells
	for i := 0; i < l.rows; i++ {
		col := spread(lo+uint64(i)*h2) & l.mask
		sink += atomic.LoadUint64((*uint64)(unsafe.Add(row, col*8)))
		row = unsafe.Add(row, l.rowBytes)
	}
	return sink
}

// countMinGo is the pure-Go implementation of every Count-Min operation.
type countMinGo struct{}

func (countMinGo) name() string { return "purego" }

func (countMinGo) add(l *cmsLayout, key []byte, n uint64) uint64 {
	lo, hi := hashKey(key, l.seed)
	return l.addHashed(lo, hi, n)
}

func (countMinGo) estimate(l *cmsLayout, key []byte) uint64 {
	lo, hi := hashKey(key, l.seed)
	return l.estimateHashed(lo, hi)
}

func (countMinGo) addBatch(l *cmsLayout, keys [][]byte, n uint64, est []uint64) {
	for base := 0; base < len(keys); base += batchChunk {
		chunk := keys[base:min(base+batchChunk, len(keys))]
		var out []uint64
		if est != nil {
			out = est[base : base+len(chunk)]
		}
		l.addChunk(chunk, n, out)
	}
}

// addChunk counts one chunk of a batch: the keys' counters, then the
// chunk's size in the add count.
func (l *cmsLayout) addChunk(keys [][]byte, n uint64, est []uint64) {
	if len(keys) == 0 {
		return
	}
	if !l.prefetch {
		for i, k := range keys {
			lo, hi := hashKey(k, l.seed)
			v := l.addCells(lo, hi, n)
			if est != nil {
				est[i] = v
			}
		}
	} else {
		var h [batchAhead][2]uint64
		for base := 0; base < len(keys); base += batchAhead {
			group := keys[base:min(base+batchAhead, len(keys))]
			for j, k := range group {
				h[j][0], h[j][1] = hashKey(k, l.seed)
				l.touchHashed(h[j][0], h[j][1])
			}
			for j := range group {
				v := l.addCells(h[j][0], h[j][1], n)
				if est != nil {
					est[base+j] = v
				}
			}
		}
	}
	if !l.uncounted {
		l.countAdds(uint64(len(keys)) * n)
	}
}

// estimateBatch is a plain loop: estimates only load, and the CPU already
// overlaps the loads of consecutive keys (touching ahead measured slower).
func (countMinGo) estimateBatch(l *cmsLayout, keys [][]byte, est []uint64) {
	for i, k := range keys {
		lo, hi := hashKey(k, l.seed)
		est[i] = l.estimateHashed(lo, hi)
	}
}

// rowSums stores each row's sum in sums (saturating at the largest uint64)
// and reports whether any counter has saturated. The loop keeps the carry
// and an OR of the counters instead of branching on each one.
func (countMinGo) rowSums(l *cmsLayout, sums []uint64) (saturated bool) {
	width := uintptr(l.mask + 1)
	var seen uint64
	row := l.cells
	for i := 0; i < l.rows; i++ {
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
		row = unsafe.Add(row, l.rowBytes)
	}
	return seen >= maxCount
}

func (countMinGo) adds(l *cmsLayout) uint64 { return l.addCount() }

// addCount sums the add count's stripes, saturating at maxCount.
func (l *cmsLayout) addCount() uint64 {
	var sum uint64
	for i := uintptr(0); i < stripeCount; i++ {
		var carry uint64
		sum, carry = bits.Add64(sum, atomic.LoadUint64((*uint64)(unsafe.Add(l.stripes, i*stripeBytes))), 0)
		if carry != 0 {
			return maxCount
		}
	}
	return min(sum, maxCount)
}

// reset zeroes every counter and the add count. It is not atomic (the
// package documents that): it clears the grid with plain aligned 8-byte
// stores, each of which lands before or after a concurrent atomic add,
// never in the middle of one; an atomic store a word would cost a locked
// instruction each on amd64, for nothing.
func (countMinGo) reset(l *cmsLayout) {
	clear(unsafe.Slice((*uint64)(l.cells), uintptr(l.rows)*uintptr(l.mask+1)))
	for i := uintptr(0); i < stripeCount; i++ {
		atomic.StoreUint64((*uint64)(unsafe.Add(l.stripes, i*stripeBytes)), 0)
	}
}

// The reset generation lives in a spare word of the first stripe's cache
// line, which adds never touch: it is odd while a reset runs (or after one
// was cut short) and changes at each reset's start and end, so Check can
// tell that a reset ran while it summed the rows, or stopped part way.
const resetGenOff = 8

func (l *cmsLayout) resetGen() *uint64 { return (*uint64)(unsafe.Add(l.stripes, resetGenOff)) }

// resets returns the reset generation.
func (l *cmsLayout) resets() uint64 { return atomic.LoadUint64(l.resetGen()) }

// bumpGen moves the generation to the next value of the given parity (odd:
// a reset runs), changing it even when it already had that parity, as it
// does when two resets overlap.
func (l *cmsLayout) bumpGen(odd bool) {
	gen := l.resetGen()
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

// resetTracked is the public Reset. It clears the rows from the last to
// the first, with a full fence after each (an atomic add on the
// generation), while every add writes its rows from the first to the last.
// So an add that races the reset survives in a suffix of its rows: rows
// that sum to more than an earlier row are a reset's leftovers, while an
// add cut short by a killed process leaves a prefix, rows that sum to
// less. Check tells the two apart by that. The reset stops, leaving the
// generation odd, when open turns false (the handle was closed: its pages
// are being swapped for a placeholder) and reports whether it completed.
func (l *cmsLayout) resetTracked(open *atomic.Bool) bool {
	l.bumpGen(true)
	width := uintptr(l.mask + 1)
	for i := l.rows - 1; i >= 0; i-- {
		if !open.Load() {
			return false
		}
		clear(unsafe.Slice((*uint64)(unsafe.Add(l.cells, uintptr(i)*l.rowBytes)), width))
		atomic.AddUint64(l.resetGen(), 0)
	}
	for i := uintptr(0); i < stripeCount; i++ {
		atomic.StoreUint64((*uint64)(unsafe.Add(l.stripes, i*stripeBytes)), 0)
	}
	l.bumpGen(false)
	return true
}

// countMinCore is one implementation of the Count-Min operations; countMinGo and
// (with cgo) countMinCgo must agree bit for bit.
type countMinCore interface {
	name() string
	add(l *cmsLayout, key []byte, n uint64) uint64
	estimate(l *cmsLayout, key []byte) uint64
	addBatch(l *cmsLayout, keys [][]byte, n uint64, est []uint64)
	estimateBatch(l *cmsLayout, keys [][]byte, est []uint64)
	rowSums(l *cmsLayout, sums []uint64) (saturated bool)
	adds(l *cmsLayout) uint64
	reset(l *cmsLayout)
}
