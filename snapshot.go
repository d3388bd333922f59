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
// are the place's (WithMode for a path); the seed is the source's, which
// sp names.
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
		err = fmt.Errorf("%w: WithReadOnly does not apply to a snapshot, which is created (and is read-only)", ErrInvalidConfig)
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
