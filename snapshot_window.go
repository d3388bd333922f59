package sketch

import (
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"
)

// A window's snapshot is the periods it covers, read as its answers read
// them (readWindow): each slot of a covered period between two loads of
// its word, newest first. When the window turns under the copy (a word
// changed during its slot's read, or one names a period past the next),
// the copy starts again at the new period, at most snapshotTries times.

// windowTurnError says that a window kept turning under its copy.
type windowTurnError struct {
	name  string
	tries int
}

func (e *windowTurnError) Error() string {
	return fmt.Sprintf("the window %s turned during each of %d copies (its period is shorter than a copy takes)", e.name, e.tries)
}

func (e *windowTurnError) Unwrap() error { return ErrTimeout }

// testHookSnapshotFold runs after each slot a snapshot folds in, so that
// a test can turn the window under the copy.
var testHookSnapshotFold func(s uint64)

// foldCovered calls fold for each slot that holds a period of the window
// at the current period, until one period's window was read whole, and
// returns its periods. reset undoes the folds of a try that was not.
func (b *windowBase) foldCovered(fold func(s uint64), reset func()) (Periods, error) {
	c := &b.ctl
	for try := 1; ; try++ {
		p := c.currentRead()
		whole := c.readWindow(p, false, func(s uint64) bool {
			fold(s)
			if testHookSnapshotFold != nil {
				testHookSnapshotFold(s)
			}
			return false
		})
		if whole {
			return b.covered(p), nil
		}
		if try == snapshotTries {
			return Periods{}, &windowTurnError{b.name(), try}
		}
		reset()
		c.refresh()
	}
}

// Snapshot is SnapshotCovered without the periods.
func (w *CountMinWindow) Snapshot(at Place, opts ...Option) (*CountMin, error) {
	c, _, err := w.SnapshotCovered(at, opts...)
	return c, err
}

// SnapshotCovered copies the periods the window covers, while any process
// keeps adding, into ONE Count-Min sketch at a place, whose counters are
// the sums of the covered periods' counters, and returns it frozen and
// read-only with the periods it covers. It has the window's shape (Rows,
// Width) and seed, so that it merges (CountMin.Merge) with the snapshots
// of other hosts' windows and with plain sketches of that shape; its
// Total is what the covered periods counted. A plain sketch, not a
// window: it is for merging and shipping, and answers as the window did
// for those periods, however late it is asked.
//
// Every estimate of the copy is at least what the adds that returned, in
// any process, before the call counted for its key in the periods it
// covers, which are the window's when the copy ran: when the window turns
// during the copy, the copy starts again at the new period (ErrTimeout,
// after several tries, from a window whose period is shorter than a copy
// takes). The places and options are as CountMin.Snapshot's.
func (w *CountMinWindow) SnapshotCovered(at Place, opts ...Option) (*CountMin, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("snapshot")
	}
	rows, width := int(w.m.ent.params[0]), w.m.ent.params[1]
	k, keyBytes := int(w.m.ent.params[4]), int(w.m.ent.params[5])
	sp, err := CountMinConfig{Rows: rows, Width: int(width), Candidates: k, CandidateKeyBytes: keyBytes}.spec()
	if err != nil {
		return nil, Periods{}, w.m.errorf("snapshot", err)
	}
	sp.seed = w.m.lay.seed
	var periods Periods
	sp.fill = func(data []byte, lay layout) error {
		d := lay.entries[0]
		region := data[d.off : d.off+d.size]
		if periods, err = w.sumCovered(region); err != nil || w.top == nil {
			return err
		}
		// The window's candidates, counted in the copy: the copy lists
		// the loudest keys of the periods it covers.
		base := unsafe.Pointer(&region[0])
		l := cmsLayout{stripes: base, cells: unsafe.Add(base, stripesBytes), seed: w.m.lay.seed, mask: width - 1, rows: rows, rowBytes: uintptr(width * 8)}
		tableAt(region, countMinBytes(rows, int(width)), k, keyBytes, w.m.lay.seed).place(layoutHost{&l}, w.top.collect())
		return nil
	}
	m, err := createSnapshot(w.name(), at, sp, opts)
	c, err := finishSnapshot(&w.Handle, m, err, newCountMin)
	if err != nil {
		return nil, Periods{}, err
	}
	return c, periods, nil
}

// sumCovered adds the covered slots' counters into dst, a Count-Min
// region of the slots' shape, saturating, and sets its add count to the
// smallest row sum: what every row holds, so that the copy's Total is
// the periods' and its Check finds its add count below no row.
func (w *CountMinWindow) sumCovered(dst []byte) (Periods, error) {
	cells := unsafe.Add(unsafe.Pointer(&dst[0]), stripesBytes)
	l0 := &w.slots[0]
	n := uintptr(l0.rows) * uintptr(l0.mask+1)
	p, err := w.foldCovered(func(s uint64) {
		src := w.slots[s].cells
		for i := uintptr(0); i < n; i++ {
			if v := atomic.LoadUint64((*uint64)(unsafe.Add(src, i*8))); v != 0 {
				d := (*uint64)(unsafe.Add(cells, i*8))
				*d = satAdd(*d, min(v, maxCount))
			}
		}
	}, func() { clear(dst) })
	if err != nil {
		return p, err
	}
	l := cmsLayout{stripes: unsafe.Pointer(&dst[0]), cells: cells, mask: l0.mask, rows: l0.rows, rowBytes: l0.rowBytes}
	sums := make([]uint64, l.rows)
	countMinGo{}.rowSums(&l, sums)
	least := sums[0]
	for _, v := range sums {
		least = min(least, v)
	}
	*wordAt(dst, 0) = min(least, maxCount)
	// A window records no weights: the copy's says its rows may differ
	// by as much as they do (adds torn or running during the copy), so
	// that its Check does not take that for damage.
	*wordAt(dst, weightOff) = copyWeight(1, slices.Max(sums)-least)
	return p, nil
}

// Snapshot is SnapshotCovered without the periods.
func (w *BloomWindow) Snapshot(at Place, opts ...Option) (*Bloom, error) {
	b, _, err := w.SnapshotCovered(at, opts...)
	return b, err
}

// SnapshotCovered copies the periods the window covers, while any process
// keeps adding, into ONE Bloom filter at a place, the OR of the covered
// periods' filters, and returns it frozen and read-only with the periods
// it covers. It has the window's filter's bits, hashes and seed, so that
// it merges (Bloom.Merge) with the snapshots of other hosts' windows and
// with plain filters of that config; its Added and Seen are the covered
// periods' sums.
//
// The copy answers true for every key whose add returned, in any process,
// before the call, in a period it covers (no false negative); its
// false-positive rate is about that of the union of those periods' keys
// in one filter, higher than one period's. When the window turns during
// the copy, the copy starts again, as CountMinWindow.SnapshotCovered's
// does; the places and options are as CountMin.Snapshot's.
func (w *BloomWindow) SnapshotCovered(at Place, opts ...Option) (*Bloom, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("snapshot")
	}
	e := w.m.ent
	blocks := e.params[2]
	sp := spec{kind: kindBloom, size: bloomBytes(blocks), seed: w.m.lay.seed}
	copy(sp.params[:4], e.params[:4]) // a period's filter: kind 2's words
	var periods Periods
	var err error
	sp.fill = func(data []byte, lay layout) error {
		d := lay.entries[0]
		periods, err = w.orCovered(data[d.off : d.off+d.size])
		return err
	}
	m, err := createSnapshot(w.name(), at, sp, opts)
	b, err := finishSnapshot(&w.Handle, m, err, newBloom)
	if err != nil {
		return nil, Periods{}, err
	}
	return b, periods, nil
}

// orCovered ORs the covered slots' bits into dst, a Bloom region of the
// slots' size, and adds up their counts in its first stripe.
func (w *BloomWindow) orCovered(dst []byte) (Periods, error) {
	words := unsafe.Add(unsafe.Pointer(&dst[0]), stripesBytes)
	var added, seen uint64
	p, err := w.foldCovered(func(s uint64) {
		l := &w.slots[s]
		for i := uint64(0); i < l.nwords(); i++ {
			if v := atomic.LoadUint64(l.word(i)); v != 0 {
				*(*uint64)(unsafe.Add(words, i*8)) |= v
			}
		}
		a, sn := l.counts()
		added, seen = added+a, seen+sn
	}, func() {
		clear(dst)
		added, seen = 0, 0
	})
	if err != nil {
		return p, err
	}
	*wordAt(dst, bloomAddedOff) = added
	*wordAt(dst, bloomSeenOff) = seen
	return p, nil
}

// copyRegion copies the window into dst, a region of the same window, as
// a window frozen at the period it covers: the control words, the covered
// slots with their words, and nothing of the others (left empty: never
// used, all zero). slotOff is where slot 0 starts, slotBytes each slot's
// size, and slot(s) the start of slot s in the source. An arena's
// snapshot copies its windows so.
func (b *windowBase) copyRegion(dst []byte, slotOff, slotBytes uint64, slot func(s uint64) unsafe.Pointer) error {
	c := &b.ctl
	p, err := b.foldCovered(func(s uint64) {
		copyWords(dst[slotOff+s*slotBytes:][:slotBytes], slot(s))
		*wordAt(dst, uintptr(wcWords+8*s)) = atomic.LoadUint64(c.word(s))
	}, func() { clear(dst) })
	if err != nil {
		return err
	}
	*wordAt(dst, wcEpoch) = atomic.LoadUint64(c.epochWord())
	*wordAt(dst, wcLatest) = max(atomic.LoadUint64(c.latestWord()), p.Current)
	*wordAt(dst, wcFrozen) = p.Current + 1
	return nil
}

// copyRegion is windowBase.copyRegion for a Count-Min window.
func (w *CountMinWindow) copyRegion(dst []byte) error {
	rows, width := w.slots[0].rows, int(w.slots[0].mask+1)
	if err := w.windowBase.copyRegion(dst, windowControlBytes(w.win.Keep), countMinSlotBytes(rows, width),
		func(s uint64) unsafe.Pointer { return w.slots[s].stripes }); err != nil {
		return err
	}
	if w.top != nil {
		w.top.copyTo(dst, countMinWindowBytes(rows, width, w.win.Keep))
	}
	return nil
}

// copyRegion is windowBase.copyRegion for a Bloom window.
func (w *BloomWindow) copyRegion(dst []byte) error {
	return w.windowBase.copyRegion(dst, windowControlBytes(w.win.Keep), bloomBytes(w.slots[0].blocks),
		func(s uint64) unsafe.Pointer { return w.slots[s].stripes })
}
