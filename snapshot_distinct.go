package sketch

import (
	"sync/atomic"
	"unsafe"
)

// Snapshot copies the count, while any process keeps adding to it, into a
// new distinct count at a place, and returns it frozen and read-only, with
// this count's precision, profile and seed, so that it merges (Merge) with
// the snapshots and frozen files of other hosts. Every register of the
// copy is at least what the adds that returned, in any process, before
// Snapshot was called left in it (registers only rise), so the copy counts
// every key added before the call; a key added during the copy may be in
// it or not. A Reset running during the copy may leave part of what it
// cleared. The places, options and the lock-free copy are as
// CountMin.Snapshot's.
func (d *Distinct) Snapshot(at Place, opts ...Option) (*Distinct, error) {
	if !d.open.Load() {
		return nil, d.closedErr("snapshot")
	}
	m, err := createSnapshot(d.name(), at, entrySpec(d.m.ent, d.l.seed, d.copyRegion), opts)
	return finishSnapshot(&d.Handle, m, err, func(m *mapping) (*Distinct, error) { return newDistinct(m), nil })
}

// copyRegion copies the count's region, its change count and registers,
// into dst.
func (d *Distinct) copyRegion(dst []byte) error {
	copyWords(dst, unsafe.Pointer(d.l.changes))
	return nil
}

// Snapshot is SnapshotCovered without the periods.
func (w *DistinctWindow) Snapshot(at Place, opts ...Option) (*Distinct, error) {
	d, _, err := w.SnapshotCovered(at, opts...)
	return d, err
}

// SnapshotCovered copies the periods the window covers, while any process
// keeps adding, into ONE distinct count at a place, whose registers are
// the register-wise maximum of the covered periods' (the union of their
// keys), and returns it frozen and read-only with the periods it covers.
// It has the window's precision, profile and seed, so that it merges
// (Distinct.Merge) with the snapshots of other hosts' windows and with
// plain counts of that config, and its Count is the window's Count for
// those periods, however late it is asked.
//
// The copy counts every key whose add returned, in any process, before
// the call, in a period it covers. When the window turns during the copy,
// the copy starts again, as CountMinWindow.SnapshotCovered's does; the
// places and options are as CountMin.Snapshot's. A covered slot with a
// register past the largest rank (damage: Check reports ErrDamaged) is
// refused with ErrDamaged rather than folded into the copy.
func (w *DistinctWindow) SnapshotCovered(at Place, opts ...Option) (*Distinct, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("snapshot")
	}
	e := w.m.ent
	p := uint(e.params[0])
	sp := spec{kind: kindDistinct, size: distinctBytes(p), seed: w.m.lay.seed}
	copy(sp.params[:2], e.params[:2]) // a period's count: kind 6's words
	var periods Periods
	var err error
	sp.fill = func(data []byte, lay layout) error {
		d := lay.entries[0]
		periods, err = w.maxCovered(data[d.off : d.off+d.size])
		return err
	}
	m, err := createSnapshot(w.name(), at, sp, opts)
	d, err := finishSnapshot(&w.Handle, m, err, func(m *mapping) (*Distinct, error) { return newDistinct(m), nil })
	if err != nil {
		return nil, Periods{}, err
	}
	return d, periods, nil
}

// maxCovered raises dst's registers, a distinct count's region of the
// slots' precision, to the covered slots' and adds up their change counts
// in its change count.
func (w *DistinctWindow) maxCovered(dst []byte) (Periods, error) {
	regs := unsafe.Slice((*uint64)(unsafe.Pointer(&dst[distinctHeadBytes])), w.slots[0].m()/8)
	var changes uint64
	var bad error
	p, err := w.foldCovered(func(s uint64) {
		if bad == nil {
			bad = w.slotDamage(s)
		}
		changes += atomic.LoadUint64(w.slots[s].changes)
		w.raiseTo(regs, s)
	}, func() {
		clear(dst)
		changes = 0
		bad = nil
	})
	*wordAt(dst, 0) = changes
	if err == nil {
		err = bad
	}
	return p, err
}

// copyRegion is windowBase.copyRegion for a distinct window: each covered
// slot's change count and registers. An arena's snapshot copies its
// distinct windows so.
func (w *DistinctWindow) copyRegion(dst []byte) error {
	return w.windowBase.copyRegion(dst, windowControlBytes(w.win.Keep), distinctSlotBytes(w.slots[0].p),
		func(s uint64) unsafe.Pointer { return unsafe.Pointer(w.slots[s].changes) })
}
