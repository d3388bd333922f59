//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeebo/xxh3"
)

// arMakeFile makes an arena of 256 KiB with four structures and returns
// its bytes.
func arMakeFile(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "arena")
	a, err := OpenArena(Path(path), ArenaConfig{Size: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "two"} {
		c, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: 2, Width: 64})
		if err != nil {
			t.Fatal(err)
		}
		c.AddString("k")
		c.Close()
	}
	b, err := OpenCountingBloom(a.Place("three"), CountingBloomConfig{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	b.AddString("k")
	b.Close()
	bl, err := OpenBloom(a.Place("four"), BloomConfig{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	bl.AddString("k")
	bl.Close()
	a.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// arEntry returns directory entry i of an arena file's bytes.
func arEntry(b []byte, i int) []byte {
	return b[int(native.Uint32(b[offDirOff:]))+i*entrySize:][:entrySize]
}

func arResumEntry(eb []byte) {
	native.PutUint64(eb[entChecksum:], entryChecksum(eb))
}

// TestArena_CraftedFiles breaks a valid arena in the ways a hand-made
// file could and wants ErrCorrupt (or the sentinel wrapping it) at open.
func TestArena_CraftedFiles(t *testing.T) {
	valid := arMakeFile(t)
	for _, tc := range []struct {
		name string
		edit func(b []byte)
		want error
	}{
		{"count above capacity", func(b []byte) { native.PutUint32(b[offDirCount:], native.Uint32(b[offDirCap:])+1) }, ErrCorrupt},
		{"count covers an unwritten entry", func(b []byte) { native.PutUint32(b[offDirCount:], native.Uint32(b[offDirCount:])+1) }, ErrChecksum},
		{"entry past the end", func(b []byte) {
			eb := arEntry(b, 2)
			native.PutUint64(eb[entOff:], uint64(len(b)))
			arResumEntry(eb)
		}, ErrCorrupt},
		{"overlapping entries", func(b []byte) {
			eb := arEntry(b, 1)
			native.PutUint64(eb[entOff:], native.Uint64(arEntry(b, 0)[entOff:])+64)
			arResumEntry(eb)
		}, ErrCorrupt},
		{"length that wraps", func(b []byte) {
			eb := arEntry(b, 2)
			native.PutUint64(eb[entSize:], math.MaxUint64-native.Uint64(eb[entOff:])+64)
			arResumEntry(eb)
		}, ErrCorrupt},
		{"name without terminator", func(b []byte) {
			eb := arEntry(b, 0)
			copy(eb[entName:entName+entNameSize], bytes.Repeat([]byte("n"), entNameSize))
			arResumEntry(eb)
		}, ErrCorrupt},
		{"bytes after the name's NUL", func(b []byte) {
			eb := arEntry(b, 0)
			eb[entName+10] = 'x'
			arResumEntry(eb)
		}, ErrCorrupt},
		{"empty name", func(b []byte) {
			eb := arEntry(b, 0)
			clear(eb[entName : entName+entNameSize])
			arResumEntry(eb)
		}, ErrCorrupt},
		{"name used twice", func(b []byte) {
			eb := arEntry(b, 1)
			copy(eb[entName:entName+entNameSize], arEntry(b, 0)[entName:entName+entNameSize])
			arResumEntry(eb)
		}, ErrCorrupt},
		{"unknown flag", func(b []byte) {
			native.PutUint64(b[offFlags:], flagArena|2)
			native.PutUint64(b[offChecksum:], xxh3.Hash(b[offVersion:offChecksum]))
		}, ErrCorrupt},
		{"entry's checksum", func(b []byte) { arEntry(b, 1)[entParams] ^= 1 }, ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(valid)
			tc.edit(b)
			path := filepath.Join(t.TempDir(), "arena")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, opts := range [][]Option{nil, {WithReadOnly()}} {
				a, err := OpenArena(Path(path), ArenaConfig{}, opts...)
				if !errors.Is(err, tc.want) {
					t.Errorf("OpenArena(%v) = %v, want %v", opts, err, tc.want)
				}
				if a != nil {
					a.Close()
				}
			}
		})
	}
}

// TestArena_EntriesChangedAfterAttach raises the entry count under an
// attached handle, the way a hostile or broken writer could: the new
// entries are validated before use and a bad one is refused, never
// followed.
func TestArena_EntriesChangedAfterAttach(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arena")
	if err := os.WriteFile(path, arMakeFile(t), 0o600); err != nil {
		t.Fatal(err)
	}
	a := mustOpenArena(t, path, 0)
	n := uint32(len(a.List()))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dirOff := int64(dirOffset(defaultSlots))
	count := func(n uint32) {
		var w [4]byte
		native.PutUint32(w[:], n)
		if _, err := f.WriteAt(w[:], offDirCount); err != nil {
			t.Fatal(err)
		}
	}
	// An entry whose region runs past the end, with a good checksum.
	eb := make([]byte, entrySize)
	native.PutUint32(eb[entKind:], kindCountMin)
	native.PutUint64(eb[entOff:], 256<<10)
	native.PutUint64(eb[entSize:], countMinBytes(1, 1))
	native.PutUint64(eb[entParams:], 1)
	native.PutUint64(eb[entParams+8:], 1)
	copy(eb[entName:], "evil")
	arResumEntry(eb)
	if _, err := f.WriteAt(eb, dirOff+int64(n)*entrySize); err != nil {
		t.Fatal(err)
	}
	count(n + 1)
	if _, err := OpenCountMin(a.Place("evil"), CountMinConfig{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("an appended entry past the end: %v, want ErrCorrupt", err)
	}
	if _, err := OpenCountMin(a.Place("new"), arCMS); !errors.Is(err, ErrCorrupt) {
		t.Errorf("create behind a bad entry: %v, want ErrCorrupt", err)
	}
	count(math.MaxUint32)
	if _, err := OpenCountMin(a.Place("one"), CountMinConfig{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("an entry count past the capacity: %v, want ErrCorrupt", err)
	}
	if got := uint32(len(a.List())); got != n {
		t.Errorf("List() has %d entries, want the %d validated ones", got, n)
	}
	count(n)
	c, err := OpenCountMin(a.Place("one"), CountMinConfig{})
	if err != nil {
		t.Fatalf("the validated entries still open: %v", err)
	}
	if got := c.EstimateString("k"); got != 1 {
		t.Errorf("Estimate(k) = %d, want 1", got)
	}
	c.Close()
}
