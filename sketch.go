package sketch

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Option changes how a sketch file is created or opened.
type Option func(*options)

type options struct {
	mode        os.FileMode
	waitTimeout time.Duration
	noCreate    bool
	readOnly    bool
	owners      []uint32      // uids trusted beside the caller and root
	lockTimeout time.Duration // bound of a lock wait (WithLockTimeout)
	noLane      bool          // claim no lane (WithoutLane)
}

func defaultOptions() options {
	return options{mode: 0o600, waitTimeout: 10 * time.Second, lockTimeout: defaultLockTimeout}
}

// defaultLockTimeout bounds a lock wait when the options do not
// (WithLockTimeout). It is generous: a live writer holds the write lock
// for a Reset, Merge or Remove, which walk the structure at gigabytes a
// second, so a minute is far past any legitimate hold of all but the
// largest files.
const defaultLockTimeout = time.Minute

// WithMode sets the permission bits of a file the call creates (or adopts:
// an empty file prepared for it, or the all-zero file an interrupted
// adoption left). The bits are applied exactly, so the process umask does
// not apply. The default is 0600, owner only; pass 0660 to share a sketch
// with a group. Only permission bits (0777) are allowed, the owner must
// keep read and write (0600), or the file could not be opened again, and
// other users may not write (o+w, as in 0666): whoever can write the file
// can truncate it under every process that maps it, which kills them with
// SIGBUS. Read permission is worth a thought too: the file holds its hash
// seed, and whoever knows the seed can craft keys that collide with any
// key (docs/FORMAT.md), so share reading with a group (0640) rather than
// every user (0644). An existing sketch file keeps its own mode.
func WithMode(perm os.FileMode) Option {
	return func(o *options) { o.mode = perm }
}

// WithWaitTimeout bounds how long a constructor (OpenCountMin and the
// other Open<Kind>, OpenArena) waits for another process that is
// initialising the same file (default 10s); past it, the constructor fails
// with ErrTimeout. Attaching to a complete file never waits.
func WithWaitTimeout(d time.Duration) Option {
	return func(o *options) { o.waitTimeout = d }
}

// WithLockTimeout bounds how long an operation waits for the file's lock
// (default one minute): an add or Remove of a counting Bloom filter, an
// admission to a Top table, a window's turn, an arena's create, Remove or
// Freeze, a Reset or Merge. Another process holding the lock is waited for
// while it lives (one that died is recovered from in milliseconds); past
// the bound the operation fails with ErrTimeout and changes nothing. A
// live holder keeps the write lock for as long as a Reset or Merge walks
// the structure, seconds for a file of many gigabytes: give a larger
// bound for such files. Anyone who may write the file can write its lock
// words too, and so make every other writer wait this long (no recovery
// takes a lock from a holder whose token names a live process); the
// bound is what turns that into an error rather than a hang. The
// structures of an arena wait as long as the arena's handle says.
func WithLockTimeout(d time.Duration) Option {
	return func(o *options) { o.lockTimeout = d }
}

// WithoutCreate makes a constructor (OpenCountMin and the other
// Open<Kind>, OpenArena) attach only: a missing file is an error that
// wraps fs.ErrNotExist, and an empty or all-zero file is not initialised.
// Tools that inspect a sketch (the CLI's check) use it.
func WithoutCreate() Option {
	return func(o *options) { o.noCreate = true }
}

// WithReadOnly opens a structure for reading only: the file is opened O_RDONLY
// and mapped PROT_READ, nothing is created or adopted, and no lock is
// taken, so it works on a file the caller may only read (0644, another
// user's, a read-only filesystem) and on a sealed file (Freeze), while
// other processes keep writing to a live one. The owner rule (WithOwner)
// does not apply: a reader risks only itself (though whoever can truncate
// the file can still kill it with SIGBUS, as for any mapping). Another
// user's file with holes is still refused (ErrSparse): faulting them in
// would cost more than the reader. Every mutator of a read-only handle
// returns ErrReadOnly.
func WithReadOnly() Option {
	return func(o *options) { o.readOnly = true }
}

// WithoutLane opens a read-write handle that claims no lane of a Count-Min
// sketch or window kept in lanes (CountMinConfig.Lanes), for a handle that
// adds seldom or never (one that exports, stores a fleet part, merges,
// checks), so that the lanes stay free for the writers: a lane is claimed
// at open and held until Close. Its adds go where the adds of a handle
// past the lanes go: a lane shared with its owner, or with conservative
// update the shared lane. Other structures ignore it.
func WithoutLane() Option {
	return func(o *options) { o.noLane = true }
}

// WithOwner trusts files owned by uid, beside the caller's own and root's.
// By default the constructors (Open<Kind>, OpenArena) refuse a sketch file
// owned by another user (ErrNotOwner), because whoever owns the file can
// change its mode, rewrite it or truncate it under every process that
// maps it, and a truncated mapping kills those processes with SIGBUS. Give WithOwner when two service users share a
// sketch on purpose; it may be given more than once.
func WithOwner(uid int) Option {
	return func(o *options) { o.owners = append(o.owners, uint32(uid)) }
}

// trusts reports whether uid was named with WithOwner.
func (o *options) trusts(uid uint32) bool {
	for _, u := range o.owners {
		if u == uid {
			return true
		}
	}
	return false
}

func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case o.mode&^os.ModePerm != 0:
		return o, fmt.Errorf("%w: mode %#o has bits other than permissions (0777)", ErrInvalidConfig, uint32(o.mode))
	case o.mode&0o600 != 0o600:
		return o, fmt.Errorf("%w: mode %#o does not let the file's owner read and write it, so it could not be opened again", ErrInvalidConfig, uint32(o.mode))
	case o.mode&0o002 != 0:
		return o, fmt.Errorf("%w: mode %#o lets every user write the file, and so truncate it under every process that maps it (they die with SIGBUS); share it with a group instead (0660)", ErrInvalidConfig, uint32(o.mode))
	case o.waitTimeout <= 0:
		return o, fmt.Errorf("%w: wait timeout %v is not positive", ErrInvalidConfig, o.waitTimeout)
	case o.lockTimeout <= 0:
		return o, fmt.Errorf("%w: lock timeout %v is not positive", ErrInvalidConfig, o.lockTimeout)
	}
	for _, u := range o.owners {
		if int32(u) < 0 {
			return o, fmt.Errorf("%w: owner uid %d is negative", ErrInvalidConfig, int32(u))
		}
	}
	return o, nil
}

// spec says what structure a caller wants from a file: what to create when
// the file is new, and how to judge a structure found in an existing file.
type spec struct {
	kind   uint32
	size   uint64    // bytes of the structure's region
	params [8]uint64 // kind-specific, stored in the directory entry
	seed   uint64    // requested seed; 0 means random at create, any on attach
	// match reports whether a stored entry is what the caller asked for,
	// with an error wrapping ErrIncompatible when it is not.
	match func(e entry) error
	// arena asks for an arena: size is then the whole file's, and the
	// file is created with an empty directory.
	arena bool
	// fill, when set, writes a new file's contents after its header and
	// before its magic is published, so that nobody sees the file before
	// it is complete (a snapshot's copy, snapshot.go).
	fill func(data []byte, lay layout) error
	// init, when set, writes what a new structure's region holds before
	// its first add (a counters structure's names): in an arena, before
	// its directory entry is published; a standalone file's fill does it
	// there.
	init func(region []byte)
}

// errCannotCreate means a config that only attaches (a counting Bloom
// filter's zero config) found nothing to attach to.
var errCannotCreate = fmt.Errorf("%w: no sketch to attach to (%w), and the config does not say what to create", ErrInvalidConfig, fs.ErrNotExist)

// errCannotAdopt is errCannotCreate for a file that is there but empty or
// all zero (prepared for an opener, or left by a create that never
// finished): it is not a missing file.
var errCannotAdopt = fmt.Errorf("%w: the file is empty or all zero, with no sketch to attach to, and the config does not say what to create in it", ErrInvalidConfig)

// fileSize returns the size of the file a create lays out for sp.
func (sp spec) fileSize() uint64 {
	if sp.arena {
		return newArenaLayout(1, sp.size).fileSize
	}
	return newLayout(1, []entry{{kind: sp.kind, size: sp.size}}).fileSize
}

// layout lays out a new file for sp, drawing a random seed unless sp
// names one.
func (sp spec) layout() (layout, error) {
	seed := sp.seed
	for seed == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return layout{}, err
		}
		seed = binary.LittleEndian.Uint64(b[:])
	}
	lay := newLayout(seed, []entry{{kind: sp.kind, size: sp.size, params: sp.params}})
	if sp.arena {
		lay = newArenaLayout(seed, sp.size)
	}
	if lay.fileSize > maxFileSize || lay.fileSize > math.MaxInt {
		return layout{}, fmt.Errorf("%w: %d bytes is more than a sketch file may have on this platform (%d)", ErrInvalidConfig, lay.fileSize, uint64(min(maxFileSize, math.MaxInt)))
	}
	return lay, nil
}

// mapping is one process's view of a sketch file: the descriptor, the
// shared mapping and the validated layout. It is shared by every structure.
type mapping struct {
	name string // the path, or "memfd:NAME", or "fd N": used in errors
	path string // "" when not backed by a path
	// dev and ino identify the file at path, so that Unlink removes this
	// sketch's file and never one created at the path since.
	dev, ino uint64
	lay      layout
	ent      entry // the structure this handle serves
	data     []byte
	res      *resources
	// sharedOFD is set when the descriptor may share its open file
	// description with another handle (inherited, or a memfd passed on),
	// so that the lock's token needs a descriptor of its own.
	sharedOFD bool
	lk        *fileLock // nil until a structure that locks joins the lock
	readOnly  bool      // mapped PROT_READ from an O_RDONLY descriptor
	noLane    bool      // a handle of lanes claims none (WithoutLane)
	// closed is set by this mapping's close (under res.mu): each mapping
	// gives up its reference once.
	closed bool
	// room is the hold on its entry's room of a structure of an arena,
	// given back at close.
	room *roomHold
}

// resources are what a mapping holds from the kernel. They live apart from
// the mapping so that a cleanup can release them once the mapping is
// unreachable (runtime.AddCleanup must not keep its object alive).
//
// The structures of an arena share one mapping's resources: each handle
// has a mapping of its own (its entry, its open state) that refers to
// them. refs counts the mappings not closed yet, live the ones still
// reachable; the file's pages are swapped for a placeholder when the last
// reference is closed, and unmapped when the last mapping is unreachable.
type resources struct {
	mu      sync.Mutex
	fd      int
	tokenFd int // a descriptor of the handle's own holding its lock token, or -1
	data    []byte
	lk      *fileLock // the process's part in the file's lock, once joined
	// lockTimeout bounds the lock's waits (WithLockTimeout; the default
	// when zero).
	lockTimeout time.Duration
	// clears are the window slots being cleared under lk's token, by any
	// structure of this mapping (clearMarks, window_base.go).
	clears clearMarks
	// rooms are the arena entries' rooms this mapping's handles hold
	// (arena_rooms.go).
	rooms   roomHolds
	refs    int
	live    int
	closed  bool // every reference closed: fd is closed, data is a placeholder
	retired bool // the memory is unmapped for good
}

// newMapping wraps a validated mapping of fd. From here on the mapping owns
// the descriptor and the memory.
func newMapping(name string, fd int, data []byte, lay layout, ent entry) *mapping {
	m := &mapping{name: name, lay: lay, ent: ent, data: data, res: &resources{fd: fd, tokenFd: -1, data: data, refs: 1, live: 1, rooms: roomHolds{fd: -1}}}
	runtime.AddCleanup(m, (*resources).unref, m.res)
	return m
}

// derive returns a mapping of the same file for the structure of entry e
// (an arena's), sharing m's resources, or ErrClosed once m is closed. The
// mapping takes over the hold on e's room, which it gives back when it is
// closed, or when it is dropped unclosed; on an error the caller keeps it.
func (m *mapping) derive(e entry, name string, room *roomHold) (*mapping, error) {
	r := m.res
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.closed {
		return nil, m.errorf("open "+entryLabel(name), ErrClosed)
	}
	r.refs++
	r.live++
	d := &mapping{
		name: m.name + ":" + entryLabel(name), path: m.path, dev: m.dev, ino: m.ino,
		lay: m.lay, ent: e, data: m.data, res: r,
		sharedOFD: m.sharedOFD, lk: r.lk, readOnly: m.readOnly, room: room,
	}
	runtime.AddCleanup(d, (*resources).unref, r)
	if room != nil {
		runtime.AddCleanup(d, (*roomHold).release, room)
	}
	return d, nil
}

// ownBytes is the structure's size as its Stats report it: the whole file
// for a standalone structure, its region for one in an arena, so that the
// structures of an arena sum to no more than the file.
func (m *mapping) ownBytes() uint64 {
	if m.lay.isArena() {
		return m.ent.size
	}
	return m.lay.fileSize
}

// entryBytes returns the mapped region of the handle's structure.
func (m *mapping) entryBytes() []byte {
	return m.data[m.ent.off : m.ent.off+m.ent.size]
}

// entryBase returns the address of the handle's structure in the mapping,
// where the cores' layouts start.
func (m *mapping) entryBase() unsafe.Pointer {
	return unsafe.Pointer(&m.data[m.ent.off])
}

func (m *mapping) errorf(op string, err error) error {
	return fmt.Errorf("sketch: %s %s: %w", op, m.name, err)
}

// close closes the descriptor and swaps the file's pages for a private
// placeholder at the same addresses, instead of unmapping them: a call
// that raced Close and still holds a pointer into the mapping then writes
// to memory nobody reads, never into an unmapped page (a crash) nor into
// another file mapped there later. The placeholder is released with the
// mapping, once nothing can reach it. A second call does nothing.
func (m *mapping) close() error {
	r := m.res
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.room != nil {
		m.room.releaseLocked()
	}
	if r.refs--; r.refs > 0 || r.closed {
		// Other structures of the arena still use the file.
		return nil
	}
	r.closed = true
	err := r.release(replaceWithPlaceholder)
	if err != nil {
		return m.errorf("close", err)
	}
	return nil
}

// drop unmaps the memory of a mapping that was never handed out, and
// leaves the descriptor to the caller.
func (r *resources) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	unmap(r.data)
	r.retired, r.closed, r.fd, r.data = true, true, -1, nil
}

// unref runs as a mapping's cleanup, once it is unreachable: the last one
// unmaps the memory and, when the mappings were dropped without Close,
// closes the descriptors.
func (r *resources) unref() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live--; r.live > 0 || r.retired {
		return
	}
	r.retired = true
	if !r.closed {
		r.release(unmap)
		r.closed = true
	} else {
		unmap(r.data)
	}
	r.data = nil
}

// release lets go of the file: it takes the memory away (retire: swap in
// the placeholder, or unmap), then closes the descriptors, which releases
// the lock token's byte, and then frees the token itself. In that order, a
// goroutine that raced Close and still holds the lock writes nothing into
// the file once others may take the handle for gone; the token is freed
// through a small mapping of its own page, made before.
func (r *resources) release(retire func([]byte) error) error {
	var own *ownRecord
	if r.lk != nil {
		own = r.lk.mapOwnRecord(r.fd)
	}
	err := retire(r.data)
	if cerr := closeFd(r.fd); err == nil {
		err = cerr
	}
	closeFd(r.tokenFd)
	r.closeRooms()
	r.fd, r.tokenFd = -1, -1
	own.leave()
	return err
}

func (m *mapping) sync() error {
	r := m.res
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.closed {
		return m.errorf("sync", ErrClosed)
	}
	if err := syncMapping(r.data); err != nil {
		return m.errorf("sync", err)
	}
	return nil
}

// file returns a duplicate of the descriptor, for a child process.
func (m *mapping) file() (*os.File, error) {
	r := m.res
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.closed {
		return nil, m.errorf("file", ErrClosed)
	}
	fd, err := dupCloexec(r.fd)
	if err != nil {
		return nil, m.errorf("file", err)
	}
	return os.NewFile(uintptr(fd), m.name), nil
}

// unlink removes the handle's file from its path; the mapping stays valid.
// A file already gone, or replaced by another, is left alone; a handle
// without a path does nothing.
func (m *mapping) unlink() error {
	if m.path == "" {
		return nil
	}
	if err := removeFileAt(m.path, m.dev, m.ino); err != nil {
		return fmt.Errorf("sketch: unlink %s: %w", m.path, err)
	}
	return nil
}

// pickEntry finds the structure sp asks for in a file: its only entry, or,
// for an arena, none (the arena finds its structures by name).
func pickEntry(lay layout, sp spec) (entry, error) {
	if sp.seed != 0 && sp.seed != lay.seed {
		// The seeds stay out of the message: the file's is a secret.
		return entry{}, fmt.Errorf("%w: the config's seed is not the file's", ErrIncompatible)
	}
	switch {
	case sp.arena && !lay.isArena():
		return entry{}, fmt.Errorf("%w: the file holds a %s, not an arena", ErrIncompatible, kindName(lay.entries[0].kind))
	case sp.arena:
		if sp.size != 0 && newArenaLayout(1, sp.size).fileSize != lay.fileSize {
			return entry{}, fmt.Errorf("%w: asked for an arena of %d bytes, the file has %d (an arena's size is fixed at create; 0 attaches to any)", ErrIncompatible, sp.size, lay.fileSize)
		}
		return entry{}, nil
	case lay.isArena():
		return entry{}, fmt.Errorf("%w: the file is an arena; open it with OpenArena and ask for the %s by name", ErrIncompatible, kindName(sp.kind))
	}
	e := lay.entries[0]
	if e.kind != sp.kind {
		return entry{}, fmt.Errorf("%w: the file holds a %s, not a %s", ErrIncompatible, kindName(e.kind), kindName(sp.kind))
	}
	return e, sp.match(e)
}

// The bodies of every structure's constructors, which differ only in the
// spec they pass and the handle they build on the mapping: each takes the
// spec with the error of resolving it, and wraps any error with what was
// being done to what.

// openSpec opens or creates the file at path (Path).
func openSpec(path string, sp spec, err error, opts []Option) (*mapping, error) {
	return placeSpec("open "+path, "", sp, err, opts, func(sp spec, o options) (*mapping, error) {
		return openPath(path, sp, o)
	})
}

// memfdSpec creates a new memfd (Memfd).
func memfdSpec(name string, sp spec, err error, opts []Option) (*mapping, error) {
	return placeSpec("create memfd:"+name, "a new memfd", sp, err, opts, func(sp spec, _ options) (*mapping, error) {
		return createMemfd(name, sp)
	})
}

// inMemorySpec creates a structure for one process (Memory).
func inMemorySpec(sp spec, err error, opts []Option) (*mapping, error) {
	return placeSpec("create in memory", "a structure created in memory", sp, err, opts, func(sp spec, _ options) (*mapping, error) {
		return createInMemory(sp)
	})
}

// attachSpec attaches to an inherited descriptor (Inherited).
func attachSpec(fd uintptr, sp spec, err error, opts []Option) (*mapping, error) {
	return placeSpec(fmt.Sprintf("attach fd %d", fd), "", sp, err, opts, func(sp spec, o options) (*mapping, error) {
		return attachInherited(fd, sp, o)
	})
}

// placeSpec is the body of them all: what names the call in its errors,
// and a place that always creates names itself in created, as what a
// read-only option cannot open. The errors of open name their file.
func placeSpec(what, created string, sp spec, err error, opts []Option, open func(spec, options) (*mapping, error)) (*mapping, error) {
	var o options
	if err == nil {
		if o, err = buildOptions(opts); err == nil && o.readOnly && created != "" {
			err = fmt.Errorf("%w: %s cannot be read-only", ErrInvalidConfig, created)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sketch: %s: %w", what, err)
	}
	m, err := open(sp, o)
	return lockBound(m, err, o)
}

// lockBound gives a mapping just opened (nil on an error) the lock
// timeout of the options it was opened with.
func lockBound(m *mapping, err error, o options) (*mapping, error) {
	if m != nil {
		m.res.lockTimeout = o.lockTimeout
	}
	return m, err
}
