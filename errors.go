package sketch

import (
	"errors"
	"fmt"
)

// Errors returned when a configuration or an argument is wrong.
var (
	// ErrInvalidConfig means a config asked for something that cannot be
	// built: an error rate or confidence outside (0, 1), a negative or
	// too-large shape, or both a shape and an error rate.
	ErrInvalidConfig = errors.New("invalid config")

	// ErrInvalidArgument means a call got an argument it cannot use, such
	// as an estimates slice of the wrong length.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrUnsupported means the platform cannot host a shared sketch: the
	// package builds everywhere, but mappings, memfds and futexes are Linux's.
	ErrUnsupported = errors.New("unsupported platform")
)

// Errors returned when a file is created or attached.
var (
	// ErrIncompatible means the file holds a valid structure that does not
	// match what the caller asked for: another kind, another explicit shape
	// or another seed. A zero config attaches to whatever is stored.
	ErrIncompatible = errors.New("incompatible sketch")

	// ErrCorrupt means the file is not a valid sketch file. The more specific
	// errors below wrap it, so errors.Is(err, ErrCorrupt) holds for all of them.
	ErrCorrupt = errors.New("not a valid sketch file")

	// ErrByteOrder means the file was written on a machine of the other byte
	// order. The counters are native-endian words used with atomics, so such
	// a file cannot be shared; it wraps ErrCorrupt.
	ErrByteOrder = &wrapped{"written with the other byte order", ErrCorrupt}

	// ErrVersion means the file has a format version this build does not
	// read (an earlier version's file must be recreated: the message says
	// so); it wraps ErrCorrupt.
	ErrVersion = &wrapped{"unknown format version", ErrCorrupt}

	// ErrChecksum means the header's immutable fields do not match their
	// checksum; it wraps ErrCorrupt.
	ErrChecksum = &wrapped{"header checksum mismatch", ErrCorrupt}

	// ErrInterruptedCreate means the file holds part of a header: a creator
	// was killed while it wrote it. Such a file never held data, so removing
	// it and retrying is safe; but a header damaged after the fact looks the
	// same, so make sure it is an abandoned create before deleting anything
	// you care about. It wraps ErrCorrupt.
	ErrInterruptedCreate = &wrapped{"incomplete sketch file left by an interrupted create; remove it and retry", ErrCorrupt}

	// ErrSymlink means the path is a symbolic link, which is refused so that
	// nobody can redirect a sketch file to one of the caller's own files.
	ErrSymlink = errors.New("path is a symbolic link")

	// ErrNotOwner means the file is owned by a user the caller does not
	// trust: not the caller, not root, not one named with WithOwner, and
	// not the owner of a private directory the file sits in. Whoever owns
	// a file can rewrite or truncate it under every process that maps it,
	// so such a file is not attached; nor is an empty or all-zero file of
	// anyone but the caller adopted. A memfd handed over by descriptor is
	// held to the rule through its maker's uid: its seals keep its size,
	// not its maker's writable descriptor from writing its lock words.
	ErrNotOwner = errors.New("file is owned by an untrusted user")

	// ErrHardLinked means an empty or all-zero file has more than one link,
	// so it is not initialised: the other name could be someone else's
	// file, which the initialisation would overwrite.
	ErrHardLinked = errors.New("file has other hard links")

	// ErrLooseMode means an empty or all-zero file prepared for adoption
	// lets every user open it (o+r or o+w), or lets others write it more
	// than the requested mode does (g+w without WithMode asking for it):
	// someone may hold it open already, to truncate it under the processes
	// that map it once it is a sketch, or to hold its flock and keep it
	// from adoption for good, which no change of mode can take back.
	// Prepare the file with mode 0600 (0640 for a group trusted with it);
	// the adopter gives it the mode its constructor asks for (WithMode)
	// once it is a sketch.
	//
	// It also means an existing file, reached by path or by a descriptor,
	// lets every user write it (o+w): any of them could truncate it under
	// this process or hold its lock, so it is not opened for writing;
	// take their write permission away (chmod o-w), and move to a new
	// file, since a descriptor opened meanwhile stays writable. A memfd
	// whose size is sealed is exempt (it has no name to open it by), and
	// WithReadOnly opens such a file, since a reader risks only itself.
	ErrLooseMode = errors.New("file's mode lets others write it")

	// ErrNoSpace means the filesystem could not reserve the file's blocks at
	// create. Blocks are reserved up front so that a full filesystem fails
	// here rather than with a SIGBUS in some later add. It also matches
	// syscall.ENOSPC when that was the cause. A memfd (or a tmpfs file
	// handed over by descriptor) larger than the machine's memory is
	// refused with it too, at create and at attach.
	ErrNoSpace = errors.New("no space to reserve the file's blocks")

	// ErrUnsealed means a memfd handed over by descriptor lacks the seals
	// that fix its size (F_SEAL_SHRINK and F_SEAL_GROW): whoever holds it
	// could truncate it under this process's mapping and kill it with
	// SIGBUS. The memfds Memfd places create are sealed.
	ErrUnsealed = errors.New("memfd's size is not sealed")

	// ErrSparse means a file of another user has holes: fewer blocks
	// allocated than its size. A process that touches a hole pays for the
	// page (a shared tmpfs filled, memory, hours of walking a huge file on
	// disk), not the file's owner, so such a file is refused at every open,
	// attach and Inspect. The library's creates reserve every block; the
	// caller's own files are exempt.
	ErrSparse = errors.New("file has holes")

	// ErrTimeout means an empty or incomplete file at the path was still
	// not initialised when the wait timeout ran out: another process was
	// adopting it, or held its flock (anyone who can read a file can). A
	// window's add or Rotate also returns it, with a message of its own,
	// when a live process cleared the slot it needs for longer than the
	// writer waits (10 s).
	//
	// It also means an operation waited for the file's lock longer than
	// its bound (WithLockTimeout, a minute by default) while another
	// process held it alive, or while the lock words named a holder that
	// looks alive (anyone who may write the file can write them): an add
	// or Remove of a counting Bloom filter, a Reset or Merge, an arena's
	// create, Remove or Freeze, a window's Rotate or Freeze. The operation
	// changed nothing (a Merge of a Count-Min sketch with a Top table has
	// merged the counters but not the table: its message says so). An add
	// to a Count-Min sketch or window never returns it: its offer to the
	// Top table waits as long, then goes without (the key was counted).
	ErrTimeout = errors.New("timed out waiting for an empty or incomplete file to be initialised")

	// ErrTooManyHandles means a read-write handle could not join the
	// file's lock: each one open holds a liveness token and a reader slot,
	// and all of the file's (1024 in the files this package makes) are
	// held by open handles, in any process. Close one (a dead process's
	// are taken over), or open readers with WithReadOnly, which take none.
	ErrTooManyHandles = errors.New("too many handles of the file are open")

	// ErrArenaFull means an arena has no room left for a new structure:
	// its data or its directory is used up. The message says what was
	// asked and what is left.
	ErrArenaFull = errors.New("arena is full")
)

// Errors returned when a structure of fixed capacity has no room.
var (
	// ErrFull means an exact set (Set, SetWindow) holds as many keys as
	// its Capacity: a new key is refused rather than another evicted, and
	// nothing changed. Remove keys (or, in a window, wait for periods to
	// leave it), or make a larger set and Merge this one into it.
	ErrFull = errors.New("set is full")
)

// Errors returned by operations on an open sketch.
var (
	// ErrClosed means the sketch was used after Close.
	ErrClosed = errors.New("sketch is closed")

	// ErrReadOnly means a mutator was called on a handle opened with
	// WithReadOnly.
	ErrReadOnly = errors.New("sketch is open read-only")

	// ErrFrozen means the file was sealed by Freeze: every mutator of every
	// handle, in every process, fails with it, and a read-write open is
	// refused with it (open a sealed file with WithReadOnly).
	ErrFrozen = errors.New("sketch is frozen")

	// ErrInconsistent is reported by Check when the counters break an
	// invariant that concurrent use can break without damaging the file:
	// for a Count-Min sketch, rows whose sums disagree. Adds that raced a
	// Reset leave that behind, and so does an add cut short by a killed
	// process (ErrTornAdd, which wraps it). The file is not damaged: every
	// estimate stays an upper bound, except that the few keys caught in
	// the middle may read low by what they were adding.
	ErrInconsistent = errors.New("counters disagree")

	// ErrTornAdd means a Count-Min sketch's rows disagree and no Reset
	// explains it: an add was cut short by a killed process or by a Close
	// of its handle (or was still running while Check summed the rows). It
	// wraps ErrInconsistent.
	ErrTornAdd = &wrapped{"an add was cut short (by a killed writer or a Close, or is still running)", ErrInconsistent}

	// ErrDamaged is reported by Check when counters or registers hold what
	// no add, merge or reset can leave, however it was cut short: a
	// Count-Min row holding more than its add count by more than 2^20 adds
	// of the largest weight the file recorded, a counter far past
	// saturation, a distinct count's register past the largest rank. The
	// header and layout are sound, the values are not: something else
	// wrote the file. Estimates may be wrong in either direction; recreate
	// the structure (or restore a copy). Merges and exports refuse a
	// structure with such values. It wraps ErrCorrupt.
	ErrDamaged = &wrapped{"counters damaged", ErrCorrupt}
)

// wrapped is a sentinel that is also its parent sentinel under errors.Is.
type wrapped struct {
	msg    string
	parent error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.parent }

// errNoCapacity refuses to create a filter from a config without Capacity.
var errNoCapacity = fmt.Errorf("%w: Capacity is missing (at least 1 to create a filter; the zero config only attaches)", ErrInvalidConfig)
