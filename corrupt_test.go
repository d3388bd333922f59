//go:build linux

package sketch

// One table of corruptions, applied to a real file of every kind: each
// test makes the file, breaks it with ordinary file writes and asserts
// the exact sentinel from every way of opening it (the zero config and
// the config it was made with, read-write and read-only) and from
// Inspect (bbolt's Meta.Validate tests, across kinds).

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
	"github.com/zeebo/xxh3"
)

// kindSet is a set of the kinds of file the table breaks.
type kindSet uint

const (
	inCountMin kindSet = 1 << iota
	inBloom
	inCountingBloom
	inCountMinWindow
	inBloomWindow
	inDistinct
	inDistinctWindow
	inGCRA
	inCounters
	inSet
	inSetWindow
	inArena

	inStandalone = inArena - 1 // every kind but the arena
)

// corruptKind is a kind of file: how to make a small real one and how to
// open one.
type corruptKind struct {
	name string
	set  kindSet
	// zeroCreates is set where the zero config says what to create (a
	// Count-Min sketch's default shape).
	zeroCreates bool
	make        func(t testing.TB) (string, []byte)
	// open opens the file at path with the zero config, or with the
	// config it was made with when made is set, and returns the error.
	// What opens although it should not is used (a panic or a fault in
	// Go code fails t) and closed.
	open func(t testing.TB, path string, made bool, opts ...Option) error
}

// The configs the kinds' files are made with.
var (
	corruptBloomCfg = BloomConfig{Capacity: 100, Seed: 3}
	corruptCBFCfg   = CountingBloomConfig{Capacity: 10, Seed: 3}
	corruptCMWCfg   = CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: otCfg}
	corruptBWCfg    = BloomWindowConfig{Window: Window{Keep: 2}, Bloom: corruptBloomCfg}
	corruptHLLCfg   = DistinctConfig{Precision: 8, Seed: 3}
	corruptHLLWCfg  = DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: corruptHLLCfg}
	corruptGCRACfg  = GCRAConfig{Rate: Rate{Count: 10, Per: time.Second}, Burst: 3, Rows: 2, Width: 64, Seed: 3}
	corruptCtrCfg   = CountersConfig{Names: []string{"a", "bb", "ccc"}, Seed: 3}
	corruptSetCfg   = SetConfig{Capacity: 10, KeyBytes: 16, Seed: 3}
	corruptSetWCfg  = SetWindowConfig{Window: Window{Keep: 2}, Set: corruptSetCfg}
	corruptArenaCfg = ArenaConfig{Size: 64 << 10}
)

// pick is made's config when made is set, the zero config otherwise.
func pick[C any](made bool, cfg C) C {
	if made {
		return cfg
	}
	var zero C
	return zero
}

// kindOf is a kind whose files are made with open and cfg, holding keys
// added with add; an open that succeeds although it should not is used
// (use, then Check), a panic or a fault in Go code failing the test.
func kindOf[S interface {
	Check() error
	Close() error
}, C any](name string, set kindSet, open func(Place, C, ...Option) (S, error), cfg C,
	add func(S, string) error, keys []string, use func(testing.TB, S)) corruptKind {
	return corruptKind{name: name, set: set,
		make: func(t testing.TB) (string, []byte) { return makeWith(t, name, open, cfg, nil, add, keys...) },
		open: func(t testing.TB, path string, made bool, opts ...Option) error {
			t.Helper()
			s, err := open(Path(path), pick(made, cfg), opts...)
			if err != nil {
				return err
			}
			func() {
				defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("panic using an opened %T: %v\n%s", s, r, debug.Stack())
					}
				}()
				use(t, s)
				s.Check()
			}()
			s.Close()
			return nil
		}}
}

// zeroCreating is k, whose zero config says what to create (a default
// shape).
func zeroCreating(k corruptKind) corruptKind {
	k.zeroCreates = true
	return k
}

var (
	corruptKeys = [][]byte{[]byte("x"), []byte("y"), []byte("z")}
	abc         = []string{"a", "b", "c"}
	abca        = []string{"a", "b", "c", "a"}
)

// corruptKinds is every kind of file, with the arena holding a Count-Min
// sketch.
var corruptKinds = []corruptKind{
	{name: "countmin", set: inCountMin, zeroCreates: true,
		make: func(t testing.TB) (string, []byte) { return otMakeFile(t, otCfg) },
		open: func(t testing.TB, path string, made bool, opts ...Option) error {
			return otOpenErr(t, path, pick(made, otCfg), opts...)
		}},
	kindOf("bloom", inBloom, OpenBloom, corruptBloomCfg,
		func(b *Bloom, k string) error { _, err := b.AddString(k); return err }, abc,
		func(_ testing.TB, b *Bloom) {
			b.AddString("x")
			b.AddBatch(corruptKeys, make([]bool, len(corruptKeys)))
			b.ContainsBatch(corruptKeys, make([]bool, len(corruptKeys)))
			b.Stats()
		}),
	kindOf("countingbloom", inCountingBloom, OpenCountingBloom, corruptCBFCfg,
		func(b *CountingBloom, k string) error { _, err := b.AddString(k); return err }, abc,
		func(_ testing.TB, b *CountingBloom) {
			b.AddBatch(corruptKeys, make([]bool, len(corruptKeys)))
			b.Remove([]byte("x"))
			b.Estimate([]byte("y"))
			b.Stats()
		}),
	kindOf("countminwindow", inCountMinWindow, OpenCountMinWindow, corruptCMWCfg,
		func(w *CountMinWindow, k string) error { _, err := w.AddString(k); return err }, abca,
		func(_ testing.TB, w *CountMinWindow) {
			w.AddBatch(corruptKeys, make([]uint64, len(corruptKeys)))
			w.EstimateBatch(corruptKeys, make([]uint64, len(corruptKeys)))
			w.Rotate()
			w.Stats()
		}),
	kindOf("bloomwindow", inBloomWindow, OpenBloomWindow, corruptBWCfg,
		func(w *BloomWindow, k string) error { _, err := w.AddString(k); return err }, abc,
		func(_ testing.TB, w *BloomWindow) {
			w.AddBatch(corruptKeys, make([]bool, len(corruptKeys)))
			w.ContainsBatch(corruptKeys, make([]bool, len(corruptKeys)))
			w.Rotate()
			w.Stats()
		}),
	zeroCreating(kindOf("distinct", inDistinct, OpenDistinct, corruptHLLCfg,
		func(d *Distinct, k string) error { return d.AddString(k) }, abc,
		func(_ testing.TB, d *Distinct) {
			d.AddBatch(corruptKeys)
			d.Count()
			d.ExportRedis()
			d.Stats()
		})),
	kindOf("distinctwindow", inDistinctWindow, OpenDistinctWindow, corruptHLLWCfg,
		func(w *DistinctWindow, k string) error { return w.AddString(k) }, abc,
		func(_ testing.TB, w *DistinctWindow) {
			w.AddBatch(corruptKeys)
			w.Count()
			w.CountCovered()
			w.Rotate()
			w.Stats()
		}),
	kindOf("gcra", inGCRA, OpenGCRA, corruptGCRACfg,
		func(g *GCRA, k string) error { _, err := g.AllowString(k, 1); return err }, abca,
		func(_ testing.TB, g *GCRA) {
			g.AllowBatch(corruptKeys, 1, make([]RateDecision, len(corruptKeys)))
			g.AllowString("x", 0)
			g.Stats()
		}),
	kindOf("counters", inCounters, OpenCounters, corruptCtrCfg,
		func(c *Counters, k string) error { return c.Add(k, 1) }, []string{"a", "bb", "a"},
		func(_ testing.TB, c *Counters) {
			c.Add("ccc", 1)
			c.Values()
			c.Names()
			c.Stats()
		}),
	kindOf("set", inSet, OpenSet, corruptSetCfg,
		func(s *Set, k string) error { _, err := s.AddString(k); return err }, abc,
		func(_ testing.TB, s *Set) {
			s.AddString("x")
			s.ContainsString("a")
			s.RemoveString("b")
			s.Keys()
			s.Stats()
		}),
	kindOf("setwindow", inSetWindow, OpenSetWindow, corruptSetWCfg,
		func(w *SetWindow, k string) error { _, err := w.AddString(k); return err }, abc,
		func(_ testing.TB, w *SetWindow) {
			w.AddString("x")
			w.ContainsString("a")
			w.Rotate()
			w.Keys()
			w.Stats()
		}),
	// An arena holding one Count-Min sketch of otCfg's shape, "cm".
	kindOf("arena", inArena, OpenArena, corruptArenaCfg,
		func(a *Arena, name string) error {
			c, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: otCfg.Rows, Width: otCfg.Width})
			if err != nil {
				return err
			}
			for _, k := range abca {
				if _, err := c.AddString(k); err != nil {
					c.Close()
					return err
				}
			}
			return c.Close()
		}, []string{"cm"},
		func(t testing.TB, a *Arena) {
			if c, err := OpenCountMin(a.Place("cm"), CountMinConfig{}); err == nil {
				otExercise(t, c)
				c.Close()
			}
			a.List()
			a.Stats()
		}),
}

// corruptRoute is one way of opening a broken file.
type corruptRoute struct {
	name   string
	prefix string // the error's, before the path
	zeroRW bool   // the zero config, read-write: the one route that may create
	open   func(t testing.TB, k corruptKind, path string) error
}

var corruptRoutes = []corruptRoute{
	{"open", "sketch: open ", true, func(t testing.TB, k corruptKind, path string) error { return k.open(t, path, false) }},
	{"open read-only", "sketch: open ", false, func(t testing.TB, k corruptKind, path string) error { return k.open(t, path, false, WithReadOnly()) }},
	{"open as made", "sketch: open ", false, func(t testing.TB, k corruptKind, path string) error { return k.open(t, path, true) }},
	{"open as made read-only", "sketch: open ", false, func(t testing.TB, k corruptKind, path string) error {
		return k.open(t, path, true, WithReadOnly())
	}},
	{"Inspect", "sketch: inspect ", false, func(t testing.TB, k corruptKind, path string) error { _, err := Inspect(path); return err }},
}

// corruptWant checks that err is the sentinel want (exactly ErrCorrupt,
// not one of the sentinels that wrap it, when want is ErrCorrupt), that
// it matches ErrCorrupt when want wraps it, that it is not
// ErrIncompatible unless want is, and that it names the file.
func corruptWant(t testing.TB, route string, err error, path string, want error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s succeeded, want %v", route, want)
		return
	case !errors.Is(err, want):
		t.Errorf("%s error = %v, want %v", route, err, want)
		return
	case errors.Is(want, ErrCorrupt) && !errors.Is(err, ErrCorrupt):
		t.Errorf("%s error %v does not match ErrCorrupt", route, err)
	case want != ErrIncompatible && errors.Is(err, ErrIncompatible):
		t.Errorf("%s error = %v, want %v, not ErrIncompatible", route, err, want)
	}
	if want == ErrCorrupt {
		for _, s := range otSpecific {
			if errors.Is(err, s) {
				t.Errorf("%s error = %v, want plain ErrCorrupt, not %v", route, err, s)
			}
		}
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("%s error %q does not name the file %s", route, err, path)
	}
}

// corruption is one way to break a file.
type corruption struct {
	name string
	in   kindSet // the kinds it applies to; every kind when zero
	edit edit
	want error
	// says is what the error must say, when set; message what it must be
	// after the route's prefix and the path, when set.
	says, message string
	// zeroConfig is what the zero config's read-write open says, when
	// set, on a kind whose zero config does not say what to create.
	zeroConfig error
}

// edit returns the broken file, from b, a copy of the valid file (which
// it may change and return), and valid itself. r gives garbage from a
// fixed seed, the same sequence for each kind.
type edit = func(b, valid []byte, r *rand.Rand) []byte

// Edits the table is written in. Offsets into the directory entry are
// from its start; the kinds' files have one entry (the arena's Count-Min
// sketch), at otDirOff.
func setU32(off int, v uint32) edit {
	return func(b, _ []byte, _ *rand.Rand) []byte { native.PutUint32(b[off:], v); return b }
}

func setU64(off int, v uint64) edit {
	return func(b, _ []byte, _ *rand.Rand) []byte { native.PutUint64(b[off:], v); return b }
}

// setU64Of sets the word at off to what v makes of the valid file.
func setU64Of(off int, v func(valid []byte) uint64) edit {
	return func(b, valid []byte, _ *rand.Rand) []byte { native.PutUint64(b[off:], v(valid)); return b }
}

// resummed is edit followed by otResum: only the structural checks can
// catch the change.
func resummed(e edit) edit {
	return func(b, valid []byte, r *rand.Rand) []byte { b = e(b, valid, r); otResum(b); return b }
}

// all is the edits, one after another.
func all(edits ...edit) edit {
	return func(b, valid []byte, r *rand.Rand) []byte {
		for _, e := range edits {
			b = e(b, valid, r)
		}
		return b
	}
}

// flip inverts the bits of mask in the byte at off.
func flip(off int, mask byte) edit {
	return func(b, _ []byte, _ *rand.Rand) []byte { b[off] ^= mask; return b }
}

// cut keeps the first n bytes that size makes of the file's length.
func cut(size func(n int) int) edit {
	return func(b, _ []byte, _ *rand.Rand) []byte {
		if n := size(len(b)); n <= len(b) {
			return b[:n]
		}
		return append(b, make([]byte, size(len(b))-len(b))...)
	}
}

func garbage(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Fields of the valid file.
func fileSizeOf(v []byte) uint64 { return native.Uint64(v[offFileSize:]) }
func dataOffOf(v []byte) uint64  { return native.Uint64(v[offDataOff:]) }
func dirCapOf(v []byte) uint32   { return native.Uint32(v[offDirCap:]) }
func entryOf(v []byte, field int) uint64 {
	return native.Uint64(v[otDirOff+field:])
}

// ctrTableByte sets byte i of a counters structure's names table (3
// counters in, in the one region).
func ctrTableByte(i int, v byte) edit {
	return func(b, valid []byte, _ *rand.Rand) []byte {
		b[int(entryOf(valid, entOff))+3*countersStride+i] = v
		return b
	}
}

// ctrNames rewrites a counters structure's region and entry for names,
// which may be invalid, with the checksum of their table: only the
// checks of the names themselves can catch them. The region must not
// grow past the valid one's.
func ctrNames(names ...string) edit {
	return func(b, valid []byte, _ *rand.Rand) []byte {
		table := countersTable(names)
		n := uint64(len(names))
		off := entryOf(valid, entOff)
		region := b[off : off+entryOf(valid, entSize)]
		clear(region)
		copy(region[n*countersStride:], table)
		native.PutUint64(b[otDirOff+entSize:], countersBytes(n, uint64(len(table))))
		native.PutUint64(b[otDirOff+entParams:], n)
		native.PutUint64(b[otDirOff+entParams+8:], uint64(len(table)))
		native.PutUint64(b[otDirOff+entParams+16:], xxh3.Hash(table))
		return b
	}
}

// entryField is a word of the valid file's directory entry.
func entryField(field int) func(v []byte) uint64 {
	return func(v []byte) uint64 { return entryOf(v, field) }
}

// plus is what of reads from the valid file, plus d.
func plus(of func(v []byte) uint64, d int64) func(v []byte) uint64 {
	return func(v []byte) uint64 { return of(v) + uint64(d) }
}

func otRotate(v uint64) uint64 { return v<<8 | v>>56 }

// corruptions is the table. Its first rows draw garbage, in an order that
// gives each kind the bytes the Count-Min tests always had.
func corruptions() []corruption {
	const max64 = math.MaxUint64
	var cs []corruption
	add := func(c ...corruption) { cs = append(cs, c...) }
	// Words of the directory entry.
	e32 := func(field int, v uint32) edit { return setU32(otDirOff+field, v) }
	e64 := func(field int, v uint64) edit { return setU64(otDirOff+field, v) }
	e64Of := func(field int, v func(valid []byte) uint64) edit { return setU64Of(otDirOff+field, v) }

	// Garbage.
	add(
		corruption{name: "random bytes of a valid file's size", edit: func(b, _ []byte, r *rand.Rand) []byte { return garbage(r, len(b)) }, want: ErrCorrupt},
		corruption{name: "100 random bytes", edit: func(_, _ []byte, r *rand.Rand) []byte { return garbage(r, 100) }, want: ErrCorrupt},
		corruption{name: "valid magic then random bytes", edit: func(_, v []byte, r *rand.Rand) []byte {
			b := garbage(r, len(v))
			copy(b, v[:8])
			if native.Uint32(b[offVersion:]) == formatVersion {
				b[offVersion]++
			}
			return b
		}, want: ErrVersion},
		// The directory count is random, far above the capacity.
		corruption{name: "valid header then random bytes", edit: func(_, v []byte, r *rand.Rand) []byte {
			b := garbage(r, len(v))
			copy(b, v[:offDirCount])
			return b
		}, want: ErrCorrupt},
	)

	// Cut short, or made longer. A file shorter than a header says so,
	// and is never taken for an interrupted create.
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 127} {
		add(corruption{name: fmt.Sprintf("cut to %d bytes", n), edit: cut(func(int) int { return n }), want: ErrCorrupt,
			says: fmt.Sprintf("%d bytes is shorter than a header", n)})
	}
	add(
		corruption{name: "cut by 1 byte", edit: cut(func(n int) int { return n - 1 }), want: ErrCorrupt},
		corruption{name: "cut by a page", edit: cut(func(n int) int { return n - pageSize }), want: ErrCorrupt},
		corruption{name: "cut to half", edit: cut(func(n int) int { return n / 2 }), want: ErrCorrupt},
		corruption{name: "cut to 12288 bytes", edit: cut(func(int) int { return 12288 }), want: ErrCorrupt},
		corruption{name: "cut to the data offset", edit: func(b, v []byte, _ *rand.Rand) []byte { return b[:dataOffOf(v)] }, want: ErrCorrupt},
		corruption{name: "cut to 128 bytes", edit: cut(func(int) int { return 128 }), want: ErrCorrupt},
		corruption{name: "extended by a page", edit: cut(func(n int) int { return n + pageSize }), want: ErrCorrupt},
	)

	// The magic.
	for _, m := range []uint64{1, fileMagic + 1, fileMagic ^ 1<<63, otRotate(fileMagic), math.MaxUint64} {
		add(corruption{name: fmt.Sprintf("magic=%#016x", m), edit: setU64(offMagic, m), want: ErrCorrupt})
	}
	add(
		corruption{name: "magic byte-swapped", edit: func(b, _ []byte, _ *rand.Rand) []byte {
			otConvertField(b[offMagic:], 8, native, otOther)
			return b
		}, want: ErrByteOrder},
		corruption{name: "every header field byte-swapped", edit: func(b, _ []byte, _ *rand.Rand) []byte { otSwapHeader(b); return b }, want: ErrByteOrder},
		// What a machine of the other byte order would have written: every
		// header, entry and data word in that order, checksums recomputed
		// in it (TestOpen_Corrupt checks the conversion).
		corruption{name: "whole file in the other order", edit: func(_, v []byte, _ *rand.Rand) []byte {
			return otConvert(v, native, otOther)
		}, want: ErrByteOrder},
	)

	// The version, checked before the checksum.
	for _, v := range []uint32{0, formatVersion - 1, formatVersion + 1, 1 << 24, math.MaxUint32} {
		add(corruption{name: fmt.Sprintf("version=%d", v), edit: setU32(offVersion, v), want: ErrVersion},
			corruption{name: fmt.Sprintf("version=%d resummed", v), edit: resummed(setU32(offVersion, v)), want: ErrVersion})
	}
	// A file of version 1, written before probes were spread (column.go),
	// says to recreate it.
	add(corruption{name: "version=1, an earlier library's", edit: resummed(setU32(offVersion, 1)), want: ErrVersion,
		message: "unknown format version: version 1 was written by an earlier version of this library, which placed keys in other counters and kept no liveness tokens; this build reads only version 2: recreate the file (remove it and open it again)"})

	// Checksums: the header's, and the directory entry's, over every field.
	add(
		corruption{name: "header seed byte flipped", edit: flip(offSeed, 0xff), want: ErrChecksum},
		corruption{name: "header checksum zeroed", edit: setU64(offChecksum, 0), want: ErrChecksum},
		corruption{name: "directory entry param 0 bit flipped", edit: flip(otDirOff+entParams, 1), want: ErrChecksum},
		corruption{name: "directory entry param 2 bit flipped", edit: flip(otDirOff+entParams+16, 1), want: ErrChecksum},
	)
	for _, f := range []struct {
		name string
		off  int
	}{
		{"kind", entKind}, {"offset", entOff}, {"size", entSize},
		{"param 0", entParams}, {"param 1", entParams + 8}, {"param 7", entParams + 56},
		{"name", entName}, {"name end", entName + entNameSize - 1},
		{"checksum", entChecksum}, {"checksum end", entChecksum + 7},
	} {
		add(corruption{name: "directory entry " + f.name + " byte flipped", edit: flip(otDirOff+f.off, 0xff), want: ErrChecksum})
	}
	// The flags word is the entry's state, which the checksum leaves out
	// (a removal is one store): 0xff is no state.
	// The state is the word's low byte: its first byte on a little-endian
	// machine, its last on a big-endian one (whose first holds room pins).
	stateByte := otDirOff + entFlags
	if cells.BigEndian {
		stateByte += 3
	}
	add(corruption{name: "directory entry flags byte flipped", edit: flip(stateByte, 0xff), want: ErrCorrupt, says: "unknown flags"})

	// Every byte of the fixed header and of the directory count, inverted.
	for off := 0; off < offDirCount+4; off++ {
		var want error
		switch {
		case off < offVersion:
			want = ErrCorrupt // bad magic
		case off < offHdrSize:
			want = ErrVersion // checked before the checksum
		case off < offDirCount:
			want = ErrChecksum // [12, 120) and the checksum itself
		default:
			want = ErrCorrupt // the count is not checksummed: it exceeds the capacity
		}
		add(corruption{name: fmt.Sprintf("header byte %d inverted", off), edit: flip(off, 0xff), want: want})
	}

	// Header fields changed with the checksums recomputed, so that only
	// the structural checks of decodeHeader stand between the file and a
	// mapping that would be indexed out of bounds.
	shrink := func(n func(v []byte) uint64) edit {
		return func(b, v []byte, _ *rand.Rand) []byte { native.PutUint64(b[offFileSize:], n(v)); return b[:n(v)] }
	}
	fixed := func(n uint64) func([]byte) uint64 { return func([]byte) uint64 { return n } }
	for _, c := range []corruption{
		{name: "fileSize+1", edit: setU64Of(offFileSize, plus(fileSizeOf, 1))},
		{name: "fileSize+4096", edit: setU64Of(offFileSize, plus(fileSizeOf, 4096))},
		{name: "fileSize-4096", edit: setU64Of(offFileSize, plus(fileSizeOf, -4096))},
		{name: "fileSize=0", edit: setU64(offFileSize, 0)},
		{name: "fileSize=max", edit: setU64(offFileSize, max64)},
		{name: "fileSize and file shrunk to 16384", edit: shrink(fixed(16384))},
		{name: "fileSize and file shrunk to the data offset", edit: shrink(dataOffOf)},
		{name: "fileSize and file shrunk to 8192", edit: shrink(fixed(8192))},
		{name: "fileSize and file shrunk to 128", edit: shrink(fixed(128))},
		{name: "hdrSize=0", edit: setU32(offHdrSize, 0)},
		{name: "hdrSize=256", edit: setU32(offHdrSize, 256)},
		{name: "arena flag flipped", edit: flip(offFlags, byte(flagArena))},
		{name: "flags=2", edit: setU64(offFlags, 2)},
		{name: "lockOff=0", edit: setU32(offLockOff, 0)},
		{name: "lockSize=4096", edit: setU32(offLockSize, 4096)},
		{name: "slotsOff=0", edit: setU32(offSlotsOff, 0)},
		{name: "slots=0", edit: setU32(offSlotsN, 0)},
		{name: "slots=2048", edit: setU32(offSlotsN, 2048)},
		{name: "slots=65537", edit: setU32(offSlotsN, maxSlots+1)},
		{name: "slots=max", edit: setU32(offSlotsN, math.MaxUint32)},
		// A consistent relayout with one reader slot moves the directory
		// onto the old slots, which are zero: the entry's checksum fails.
		{name: "slots=1 with dirOff and dataOff to match", edit: all(setU32(offSlotsN, 1), setU32(offDirOff, dirOffset(1)),
			setU64Of(offDataOff, func(v []byte) uint64 { return roundUp(uint64(dirOffset(1))+uint64(dirCapOf(v))*entrySize, pageSize) })),
			want: ErrChecksum},
		{name: "dirOff=0", edit: setU32(offDirOff, 0)},
		{name: "dirOff+64", edit: setU32(offDirOff, otDirOff+64)},
		{name: "dirOff=max", edit: setU32(offDirOff, math.MaxUint32)},
		{name: "dirCap=0", edit: setU32(offDirCap, 0)},
		{name: "dirCap=33", edit: setU32(offDirCap, 33)},
		{name: "dirCap=4097", edit: setU32(offDirCap, maxDirEntries+1)},
		{name: "dirCap=max", edit: setU32(offDirCap, math.MaxUint32)},
		{name: "dataOff=0", edit: setU64(offDataOff, 0)},
		{name: "dataOff-4096", edit: setU64Of(offDataOff, plus(dataOffOf, -4096))},
		{name: "dataOff+4096", edit: setU64Of(offDataOff, plus(dataOffOf, 4096))},
		{name: "dataOff=fileSize+4096", edit: setU64Of(offDataOff, plus(fileSizeOf, 4096))},
		{name: "dataOff=max", edit: setU64(offDataOff, max64)},
		{name: "reserved byte", edit: func(b, _ []byte, _ *rand.Rand) []byte { b[offReserved+5] = 1; return b }},
		{name: "last reserved byte", edit: func(b, _ []byte, _ *rand.Rand) []byte { b[offChecksum-1] = 0x80; return b }},
		{name: "dirCount past the capacity", edit: func(b, v []byte, _ *rand.Rand) []byte {
			native.PutUint32(b[offDirCount:], dirCapOf(v)+1)
			return b
		}},
		{name: "dirCount=max", edit: setU32(offDirCount, math.MaxUint32)},
		// A standalone file with no entry is corrupt (an arena may be
		// empty). The count is mutable and not checksummed.
		{name: "dirCount=0", in: inStandalone, edit: setU32(offDirCount, 0)},

		{name: "entry.off=0", edit: e64(entOff, 0)},
		{name: "entry.off=64", edit: e64(entOff, 64)},
		{name: "entry.off=dataOff-64", edit: e64Of(entOff, plus(dataOffOf, -64))},
		{name: "entry.off=dataOff+8", edit: e64Of(entOff, plus(dataOffOf, 8))},
		{name: "entry.off=fileSize-64", edit: e64Of(entOff, plus(fileSizeOf, -64))},
		{name: "entry.off=fileSize", edit: e64Of(entOff, fileSizeOf)},
		{name: "entry.off=fileSize+64", edit: e64Of(entOff, plus(fileSizeOf, 64))},
		{name: "entry.off=2^63", edit: e64(entOff, 1<<63)},
		{name: "entry.off=max-63", edit: e64(entOff, max64-63)},
		{name: "entry.off=max", edit: e64(entOff, max64)},
		{name: "entry.size=0", edit: e64(entSize, 0)},
		{name: "entry.size-8", edit: e64Of(entSize, plus(entryField(entSize), -8))},
		{name: "entry.size+8", edit: e64Of(entSize, plus(entryField(entSize), 8))},
		{name: "entry.size+64", edit: e64Of(entSize, plus(entryField(entSize), 64))},
		{name: "entry.size=fileSize", edit: e64Of(entSize, fileSizeOf)},
		{name: "entry.size=fileSize+1", edit: e64Of(entSize, plus(fileSizeOf, 1))},
		{name: "entry.size=max", edit: e64(entSize, max64)},
		{name: "entry.off=max-63,size=64", edit: all(e64(entOff, max64-63), e64(entSize, 64))},
		{name: "entry.kind=0", edit: e32(entKind, 0)},
		// Another kind's parameters: for a Count-Min sketch, a Bloom
		// filter's.
		{name: "entry.kind=the next kind", edit: func(b, _ []byte, _ *rand.Rand) []byte {
			k := native.Uint32(b[otDirOff+entKind:])
			native.PutUint32(b[otDirOff+entKind:], k%uint32(len(kinds))+1)
			return b
		}},
		{name: "entry.kind=past the last kind", edit: e32(entKind, slices.Max(kindNumbers())+1)},
		// An entry's flags word is its state: 1 (removed) and 2 (being
		// reused) only in an arena, where they are valid; others never.
		{name: "entry.flags=1 outside an arena", in: inStandalone, edit: e32(entFlags, 1)},
		{name: "entry.flags=2 outside an arena", in: inStandalone, edit: e32(entFlags, 2)},
		{name: "entry.flags=3", edit: e32(entFlags, 3)},
		{name: "entry.name without its NUL", edit: func(b, _ []byte, _ *rand.Rand) []byte {
			copy(b[otDirOff+entName:][:entNameSize], bytes.Repeat([]byte("n"), entNameSize))
			return b
		}},
		{name: "entry.name given outside an arena, or taken from an arena's", edit: func(b, _ []byte, _ *rand.Rand) []byte {
			name := b[otDirOff+entName:][:entNameSize]
			if name[0] == 0 {
				name[0] = 'n'
			} else {
				clear(name)
			}
			return b
		}},
		{name: "entry.name with a byte after its NUL", edit: func(b, _ []byte, _ *rand.Rand) []byte {
			b[otDirOff+entName+entNameSize-2] = 'n'
			return b
		}},

		// A Count-Min sketch's parameters: rows and width, the rest zero.
		{name: "rows=0", in: inCountMin, edit: e64(entParams, 0)},
		{name: "rows=2", in: inCountMin, edit: e64(entParams, 2)},
		{name: "rows=64", in: inCountMin, edit: e64(entParams, 64)},
		{name: "rows=65", in: inCountMin, edit: e64(entParams, maxRows+1)},
		{name: "rows=2^61", in: inCountMin, edit: e64(entParams, 1<<61)},
		{name: "rows=max", in: inCountMin, edit: e64(entParams, max64)},
		{name: "width=0", in: inCountMin, edit: e64(entParams+8, 0)},
		{name: "width=3", in: inCountMin, edit: e64(entParams+8, 3)},
		{name: "width=4", in: inCountMin, edit: e64(entParams+8, 4)},
		{name: "width=16", in: inCountMin, edit: e64(entParams+8, 16)},
		{name: "width=2^40", in: inCountMin, edit: e64(entParams+8, maxWidth)},
		{name: "width=2^41", in: inCountMin, edit: e64(entParams+8, maxWidth<<1)},
		{name: "width=2^63", in: inCountMin, edit: e64(entParams+8, 1<<63)},
		{name: "width=max", in: inCountMin, edit: e64(entParams+8, max64)},
		// A shape whose size agrees with it but runs past the file's end.
		{name: "width=1024 with size to match", in: inCountMin, edit: all(e64(entParams+8, 1024), e64(entSize, countMinBytes(1, 1024)))},
		{name: "rows=64,width=2^40 with size to match", in: inCountMin, edit: all(e64(entParams, 64), e64(entParams+8, maxWidth), e64(entSize, countMinBytes(64, maxWidth)))},
		{name: "param 2=1", in: inCountMin, edit: e64(entParams+16, 1)},
		// The fleet flag: 0 or 1, and 1 only with the fleet grid's bytes.
		{name: "fleet flag=2", in: inCountMin, edit: e64(entParams+32, 2), says: "fleet flag 2"},
		{name: "fleet flag=max", in: inCountMin, edit: e64(entParams+32, max64)},
		{name: "fleet flag=1 without its grid", in: inCountMin, edit: e64(entParams+32, 1)},
		// The lanes, parameter word 5: 0 or 2..MaxLanes, with their grids.
		{name: "lanes=1", in: inCountMin, edit: e64(entParams+40, 1), says: "count-min lanes 1"},
		{name: "lanes past MaxLanes", in: inCountMin, edit: e64(entParams+40, MaxLanes+1), says: "count-min lanes"},
		{name: "lanes=2 without their grids", in: inCountMin, edit: e64(entParams+40, 2)},
		{name: "lanes and a fleet part without their grids", in: inCountMin, edit: all(e64(entParams+40, 2), e64(entParams+32, 1)), says: "count-min region"},
		{name: "count-min unknown parameter", in: inCountMin, edit: e64(entParams+56, 1), says: "unknown count-min parameters"},
		{name: "conservative update flag 2", in: inCountMin, edit: e64(entParams+48, 2), says: "count-min conservative update flag 2"},
		{name: "conservative update without lanes", in: inCountMin, edit: e64(entParams+48, 1), says: "count-min lanes 0 (fleet part 0, conservative update 1)"},
		{name: "conservative update without the shared lane", in: inCountMin, edit: all(e64(entParams+48, 1), e64(entParams+40, 1)), says: "count-min region"},
		{name: "param 5=1", in: inCountMin, edit: e64(entParams+40, 1)},
		// A Count-Min window's fleet flag, its parameter word 6.
		{name: "window fleet flag=2", in: inCountMinWindow, edit: e64(entParams+48, 2), says: "fleet flag 2"},
		{name: "window fleet flag=1 without its grids", in: inCountMinWindow, edit: e64(entParams+48, 1)},
		// A Count-Min window's lanes, its parameter word 7: 0 or
		// 2..MaxLanes, with their grids in every slot.
		{name: "window lanes=1", in: inCountMinWindow, edit: e64(entParams+56, 1), says: "count-min window lanes 1"},
		{name: "window lanes past MaxLanes", in: inCountMinWindow, edit: e64(entParams+56, MaxLanes+1), says: "count-min window lanes 65"},
		{name: "window lanes=max", in: inCountMinWindow, edit: e64(entParams+56, max64), says: "count-min window lanes"},
		{name: "window lanes=2 without their grids", in: inCountMinWindow, edit: e64(entParams+56, 2), says: "count-min window region"},
		{name: "window lanes and a fleet part without their grids", in: inCountMinWindow, edit: all(e64(entParams+56, 2), e64(entParams+48, 1)), says: "2 lanes, fleet part 1"},
		{name: "param 7=1", in: inCountMin, edit: e64(entParams+56, 1)},

		// A Bloom filter's: capacity, FP rate, blocks and hashes.
		{name: "bloom capacity zero", in: inBloom, edit: e64(entParams, 0)},
		{name: "bloom rate one", in: inBloom, edit: e64(entParams+8, 0x3ff0000000000000)},
		{name: "bloom rate zero", in: inBloom, edit: e64(entParams+8, 0)},
		{name: "bloom rate NaN", in: inBloom, edit: e64(entParams+8, 0x7ff8000000000001)},
		{name: "bloom no blocks", in: inBloom, edit: e64(entParams+16, 0)},
		{name: "bloom blocks past the region", in: inBloom, edit: e64Of(entParams+16, plus(entryField(entParams+16), 1))},
		{name: "bloom blocks fewer than the region", in: inBloom, edit: e64Of(entParams+16, plus(entryField(entParams+16), -1))},
		{name: "bloom blocks past any file", in: inBloom, edit: e64(entParams+16, 1<<62)},
		{name: "bloom no hashes", in: inBloom, edit: e64(entParams+24, 0)},
		{name: "bloom too many hashes", in: inBloom, edit: e64(entParams+24, 33)},
		{name: "bloom unknown parameter", in: inBloom, edit: e64(entParams+56, 1)},

		// A counting Bloom filter's: capacity, FP rate, counters and hashes.
		{name: "cbf capacity zero", in: inCountingBloom, edit: e64(entParams, 0)},
		{name: "cbf rate out of range", in: inCountingBloom, edit: e64(entParams+8, 0x3ff0000000000000)},
		{name: "cbf counters not a power of two", in: inCountingBloom, edit: e64(entParams+16, 1000)},
		{name: "cbf too many hashes", in: inCountingBloom, edit: e64(entParams+24, 33)},
		{name: "cbf region too small", in: inCountingBloom, edit: e64(entParams+16, 1<<20)},
		{name: "cbf fleet flag=2", in: inCountingBloom, edit: e64(entParams+32, 2), says: "fleet flag 2"},
		{name: "cbf fleet flag=1 without its arrays", in: inCountingBloom, edit: e64(entParams+32, 1)},
		{name: "cbf unknown parameter", in: inCountingBloom, edit: e64(entParams+40, 1), says: "unknown counting Bloom parameters"},

		// A distinct count's: precision and profile.
		{name: "distinct precision 3", in: inDistinct, edit: e64(entParams, 3)},
		{name: "distinct precision 19", in: inDistinct, edit: e64(entParams, 19)},
		{name: "distinct precision max", in: inDistinct, edit: e64(entParams, max64)},
		{name: "distinct precision past the region", in: inDistinct, edit: e64(entParams, 9)},
		{name: "distinct precision short of the region", in: inDistinct, edit: e64(entParams, 7)},
		{name: "distinct precision 18 with size to match", in: inDistinct, edit: all(e64(entParams, 18), e64(entSize, distinctBytes(18)))},
		{name: "distinct profile 3", in: inDistinct, edit: e64(entParams+8, 3)},
		{name: "distinct PostgreSQL profile at precision 18", in: inDistinct, edit: all(e64(entParams, 18), e64(entSize, distinctBytes(18)), e64(entParams+8, 2))},
		{name: "distinct Redis profile at precision 8", in: inDistinct, edit: e64(entParams+8, 1)},
		{name: "distinct unknown parameter", in: inDistinct, edit: e64(entParams+16, 1)},

		// A rate limiter's: rows, width, the rate's period and count, burst.
		{name: "gcra no rows", in: inGCRA, edit: e64(entParams, 0)},
		{name: "gcra 17 rows", in: inGCRA, edit: e64(entParams, 17)},
		{name: "gcra rows past the region", in: inGCRA, edit: e64(entParams, 3)},
		{name: "gcra width not a power of two", in: inGCRA, edit: e64(entParams+8, 48)},
		{name: "gcra width past the region", in: inGCRA, edit: e64(entParams+8, 128)},
		{name: "gcra width past any file", in: inGCRA, edit: e64(entParams+8, 1<<62)},
		{name: "gcra period zero", in: inGCRA, edit: e64(entParams+16, 0)},
		{name: "gcra period past int64", in: inGCRA, edit: e64(entParams+16, 1<<63)},
		{name: "gcra count zero", in: inGCRA, edit: e64(entParams+24, 0)},
		{name: "gcra more than one a nanosecond", in: inGCRA, edit: e64(entParams+24, 2e9)},
		{name: "gcra burst past the window", in: inGCRA, edit: e64(entParams+32, 1<<40)},
		{name: "gcra unknown parameter", in: inGCRA, edit: e64(entParams+40, 1)},

		// A counters structure's: how many names, the names table's
		// bytes and checksum; then the names in its region (a, bb, ccc,
		// in a table of 9 bytes after 3 counters of a line each).
		{name: "counters none", in: inCounters, edit: e64(entParams, 0)},
		{name: "counters 1025", in: inCounters, edit: e64(entParams, CountersMaxNames+1), says: "1025 counters"},
		{name: "counters count short of the region", in: inCounters, edit: e64(entParams, 2), says: "counters region of 208 bytes"},
		{name: "counters count past the file", in: inCounters, edit: e64(entParams, 1<<40)},
		{name: "counters region a line more", in: inCounters, edit: e64Of(entSize, plus(entryField(entSize), 64))},
		{name: "counters table short of the region", in: inCounters, edit: e64(entParams+8, 8)},
		{name: "counters table shorter than its names", in: inCounters, edit: e64(entParams+8, 5)},
		{name: "counters table past its names' longest", in: inCounters, edit: e64(entParams+8, 3*65+1)},
		{name: "counters table padding taken for names", in: inCounters, edit: e64(entParams+8, 16), says: "names table of 10 names"},
		{name: "counters name past the table", in: inCounters, edit: ctrTableByte(0, 50), says: "runs past the names table"},
		{name: "counters byte in the padding", in: inCounters, edit: ctrTableByte(12, 1), says: "padding"},
		{name: "counters name changed", in: inCounters, edit: ctrTableByte(1, 'z'), says: "checksum"},
		{name: "counters name of 65 bytes", in: inCounters, edit: ctrNames(strings.Repeat("x", 65), "y"), says: "more than 64"},
		{name: "counters name not UTF-8", in: inCounters, edit: ctrNames("a", "b\xff"), says: "not valid UTF-8"},
		{name: "counters name with a control byte", in: inCounters, edit: ctrNames("a", "b\n"), says: "not printable"},
		{name: "counters name with an escape", in: inCounters, edit: ctrNames("a", "\x1b[2J"), says: "not printable"},
		{name: "counters names twice", in: inCounters, edit: ctrNames("a", "bb", "a"), says: "is also name 0"},
		{name: "counters unknown parameter", in: inCounters, edit: e64(entParams+24, 1)},
		// An exact set's: capacity, key bytes, slots.
		{name: "set capacity zero", in: inSet, edit: e64(entParams, 0)},
		{name: "set capacity past its slots", in: inSet, edit: e64(entParams, 17)},
		{name: "set capacity past any file", in: inSet, edit: e64(entParams, 1<<62)},
		{name: "set key bytes not a multiple of 8", in: inSet, edit: e64(entParams+8, 12)},
		{name: "set key bytes zero", in: inSet, edit: e64(entParams+8, 0)},
		{name: "set key bytes past 1024", in: inSet, edit: e64(entParams+8, 2048)},
		{name: "set key bytes past the region", in: inSet, edit: e64(entParams+8, 24)},
		{name: "set slots not its capacity's", in: inSet, edit: e64(entParams+16, 64)},
		{name: "set slots zero", in: inSet, edit: e64(entParams+16, 0)},
		{name: "set unknown parameter", in: inSet, edit: e64(entParams+24, 1)},
		{name: "set window capacity past its slots", in: inSetWindow, edit: e64(entParams, 17)},
		{name: "set window key bytes past the region", in: inSetWindow, edit: e64(entParams+8, 24)},
		{name: "set window slots not its capacity's", in: inSetWindow, edit: e64(entParams+16, 64)},
		{name: "set window period under a millisecond", in: inSetWindow, edit: e64(entParams+24, 1000)},
		{name: "set window keep zero", in: inSetWindow, edit: e64(entParams+32, 0)},
		{name: "set window keep past the region", in: inSetWindow, edit: e64(entParams+32, 9)},
		{name: "set window unknown parameter", in: inSetWindow, edit: e64(entParams+40, 1)},
	} {
		if c.want == nil {
			c.want = ErrCorrupt
		}
		c.edit = resummed(c.edit)
		add(c)
	}

	// What a creator killed while it wrote the header leaves: a zero
	// magic over anything but an all-zero file of the size the config
	// needs (which is adopted). A partly written header is
	// ErrInterruptedCreate whatever the config (Path's promise).
	zeroOf := func(size func(n int) int) edit {
		return func(b, _ []byte, _ *rand.Rand) []byte { return make([]byte, size(len(b))) }
	}
	add(
		corruption{name: "valid file with a zero magic", edit: func(b, _ []byte, _ *rand.Rand) []byte { clear(b[:8]); return b }},
		corruption{name: "half of the header written", edit: func(b, v []byte, _ *rand.Rand) []byte {
			clear(b)
			copy(b[offVersion:64], v[offVersion:64])
			return b
		}},
		corruption{name: "header without magic, no directory", edit: func(b, v []byte, _ *rand.Rand) []byte {
			clear(b)
			copy(b[offVersion:offDirCount], v[offVersion:offDirCount])
			return b
		}},
		corruption{name: "only the directory entry written", edit: func(b, v []byte, _ *rand.Rand) []byte {
			clear(b)
			copy(b[otDirOff:otDirOff+entrySize], v[otDirOff:])
			return b
		}},
		corruption{name: "one nonzero byte at the end", edit: func(b, _ []byte, _ *rand.Rand) []byte {
			clear(b)
			b[len(b)-1] = 1
			return b
		}},
		corruption{name: "all zero, 128 bytes", edit: zeroOf(func(int) int { return headerSize })},
		corruption{name: "all zero, 4096 bytes", edit: zeroOf(func(int) int { return 4096 })},
		corruption{name: "all zero, a page short", edit: zeroOf(func(n int) int { return n - pageSize })},
		corruption{name: "all zero, a page more", edit: zeroOf(func(n int) int { return n + pageSize })},
		corruption{name: "all zero, 1 byte more", edit: zeroOf(func(n int) int { return n + 1 })},
	)
	for i := len(cs) - 10; i < len(cs); i++ {
		cs[i].want = ErrInterruptedCreate
		if strings.HasPrefix(cs[i].name, "all zero") {
			// Prepared for an opener, or left by a create: a config must
			// say what to create in it.
			cs[i].zeroConfig = ErrInvalidConfig
		}
	}
	// A file shorter than a header is never what an interrupted create
	// leaves (the creator sizes the file in one fallocate), so it is plain
	// ErrCorrupt even when it is all zero.
	add(corruption{name: "all zero, 100 bytes", edit: zeroOf(func(int) int { return 100 }), want: ErrCorrupt})
	return cs
}

// TestOpen_Corrupt breaks a real file of every kind in every way of the
// table and opens it every way: each says exactly what is wrong, names
// the file, and leaves it as it was.
func TestOpen_Corrupt(t *testing.T) {
	table := corruptions()
	for _, k := range corruptKinds {
		t.Run(k.name, func(t *testing.T) {
			path, valid := k.make(t)
			// The rows read the layout from the file: one entry, in the
			// directory at otDirOff, its region where the data starts.
			if fileSizeOf(valid) != uint64(len(valid)) || native.Uint32(valid[offDirOff:]) != otDirOff ||
				native.Uint32(valid[offDirCount:]) != 1 || entryOf(valid, entOff) != dataOffOf(valid) ||
				k.set == inCountMin && entryOf(valid, entSize) != countMinBytes(otCfg.Rows, otCfg.Width) {
				t.Fatalf("unexpected layout: file %d bytes (%d), directory at %d with %d entries, data at %d, entry at %d+%d",
					fileSizeOf(valid), len(valid), native.Uint32(valid[offDirOff:]), native.Uint32(valid[offDirCount:]),
					dataOffOf(valid), entryOf(valid, entOff), entryOf(valid, entSize))
			}
			foreign := otConvert(valid, native, otOther)
			if otOther.Uint64(foreign[offMagic:]) != fileMagic || otOther.Uint32(foreign[offVersion:]) != formatVersion ||
				otOther.Uint64(foreign[offChecksum:]) != xxh3.Hash(foreign[offVersion:offChecksum]) {
				t.Fatal("the converted file is not a valid file in the other byte order")
			}
			if back := otConvert(foreign, otOther, native); !bytes.Equal(back, valid) {
				t.Fatal("converting the file back does not give the original")
			}
			r := rand.New(rand.NewPCG(11, 12))
			for _, c := range table {
				if c.in != 0 && c.in&k.set == 0 {
					continue
				}
				b := c.edit(bytes.Clone(valid), valid, r)
				t.Run(c.name, func(t *testing.T) {
					otRewrite(t, path, b)
					for _, route := range corruptRoutes {
						want := c.want
						if route.zeroRW && !k.zeroCreates && c.zeroConfig != nil {
							want = c.zeroConfig
						}
						err := route.open(t, k, path)
						corruptWant(t, route.name, err, path, want)
						if err == nil {
							continue
						}
						if c.says != "" && !strings.Contains(err.Error(), c.says) {
							t.Errorf("%s error %q does not say %q", route.name, err, c.says)
						}
						if want := route.prefix + path + ": " + c.message; c.message != "" && err.Error() != want {
							t.Errorf("%s error:\n%s\nwant:\n%s", route.name, err, want)
						}
					}
					if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, b) {
						t.Errorf("a refused file was modified (%v)", err)
					}
				})
			}
		})
	}
}

// TestOpen_CorruptEveryKind: the corruption table breaks a file of every
// kind (testKinds).
func TestOpen_CorruptEveryKind(t *testing.T) {
	for _, k := range testKinds {
		if !slices.ContainsFunc(corruptKinds, func(c corruptKind) bool { return c.name == string(k.kind) }) {
			t.Errorf("corruptKinds has no %s row", k.kind)
		}
	}
}

// TestOpen_OtherKind: a valid file of one kind, opened as another, is
// ErrIncompatible naming the file, read-write and read-only.
func TestOpen_OtherKind(t *testing.T) {
	for _, k := range corruptKinds {
		path, _ := k.make(t)
		for _, other := range corruptKinds {
			if other.name == k.name {
				continue
			}
			for _, opts := range [][]Option{nil, {WithReadOnly()}} {
				err := other.open(t, path, false, opts...)
				corruptWant(t, fmt.Sprintf("opening a %s file as a %s (%d options)", k.name, other.name, len(opts)), err, path, ErrIncompatible)
			}
		}
	}
}
