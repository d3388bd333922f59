package sketch

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// What Check can tell of a Count-Min sketch's counters, and the words of
// the first stripe line it reads to tell it (docs/FORMAT.md).
//
// Every add puts its weight n into one counter of each row, from the first
// row to the last, and only then into the add count. So a row never holds
// more than the add count plus the weights of the adds that wrote it and
// not yet the add count: adds running now, and adds cut short (by a killed
// process or a Close) since the last Reset. The file records the largest
// weight any add or merge put into one counter (rounded up to a power of
// two), so a row's excess over the add count of more than
// maxTornAdds such weights is more than any plausible set of adds cut
// short: damage (ErrDamaged), as is a counter past what saturating adds
// can leave. A merge cut short leaves rows that differ by up to a whole
// sketch; the merges started and finished, counted in the file, say when
// one may have been, and the excess is not judged then.
const (
	// weightOff is the word holding the largest weight recorded: a power
	// of two, at least the n of every AddN and the counters of every
	// merged sketch's recorded weight; 0 when no add weighed more than 1.
	weightOff = 16
	// mergesOff counts the merges started into the sketch (and the
	// merges a merged sketch had left unfinished), mergedOff those that
	// finished: a difference means one runs or was cut short.
	mergesOff = 24
	mergedOff = 32
	// maxTornAdds is how many adds of the largest recorded weight Check
	// lets be cut short (or be running) before it calls a row's excess
	// damage: 2^28. A batch moves the add count once per chunk of 256
	// keys, after their counters, so each handle closed or process killed
	// mid-batch may leave up to 255 adds in the rows and not in the count
	// (about 120 a kill measured): 2^28 is 2^20 such batches, more than
	// kills and Closes leave in a file's life, and still under the excess
	// a damaged word of a counter usually adds (4 bytes of 0xff add about
	// 2^32). A bound of 2^20 adds called a service's file damaged after
	// 8,500 Closes under AddBatch.
	maxTornAdds = 1 << 28
	// overSaturated is how far past maxCount adds racing a saturated
	// counter can carry it before one clamps it back (at most fastAdd
	// each, and 2^20 of them): a counter past maxCount by more is damage.
	overSaturated = fastAdd << 20
)

func (l *cmsLayout) stripeWord(off uintptr) *uint64 { return (*uint64)(unsafe.Add(l.stripes, off)) }

// weight returns the largest weight recorded, at least 1.
func (l *cmsLayout) weight() uint64 { return max(atomic.LoadUint64(l.stripeWord(weightOff)), 1) }

// recordWeight raises the recorded weight to n rounded up to a power of
// two (at most maxCount) and returns the recorded weight.
func (l *cmsLayout) recordWeight(n uint64) uint64 {
	w := uint64(maxCount)
	if n <= maxCount {
		w = 1 << bits.Len64(n-1) // n >= 1
	}
	p := l.stripeWord(weightOff)
	for {
		old := atomic.LoadUint64(p)
		if old >= w {
			return old
		}
		if atomic.CompareAndSwapUint64(p, old, w) {
			return w
		}
	}
}

// noteWeight records the weight of an add of n > 1 before it lands, once
// per handle and power of two: the usual AddN reads a handle field only.
func (c *CountMin) noteWeight(n uint64) {
	c.weighed.Store(c.l.recordWeight(n))
}

// pendingMerges is how many merges were started and not finished: zero
// unless one is running or was cut short.
func (l *cmsLayout) pendingMerges() uint64 {
	done := atomic.LoadUint64(l.stripeWord(mergedOff))
	return atomic.LoadUint64(l.stripeWord(mergesOff)) - done
}

// beginMerge counts a merge of src started (and the merges src had left
// unfinished, whose partial counters it brings along) and raises the
// recorded weight to src's, before any counter moves.
func (l *cmsLayout) beginMerge(src *cmsLayout) {
	atomic.AddUint64(l.stripeWord(mergesOff), 1+src.pendingMerges())
	l.recordWeight(src.weight())
}

// endMerge counts a merge finished.
func (l *cmsLayout) endMerge() { atomic.AddUint64(l.stripeWord(mergedOff), 1) }

// stampCopy brings a copy's recorded weight and merges started up to the
// source's now, after the copy read the counters: an AddN or a merge that
// ran during the copy recorded them before its counters moved, possibly
// after the copy read these words. A merge that started or finished
// during the copy then leaves the copy's merges started past its merges
// finished, as a merge cut short does. The adds that completed during the
// copy (the add count moved by delta since before, which the copy read
// first) may be in some of its rows and not in its add count: the copy's
// weight is raised so that the bound Check applies covers them too.
func (l *cmsLayout) stampCopy(dst []byte, before uint64) {
	for _, off := range []uintptr{weightOff, mergesOff} {
		w := wordAt(dst, off)
		*w = max(*w, atomic.LoadUint64(l.stripeWord(off)))
	}
	if after := l.addCount(); after > before {
		w := wordAt(dst, weightOff)
		*w = max(*w, copyWeight(max(*w, 1), after-before))
	}
}

// copyWeight is a recorded weight w' (a power of two, at most maxCount)
// with maxTornAdds·w' >= maxTornAdds·w + delta: room for delta more in
// the rows than in the add count.
func copyWeight(w, delta uint64) uint64 {
	need := w + delta/maxTornAdds
	if delta%maxTornAdds != 0 {
		need++
	}
	if need < w || need > maxCount {
		return maxCount
	}
	return 1 << bits.Len64(need-1)
}

// check is the Count-Min part of Check: the candidate table first (see
// candidateTable.check), then the rows. Every row must sum to the same
// total, as it must since every add puts its count in exactly one counter
// of each row. Rows that disagree are not damage (ErrInconsistent): adds
// that raced a Reset leave them, and Check says so, or an add was cut
// short by a killed process (ErrTornAdd), which leaves a pattern of its
// own (see resetTracked). Either way nothing needs repair: estimates stay
// upper bounds for every key but the few caught in the middle, and a
// Reset with no adds running clears the finding. Row sums are exact only
// while no add is running (a concurrent add lands in some rows before
// others), and are not compared once a counter has saturated. What no
// add cut short explains is damage (ErrDamaged): a counter far past
// saturation, or a row holding more than the add count by more than
// maxTornAdds adds of the largest weight recorded.
func (c *CountMin) check() error {
	if c.top != nil {
		if err := c.top.check(); err != nil {
			return c.m.errorf("check", err)
		}
	}
	return c.checkCounters()
}

// checkCounters is check without the candidate table: the rows.
func (c *CountMin) checkCounters() error {
	sums := make([]uint64, c.l.rows)
	var adds, after, weight uint64
	judge := false // the excess over the add count can be judged
	for try := 0; ; try++ {
		gen := c.l.resets()
		done := atomic.LoadUint64(c.l.stripeWord(mergedOff))
		// The add count moves after the counters: read before the rows,
		// it never exceeds them unless something but an add changed them.
		adds = c.l.addCount()
		saturated := c.core.rowSums(&c.l, sums)
		// Read after the rows: every add the walk saw is counted in it
		// unless it is running or was cut short, and weighs at most the
		// recorded weight, which moves before an add's counters.
		after = c.l.addCount()
		weight = c.l.weight()
		started := atomic.LoadUint64(c.l.stripeWord(mergesOff))
		if c.l.resets() != gen && try < 3 {
			continue // a Reset ran during the walk: walk again
		}
		if saturated {
			if err := c.overSaturated(); err != nil {
				return err
			}
			return nil
		}
		judge = c.l.resets() == gen && started == done
		break
	}
	if !c.open.Load() {
		return c.closedErr("check")
	}
	if judge && weight <= math.MaxUint64/maxTornAdds {
		for i, v := range sums {
			if v > after && v-after > maxTornAdds*weight {
				return c.m.errorf("check", fmt.Errorf("%w: row %d sums to %d, %d more than the add count (%d): more than %d adds cut short of the largest weight added (%d) could leave; the counters were changed by something other than this package's adds, merges and resets", ErrDamaged, i, v, v-after, after, maxTornAdds, weight))
			}
		}
	}
	return c.rowFinding(sums, adds)
}

// overSaturated walks the counters of a sketch with a saturated one for a
// counter past maxCount by more than racing adds can carry it: damage.
func (c *CountMin) overSaturated() error {
	width := uintptr(c.l.mask + 1)
	for i := 0; i < c.l.rows; i++ {
		row := unsafe.Add(c.l.cells, uintptr(i)*c.l.rowBytes)
		for j := uintptr(0); j < width; j++ {
			if v := atomic.LoadUint64((*uint64)(unsafe.Add(row, j*8))); v > maxCount+overSaturated {
				if !c.open.Load() {
					return c.closedErr("check")
				}
				return c.m.errorf("check", fmt.Errorf("%w: counter %d of row %d holds %d, past the largest count 2^63 by more than adds racing it can carry it", ErrDamaged, j, i, v))
			}
		}
	}
	return nil
}

// rowFinding classifies row sums that disagree: a prefix of rows counting
// more is an add cut short (ErrTornAdd); sums that only rise from the
// first row to the last are what adds racing a Reset leave (see
// resetTracked).
func (c *CountMin) rowFinding(sums []uint64, adds uint64) error {
	lo, hi := sums[0], sums[0]
	rising := true
	for i, v := range sums {
		lo, hi = min(lo, v), max(hi, v)
		if i > 0 && v < sums[i-1] {
			rising = false
		}
	}
	if lo == hi {
		if adds > lo {
			return c.m.errorf("check", fmt.Errorf("%w: the add count holds %d, %d more than every row: adds that raced a Reset (their count survived it, their counters did not); the file is not damaged, and a Reset with no adds running clears this", ErrInconsistent, adds, adds-lo))
		}
		return nil
	}
	diff := fmt.Sprintf("row sums range from %d to %d, a difference of %d", lo, hi, hi-lo)
	if c.l.resets()%2 == 1 {
		return c.m.errorf("check", fmt.Errorf("%w: %s, and a Reset is running or was cut short part way (by a killed process or a Close); the file is not damaged, and a Reset that completes clears this", ErrInconsistent, diff))
	}
	if rising && c.l.resets() != 0 {
		return c.m.errorf("check", fmt.Errorf("%w: %s, left by adds that raced a Reset (they survive in some rows only); the file is not damaged, and a Reset with no adds running clears this", ErrInconsistent, diff))
	}
	if c.l.pendingMerges() != 0 {
		return c.m.errorf("check", fmt.Errorf("%w: %s, and a merge into the sketch is running or was cut short (by a killed process or a Close); the file is not damaged: every estimate stays an upper bound, and a Reset clears this", ErrTornAdd, diff))
	}
	return c.m.errorf("check", fmt.Errorf("%w: %s; the file is not damaged: every estimate stays an upper bound but that of the key whose add was cut, and a Reset clears this", ErrTornAdd, diff))
}
