package sketch

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Handle is what every structure's Handle holds beside its own layout: the
// mapping, whether the Handle is open and read-only, and the file's sealed
// word; and the methods that are the same for every structure.
type Handle struct {
	m *mapping
	// open is set by the constructors and cleared by Close. Every call
	// loads it: a word of this handle that only Close writes, so the load
	// costs what a plain load does and no cache line moves between cores.
	// The zero handle is closed.
	open atomic.Bool
	ro   bool // opened with ReadOnly: mutators return ErrReadOnly
	// froze is set once this handle sealed the file (Freeze): from then
	// on it reports itself read-only, as the handle that froze a file
	// does in the seeds (its mutators return ErrFrozen).
	froze atomic.Bool
	// sealed is the file's sealed word, set by Freeze in any process and
	// loaded by every mutator.
	sealed *uint32
}

// init fills the handle from its mapping; the constructor opens it last.
func (h *Handle) init(m *mapping) {
	h.m, h.ro, h.sealed = m, m.readOnly, sealedWord(m.data)
}

// Path returns the file's path, or "" for a memfd, an inherited
// descriptor or an in-memory structure.
func (h *Handle) Path() string {
	if h.m == nil {
		return ""
	}
	return h.m.path
}

// File returns a duplicate of the structure's descriptor, for a child
// process (exec.Cmd.ExtraFiles) that attaches with the structure's Attach
// function (AttachCountMin, AttachBloom, AttachCountingBloom, AttachArena,
// and so on). The caller owns it and closes it.
func (h *Handle) File() (*os.File, error) {
	if h.m == nil {
		return nil, h.closedErr("file")
	}
	return h.m.file()
}

// Sync flushes the mapping to the file and reports a write error, such as
// a full disk on a filesystem that allocates at writeback.
func (h *Handle) Sync() error {
	if h.m == nil {
		return h.closedErr("sync")
	}
	return h.m.sync()
}

// Unlink removes the structure's file from Path. The structure stays
// usable through this handle and every other mapping; new opens of the
// path create a new one. A file already gone is not an error, and a
// structure without a path does nothing. A file that has replaced this one
// at the path is left alone: Unlink renames the path aside, checks that it
// moved this structure's file, and puts it back otherwise (on a filesystem
// that cannot rename without replacing, it checks and removes, which a
// replacement can race). It works on a read-only handle too: it changes
// the directory, not the file, and needs write permission on the
// directory only (Remove does the same by path, without a handle).
func (h *Handle) Unlink() error {
	if h.m == nil {
		return nil
	}
	return h.m.unlink()
}

// Seed returns the hash seed of the file, which every structure in it
// hashes keys with. It is a secret: whoever knows it can craft keys that
// collide (raising a Count-Min estimate, or making a filter claim keys it
// never held), so it is in no message, String or Stats. It is for creating
// structures that merge with this one, which needs the same seed: pass it
// to WithSeed when creating each host's file. A zero handle returns 0.
func (h *Handle) Seed() uint64 {
	if h.m == nil {
		return 0
	}
	return h.m.lay.seed
}

// Frozen reports whether the file is sealed (Freeze).
func (h *Handle) Frozen() bool { return h.open.Load() && atomic.LoadUint32(h.sealed) != 0 }

// ReadOnly reports whether the handle was opened with ReadOnly, or is the
// handle that froze the file (Freeze): neither writes to it any more.
func (h *Handle) ReadOnly() bool { return h.ro || h.froze.Load() }

// close is Close for every structure: calls after it report the handle
// closed, and the mapping swaps its pages for a placeholder (mapping.close).
func (h *Handle) close() error {
	if h.m == nil {
		return nil
	}
	h.open.Store(false)
	return h.m.close()
}

func (h *Handle) name() string {
	if h.m == nil {
		return "(zero value)"
	}
	return h.m.name
}

// refuse returns why a mutator may not run: the handle is closed (or the
// zero value), read-only, or the file is sealed; nil when it may.
func (h *Handle) refuse(op string) error {
	switch {
	case !h.open.Load():
		return h.closedErr(op)
	case h.ro:
		return h.m.errorf(op, ErrReadOnly)
	case atomic.LoadUint32(h.sealed) != 0:
		return h.m.errorf(op, ErrFrozen)
	}
	return nil
}

// after reports a handle closed while its call ran.
func (h *Handle) after(op string) error {
	if !h.open.Load() {
		return h.closedErr(op)
	}
	return nil
}

func (h *Handle) closedErr(op string) error {
	return fmt.Errorf("sketch: %s %s: %w", op, h.name(), ErrClosed)
}
