package sketch

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// An Arena is one file holding many named structures: Count-Min sketches
// Bloom filters and counting Bloom filters side by side, each found by its name. Every
// process opens the arena and asks for each structure by name and config;
// the first to ask creates it, the rest attach to it, also when several
// processes race on the same new name.
//
// A structure from an arena is the same type, with the same methods and
// promises, as a standalone one. It lives in the arena's file, so the
// file-wide operations act on the whole arena: Freeze of any structure
// (or of the arena) seals every structure in it, and Unlink removes the
// arena's file. Closing the arena and its structures is safe in any order:
// each handle closes only itself, and the file stays mapped until the last
// of them is closed.
//
// An arena's size is fixed when it is created; its structures are laid out
// one after another, each at a 64-byte boundary so that no structure's hot
// words share a cache line with a neighbour's, and a structure once made
// keeps its place for the life of the file (there is no delete). Creating
// one is crash-safe: its directory entry is written whole before the entry
// count covers it, under the file's write lock, so a process killed part
// way leaves an entry nobody sees, which the next create overwrites.
type Arena struct {
	Handle
	mu sync.Mutex // serialises lookups and creates in this process
	// lay is the arena's layout with the entries validated so far; later
	// entries are validated when the entry count shows them.
	lay layout
}

// ArenaEntry describes one structure of an arena.
type ArenaEntry struct {
	Name   string `json:"name"`
	Kind   Kind   `json:"kind"`
	Offset uint64 `json:"offset"` // of its region in the file
	Bytes  uint64 `json:"bytes"`  // of its region
	// Config is the structure's stored config: a CountMinConfig, a
	// CountingBloomConfig, a BloomConfig, and so on (without the seed).
	Config any `json:"config"`
}

// ArenaStats describes an arena's use of its file.
type ArenaStats struct {
	Used     uint64 `json:"used"`     // header, directory and regions up to the last one's end
	Free     uint64 `json:"free"`     // bytes left for new structures
	Entries  int    `json:"entries"`  // structures in the arena
	Capacity int    `json:"capacity"` // directory entries: the most structures it can hold
	FileStats
}

func arenaSpec(size int64) (spec, error) {
	if size < 0 {
		return spec{}, fmt.Errorf("%w: arena size %d is negative", ErrInvalidConfig, size)
	}
	return spec{arena: true, size: uint64(size), match: func(entry) error { return nil }}, nil
}

// OpenArena opens the arena at a place (a path, a new memfd, an inherited
// descriptor or memory; see Place), creating it with size bytes (rounded
// up to a page) where there is none. The header and the directory take the
// first 12 KiB to 532 KiB (the directory has an entry per 4096 bytes, 16
// to 4096 of them), and the smallest arena has one page after them; the
// sum of the structures' Bytes (each counts a standalone file's header)
// plus 1 MiB always fits them. The trust rules and the options are the
// place's; WithSeed sets the seed of a new arena, with which every
// structure in it hashes. Attaching to an existing arena needs the size it
// was created with, or 0, which attaches to any (and cannot create: a
// memfd or memory arena needs its size). A file that holds a standalone
// structure is ErrIncompatible, and arenas do not nest (an arena's Place
// is ErrInvalidArgument).
func OpenArena(at Place, size int64, opts ...Option) (*Arena, error) {
	specOf := func() (spec, error) { return arenaSpec(size) }
	createOf := func() (spec, error) {
		if size == 0 {
			return spec{}, fmt.Errorf("%w: arena size is missing", ErrInvalidConfig)
		}
		return arenaSpec(size)
	}
	if at.how == atArena {
		return nil, fmt.Errorf("sketch: open arena %s: %w: arenas do not nest", entryLabel(at.name), ErrInvalidArgument)
	}
	m, err := at.open(specOf, createOf, opts)
	if err != nil {
		return nil, err
	}
	return newArena(m), nil
}

func newArena(m *mapping) *Arena {
	a := &Arena{lay: m.lay}
	a.init(m, a)
	a.open.Store(true)
	return a
}

// entryOptions applies the options given with an arena's Place to sp:
// only a seed (which must be the arena's, as structure checks) and, on a
// read-only arena, ReadOnly mean anything there.
func (a *Arena) entryOptions(sp spec, opts []Option) (spec, error) {
	o, err := buildOptions(opts)
	if err != nil {
		return sp, err
	}
	if o.readOnly && !a.ro {
		return sp, fmt.Errorf("%w: ReadOnly for a structure of a read-write arena (open the arena with ReadOnly)", ErrInvalidConfig)
	}
	return sp.seeded(o)
}

func (a *Arena) errorf(op, name string, err error) error {
	return fmt.Errorf("sketch: %s %s:%s: %w", op, a.name(), entryLabel(name), err)
}

// entryLabel is a structure's name as messages and String show it after
// the file's ("arena.shm:clients"): quoted when it holds anything but
// letters, digits and "._-/", so that a name with a space, a colon or an
// unprintable byte cannot be misread.
func entryLabel(name string) string {
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._-/", r)) {
			return strconv.Quote(name)
		}
	}
	if name == "" {
		return `""`
	}
	return name
}

// validName checks a structure's name: 1 to MaxNameLen bytes, no NUL.
func validName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: a structure in an arena needs a name", ErrInvalidArgument)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: name of %d bytes is longer than %d (MaxNameLen)", ErrInvalidArgument, len(name), MaxNameLen)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("%w: name %q has a NUL byte", ErrInvalidArgument, name)
	}
	return nil
}

// validNewName checks a name a create is about to write: what validName
// checks, and printable (valid UTF-8, no control or format characters), so
// that a name printed by a tool cannot carry an escape sequence to a
// terminal. Names already in a file are not held to it: they still open.
func validNewName(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: name %s is not valid UTF-8", ErrInvalidArgument, strconv.Quote(name))
	}
	for _, r := range name {
		if !strconv.IsPrint(r) {
			return fmt.Errorf("%w: name %s has a character that does not print (%U)", ErrInvalidArgument, strconv.Quote(name), r)
		}
	}
	return nil
}

// structure finds the entry named name, or appends one for sp, and returns
// a mapping for it; specErr is the error of resolving sp, if any.
func (a *Arena) structure(name string, sp spec, specErr error) (*mapping, error) {
	if specErr != nil {
		return nil, a.errorf("open", name, specErr)
	}
	if err := validName(name); err != nil {
		return nil, a.errorf("open", name, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.open.Load() {
		return nil, a.errorf("open", name, ErrClosed)
	}
	if sp.seed != 0 && sp.seed != a.lay.seed {
		// Seeds stay out of messages: the arena's is a secret.
		return nil, a.errorf("open", name, fmt.Errorf("%w: the config's seed is not the arena's (every structure of an arena has the arena's seed; see WithSeed)", ErrIncompatible))
	}
	e, found, err := a.lookup(name)
	if err == nil && !found {
		e, err = a.create(name, sp)
	}
	if err == nil {
		err = a.matches(e, sp)
	}
	if err != nil {
		return nil, a.errorf("open", name, err)
	}
	return a.m.derive(e, name)
}

// matches reports whether the stored entry e is what sp asks for.
func (a *Arena) matches(e entry, sp spec) error {
	if e.kind != sp.kind {
		return fmt.Errorf("%w: it holds a %s, not a %s", ErrIncompatible, kindName(e.kind), kindName(sp.kind))
	}
	return sp.match(e)
}

// lookup finds name among the entries, reading entries other processes
// appended since the last look.
func (a *Arena) lookup(name string) (entry, bool, error) {
	if err := a.refresh(); err != nil {
		return entry{}, false, err
	}
	for _, e := range a.lay.entries {
		if e.name == name {
			return e, true, nil
		}
	}
	return entry{}, false, nil
}

// countWord is the directory's entry count, which creates raise with a
// release store after writing the entry it covers.
func (a *Arena) countWord() *uint32 {
	return (*uint32)(unsafe.Pointer(&a.m.data[offDirCount]))
}

// refresh validates the entries appended since the last look. An entry
// count above the capacity or an entry that does not validate is
// ErrCorrupt: a file rewritten by hand, never one a crash leaves.
func (a *Arena) refresh() error {
	n := atomic.LoadUint32(a.countWord())
	if n > a.lay.dirCap {
		return fmt.Errorf("%w: %d directory entries, capacity %d", ErrCorrupt, n, a.lay.dirCap)
	}
	for i := uint32(len(a.lay.entries)); i < n; i++ {
		e, err := a.lay.decodeEntry(a.m.data, i)
		if err != nil {
			return err
		}
		a.lay.entries = append(a.lay.entries, e)
	}
	return nil
}

// create appends an entry for name under the file's write lock, unless
// another process appended one first.
func (a *Arena) create(name string, sp spec) (entry, error) {
	switch {
	case a.ro:
		return entry{}, fmt.Errorf("%w: no structure of that name, and a read-only handle does not create one (%w)", fs.ErrNotExist, ErrReadOnly)
	case atomic.LoadUint32(a.sealed) != 0:
		return entry{}, fmt.Errorf("%w: no structure of that name, and the arena is frozen", ErrFrozen)
	case sp.size == 0:
		return entry{}, errCannotCreate
	}
	if err := validNewName(name); err != nil {
		return entry{}, err
	}
	if err := a.m.joinLock(); err != nil {
		return entry{}, err
	}
	a.m.lk.lock()
	e, found, err := a.lookup(name)
	if err == nil && !found {
		e, err = a.appendEntry(name, sp)
	}
	if uerr := a.m.lk.unlock(); err == nil && uerr != nil {
		// Another process took the lock for dead and recovered it: our
		// entry may not be the one the directory holds.
		err = uerr
	}
	return e, err
}

// arenaCreateHook runs between writing a new entry and publishing it; the
// crash tests stop a process there.
var arenaCreateHook func()

// appendEntry writes the entry after the last one and publishes it. The
// caller holds the write lock. The region is zero: regions are handed out
// once, in order, from a file created zero, and the zero state is every
// structure's empty state.
func (a *Arena) appendEntry(name string, sp spec) (entry, error) {
	if atomic.LoadUint32(a.sealed) != 0 {
		return entry{}, fmt.Errorf("%w: no structure of that name, and the arena is frozen", ErrFrozen)
	}
	n := uint32(len(a.lay.entries))
	off := roundUp(a.lay.end(), cacheLine)
	free := uint64(0)
	if off < a.lay.fileSize {
		free = a.lay.fileSize - off
	}
	switch {
	case n >= a.lay.dirCap:
		return entry{}, fmt.Errorf("%w: all %d directory entries are used (a %s of %d bytes was asked for; %d bytes are free)", ErrArenaFull, a.lay.dirCap, kindName(sp.kind), sp.size, free)
	case sp.size > free:
		return entry{}, fmt.Errorf("%w: a %s needs %d bytes, %d are left of %d", ErrArenaFull, kindName(sp.kind), sp.size, free, a.lay.fileSize)
	}
	e := entry{kind: sp.kind, off: off, size: sp.size, params: sp.params, name: name}
	slot := a.m.data[uint64(a.lay.dirOff)+uint64(n)*entrySize:][:entrySize]
	clear(slot) // what a killed create left
	encodeEntry(slot, e)
	if arenaCreateHook != nil {
		arenaCreateHook()
	}
	atomic.StoreUint32(a.countWord(), n+1)
	a.lay.entries = append(a.lay.entries, e)
	return e, nil
}

// List describes the arena's structures, in the order they were created.
// It reads entries other processes created since the last call. A handle
// that is closed lists what it knew.
func (a *Arena) List() []ArenaEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open.Load() {
		a.refresh() // an entry that does not validate is not listed
	}
	out := make([]ArenaEntry, 0, len(a.lay.entries))
	for _, e := range a.lay.entries {
		ae := ArenaEntry{Name: e.name, Kind: kinds[e.kind].kind, Offset: e.off, Bytes: e.size}
		if info := kinds[e.kind]; info.config != nil {
			ae.Config = info.config(e)
		}
		out = append(out, ae)
	}
	return out
}

// Stats describes the arena's use of its file.
func (a *Arena) Stats() ArenaStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	open := a.open.Load()
	if open {
		a.refresh()
	}
	used := roundUp(a.lay.end(), cacheLine)
	return ArenaStats{
		Used:      min(used, a.lay.fileSize),
		Free:      a.lay.fileSize - min(used, a.lay.fileSize),
		Entries:   len(a.lay.entries),
		Capacity:  int(a.lay.dirCap),
		FileStats: FileStats{Bytes: a.lay.fileSize, Frozen: a.Frozen(), ReadOnly: a.ReadOnly(), Closed: !open},
	}
}

// freeze is the arena's Freeze: it seals the file under the write lock,
// so that no structure is being created as it does.
func (a *Arena) freeze() error {
	if err := a.refuse("freeze"); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.m.joinLock(); err != nil {
		return err
	}
	a.m.lk.lock()
	frozen := !atomic.CompareAndSwapUint32(a.sealed, 0, 1)
	if err := a.m.lk.unlock(); err != nil {
		return a.m.errorf("freeze", err)
	}
	if frozen {
		return a.m.errorf("freeze", ErrFrozen)
	}
	a.froze.Store(true)
	return a.Sync()
}

// Close releases the arena's handle. Its structures stay usable until each
// is closed; the file is unmapped once all of them are. It is safe to call
// twice.
func (a *Arena) Close() error {
	a.mu.Lock() // a create in flight finishes first
	defer a.mu.Unlock()
	return a.close()
}

func (a *Arena) describe() (string, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return "Arena", fmt.Sprintf("%d bytes, %d structures", a.lay.fileSize, len(a.lay.entries))
}

func (a *Arena) statsOf() any { return a.Stats() }

// check is the arena's part of Check: every directory entry decodes and
// lies inside the file.
func (a *Arena) check() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := atomic.LoadUint32(a.countWord())
	if n > a.lay.dirCap {
		return a.m.errorf("check", fmt.Errorf("%w: %d directory entries, capacity %d", ErrCorrupt, n, a.lay.dirCap))
	}
	// Every entry again from the first: decodeEntry checks entry i
	// against the ones before it, so the layout grows as they are read.
	l := a.lay
	l.entries = nil
	for i := uint32(0); i < n; i++ {
		e, err := l.decodeEntry(a.m.data, i)
		if err != nil {
			return a.m.errorf("check", err)
		}
		l.entries = append(l.entries, e)
	}
	return nil
}
