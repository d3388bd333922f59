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
//	136     56    reserved for mutable state, zero
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

// holds reports whether e is one of the file's entries, unchanged.
func (l layout) holds(e entry) bool {
	for _, have := range l.entries {
		if have == e {
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

func encodeEntry(b []byte, e entry) {
	native.PutUint32(b[entKind:], e.kind)
	native.PutUint64(b[entOff:], e.off)
	native.PutUint64(b[entSize:], e.size)
	for i, p := range e.params {
		native.PutUint64(b[entParams+8*i:], p)
	}
	copy(b[entName:entName+entNameSize], e.name)
	native.PutUint64(b[entChecksum:], xxh3.Hash(b[:entChecksum]))
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
	for i := uint32(0); i < n; i++ {
		e, err := l.decodeEntry(b, i)
		if err != nil {
			return layout{}, err
		}
		l.entries = append(l.entries, e)
	}
	return l, nil
}

// decodeEntry validates directory entry i of b, the whole mapped file,
// against l, which holds the entries before it, and returns it. The region
// must lie inside the file after the previous entry's: regions are handed
// out in directory order and never overlap. In an arena the name must be
// 1 to MaxNameLen bytes, NUL-padded, and not used by an earlier entry.
func (l layout) decodeEntry(b []byte, i uint32) (entry, error) {
	corrupt := func(format string, args ...any) (entry, error) {
		return entry{}, fmt.Errorf("%w: entry %d: "+format, append([]any{ErrCorrupt, i}, args...)...)
	}
	eb := b[uint64(l.dirOff)+uint64(i)*entrySize:][:entrySize]
	if xxh3.Hash(eb[:entChecksum]) != native.Uint64(eb[entChecksum:]) {
		return entry{}, fmt.Errorf("%w: directory entry %d", ErrChecksum, i)
	}
	e := entry{
		kind: native.Uint32(eb[entKind:]),
		off:  native.Uint64(eb[entOff:]),
		size: native.Uint64(eb[entSize:]),
	}
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
	if end := l.end(); e.off < end || e.off%cacheLine != 0 || e.size == 0 || e.size > l.fileSize || e.off > l.fileSize-e.size {
		return corrupt("region %d+%d does not fit in [%d, %d)", e.off, e.size, end, l.fileSize)
	}
	if native.Uint32(eb[entFlags:]) != 0 {
		return corrupt("unknown flags")
	}
	if err := validateEntry(e); err != nil {
		return corrupt("%v", err)
	}
	for _, prev := range l.entries {
		if prev.name == e.name && l.isArena() {
			return corrupt("name %q is used twice", e.name)
		}
	}
	return e, nil
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
// progress or one that was interrupted. Open classifies it.
var errNoMagic = &wrapped{"magic is zero", ErrCorrupt}
