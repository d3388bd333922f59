package sketch

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Merge adds the counters of others into c's, counter by counter,
// saturating at 2^63 as adds do, and their add counts into c's: afterwards
// every estimate of c is at least what c and the others estimated
// together, and c is what one sketch fed every stream would be (equal
// counters, byte for byte, when no counter saturated). The sketches must
// have c's shape and seed (ErrIncompatible, whose message says what
// differs, never the seeds); they may be read-only views or frozen copies,
// such as files shipped from other hosts, and c itself (doubling it). c
// must be writable (ErrReadOnly, ErrFrozen).
//
// Merge takes no lock: it reads each source counter once with an atomic
// load and adds it with an atomic add, so adds running in any process at
// the same time, on c or on a source, land whole, and a source written
// meanwhile contributes some of the new adds and not others. A merge cut
// short (a killed process, a Close) has added a prefix of the counters;
// the sketch counts the merges started and finished, so that Check knows
// then that its rows may differ by up to a whole sketch (ErrTornAdd, not
// damage). c records the largest weight the others recorded. A sketch
// whose counters Check calls damaged (ErrDamaged) is refused, naming it,
// before anything changes: its counters would spread into c's for good.
// Both builds merge in Go: it is one pass of loads and adds, as fast in
// either core.
//
// When c keeps a candidate table (Candidates), its keys and those of the
// others' tables are counted again in the merged sketch, and the loudest
// fill c's table, under the file's write lock: the union of candidates,
// cut to c's table. A slot whose key is kept whole but does not hash to
// the slot's hash (Check of its sketch: ErrCorrupt) is left out, as Top
// leaves it out, rather than refusing the merge: the counters merge
// sound, and the key's next add names it again. A prefix's label cannot
// be checked and is taken as it is (see HeavyHitter.Key).
func (c *CountMin) Merge(others ...*CountMin) error {
	if err := c.refuse("merge"); err != nil {
		return err
	}
	for i, o := range others {
		if o == nil || !o.open.Load() {
			return c.m.errorf("merge", fmt.Errorf("%w: sketch %d of the merge is nil or closed", ErrInvalidArgument, i))
		}
		if o.l.rows != c.l.rows || o.l.mask != c.l.mask {
			return c.m.errorf("merge", fmt.Errorf("%w: %s has %d x %d counters, this sketch %d x %d", ErrIncompatible, o.name(), o.l.rows, o.l.mask+1, c.l.rows, c.l.mask+1))
		}
		if o.l.seed != c.l.seed {
			return c.m.errorf("merge", fmt.Errorf("%w: %s hashes with another seed than this sketch", ErrIncompatible, o.name()))
		}
		if err := o.checkCounters(); errors.Is(err, ErrDamaged) {
			return c.m.errorf("merge", fmt.Errorf("%w: %s: its counters hold what no add can leave (check it), so they are not merged", ErrDamaged, o.name()))
		}
	}
	for i, o := range others {
		c.l.beginMerge(&o.l)
		mergeCells(&c.l, &o.l)
		c.l.endMerge()
		if !o.open.Load() {
			return c.m.errorf("merge", fmt.Errorf("%w: sketch %d of the merge was closed during it", ErrInvalidArgument, i))
		}
	}
	if c.top != nil {
		if err := c.mergeCandidates(others); err != nil {
			// The counters are merged; the table is as it was.
			return c.m.errorf("merge", fmt.Errorf("the counters are merged, but not the candidate table: %w", err))
		}
	}
	return c.after("merge")
}

// mergeCells adds src's counters and add-count stripes into dst's, which
// has the same shape, saturating.
func mergeCells(dst, src *cmsLayout) {
	n := uintptr(dst.rows) * uintptr(dst.mask+1)
	for i := uintptr(0); i < n; i++ {
		if v := atomic.LoadUint64((*uint64)(unsafe.Add(src.cells, i*8))); v != 0 {
			addCell((*uint64)(unsafe.Add(dst.cells, i*8)), min(v, maxCount))
		}
	}
	for i := uintptr(0); i < stripeCount; i++ {
		if v := atomic.LoadUint64((*uint64)(unsafe.Add(src.stripes, i*stripeBytes))); v != 0 {
			addCell((*uint64)(unsafe.Add(dst.stripes, i*stripeBytes)), min(v, maxCount))
		}
	}
}
