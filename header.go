package sketch

// The on-disk format: one header for every structure. docs/FORMAT.md is the
// prose version of this file; keep the two in sync.
//
//	offset  size  field
//	0       8     magic (published last, with a release store)
//	8       4     format version
//	12      4     header size (the fixed part, 128)
//	16      8     file size (must equal the file's size on attach)
//	24      8     hash seed
//	32      8     feature flags (flagArena, or 0)
//	40      4+4   lock region offset, size
//	48      4+4   reader-slot table offset, slot count
//	56      4+4   directory offset, capacity in entries
//	64      8     data offset (first structure's region starts at or after it)
//	72      48    reserved, zero
//	120     8     checksum: XXH3-64 of bytes [8, 120)
//	128     4     directory entries in use (mutable, <= capacity)
//	132     4     sealed: 1 once Freeze ran (mutable, set once)
//	136     4     directory changes: Remove and reuse add 1 (mutable)
//	140     52    reserved for mutable state, zero
//	192     64    lock words (the futex rwlock)
//	256     8*N   reader slots
//	...     16*N  liveness tokens (token_linux.go), one per reader slot
//	...     128*M directory entries
//	...           structures' data, each 64-byte aligned
//
// Everything is native-endian: the counters are used with atomics.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"
)

const (
	// fileMagic reads "SHMSKTCH" as a big-endian word; a file written on a
	// machine of the other byte order shows it byte-swapped.
	fileMagic     uint64 = 0x53484d534b544348
	formatVersion uint32 = 2 // 2: probes placed with spread (column.go); 1 is refused

	headerSize  = 128
	offMagic    = 0
	offVersion  = 8
	offHdrSize  = 12
	offFileSize = 16
	offSeed     = 24
	offFlags    = 32
	offLockOff  = 40
	offLockSize = 44
	offSlotsOff = 48
	offSlotsN   = 52
	offDirOff   = 56
	offDirCap   = 60
	offDataOff  = 64
	offReserved = 72
	offChecksum = 120
	offDirCount = 128
	offSealed   = 132 // uint32: 1 once Freeze sealed the file
	// offDirGen counts the changes to entries already in use (a removal,
	// each step of a reuse), so that a reader that cached the directory
	// knows to read it again, and one that read it while it changed knows
	// to read it again at once. Appends only raise the count.
	offDirGen = 136

	// flagArena marks an arena: a file whose directory grows, one named
	// structure per entry. A file without it holds one unnamed structure.
	flagArena uint64 = 1

	lockOff       = 192
	lockSize      = 64
	slotsOff      = 256
	slotSize      = 8
	defaultSlots  = 1024
	maxSlots      = 1 << 12 // token ids fit a window clear's tag (window_linux.go)
	tokenSize     = 16      // a liveness token record (token_linux.go)
	entrySize     = 128
	maxDirEntries = 4096
	pageSize      = 4096
	cacheLine     = 64
	// maxFileSize is the largest file a sketch may have, at create and at
	// attach alike: 256 TiB.
	maxFileSize = 1 << 48

	// Directory entry fields.
	entKind     = 0
	entFlags    = 4
	entOff      = 8
	entSize     = 16
	entParams   = 24 // 8 words of kind-specific parameters
	entName     = 88
	entNameSize = 32
	entChecksum = 120

	// An entry's state, its flags word: a single aligned 32-bit store
	// changes it, and the checksum does not cover it (it is summed as
	// zero), so a removal is one store that a crash cannot tear. A live
	// entry has 0, as every entry written before removal existed, so its
	// checksum is what earlier builds compute.
	entryLive = 0
	// entryRemoved: the name no longer resolves; the region is still the
	// entry's (handles opened before the removal may use it) until a
	// create reuses the slot.
	entryRemoved = 1
	// entryReusing: a create is rewriting the slot (under the write lock)
	// for a new structure at the same offset, or was killed doing so. Only
	// the offset and the size words are read, each written by one atomic
	// store; the rest is not trusted, and the next create may take the
	// slot again.
	entryReusing = 2

	// MaxNameLen is the longest name of a structure in an arena, in bytes:
	// the directory entry keeps 32 bytes for it, the last always NUL.
	// A literal, so that go doc shows it; a test ties it to entNameSize.
	MaxNameLen = 31
)

var native = binary.NativeEndian

// layout is the decoded, validated header of a file.
type layout struct {
	fileSize uint64
	seed     uint64
	flags    uint64
	slots    uint32
	dirOff   uint32
	dirCap   uint32
	dataOff  uint64
	entries  []entry
}

// entry is one decoded, validated directory entry.
type entry struct {
	kind   uint32
	off    uint64
	size   uint64
	params [8]uint64
	name   string
	// state is entryLive, entryRemoved or entryReusing (then only off
	// and size mean anything).
	state uint32
}

// live reports whether e is a structure that its name opens.
func (e entry) live() bool { return e.state == entryLive }

// same reports whether e and o describe one structure, whatever their
// states: a handle's entry stays its own after a Remove.
func (e entry) same(o entry) bool {
	e.state, o.state = 0, 0
	return e == o
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) &^ (to - 1) }

// dirOffset is where the directory starts in a file with the given number
// of reader slots: after the slot table (a word per slot) and the token
// table (a record per slot).
func dirOffset(slots uint32) uint32 { return slotsOff + slots*(slotSize+tokenSize) }

// newLayout lays out a file holding the given structures, one after another.
func newLayout(seed uint64, entries []entry) layout {
	l := layout{seed: seed, slots: defaultSlots, dirOff: dirOffset(defaultSlots)}
	l.dirCap = uint32(len(entries))
	l.dataOff = roundUp(uint64(l.dirOff)+uint64(l.dirCap)*entrySize, pageSize)
	off := l.dataOff
	for _, e := range entries {
		e.off = off
		off = roundUp(off+e.size, cacheLine)
		l.entries = append(l.entries, e)
	}
	l.fileSize = roundUp(off, pageSize)
	return l
}

// newArenaLayout lays out an arena of size bytes (rounded up to a page)
// with an empty directory: a slot per 4096 bytes, at least 16 and at most
// maxDirEntries, so that small structures do not run out of entries before
// they run out of room.
func newArenaLayout(seed, size uint64) layout {
	l := layout{seed: seed, flags: flagArena, slots: defaultSlots, dirOff: dirOffset(defaultSlots)}
	l.dirCap = uint32(min(max(size/pageSize, 16), maxDirEntries))
	l.dataOff = roundUp(uint64(l.dirOff)+uint64(l.dirCap)*entrySize, pageSize)
	l.fileSize = max(roundUp(size, pageSize), l.dataOff+pageSize)
	return l
}

// first returns the file's first entry, or the zero entry of an empty
// arena.
func (l layout) first() entry {
	if len(l.entries) == 0 {
		return entry{}
	}
	return l.entries[0]
}

// holds reports whether e is one of the file's entries, unchanged but for
// its state: a structure removed while a handle has it open stays in the
// directory until that handle is closed.
func (l layout) holds(e entry) bool {
	for _, have := range l.entries {
		if have.state != entryReusing && have.same(e) {
			return true
		}
	}
	return false
}

// isArena reports whether the file is an arena.
func (l layout) isArena() bool { return l.flags&flagArena != 0 }

// end returns where the last structure's region ends: the next region
// starts at or after it.
func (l layout) end() uint64 {
	if n := len(l.entries); n > 0 {
		return l.entries[n-1].off + l.entries[n-1].size
	}
	return l.dataOff
}

// encodeHeader writes everything but the magic into b, which must be zero
// and at least l.dataOff long. The caller publishes the magic last.
func encodeHeader(b []byte, l layout) {
	native.PutUint32(b[offVersion:], formatVersion)
	native.PutUint32(b[offHdrSize:], headerSize)
	native.PutUint64(b[offFileSize:], l.fileSize)
	native.PutUint64(b[offSeed:], l.seed)
	native.PutUint64(b[offFlags:], l.flags)
	native.PutUint32(b[offLockOff:], lockOff)
	native.PutUint32(b[offLockSize:], lockSize)
	native.PutUint32(b[offSlotsOff:], slotsOff)
	native.PutUint32(b[offSlotsN:], l.slots)
	native.PutUint32(b[offDirOff:], l.dirOff)
	native.PutUint32(b[offDirCap:], l.dirCap)
	native.PutUint64(b[offDataOff:], l.dataOff)
	native.PutUint64(b[offChecksum:], xxh3.Hash(b[offVersion:offChecksum]))
	for i, e := range l.entries {
		encodeEntry(b[uint64(l.dirOff)+uint64(i)*entrySize:][:entrySize], e)
	}
	native.PutUint32(b[offDirCount:], uint32(len(l.entries)))
}

// encodeEntry writes e into b, a zero slot, for a live entry: every field
// but the flags word, then the checksum.
func encodeEntry(b []byte, e entry) {
	native.PutUint32(b[entKind:], e.kind)
	native.PutUint64(b[entOff:], e.off)
	native.PutUint64(b[entSize:], e.size)
	for i, p := range e.params {
		native.PutUint64(b[entParams+8*i:], p)
	}
	copy(b[entName:entName+entNameSize], e.name)
	native.PutUint64(b[entChecksum:], entryChecksum(b))
}

// entryChecksum is the checksum of the entry in b: XXH3-64 of its bytes
// [0, 120) with the flags word read as zero, so that a removal (a store to
// the flags word alone) leaves it valid.
func entryChecksum(b []byte) uint64 {
	var c [entChecksum]byte
	copy(c[:], b[:entChecksum])
	clear(c[entFlags : entFlags+4])
	return xxh3.Hash(c[:])
}

// versionErr refuses a file of version v, saying what to do: a file of
// an earlier version holds its counts where this build would not look
// (version 1 placed probes without spread), so it must be made again.
func versionErr(v uint32) error {
	if v >= 1 && v < formatVersion {
		return fmt.Errorf("%w: version %d was written by an earlier version of this library, which placed keys in other counters and kept no liveness tokens; this build reads only version %d: recreate the file (remove it and open it again)", ErrVersion, v, formatVersion)
	}
	return fmt.Errorf("%w: version %d, this build reads %d", ErrVersion, v, formatVersion)
}

// decodeHeader validates b, the whole mapped file, in a fixed order and
// returns its layout, or an error wrapping ErrCorrupt (or a more specific
// sentinel that wraps it). Everything later used as an index is checked
// here, so that no access through the layout can leave the mapping.
// A zero magic is reported as errNoMagic for the caller to classify.
func decodeHeader(b []byte) (layout, error) {
	var l layout
	if len(b) < headerSize {
		return l, fmt.Errorf("%w: %d bytes is shorter than a header", ErrCorrupt, len(b))
	}
	switch m := native.Uint64(b[offMagic:]); m {
	case fileMagic:
	case bits.ReverseBytes64(fileMagic):
		return l, fmt.Errorf("%w: the file is %s, this machine %s", ErrByteOrder, otherByteOrderName(), byteOrderName())
	case 0:
		return l, errNoMagic
	default:
		return l, fmt.Errorf("%w: bad magic %#016x", ErrCorrupt, m)
	}
	if v := native.Uint32(b[offVersion:]); v != formatVersion {
		return l, versionErr(v)
	}
	if sum := xxh3.Hash(b[offVersion:offChecksum]); sum != native.Uint64(b[offChecksum:]) {
		return l, ErrChecksum
	}
	corrupt := func(format string, args ...any) (layout, error) {
		return layout{}, fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	l.fileSize = native.Uint64(b[offFileSize:])
	l.seed = native.Uint64(b[offSeed:])
	l.flags = native.Uint64(b[offFlags:])
	l.slots = native.Uint32(b[offSlotsN:])
	l.dirOff = native.Uint32(b[offDirOff:])
	l.dirCap = native.Uint32(b[offDirCap:])
	l.dataOff = native.Uint64(b[offDataOff:])
	switch {
	case native.Uint32(b[offHdrSize:]) != headerSize:
		return corrupt("header size %d, want %d", native.Uint32(b[offHdrSize:]), headerSize)
	case l.fileSize != uint64(len(b)) || l.fileSize > maxFileSize:
		return corrupt("header says %d bytes, file has %d", l.fileSize, len(b))
	case l.flags&^flagArena != 0:
		return corrupt("unknown feature flags %#x", l.flags)
	case native.Uint32(b[offLockOff:]) != lockOff || native.Uint32(b[offLockSize:]) != lockSize:
		return corrupt("lock region at %d+%d, want %d+%d", native.Uint32(b[offLockOff:]), native.Uint32(b[offLockSize:]), lockOff, lockSize)
	case native.Uint32(b[offSlotsOff:]) != slotsOff || l.slots == 0 || l.slots > maxSlots:
		return corrupt("reader slots at %d x %d", native.Uint32(b[offSlotsOff:]), l.slots)
	case l.dirOff != dirOffset(l.slots) || l.dirCap == 0 || l.dirCap > maxDirEntries:
		return corrupt("directory at %d x %d", l.dirOff, l.dirCap)
	case l.dataOff != roundUp(uint64(l.dirOff)+uint64(l.dirCap)*entrySize, pageSize) || l.dataOff > l.fileSize:
		return corrupt("data offset %d", l.dataOff)
	}
	for _, c := range b[offReserved:offChecksum] {
		if c != 0 {
			return corrupt("reserved header bytes are not zero")
		}
	}
	n := native.Uint32(b[offDirCount:])
	if n > l.dirCap {
		return corrupt("%d directory entries, capacity %d", n, l.dirCap)
	}
	if !l.isArena() && n != 1 {
		return corrupt("%d directory entries in a file that is not an arena", n)
	}
	entries, _, err := l.decodeDirectory(b, n)
	if err != nil {
		return layout{}, err
	}
	l.entries = entries
	return l, nil
}

// liveName reports whether a live entry of l is named name, asking names
// when it is not nil.
func (l layout) liveName(name string, names map[string]bool) bool {
	if names != nil {
		return names[name]
	}
	for _, prev := range l.entries {
		if prev.live() && prev.name == name {
			return true
		}
	}
	return false
}

// errEntryMoved means an entry's state changed while it was read: a
// removal or a reuse ran meanwhile, and the entry is read again.
var errEntryMoved = errors.New("the entry changed while it was read")

// decodeDirectory validates entries [0, n) of b, the whole mapped file,
// against l (whose own entries it ignores) and returns them with the
// directory's change count they go with. A removal or reuse may run while
// it reads, so it reads as a sequence lock is read: the change count
// before and after, each entry between two loads of its state; a change
// meanwhile reads the directory again. An error with no change meanwhile
// is the file's.
func (l layout) decodeDirectory(b []byte, n uint32) ([]entry, uint32, error) {
	for try := 0; ; try++ {
		gen := loadDirGen(b)
		l.entries = make([]entry, 0, n)
		names := map[string]bool{}
		var err error
		for i := uint32(0); i < n && err == nil; i++ {
			var e entry
			if e, err = l.decodeEntryNames(b, i, names); err == nil {
				l.entries = append(l.entries, e)
				if e.live() {
					names[e.name] = true
				}
			}
		}
		if try < 1000 && (loadDirGen(b) != gen || errors.Is(err, errEntryMoved)) {
			continue
		}
		return l.entries, gen, err
	}
}

// dirGenWord is the directory's change count.
func dirGenWord(b []byte) *uint32 { return (*uint32)(unsafe.Pointer(&b[offDirGen])) }

func loadDirGen(b []byte) uint32 { return atomic.LoadUint32(dirGenWord(b)) }

// readSlot copies directory slot i of b into c with atomic loads, between
// two loads of its state, and returns the state; errEntryMoved when the
// state changed meanwhile. The state word's high half counts the room's
// pins (arena_rooms.go), which are not the entry's: they are left out of
// the state and of c.
func (l layout) readSlot(b []byte, i uint32, c *[entrySize]byte) (uint32, error) {
	base := uint64(l.dirOff) + uint64(i)*entrySize
	state := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[base+entFlags]))) & entryStateMask
	for w := uint64(0); w < entrySize; w += 8 {
		native.PutUint64(c[w:], atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[base+w]))))
	}
	if atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[base+entFlags])))&entryStateMask != state {
		return 0, errEntryMoved
	}
	native.PutUint32(c[entFlags:], state)
	return state, nil
}

// decodeEntry validates directory entry i of b, the whole mapped file,
// against l, which holds the entries before it, and returns it. The region
// must lie inside the file after the previous entry's: regions are handed
// out in directory order and never overlap (a reused slot's new region
// starts where the old one did and ends before the next entry's). In an
// arena the name must be 1 to MaxNameLen bytes, NUL-padded, and not used
// by an earlier live entry. A removed entry is validated as a live one;
// of an entry being reused, only the region is.
func (l layout) decodeEntry(b []byte, i uint32) (entry, error) {
	return l.decodeEntryNames(b, i, nil)
}

// decodeEntryNames is decodeEntry with the live names of l's entries in
// names, when the caller keeps them (nil: l's entries are searched), so
// that a whole directory is read in linear time.
func (l layout) decodeEntryNames(b []byte, i uint32, names map[string]bool) (entry, error) {
	corrupt := func(format string, args ...any) (entry, error) {
		return entry{}, fmt.Errorf("%w: entry %d: "+format, append([]any{ErrCorrupt, i}, args...)...)
	}
	var c [entrySize]byte
	state, err := l.readSlot(b, i, &c)
	if err != nil {
		return entry{}, err
	}
	eb := c[:]
	pins := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[uint64(l.dirOff)+uint64(i)*entrySize+entFlags]))) >> roomPinShift
	switch {
	case state > entryReusing:
		return corrupt("unknown flags %#x", state)
	case pins != 0 && !l.isArena():
		return corrupt("room pins (%d) outside an arena", pins)
	case state != entryLive && !l.isArena():
		return corrupt("a removed structure outside an arena")
	}
	e := entry{
		off:   native.Uint64(eb[entOff:]),
		size:  native.Uint64(eb[entSize:]),
		state: state,
	}
	if state != entryReusing {
		if entryChecksum(eb) != native.Uint64(eb[entChecksum:]) {
			return entry{}, fmt.Errorf("%w: directory entry %d", ErrChecksum, i)
		}
		e.kind = native.Uint32(eb[entKind:])
		for j := range e.params {
			e.params[j] = native.Uint64(eb[entParams+8*j:])
		}
		name := eb[entName : entName+entNameSize]
		nameLen := bytes.IndexByte(name, 0)
		switch {
		case nameLen < 0:
			return corrupt("name has no terminating NUL")
		case bytes.IndexFunc(name[nameLen:], func(r rune) bool { return r != 0 }) >= 0:
			return corrupt("name has bytes after its NUL")
		case l.isArena() && nameLen == 0:
			return corrupt("no name in an arena")
		case !l.isArena() && nameLen != 0:
			return corrupt("a name outside an arena")
		}
		e.name = string(name[:nameLen])
	}
	if end := l.end(); e.off < end || e.off%cacheLine != 0 || e.size == 0 || e.size > l.fileSize || e.off > l.fileSize-e.size {
		return corrupt("region %d+%d does not fit in [%d, %d)", e.off, e.size, end, l.fileSize)
	}
	if state == entryReusing {
		return e, nil
	}
	if err := validateEntry(e); err != nil {
		return corrupt("%v", err)
	}
	if check := kinds[e.kind].region; check != nil && e.live() {
		if _, err := check(e, b[e.off:e.off+e.size]); err != nil {
			return corrupt("%v", err)
		}
	}
	if e.live() && l.isArena() && l.liveName(e.name, names) {
		return corrupt("name %q is used twice", e.name)
	}
	return e, nil
}

// slotHolds reports whether directory slot i of b still holds e, live.
func (l layout) slotHolds(b []byte, i uint32, e entry) bool {
	var c, want [entrySize]byte
	state, err := l.readSlot(b, i, &c)
	if err != nil || state != entryLive {
		return false
	}
	e.state = entryLive
	encodeEntry(want[:], e)
	return c == want
}

// publishMagic stores the magic with release semantics: every header byte
// written before it is visible to whoever sees the magic.
func publishMagic(data []byte) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&data[offMagic])), fileMagic)
}

// isSealed reports whether Freeze sealed the file.
func isSealed(data []byte) bool {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&data[offSealed]))) != 0
}

// sealedWord returns the sealed flag's word, for mutators that check it on
// every call.
func sealedWord(data []byte) *uint32 { return (*uint32)(unsafe.Pointer(&data[offSealed])) }

// errNoMagic marks a file whose magic is still zero: either a create in
// progress or one that was interrupted. The constructors classify it.
var errNoMagic = &wrapped{"magic is zero", ErrCorrupt}

// byteOrderName names this machine's byte order, which a valid file shares.
// otherByteOrderName names the byte order a file of the other one has.
func otherByteOrderName() string {
	if byteOrderName() == "little-endian" {
		return "big-endian"
	}
	return "little-endian"
}

func byteOrderName() string {
	var b [2]byte
	native.PutUint16(b[:], 1)
	if b[0] == 1 {
		return "little-endian"
	}
	return "big-endian"
}
