package sketch

import (
	"fmt"
	"os"
	"sync/atomic"
)

// Handle is what every structure shares: the file it lives in and the
// methods that mean the same for every kind (Path, File, Sync, Unlink,
// Seed, Frozen, ReadOnly, Freeze, Check, StatsVar, String). Every
// structure type embeds one; its zero value is a closed handle.
type Handle struct {
	m *mapping
	// self is the structure the handle serves, for the shared methods
	// whose work is the kind's.
	self served
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

// served is what a Handle asks of the structure it serves.
type served interface {
	// describe names the kind and its shape for String ("CountMin",
	// "5 x 4096").
	describe() (kind, shape string)
	statsOf() any  // the kind's Stats
	freeze() error // the kind's Freeze
	// check is the kind's part of Check, after the header's.
	check() error
}

// init fills the handle from its mapping; the constructor opens it last.
func (h *Handle) init(m *mapping, self served) {
	h.m, h.ro, h.sealed, h.self = m, m.readOnly, sealedWord(m.data), self
}

// Freeze seals the file for good: from then on every mutator of every
// handle on it, in every process, returns ErrFrozen, a read-write open of
// it is refused with ErrFrozen, and this handle reports itself ReadOnly. A
// sealed file may be copied to another host of the same byte order and
// opened there with WithReadOnly (freeze and ship); a collector merges such
// copies. Freeze of any structure of an arena (or of the arena) seals the
// whole arena, and a window's freeze also fixes it at the current period:
// answers then cover the periods it covered at the freeze, however late
// they are asked. Adds take no lock, so an add that another process
// started just before Freeze may still land after it returns: freeze once
// the writers have stopped when the copy must be exact. Freeze flushes the
// file (Sync).
func (h *Handle) Freeze() error {
	if h.self == nil {
		return h.closedErr("freeze")
	}
	return h.self.freeze()
}

// Check verifies the file: the header and directory again (ErrCorrupt and
// its sentinels: damage), then what the kind can verify of its own cells
// (a Count-Min sketch's row sums: see CountMin.Check; an arena's every
// directory entry). A filter's bits and a window's slots have no
// redundancy to verify beyond the header.
//
// What interrupted operations leave is no damage: Count-Min rows an add
// or a merge cut short left apart (ErrTornAdd), a Reset's leftovers
// (ErrInconsistent). Values none of them can leave are ErrDamaged (which
// wraps ErrCorrupt): a Count-Min row above its add count by more than
// 2^28 adds of the largest weight the file recorded, a counter far past
// saturation, a distinct count's register past the largest rank.
func (h *Handle) Check() error {
	if !h.open.Load() {
		return h.closedErr("check")
	}
	lay, err := decodeHeader(h.m.data)
	if !h.open.Load() {
		return h.closedErr("check") // what was read may be the placeholder
	}
	if err != nil {
		return h.m.errorf("check", err)
	}
	if lay.seed != h.m.lay.seed || (h.m.ent != entry{} && !lay.holds(h.m.ent)) {
		return h.m.errorf("check", fmt.Errorf("%w: the header changed under the mapping", ErrCorrupt))
	}
	return h.self.check()
}

// StatsVar returns the structure's Stats as an expvar.Var (its String
// method returns them as JSON), so that a service publishes a structure
// with one line: expvar.Publish("requests", cms.StatsVar()).
func (h *Handle) StatsVar() StatsVar {
	return StatsVar{func() any {
		if h.self == nil {
			// A zero value is no structure: it has no kind to report.
			return struct {
				Closed bool `json:"closed"`
			}{true}
		}
		return h.self.statsOf()
	}}
}

// String describes the handle without its seed, which is secret: fmt's
// %v and %+v of a structure print this.
func (h *Handle) String() string {
	if h.self == nil {
		return "sketch.Handle((zero value), closed)"
	}
	kind, shape := h.self.describe()
	state := ""
	if !h.open.Load() {
		state = ", closed"
	}
	return fmt.Sprintf("sketch.%s(%s, %s%s)", kind, h.name(), shape, state)
}

// GoString is String, so that %#v does not print the seed either.
func (h *Handle) GoString() string { return h.String() }

// Path returns the file's path, or "" for a memfd, an inherited
// descriptor or an in-memory structure.
func (h *Handle) Path() string {
	if h.m == nil {
		return ""
	}
	return h.m.path
}

// File returns a duplicate of the structure's descriptor, for a child
// process (exec.Cmd.ExtraFiles) that opens the structure with the
// Inherited place. The caller owns it and closes it.
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
// structures that merge with this one, which needs the same seed: give it
// as the config's Seed (an arena's: ArenaConfig.Seed) when creating each
// host's file. A zero handle returns 0.
func (h *Handle) Seed() uint64 {
	if h.m == nil {
		return 0
	}
	return h.m.lay.seed
}

// Frozen reports whether the file is sealed (Freeze).
func (h *Handle) Frozen() bool { return h.open.Load() && atomic.LoadUint32(h.sealed) != 0 }

// ReadOnly reports whether the handle was opened with WithReadOnly, or is the
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

// freeze is Freeze for the kinds whose adds take no lock (Count-Min,
// Bloom, distinct count): it seals the file and flushes it. An add another
// process started just before may still land after it. The windows, the
// counting filter and the arena have their own.
func (h *Handle) freeze() error {
	if err := h.refuse("freeze"); err != nil {
		return err
	}
	if !atomic.CompareAndSwapUint32(h.sealed, 0, 1) {
		return h.m.errorf("freeze", ErrFrozen)
	}
	h.froze.Store(true)
	return h.Sync()
}

// mergeable is a kind that Merge takes: a pointer to it, with its Handle.
type mergeable interface {
	comparable
	handle() *Handle
}

// handle returns the Handle a kind embeds (mergeable).
func (h *Handle) handle() *Handle { return h }

// mergeEach is the frame of Merge for the kinds that merge without a lock
// (Count-Min, Bloom, distinct count): refuse on h; then every other is
// checked (nil or closed, then check: its shape, seed, damage) before
// anything moves; then each is merged in turn, and one closed while it
// was read ends the merge there. noun names one other in messages.
func mergeEach[T mergeable](h *Handle, noun string, others []T, check, merge func(T) error) error {
	if err := h.refuse("merge"); err != nil {
		return err
	}
	var none T
	for i, o := range others {
		if o == none || !o.handle().open.Load() {
			return h.m.errorf("merge", fmt.Errorf("%w: %s %d of the merge is nil or closed", ErrInvalidArgument, noun, i))
		}
		if err := check(o); err != nil {
			return h.m.errorf("merge", err)
		}
	}
	for _, o := range others {
		if err := merge(o); err != nil {
			return h.m.errorf("merge", err)
		}
		if !o.handle().open.Load() {
			return h.m.errorf("merge", fmt.Errorf("%w: %s was closed during the merge", ErrInvalidArgument, o.handle().name()))
		}
	}
	return h.after("merge")
}

// readOnlyNow reports whether a mutator must be refused: the handle is
// closed or read-only, or the file is sealed. It is every add's first
// test, small enough to inline and written as the refusal so that it
// compiles to the branches an inline test would; refuse says why.
func (h *Handle) readOnlyNow() bool {
	if h.open.Load() && !h.ro {
		return atomic.LoadUint32(h.sealed) != 0
	}
	return true
}

// mayWrite is refuse's fast path: nil when a mutator may run.
func (h *Handle) mayWrite(op string) error {
	if h.readOnlyNow() {
		return h.refuse(op)
	}
	return nil
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
