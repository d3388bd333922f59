package sketch

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Snapshots: a live structure copied into a new file while writers in any
// process keep adding. The copy is built in a file nobody can see yet (an
// unnamed file linked at its path once complete, a new memfd, memory),
// sealed before its magic is published, so that it is never seen half
// made nor written after. Every word of the source's region is read once
// with an atomic load, as an estimate reads a counter: an add that
// returned before the copy began is in every word it wrote, and one that
// runs during the copy is in some words and not others.
//
// What a copy must not carry over as it stands: the header is the new
// file's own (a fresh lock, no reader slots, no liveness tokens, its own
// sealed word); a Count-Min sketch's reset generation, odd while a Reset
// runs, is kept only when it says a Reset raced the copy; a window's slots
// of periods it does not cover, and slots being cleared, are left empty,
// and its frozen word fixes it at the period the copy covers.

// snapshotTries bounds how many times a copy starts again when what it
// copied changed under it (a Reset, a window's turn), as reads do
// (readStable).
const snapshotTries = 9

// createSnapshot makes the structure of sp at a place, where its fill
// writes the copy, sealed and read-only. A snapshot always makes a new
// structure: a path must not exist (an error wrapping fs.ErrExist), and
// of the places only Path, Memfd and Memory make new files. The options
// are the place's (WithMode for a path); a seed given must be the
// source's, which sp names.
func createSnapshot(src string, at Place, sp spec, opts []Option) (*mapping, error) {
	fill := sp.fill
	sp.fill = func(data []byte, lay layout) error {
		if err := fill(data, lay); err != nil {
			return err
		}
		// Sealed before the magic is published: no process ever opens
		// the copy for writing.
		native.PutUint32(data[offSealed:], 1)
		return nil
	}
	dst := placeLabel(at)
	fail := func(err error) (*mapping, error) {
		return nil, fmt.Errorf("sketch: snapshot %s to %s: %w", src, dst, err)
	}
	o, err := buildOptions(opts)
	if err == nil && o.readOnly {
		err = fmt.Errorf("%w: ReadOnly does not apply to a snapshot, which is created (and is read-only)", ErrInvalidConfig)
	}
	if err == nil {
		sp, err = sp.seeded(o)
	}
	if err != nil {
		return fail(err)
	}
	var m *mapping
	switch at.how {
	case atPath:
		m, err = createNewPath(at.name, sp, o)
		if err != nil {
			return fail(err)
		}
	case atMemfd:
		m, err = createMemfd(at.name, sp)
	case atMemory:
		m, err = createInMemory(sp)
	case atNothing:
		return fail(errNoPlace)
	default:
		return fail(fmt.Errorf("%w: a snapshot makes a new structure, at a Path that does not exist, a Memfd or Memory, not at %s (a snapshot is sealed, and sealing a structure of an arena seals the arena: snapshot the whole arena instead)", ErrInvalidArgument, dst))
	}
	if err != nil {
		return nil, err
	}
	m.readOnly = true
	return m, nil
}

// placeLabel names a place in messages.
func placeLabel(at Place) string {
	switch at.how {
	case atPath:
		return at.name
	case atMemfd:
		return "memfd:" + at.name
	case atMemory:
		return "memory"
	case atInherited:
		return fmt.Sprintf("fd %d", at.fd)
	case atArena:
		return "an arena's " + entryLabel(at.name)
	}
	return "no place"
}

// entrySpec is the spec of a structure of e's kind and parameters with
// the given seed, whose fill copies into its region with copy.
func entrySpec(e entry, seed uint64, copy func(region []byte) error) spec {
	return spec{kind: e.kind, size: e.size, params: e.params, seed: seed,
		fill: func(data []byte, lay layout) error {
			d := lay.entries[0]
			return copy(data[d.off : d.off+d.size])
		}}
}

// finishSnapshot checks that the source stayed open through the copy (a
// closed source's pages read as zeros) and builds the handle on m.
func finishSnapshot[T any](h *Handle, m *mapping, err error, build func(*mapping) (T, error)) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	if !h.open.Load() {
		m.close()
		return zero, h.closedErr("snapshot")
	}
	return build(m)
}

// copyWords copies len(dst) bytes, a multiple of 8, from src a word at a
// time with atomic loads. dst is new and zero: zero words are not
// stored, so that the pages of an empty part are never touched.
func copyWords(dst []byte, src unsafe.Pointer) {
	if len(dst) == 0 {
		return
	}
	d := unsafe.Pointer(&dst[0])
	for i := uintptr(0); i < uintptr(len(dst)); i += 8 {
		if v := atomic.LoadUint64((*uint64)(unsafe.Add(src, i))); v != 0 {
			*(*uint64)(unsafe.Add(d, i)) = v
		}
	}
}

// wordAt is the uint64 at offset off of b.
func wordAt(b []byte, off uintptr) *uint64 {
	return (*uint64)(unsafe.Add(unsafe.Pointer(&b[0]), off))
}

// Snapshot copies the sketch, while any process keeps adding to it, into
// a new sketch at a place, and returns it frozen and read-only, with this
// sketch's shape and seed, so that it merges (Merge) with the snapshots
// and frozen files of other hosts. Every estimate of the copy is at least
// what the adds that returned, in any process, before Snapshot was called
// counted for its key; an add running during the copy may be in some of
// its rows and not others (Check of the copy then reports ErrTornAdd,
// which is no damage), and a Reset running during it can make the copy
// low (the copy starts again when one ran; after several, the copy keeps
// the odd reset generation, so that its Check says a Reset raced it).
//
// A snapshot is always a new structure: a Path that does not exist yet
// (an error wrapping fs.ErrExist otherwise; the file appears at the path
// complete and sealed), a Memfd or Memory. Other places are
// ErrInvalidArgument: an Inherited descriptor holds a structure already,
// and sealing a structure of an arena would seal the whole arena (take
// the arena's snapshot instead). WithMode applies to a path, and WithSeed,
// if given, must be this sketch's seed. The copy reads the whole region
// once, a word at a time, and takes no lock.
func (c *CountMin) Snapshot(at Place, opts ...Option) (*CountMin, error) {
	if !c.open.Load() {
		return nil, c.closedErr("snapshot")
	}
	m, err := createSnapshot(c.name(), at, entrySpec(c.m.ent, c.l.seed, c.copyRegion), opts)
	return finishSnapshot(&c.Handle, m, err, newCountMin)
}

// copyRegion copies the sketch's region into dst, the new one's. The add
// count's stripes come first in the region, so the copy's add count is no
// more than any of its rows holds. A Reset that ran during the copy (its
// generation moved) makes the copy start again.
func (c *CountMin) copyRegion(dst []byte) error {
	base := c.l.stripes
	for try := 1; ; try++ {
		gen := c.l.resets()
		before := c.l.addCount()
		copyWords(dst, base)
		c.l.stampCopy(dst, before) // the weight, merges and adds that moved meanwhile
		if c.top != nil {
			// The table again, keeping only its ways that stayed whole.
			c.top.copyTo(dst, countMinBytes(c.l.rows, int(c.l.mask+1)))
		}
		if after := c.l.resets(); after == gen {
			return nil
		} else if try == snapshotTries {
			// Still racing: the copy says a Reset ran through it.
			atomic.StoreUint64(wordAt(dst, resetGenOff), after|1)
			return nil
		}
		clear(dst)
	}
}

// Snapshot copies the filter, while any process keeps adding to it, into
// a new filter at a place, and returns it frozen and read-only, with this
// filter's bits, hashes and seed, so that it merges (Merge) with the
// snapshots and frozen files of other hosts. The copy answers true for
// every key whose add returned, in any process, before Snapshot was
// called (no false negative); a key added during the copy may be found or
// not. A Reset running during the copy may leave part of what it cleared.
// The places, options and the lock-free copy are as CountMin.Snapshot's.
func (b *Bloom) Snapshot(at Place, opts ...Option) (*Bloom, error) {
	if !b.open.Load() {
		return nil, b.closedErr("snapshot")
	}
	m, err := createSnapshot(b.name(), at, entrySpec(b.m.ent, b.l.seed, b.copyRegion), opts)
	return finishSnapshot(&b.Handle, m, err, newBloom)
}

// copyRegion copies the filter's region, its counts and bits, into dst.
func (b *Bloom) copyRegion(dst []byte) error {
	copyWords(dst, b.l.stripes)
	return nil
}

// Snapshot copies the filter, while any process keeps adding to it, into
// a new filter at a place, and returns it frozen and read-only, with this
// filter's geometry and seed, so that it merges (Merge) with the
// snapshots and frozen files of other hosts. The copy finds every key
// whose add returned, in any process, before Snapshot was called, and
// that no Remove took out before the copy began (no false negative).
//
// The copy holds the file's read lock, as an Add does: adds go on, while
// a Remove, Reset, Merge or AddIfAbsent, which take the write lock, runs
// wholly before the copy or wholly after it (a key removed before is gone
// from the copy, unless another copy of it or a false positive remains;
// one removed after is still in it), and, the lock
// preferring writers, a Remove that waits for the copy holds up the adds
// that come after it until the copy ends. A read-only handle takes no
// lock: a Remove running during its copy may then be in it in part (the
// key may still be found), and a Reset in part; keys added before the
// copy and not removed are still all found. The places and options are
// as CountMin.Snapshot's.
func (b *CountingBloom) Snapshot(at Place, opts ...Option) (*CountingBloom, error) {
	if !b.open.Load() {
		return nil, b.closedErr("snapshot")
	}
	m, err := createSnapshot(b.name(), at, entrySpec(b.m.ent, b.l.seed, b.copyRegion), opts)
	return finishSnapshot(&b.Handle, m, err, newCountingBloom)
}

// copyRegion copies the filter's region, its operation count and
// counters, into dst under the read lock (none on a read-only handle),
// or fails with the lock's ErrTimeout.
func (b *CountingBloom) copyRegion(dst []byte) error {
	if b.lk != nil {
		if err := b.lk.rlock(); err != nil {
			return err
		}
		defer b.lk.runlock()
	}
	copyWords(dst, b.l.stripes)
	return nil
}
