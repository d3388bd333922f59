package sketch

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

// Snapshot copies the arena, while any process keeps using its
// structures, into a new arena at a place, and returns it frozen and
// read-only: the same size, seed and names, each structure of the same
// kind and config at the same offset, so that every structure of the copy
// merges with the same structure of other hosts' arenas and snapshots.
// Each is copied as its own Snapshot copies it, with the same promise for
// the operations that returned before the call (Count-Min sketches never
// below, no false negatives from filters; counting Bloom filters under
// the file's read lock, one at a time), except the windows, which stay
// windows: each is fixed at the period its copy covers, as Freeze fixes
// one, and answers for those periods however late it is asked (its own
// Snapshot gives the one plain structure to merge). Structures created in
// the arena during the copy are left out, and so are those removed
// (Remove) before it or during it.
//
// The places and options are as CountMin.Snapshot's; a snapshot of an
// arena is an arena of its own, not a structure in another.
func (a *Arena) Snapshot(at Place, opts ...Option) (*Arena, error) {
	if !a.open.Load() {
		return nil, a.closedErr("snapshot")
	}
	a.mu.Lock()
	// The whole directory, not the entries the change count says moved:
	// a reuser killed before the count's step leaves a slot this handle
	// may have read as being reused, and a copy costs more than the read.
	a.synced = false
	err := a.refresh()
	src := a.lay
	src.entries = slices.Clone(a.lay.entries)
	a.mu.Unlock()
	if err != nil {
		return nil, a.m.errorf("snapshot", err)
	}
	size, err := arenaSizeOf(src)
	if err != nil {
		return nil, a.m.errorf("snapshot", err)
	}
	sp := spec{arena: true, size: size, seed: src.seed, match: func(entry) error { return nil }}
	sp.fill = func(data []byte, lay layout) error {
		n := 0
		for _, e := range src.entries {
			if !e.live() {
				continue
			}
			err := a.copyEntry(e, data[e.off:e.off+e.size])
			if errors.Is(err, fs.ErrNotExist) {
				// Removed during the copy: left out, as a structure
				// created during it is (its bytes may be part copied).
				clear(data[e.off : e.off+e.size])
				continue
			}
			if err != nil {
				return err
			}
			encodeEntry(data[uint64(lay.dirOff)+uint64(n)*entrySize:][:entrySize], e)
			n++
		}
		native.PutUint32(data[offDirCount:], uint32(n))
		return nil
	}
	m, err := createSnapshot(a.name(), at, sp, opts)
	return finishSnapshot(&a.Handle, m, err, func(m *mapping) (*Arena, error) { return newArena(m), nil })
}

// arenaSizeOf returns the size to create an arena with that lays it out
// as l is laid out (the directory's capacity, the data's offset, the
// file's size), so that every region fits at its own offset: the file's
// size, or a byte more than the pages that gave the directory its
// capacity.
func arenaSizeOf(l layout) (uint64, error) {
	for _, size := range []uint64{l.fileSize, uint64(l.dirCap)*pageSize + 1, uint64(l.dirCap) * pageSize} {
		n := newArenaLayout(l.seed, size)
		if n.dirCap == l.dirCap && n.dataOff == l.dataOff && n.fileSize == l.fileSize {
			return size, nil
		}
	}
	return 0, fmt.Errorf("%w: no arena size lays out %d bytes with %d directory entries", ErrCorrupt, l.fileSize, l.dirCap)
}

// copyEntry copies the structure of entry e into dst, its region in the
// new arena, through a handle of its own kind.
func (a *Arena) copyEntry(e entry, dst []byte) error {
	at := a.Place(e.name)
	at.exact = &e // that structure, not another created under its name since
	info, ok := kinds[e.kind]
	if !ok {
		return fmt.Errorf("%w: %s has no snapshot", ErrInvalidArgument, kindName(e.kind))
	}
	s, err := info.open(at)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.copyRegion(dst)
}
