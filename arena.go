package sketch

import (
	"errors"
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
// words share a cache line with a neighbour's, and a structure keeps its
// place until it is removed (Remove), after which a create may reuse its
// room once no handle holds it. Creating one is crash-safe: its directory
// entry is written whole before the entry count covers it (or, in a
// reused slot, before its state says live), under the file's write lock,
// so a process killed part way leaves an entry nobody sees, which the
// next create overwrites.
type Arena struct {
	Handle
	mu sync.Mutex // serialises lookups and creates in this process
	// lay is the arena's layout with the entries validated so far; later
	// entries are validated when the entry count shows them.
	lay layout
	// gen is the directory's change count the entries of lay go with;
	// synced is set once lay's entries were read with one.
	gen    uint32
	synced bool
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
	Free     uint64 `json:"free"`     // bytes left after the last region, for new structures
	Entries  int    `json:"entries"`  // structures in the arena (removed ones not counted)
	Capacity int    `json:"capacity"` // directory entries: the most structures it can hold
	// Removed counts the directory entries of removed structures whose
	// rooms no create has reused yet, RemovedBytes their rooms' bytes
	// (from each region's start to the next one's, within Used), and
	// Reusable those of them that no read-write handle in any process
	// holds now, which the next create that fits takes (none where the
	// holders cannot be told: see Remove).
	Removed      int    `json:"removed"`
	RemovedBytes uint64 `json:"removed_bytes"`
	Reusable     int    `json:"reusable"`
	FileStats
}

// ArenaConfig sizes an arena and gives its hash seed.
//
// Creating needs Size; the zero config only attaches to an existing
// arena, whatever its size and seed.
type ArenaConfig struct {
	// Size is the file's size in bytes at create, rounded up to a page,
	// and fixed from then on. The header and the directory take the first
	// 12 KiB to 532 KiB (the directory has an entry per 4096 bytes, 16 to
	// 4096 of them), and the smallest arena has one page after them; the
	// sum of the structures' Bytes (each counts a standalone file's
	// header) plus 1 MiB always fits them. On attach, Size must be the
	// size the arena was created with (ErrIncompatible otherwise), or
	// zero, which accepts any. Zero cannot create: where there is no arena
	// to attach to (a missing file, a memfd, memory) it is
	// ErrInvalidConfig.
	Size int64 `json:"size"`
	// Seed is the hash seed; zero means random at create and any on
	// attach, as for CountMinConfig. Every structure in the arena hashes
	// with it: a structure's config may give no seed or this one
	// (ErrIncompatible otherwise; see Arena.Place).
	Seed uint64 `json:"seed"`
}

func arenaSpec(cfg ArenaConfig) (spec, error) {
	if cfg.Size < 0 {
		return spec{}, fmt.Errorf("%w: arena size %d is negative", ErrInvalidConfig, cfg.Size)
	}
	return spec{arena: true, size: uint64(cfg.Size), seed: cfg.Seed, match: func(entry) error { return nil }}, nil
}

// OpenArena opens the arena at a place (a path, a new memfd, an inherited
// descriptor or memory; see Place), creating it with cfg's Size and Seed
// where there is none, and attaching to it, as cfg allows (ArenaConfig),
// where there is one. The trust rules and the options are the place's. A
// file that holds a standalone structure is ErrIncompatible, and arenas do
// not nest (an arena's Place is ErrInvalidArgument).
func OpenArena(at Place, cfg ArenaConfig, opts ...Option) (*Arena, error) {
	specOf := func() (spec, error) { return arenaSpec(cfg) }
	createOf := func() (spec, error) {
		if cfg.Size == 0 {
			return spec{}, fmt.Errorf("%w: arena size is missing", ErrInvalidConfig)
		}
		return arenaSpec(cfg)
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

// entryOptions checks the options given with an arena's Place against
// the arena: only WithReadOnly, on a read-only arena, means anything there.
func (a *Arena) entryOptions(opts []Option) error {
	o, err := buildOptions(opts)
	if err != nil {
		return err
	}
	if o.readOnly && !a.ro {
		return fmt.Errorf("%w: WithReadOnly for a structure of a read-write arena (open the arena with WithReadOnly)", ErrInvalidConfig)
	}
	return nil
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

// structure finds the live entry named name, or creates one for sp, and
// returns a mapping for it that holds its room; specErr is the error of
// resolving sp, if any. With exact set, it opens that entry only, and
// never creates (fs.ErrNotExist once it was removed).
func (a *Arena) structure(name string, sp spec, specErr error, exact *entry) (*mapping, error) {
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
		return nil, a.errorf("open", name, fmt.Errorf("%w: the config's seed is not the arena's (every structure of an arena has the arena's seed; see ArenaConfig.Seed)", ErrIncompatible))
	}
	for try := 0; ; try++ {
		e, room, err := a.find(name, sp, exact)
		if err == errRoomMoved && try < 1000 {
			// Removed (and maybe reused) between the look and the hold,
			// or the change count wrapped over a changed directory (see
			// lookupLocked): look again at the whole directory.
			a.synced = false
			continue
		}
		if err == nil {
			if err = a.matches(e, sp); err == nil {
				var m *mapping
				if m, err = a.m.derive(e, name, room); err == nil {
					return m, nil
				}
			}
			room.release()
		}
		return nil, a.errorf("open", name, err)
	}
}

// errRoomMoved means the entry a lookup found was removed before its room
// was held: look again.
var errRoomMoved = errors.New("the structure was removed while it was opened")

// find returns the live entry named name with a hold on its room, creating
// it when there is none (and exact is nil). The hold is taken before the
// entry is read again: once held, the room cannot be reused, so an entry
// still live then is the structure, and one gone is errRoomMoved.
func (a *Arena) find(name string, sp spec, exact *entry) (entry, *roomHold, error) {
	e, i, found, err := a.lookup(name)
	switch {
	case err != nil:
		return entry{}, nil, err
	case exact != nil && (!found || !e.same(*exact)):
		return entry{}, nil, fmt.Errorf("%w: the structure was removed", fs.ErrNotExist)
	case !found:
		return a.create(name, sp)
	}
	room, err := a.m.res.holdRoom(i, !a.ro, a.stateWord(i))
	if err != nil {
		return entry{}, nil, err // errRoomMoved: pinned, and no longer live
	}
	if !a.lay.slotHolds(a.m.data, i, e) {
		room.release()
		return entry{}, nil, errRoomMoved
	}
	return e, room, nil
}

// matches reports whether the stored entry e is what sp asks for.
func (a *Arena) matches(e entry, sp spec) error {
	if e.kind != sp.kind {
		return fmt.Errorf("%w: it holds a %s, not a %s", ErrIncompatible, kindName(e.kind), kindName(sp.kind))
	}
	return sp.match(e)
}

// lookup finds name among the live entries, reading entries other
// processes appended or changed since the last look, and returns it with
// its index.
func (a *Arena) lookup(name string) (entry, uint32, bool, error) {
	if err := a.refresh(); err != nil {
		return entry{}, 0, false, err
	}
	for i, e := range a.lay.entries {
		if e.live() && e.name == name {
			return e, uint32(i), true, nil
		}
	}
	return entry{}, 0, false, nil
}

// lookupLocked is lookup for a caller that holds the write lock and is
// about to change the directory by what it finds: it checks the handle's
// copy of the directory against every slot, and reads the whole
// directory again when one differs. The change count is 32 bits: after
// 2^32 changes it says again what it said at a handle's last look, over
// another directory, and a create or a Remove trusting that copy would
// write a name twice or remove another structure. Under the lock nothing
// moves, so the check is exact.
func (a *Arena) lookupLocked(name string) (entry, uint32, bool, error) {
	e, i, found, err := a.lookup(name)
	if err != nil || a.copyHolds() {
		return e, i, found, err
	}
	a.synced = false
	return a.lookup(name)
}

// copyHolds reports whether each directory slot holds what the handle's
// copy has for it: the same state, and for a live entry the same words
// but the checksum's, compared without hashing (a removed entry's other
// words are read again before its room is weighed: rereadRemoved). The
// caller holds the write lock.
func (a *Arena) copyHolds() bool {
	var c, want [entrySize]byte
	for i, e := range a.lay.entries {
		state, err := a.lay.readSlot(a.m.data, uint32(i), &c)
		if err != nil || state != e.state {
			return false
		}
		if !e.live() {
			continue
		}
		clear(want[:])
		native.PutUint32(want[entKind:], e.kind)
		native.PutUint32(want[entFlags:], state)
		native.PutUint64(want[entOff:], e.off)
		native.PutUint64(want[entSize:], e.size)
		for k, p := range e.params {
			native.PutUint64(want[entParams+8*k:], p)
		}
		copy(want[entName:entName+entNameSize], e.name)
		if [entChecksum]byte(c[:entChecksum]) != [entChecksum]byte(want[:entChecksum]) {
			return false
		}
	}
	return true
}

// countWord is the directory's entry count, which creates raise with a
// release store after writing the entry it covers.
func (a *Arena) countWord() *uint32 {
	return (*uint32)(unsafe.Pointer(&a.m.data[offDirCount]))
}

// refresh validates the entries appended since the last look, and reads
// the whole directory again when a removal or reuse changed it (its change
// count moved). An entry count above the capacity or an entry that does
// not validate is ErrCorrupt: a file rewritten by hand, never one a crash
// leaves. The entries validated before stay as they were.
func (a *Arena) refresh() error {
	n := atomic.LoadUint32(a.countWord())
	if n > a.lay.dirCap {
		return fmt.Errorf("%w: %d directory entries, capacity %d", ErrCorrupt, n, a.lay.dirCap)
	}
	b := a.m.data
	if gen := loadDirGen(b); a.synced && gen == a.gen {
		entries := a.lay.entries
		var err error
		for i := uint32(len(entries)); i < n && err == nil; i++ {
			var e entry
			l := a.lay
			l.entries = entries
			if e, err = l.decodeEntry(b, i); err == nil {
				entries = append(entries, e)
			}
		}
		if loadDirGen(b) == gen && !errors.Is(err, errEntryMoved) {
			if err == nil {
				a.lay.entries = entries
			}
			return err
		}
	}
	entries, gen, err := a.lay.decodeDirectory(b, n)
	if err != nil {
		return err
	}
	a.lay.entries, a.gen, a.synced = entries, gen, true
	return nil
}

// create makes the structure for name under the file's write lock, in a
// removed structure's room or after the last region, unless another
// process created one first; it returns with a hold on its room.
func (a *Arena) create(name string, sp spec) (entry, *roomHold, error) {
	switch {
	case a.ro:
		return entry{}, nil, fmt.Errorf("%w: no structure of that name, and a read-only handle does not create one (%w)", fs.ErrNotExist, ErrReadOnly)
	case atomic.LoadUint32(a.sealed) != 0:
		return entry{}, nil, fmt.Errorf("%w: no structure of that name, and the arena is frozen", ErrFrozen)
	case sp.size == 0:
		return entry{}, nil, errCannotCreate
	}
	if err := validNewName(name); err != nil {
		return entry{}, nil, err
	}
	if err := a.m.joinLock(); err != nil {
		return entry{}, nil, err
	}
	if err := a.m.lk.lock(); err != nil {
		return entry{}, nil, err
	}
	e, i, found, err := a.lookupLocked(name)
	if err == nil && !found {
		err = a.rereadRemoved()
	}
	if err == nil && !found {
		e, i, err = a.addEntry(name, sp)
	}
	var room *roomHold
	if err == nil {
		room, err = a.m.res.holdRoom(i, true, a.stateWord(i))
	}
	if uerr := a.m.lk.unlock(); err == nil && uerr != nil {
		// Another process took the lock for dead and recovered it: our
		// entry may not be the one the directory holds.
		err = uerr
	}
	if err != nil {
		room.release()
		return entry{}, nil, err
	}
	return e, room, nil
}

// rereadRemoved reads the slots of removed entries again; the caller holds
// the write lock, and has just refreshed. A reuser killed between a store
// to a slot's size word and the change count's step leaves a size no
// handle was told of; reading the removed slots again under the lock,
// which nobody else can hold, sees it before their rooms are weighed.
func (a *Arena) rereadRemoved() error {
	for i, e := range a.lay.entries {
		if e.live() {
			continue
		}
		l := a.lay
		l.entries = a.lay.entries[:i]
		e, err := l.decodeEntry(a.m.data, uint32(i))
		if err != nil {
			return err
		}
		if i+1 < len(a.lay.entries) && e.off+e.size > a.lay.entries[i+1].off {
			return fmt.Errorf("%w: entry %d: region %d+%d runs into the next one's at %d", ErrCorrupt, i, e.off, e.size, a.lay.entries[i+1].off)
		}
		a.lay.entries[i] = e
	}
	return nil
}

// arenaCreateHook runs between writing a new entry and publishing it; the
// crash tests stop a process there.
var arenaCreateHook func()

// addEntry puts the structure in the best-fitting room of a removed
// structure that nobody holds (reuseEntry), or after the last region
// (appendEntry). The caller holds the write lock.
func (a *Arena) addEntry(name string, sp spec) (entry, uint32, error) {
	if atomic.LoadUint32(a.sealed) != 0 {
		return entry{}, 0, fmt.Errorf("%w: no structure of that name, and the arena is frozen", ErrFrozen)
	}
	best, bestRoom := -1, uint64(0)
	for i, e := range a.lay.entries {
		room := a.room(i)
		if e.live() || sp.size > room || best >= 0 && room >= bestRoom {
			continue
		}
		if a.m.res.roomFree(uint32(i), true, a.stateWord(uint32(i))) {
			best, bestRoom = i, room
		}
	}
	if best >= 0 {
		e, err := a.reuseEntry(uint32(best), name, sp)
		return e, uint32(best), err
	}
	e, err := a.appendEntry(name, sp)
	return e, uint32(len(a.lay.entries) - 1), err
}

// stateWord returns entry i's state word in the mapping.
func (a *Arena) stateWord(i uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&a.m.data[uint64(a.lay.dirOff)+uint64(i)*entrySize+entFlags]))
}

// room returns the bytes entry i's region may grow to when its slot is
// reused: up to the next entry's region, or to the file's end for the
// last entry.
func (a *Arena) room(i int) uint64 {
	if i+1 < len(a.lay.entries) {
		return a.lay.entries[i+1].off - a.lay.entries[i].off
	}
	return a.lay.fileSize - a.lay.entries[i].off
}

// appendEntry writes the entry after the last one and publishes it. The
// caller holds the write lock. The region is zero: the file was created
// zero, regions are handed out in order, and a reuse zeroes what it gives
// up at the end of a region (reuseEntry), so no byte past the last region
// was ever written but by a create killed before it published a kind
// that writes its region (spec.init), whose unpublished slot says where
// and is cleared with it; the zero state is every structure's empty
// state.
func (a *Arena) appendEntry(name string, sp spec) (entry, error) {
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
	a.clearKilledAppend(slot, off)
	clear(slot) // what a killed create left
	encodeEntry(slot, e)
	if sp.init != nil {
		sp.init(a.m.data[off : off+sp.size])
	}
	if arenaCreateHook != nil {
		arenaCreateHook()
	}
	atomic.StoreUint32(a.countWord(), n+1)
	a.lay.entries = append(a.lay.entries, e)
	return e, nil
}

// clearKilledAppend zeroes what a create killed before it published a
// kind that writes its region (spec.init) wrote from off on: its slot,
// written first, says where its region was (at off, or before it when a
// reuse has since grown the last region into it) and how far it ran.
func (a *Arena) clearKilledAppend(slot []byte, off uint64) {
	if kinds[native.Uint32(slot[entKind:])].region == nil {
		return
	}
	at, size := native.Uint64(slot[entOff:]), native.Uint64(slot[entSize:])
	if at > a.lay.fileSize || size > a.lay.fileSize-at {
		return // not a region of this file: nothing was written there
	}
	if lo, hi := max(at, off), at+size; lo < hi {
		clear(a.m.data[lo:hi])
	}
}

// reuseEntry rewrites slot i, a removed structure's whose room nobody
// holds, for the new structure, at the same offset. The caller holds the
// write lock. Each step is one store that a crash cannot tear, and the
// slot says "reusing" from the first to the last, so that a process killed
// at any point leaves the old removed entry or a slot the next create
// takes again, never a live entry over bytes another uses:
//
//  1. the state to entryReusing (readers now trust only the offset and
//     size words);
//  2. the old region and the new one zeroed, from the offset to the end of
//     the larger;
//  3. the size word to the new size (a bytes past it are zero, as appends
//     expect past the last region), then what the kind writes in its
//     region at create (spec.init), which the next reuse clears again
//     when this one is killed;
//  4. kind, parameters, name and checksum, the offset word unchanged;
//  5. the state to entryLive.
//
// The change count grows after each state or size store, so that other
// handles read the directory again.
func (a *Arena) reuseEntry(i uint32, name string, sp spec) (entry, error) {
	b := a.m.data
	old := a.lay.entries[i]
	base := uint64(a.lay.dirOff) + uint64(i)*entrySize
	state := (*uint32)(unsafe.Pointer(&b[base+entFlags]))
	word := func(off uint64) *uint64 { return (*uint64)(unsafe.Pointer(&b[base+off])) }
	gen := dirGenWord(b)

	atomic.StoreUint32(state, entryReusing)
	atomic.AddUint32(gen, 1)
	clear(b[old.off : old.off+max(old.size, sp.size)])
	atomic.StoreUint64(word(entSize), sp.size)
	atomic.AddUint32(gen, 1)
	if sp.init != nil {
		sp.init(b[old.off : old.off+sp.size])
	}
	e := entry{kind: sp.kind, off: old.off, size: sp.size, params: sp.params, name: name}
	var c [entrySize]byte
	encodeEntry(c[:], e)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[base+entKind])), e.kind)
	for w := uint64(entParams); w < entrySize; w += 8 {
		atomic.StoreUint64(word(w), native.Uint64(c[w:]))
	}
	if arenaCreateHook != nil {
		arenaCreateHook()
	}
	atomic.StoreUint32(state, entryLive)
	atomic.AddUint32(gen, 1)
	a.lay.entries[i] = e
	a.gen = atomic.LoadUint32(gen)
	return e, nil
}

// Remove removes the structure named name from the arena, so that its
// name opens a new structure, with any config and of any kind, and its
// room can hold another structure: changing a structure's config needs no
// new arena. It takes the file's write lock and marks the structure's
// directory entry removed with one compare-and-swap of its state, which a
// crash cannot tear.
//
// Read-write handles open on the structure, in this process or any
// other, keep working on its old bytes: no other structure uses them, and
// no create reuses them while any such handle is open (each holds its room
// until Close, and a process that dies lets go of its holds). A read-only
// handle holds nothing: a view of a removed structure reads its old bytes
// until a create reuses them, and then whatever is there (it risks only
// itself). Opens of the name after Remove get a new structure; so do
// opens by processes that looked the name up before and had not opened
// it yet. A handle that races its own Close may still write into the room
// as the next create takes it: close a removed structure's handles after
// their calls returned. Who may only read the file can neither keep a
// room from being reused nor make it reused while a read-write handle
// holds it.
//
// Every process that opens the arena must run a build that knows this
// protocol: an earlier build refuses an arena holding a removed entry when
// it opens it (ErrChecksum on that entry), but one that had it open
// before reads its cached directory and may use a removed structure's
// room after it was reused, and its handles' holds are not seen by this
// build (docs/FORMAT.md, "Removing and reusing").
//
// A create puts a new structure in the smallest removed room it fits that
// nobody holds (a room runs to the next structure, or to the file's end
// after the last), else after the last structure; adjacent rooms are not
// merged. Rooms are held with OFD record locks on the file, through a
// description of the handle's own reopened through /proc. Where /proc
// cannot reopen the arena's descriptor for writing, a hold is taken on
// the descriptor itself and kept until it is closed, and that process's
// creates reuse no room (they cannot see the holds of a handle that shares
// the descriptor, such as a child given it); where the kernel cannot say
// who holds a lock, no room is reused. An arena in plain memory (Memory
// elsewhere than Linux) is one process's, whose handles are counted.
//
// Remove of a name the arena does not hold is an error wrapping
// fs.ErrNotExist; on a read-only handle it is ErrReadOnly, on a frozen
// arena ErrFrozen.
func (a *Arena) Remove(name string) error {
	fail := func(err error) error { return a.errorf("remove", name, err) }
	if err := a.refuse("remove"); err != nil {
		return err
	}
	if err := validName(name); err != nil {
		return fail(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.open.Load() {
		return fail(ErrClosed)
	}
	if err := a.m.joinLock(); err != nil {
		return err
	}
	if err := a.m.lk.lock(); err != nil {
		return fail(err)
	}
	e, i, found, err := a.lookupLocked(name)
	switch {
	case err != nil:
	case atomic.LoadUint32(a.sealed) != 0:
		err = ErrFrozen
	case !found:
		err = fmt.Errorf("%w: no structure of that name", fs.ErrNotExist)
	default:
		// One compare-and-swap of the state, keeping the room's pins
		// (arena_rooms.go), which holders change without the lock.
		state := a.stateWord(i)
		for s := atomic.LoadUint32(state); !atomic.CompareAndSwapUint32(state, s, s&^entryStateMask|entryRemoved); {
			s = atomic.LoadUint32(state)
		}
		a.gen = atomic.AddUint32(dirGenWord(a.m.data), 1)
		e.state = entryRemoved
		a.lay.entries[i] = e
	}
	if uerr := a.m.lk.unlock(); err == nil && uerr != nil {
		err = uerr
	}
	if err != nil {
		return fail(err)
	}
	return nil
}

// List describes the arena's structures, in the order of their directory
// entries (the order they were created, but that a structure created in a
// removed one's room takes its place). Removed structures are not listed.
// It reads entries other processes created or removed since the last
// call. A handle that is closed lists what it knew.
func (a *Arena) List() []ArenaEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open.Load() {
		a.refresh() // an entry that does not validate is not listed
	}
	out := make([]ArenaEntry, 0, len(a.lay.entries))
	for _, e := range a.lay.entries {
		if !e.live() {
			continue
		}
		ae := ArenaEntry{Name: e.name, Kind: kinds[e.kind].kind, Offset: e.off, Bytes: e.size}
		if info := kinds[e.kind]; info.config != nil {
			ae.Config = info.config(e)
			if info.region != nil {
				// A closed arena's pages read as zero: the entry's
				// config then.
				if cfg, err := info.region(e, a.m.data[e.off:e.off+e.size]); err == nil {
					ae.Config = cfg
				}
			}
		}
		out = append(out, ae)
	}
	return out
}

// live counts the live entries.
func (l layout) live() int {
	n := 0
	for _, e := range l.entries {
		if e.live() {
			n++
		}
	}
	return n
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
	s := ArenaStats{
		Used:      min(used, a.lay.fileSize),
		Free:      a.lay.fileSize - min(used, a.lay.fileSize),
		Entries:   a.lay.live(),
		Capacity:  int(a.lay.dirCap),
		FileStats: FileStats{Bytes: a.lay.fileSize, Frozen: a.Frozen(), ReadOnly: a.ReadOnly(), Closed: !open},
	}
	for i, e := range a.lay.entries {
		if e.live() {
			continue
		}
		s.Removed++
		if i+1 < len(a.lay.entries) {
			s.RemovedBytes += a.room(i)
		} else {
			s.RemovedBytes += roundUp(e.size, cacheLine)
		}
		if open && a.m.res.roomFree(uint32(i), !a.ro, a.stateWord(uint32(i))) {
			s.Reusable++
		}
	}
	return s
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
	if err := a.m.lk.lock(); err != nil {
		return a.m.errorf("freeze", err)
	}
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
	return "Arena", fmt.Sprintf("%d bytes, %d structures", a.lay.fileSize, a.lay.live())
}

func (a *Arena) statsOf() any { return a.Stats() }

// check is the arena's part of Check: every directory entry decodes and
// lies inside the file, after the one before it; removed entries and
// entries being reused are checked as the format allows them.
func (a *Arena) check() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := atomic.LoadUint32(a.countWord())
	if n > a.lay.dirCap {
		return a.m.errorf("check", fmt.Errorf("%w: %d directory entries, capacity %d", ErrCorrupt, n, a.lay.dirCap))
	}
	// Every entry again from the first: decodeEntry checks entry i
	// against the ones before it, so the layout grows as they are read.
	if _, _, err := a.lay.decodeDirectory(a.m.data, n); err != nil {
		return a.m.errorf("check", err)
	}
	return nil
}

// Place places a structure in the arena under name: the first to ask for a
// name creates the structure with its config, the rest attach to it, also
// when several processes race on a new name. A name already used must hold
// a structure of the kind asked for that matches an explicit config
// (ErrIncompatible says what differs); a zero config attaches to whatever
// is stored. A new name is 1 to MaxNameLen (31) bytes of UTF-8 without
// control or format characters (ErrInvalidArgument); a name another
// process wrote into the file is opened as it is, and may be neither.
// The arena's handle decides how the file is opened: of the options,
// WithReadOnly is accepted on a read-only arena only (open the arena with
// WithReadOnly for read-only structures), and the rest do not apply. Every
// structure hashes with the arena's seed (ArenaConfig.Seed): a config's
// Seed must be zero or the arena's (ErrIncompatible). The place is valid
// for as long as the arena's handle is open; structures from it outlive
// the arena's Close.
func (a *Arena) Place(name string) Place { return Place{how: atArena, name: name, arena: a} }
