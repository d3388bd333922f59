//go:build linux

package sketch

// Tests of OpenCountMin's create-or-attach protocol against files that are
// damaged, foreign, half-written, owned by someone else, in the way, or on
// a full filesystem. Every corruption test makes a real file with
// OpenCountMin, closes it and breaks it with ordinary file writes.
// Their helpers, prefixed "ot", are in helpers_test.go.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeebo/xxh3"
	"golang.org/x/sys/unix"
)

func TestOpen_Garbage(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for _, tc := range []struct {
		name string
		make func(valid []byte) []byte
		want error
	}{
		{"random bytes of a valid file's size", func(v []byte) []byte { return random(len(v)) }, ErrCorrupt},
		{"100 random bytes", func([]byte) []byte { return random(100) }, ErrCorrupt},
		{"valid magic then random bytes", func(v []byte) []byte {
			b := random(len(v))
			copy(b, v[:8])
			if native.Uint32(b[offVersion:]) == formatVersion {
				b[offVersion]++
			}
			return b
		}, ErrVersion},
		{"valid header then random bytes", func(v []byte) []byte {
			b := random(len(v))
			copy(b, v[:offDirCount])
			return b
		}, ErrCorrupt}, // the directory count is random, far above the capacity
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, valid := otMakeFile(t, otCfg)
			otRewrite(t, path, tc.make(valid))
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, tc.want)
			otWantErr(t, otOpenErr(t, path, otCfg), path, tc.want)
		})
	}
}

func TestOpen_Truncated(t *testing.T) {
	for _, tc := range []struct {
		name string
		size func(n int64) int64
	}{
		{"by 1 byte", func(n int64) int64 { return n - 1 }},
		{"by a page", func(n int64) int64 { return n - pageSize }},
		{"to half", func(n int64) int64 { return n / 2 }},
		{"to the data offset", func(int64) int64 { return 12288 }},
		{"to 128 bytes", func(int64) int64 { return 128 }},
		{"to 127 bytes", func(int64) int64 { return 127 }},
		{"to 8 bytes", func(int64) int64 { return 8 }},
		{"to 1 byte", func(int64) int64 { return 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, valid := otMakeFile(t, otCfg)
			if err := os.Truncate(path, tc.size(int64(len(valid)))); err != nil {
				t.Fatal(err)
			}
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrCorrupt)
		})
	}
	t.Run("extended by a page", func(t *testing.T) {
		path, valid := otMakeFile(t, otCfg)
		if err := os.Truncate(path, int64(len(valid))+pageSize); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrCorrupt)
	})
}

// TestOpen_FlippedHeaderByte inverts one byte at a time at every offset of
// the fixed header and of the directory count.
func TestOpen_FlippedHeaderByte(t *testing.T) {
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
		t.Run(fmt.Sprintf("offset=%d", off), func(t *testing.T) {
			path, valid := otMakeFile(t, otCfg)
			otFlip(t, path, valid, off)
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, want)
		})
	}
}

func TestOpen_ErrChecksum(t *testing.T) {
	t.Run("header byte flipped", func(t *testing.T) {
		path, valid := otMakeFile(t, otCfg)
		otFlip(t, path, valid, offSeed)
		otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrChecksum)
	})
	t.Run("header checksum zeroed", func(t *testing.T) {
		path, _ := otMakeFile(t, otCfg)
		otWriteAt(t, path, offChecksum, make([]byte, 8))
		otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrChecksum)
	})
	for _, f := range []struct {
		name string
		off  int
	}{
		{"kind", entKind}, {"flags", entFlags}, {"offset", entOff}, {"size", entSize},
		{"rows", entParams}, {"width", entParams + 8}, {"param 7", entParams + 56},
		{"name", entName}, {"name end", entName + entNameSize - 1},
		{"checksum", entChecksum}, {"checksum end", entChecksum + 7},
	} {
		t.Run("directory entry "+f.name, func(t *testing.T) {
			path, valid := otMakeFile(t, otCfg)
			otFlip(t, path, valid, otDirOff+f.off)
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrChecksum)
		})
	}
}

func TestOpen_ErrVersion(t *testing.T) {
	for _, v := range []uint32{0, formatVersion - 1, formatVersion + 1, 1 << 24, math.MaxUint32} {
		for _, resum := range []bool{true, false} {
			t.Run(fmt.Sprintf("version=%d,resum=%v", v, resum), func(t *testing.T) {
				path, valid := otMakeFile(t, otCfg)
				b := bytes.Clone(valid)
				native.PutUint32(b[offVersion:], v)
				if resum {
					otResum(b)
				}
				otRewrite(t, path, b)
				otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrVersion)
			})
		}
	}
}

// TestOpen_ErrVersionEarlier: a file of version 1, written before probes
// were spread (column.go), is refused with ErrVersion and a message that
// names the file and says to recreate it, by open and by Inspect.
func TestOpen_ErrVersionEarlier(t *testing.T) {
	path, valid := otMakeFile(t, otCfg)
	b := bytes.Clone(valid)
	native.PutUint32(b[offVersion:], 1)
	otResum(b)
	otRewrite(t, path, b)
	err := otOpenErr(t, path, CountMinConfig{})
	otWantErr(t, err, path, ErrVersion)
	want := "sketch: open " + path + ": unknown format version: version 1 was written by an earlier version of this library, which placed keys in other counters and kept no liveness tokens; this build reads only version 2: recreate the file (remove it and open it again)"
	if err.Error() != want {
		t.Errorf("OpenCountMin(%s) error:\n%s\nwant:\n%s", path, err, want)
	}
	if _, err := Inspect(path); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "recreate the file") {
		t.Errorf("Inspect(%s) error = %v, want ErrVersion saying to recreate the file", path, err)
	}
}

// TestOpen_Structural changes fields of a valid file and recomputes the
// checksums, so that only the structural checks of decodeHeader stand
// between the file and a mapping that would be indexed out of bounds.
func TestOpen_Structural(t *testing.T) {
	_, tmpl := otMakeFile(t, otCfg)
	fileSize := native.Uint64(tmpl[offFileSize:])
	dataOff := native.Uint64(tmpl[offDataOff:])
	eOff := native.Uint64(tmpl[otDirOff+entOff:])
	eSize := native.Uint64(tmpl[otDirOff+entSize:])
	if fileSize != uint64(len(tmpl)) || eOff != dataOff || eSize != countMinBytes(1, 8) {
		t.Fatalf("unexpected layout: file %d bytes (%d), data at %d, entry at %d+%d", fileSize, len(tmpl), dataOff, eOff, eSize)
	}
	h32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { native.PutUint32(b[off:], v); return b }
	}
	h64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { native.PutUint64(b[off:], v); return b }
	}
	e32 := func(off int, v uint32) func([]byte) []byte { return h32(otDirOff+off, v) }
	e64 := func(off int, v uint64) func([]byte) []byte { return h64(otDirOff+off, v) }
	all := func(fs ...func([]byte) []byte) func([]byte) []byte {
		return func(b []byte) []byte {
			for _, f := range fs {
				b = f(b)
			}
			return b
		}
	}
	shrink := func(n uint64) func([]byte) []byte {
		return func(b []byte) []byte { native.PutUint64(b[offFileSize:], n); return b[:n] }
	}
	const max64 = math.MaxUint64
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want error // ErrCorrupt unless set
	}{
		{"fileSize+1", h64(offFileSize, fileSize+1), nil},
		{"fileSize+4096", h64(offFileSize, fileSize+4096), nil},
		{"fileSize-4096", h64(offFileSize, fileSize-4096), nil},
		{"fileSize=0", h64(offFileSize, 0), nil},
		{"fileSize=max", h64(offFileSize, max64), nil},
		{"fileSize and file shrunk to 16384", shrink(16384), nil},
		{"fileSize and file shrunk to the data offset", shrink(dataOff), nil},
		{"fileSize and file shrunk to 8192", shrink(8192), nil},
		{"fileSize and file shrunk to 128", shrink(128), nil},
		{"hdrSize=0", h32(offHdrSize, 0), nil},
		{"hdrSize=256", h32(offHdrSize, 256), nil},
		{"flags=1", h64(offFlags, 1), nil},
		{"lockOff=0", h32(offLockOff, 0), nil},
		{"lockSize=4096", h32(offLockSize, 4096), nil},
		{"slotsOff=0", h32(offSlotsOff, 0), nil},
		{"slots=0", h32(offSlotsN, 0), nil},
		{"slots=2048", h32(offSlotsN, 2048), nil},
		{"slots=65537", h32(offSlotsN, maxSlots+1), nil},
		{"slots=max", h32(offSlotsN, math.MaxUint32), nil},
		// A consistent relayout with one reader slot moves the directory
		// onto the old slots, which are zero: the entry's checksum fails.
		{"slots=1 with dirOff and dataOff to match", all(h32(offSlotsN, 1), h32(offDirOff, slotsOff+slotSize+tokenSize), h64(offDataOff, pageSize)), ErrChecksum},
		{"dirOff=0", h32(offDirOff, 0), nil},
		{"dirOff+64", h32(offDirOff, otDirOff+64), nil},
		{"dirOff=max", h32(offDirOff, math.MaxUint32), nil},
		{"dirCap=0", h32(offDirCap, 0), nil},
		{"dirCap=33", h32(offDirCap, 33), nil},
		{"dirCap=4097", h32(offDirCap, maxDirEntries+1), nil},
		{"dirCap=max", h32(offDirCap, math.MaxUint32), nil},
		{"dataOff=0", h64(offDataOff, 0), nil},
		{"dataOff-4096", h64(offDataOff, dataOff-4096), nil},
		{"dataOff+4096", h64(offDataOff, dataOff+4096), nil},
		{"dataOff=fileSize+4096", h64(offDataOff, fileSize+4096), nil},
		{"dataOff=max", h64(offDataOff, max64), nil},
		{"reserved byte", func(b []byte) []byte { b[offReserved+5] = 1; return b }, nil},
		{"last reserved byte", func(b []byte) []byte { b[offChecksum-1] = 0x80; return b }, nil},
		{"dirCount=2", h32(offDirCount, 2), nil},
		{"dirCount=max", h32(offDirCount, math.MaxUint32), nil},

		{"entry.off=0", e64(entOff, 0), nil},
		{"entry.off=64", e64(entOff, 64), nil},
		{"entry.off=dataOff-64", e64(entOff, dataOff-64), nil},
		{"entry.off=dataOff+8", e64(entOff, dataOff+8), nil},
		{"entry.off=fileSize-64", e64(entOff, fileSize-64), nil},
		{"entry.off=fileSize", e64(entOff, fileSize), nil},
		{"entry.off=fileSize+64", e64(entOff, fileSize+64), nil},
		{"entry.off=2^63", e64(entOff, 1<<63), nil},
		{"entry.off=max-63", e64(entOff, max64-63), nil},
		{"entry.off=max", e64(entOff, max64), nil},
		{"entry.size=0", e64(entSize, 0), nil},
		{"entry.size-8", e64(entSize, eSize-8), nil},
		{"entry.size+8", e64(entSize, eSize+8), nil},
		{"entry.size+64", e64(entSize, eSize+64), nil},
		{"entry.size=fileSize", e64(entSize, fileSize), nil},
		{"entry.size=fileSize+1", e64(entSize, fileSize+1), nil},
		{"entry.size=max", e64(entSize, max64), nil},
		{"entry.off=max-63,size=64", all(e64(entOff, max64-63), e64(entSize, 64)), nil},
		{"entry.kind=0", e32(entKind, 0), nil},
		{"entry.kind=2", e32(entKind, 2), nil},
		{"entry.flags=1", e32(entFlags, 1), nil},
		{"rows=0", e64(entParams, 0), nil},
		{"rows=2", e64(entParams, 2), nil},
		{"rows=64", e64(entParams, 64), nil},
		{"rows=65", e64(entParams, maxRows+1), nil},
		{"rows=2^61", e64(entParams, 1<<61), nil},
		{"rows=max", e64(entParams, max64), nil},
		{"width=0", e64(entParams+8, 0), nil},
		{"width=3", e64(entParams+8, 3), nil},
		{"width=4", e64(entParams+8, 4), nil},
		{"width=16", e64(entParams+8, 16), nil},
		{"width=2^40", e64(entParams+8, maxWidth), nil},
		{"width=2^41", e64(entParams+8, maxWidth<<1), nil},
		{"width=2^63", e64(entParams+8, 1<<63), nil},
		{"width=max", e64(entParams+8, max64), nil},
		// A shape whose size agrees with it but runs past the file's end.
		{"width=1024 with size to match", all(e64(entParams+8, 1024), e64(entSize, countMinBytes(1, 1024))), nil},
		{"rows=64,width=2^40 with size to match", all(e64(entParams, 64), e64(entParams+8, maxWidth), e64(entSize, countMinBytes(64, maxWidth))), nil},
		{"param 2=1", e64(entParams+16, 1), nil},
		{"param 7=1", e64(entParams+56, 1), nil},
	} {
		want := tc.want
		if want == nil {
			want = ErrCorrupt
		}
		t.Run(tc.name, func(t *testing.T) {
			path, valid := otMakeFile(t, otCfg)
			b := tc.edit(bytes.Clone(valid))
			otResum(b)
			otRewrite(t, path, b)
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, want)
		})
	}
	// The directory count is mutable and not checksummed. A standalone
	// sketch file with no entry is corrupt.
	t.Run("dirCount=0", func(t *testing.T) {
		path, _ := otMakeFile(t, otCfg)
		otWriteAt(t, path, offDirCount, make([]byte, 4))
		err := otOpenErr(t, path, CountMinConfig{})
		if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrIncompatible) {
			t.Fatalf("error = %v, want ErrCorrupt", err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the file", err)
		}
	})
}

func TestOpen_BadMagic(t *testing.T) {
	for _, m := range []uint64{1, fileMagic + 1, fileMagic ^ 1<<63, otRotate(fileMagic), math.MaxUint64} {
		t.Run(fmt.Sprintf("magic=%#016x", m), func(t *testing.T) {
			path, _ := otMakeFile(t, otCfg)
			var w [8]byte
			native.PutUint64(w[:], m)
			otWriteAt(t, path, offMagic, w[:])
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrCorrupt)
		})
	}
}

func otRotate(v uint64) uint64 { return v<<8 | v>>56 }

func TestOpen_ErrByteOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
	}{
		{"magic byte-swapped", func(b []byte) []byte {
			otConvertField(b[offMagic:], 8, native, otOther)
			return b
		}},
		{"every header field byte-swapped", func(b []byte) []byte { otSwapHeader(b); return b }},
		{"whole file in the other order", func(b []byte) []byte { return otConvert(b, native, otOther) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, valid := otMakeFile(t, otCfg)
			otRewrite(t, path, tc.edit(bytes.Clone(valid)))
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrByteOrder)
			otWantErr(t, otOpenErr(t, path, otCfg), path, ErrByteOrder)
		})
	}
}

// TestOpen_OtherByteOrderFile builds the file a machine of the other byte
// order would have written (every header, entry and counter word in that
// order, checksums recomputed in it) and checks that it is refused.
func TestOpen_OtherByteOrderFile(t *testing.T) {
	path, valid := otMakeFile(t, otCfg)
	foreign := otConvert(valid, native, otOther)
	if otOther.Uint64(foreign[offMagic:]) != fileMagic || otOther.Uint32(foreign[offVersion:]) != formatVersion ||
		otOther.Uint64(foreign[offChecksum:]) != xxh3.Hash(foreign[offVersion:offChecksum]) {
		t.Fatal("the converted file is not a valid file in the other byte order")
	}
	if back := otConvert(foreign, otOther, native); !bytes.Equal(back, valid) {
		t.Fatal("converting the file back does not give the original")
	}
	otRewrite(t, path, foreign)
	otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrByteOrder)
	otWantErr(t, otOpenErr(t, path, otCfg), path, ErrByteOrder)
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, foreign) {
		t.Errorf("a refused file was modified (%v)", err)
	}
}

func TestOpen_ErrInterruptedCreate(t *testing.T) {
	_, tmpl := otMakeFile(t, otCfg)
	need := len(tmpl)
	for _, tc := range []struct {
		name string
		make func(valid []byte) []byte
	}{
		{"valid file with a zero magic", func(v []byte) []byte {
			b := bytes.Clone(v)
			clear(b[:8])
			return b
		}},
		{"half of the header written", func(v []byte) []byte {
			b := make([]byte, need)
			copy(b[offVersion:64], v[offVersion:64])
			return b
		}},
		{"header without magic, no directory", func(v []byte) []byte {
			b := make([]byte, need)
			copy(b[offVersion:offDirCount], v[offVersion:offDirCount])
			return b
		}},
		{"only the directory entry written", func(v []byte) []byte {
			b := make([]byte, need)
			copy(b[otDirOff:otDirOff+entrySize], v[otDirOff:])
			return b
		}},
		{"one nonzero byte at the end", func([]byte) []byte {
			b := make([]byte, need)
			b[need-1] = 1
			return b
		}},
		{"all zero, 128 bytes", func([]byte) []byte { return make([]byte, headerSize) }},
		{"all zero, 4096 bytes", func([]byte) []byte { return make([]byte, 4096) }},
		{"all zero, a page short", func([]byte) []byte { return make([]byte, need-pageSize) }},
		{"all zero, a page more", func([]byte) []byte { return make([]byte, need+pageSize) }},
		{"all zero, 1 byte more", func([]byte) []byte { return make([]byte, need+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, valid := otMakeFile(t, otCfg)
			b := tc.make(valid)
			otRewrite(t, path, b)
			otWantErr(t, otOpenErr(t, path, otCfg), path, ErrInterruptedCreate)
			otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrInterruptedCreate)
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, b) {
				t.Errorf("a refused file was modified (%v)", err)
			}
		})
	}
	// A file shorter than a header is never what an interrupted create
	// leaves (the creator sizes the file in one fallocate), so it is plain
	// ErrCorrupt even when it is all zero.
	t.Run("all zero, 100 bytes", func(t *testing.T) {
		path, _ := otMakeFile(t, otCfg)
		otRewrite(t, path, make([]byte, 100))
		otWantErr(t, otOpenErr(t, path, otCfg), path, ErrCorrupt)
	})
}

// TestOpen_AllZero checks that an all-zero file of exactly the size the
// requested shape needs, which a creator killed between sizing the file and
// writing the header leaves, is initialised.
func TestOpen_AllZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  CountMinConfig
	}{
		{"explicit shape", otCfg},
		{"default shape", CountMinConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tmpl := otMakeFile(t, tc.cfg)
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, make([]byte, len(tmpl)), 0o644); err != nil {
				t.Fatal(err)
			}
			c := mustOpen(t, path, tc.cfg, WithMode(0o640))
			if m := otMode(t, path); m != 0o640 {
				t.Errorf("mode of the adopted file = %v, want %v", m, fs.FileMode(0o640))
			}
			want := native.Uint64(tmpl[otDirOff+entParams:])
			if c.Config().Rows != int(want) {
				t.Errorf("Rows() = %d, want %d", c.Config().Rows, want)
			}
			if tc.cfg.Seed != 0 && c.Seed() != tc.cfg.Seed {
				t.Errorf("Seed = %#x, want %#x", c.Seed(), tc.cfg.Seed)
			}
			otWorks(t, c)
			c.AddString("kept")
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			d := mustOpen(t, path, CountMinConfig{})
			if got := d.EstimateString("kept"); got < 1 {
				t.Errorf("reopened sketch estimates %d for a counted key", got)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != int64(len(tmpl)) {
				t.Errorf("size after adoption = %v (%v), want %d", fi.Size(), err, len(tmpl))
			}
		})
	}
}

func TestOpen_EmptyFile(t *testing.T) {
	path := tempPath(t, "cms")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, path, otCfg, WithMode(0o660))
	if m := otMode(t, path); m != 0o660 {
		t.Errorf("mode of the adopted empty file = %v, want %v", m, fs.FileMode(0o660))
	}
	if c.Config().Rows != otCfg.Rows || c.Config().Width != otCfg.Width {
		t.Errorf("shape = %d x %d, want %d x %d", c.Config().Rows, c.Config().Width, otCfg.Rows, otCfg.Width)
	}
	otWorks(t, c)
}

func TestOpen_Directory(t *testing.T) {
	path := tempPath(t, "cms")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrCorrupt)
	otWantErr(t, otOpenErr(t, path, otCfg), path, ErrCorrupt)
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
		t.Errorf("the directory at the path was disturbed: %v", err)
	}
}

func TestOpen_ErrSymlink(t *testing.T) {
	t.Run("to a valid sketch", func(t *testing.T) {
		target, valid := otMakeFile(t, otCfg)
		before, err := os.Stat(target)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(filepath.Dir(target), "link")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, CountMinConfig{}), path, ErrSymlink)
		otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o660)), path, ErrSymlink)
		after, err := os.Stat(target)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(target); !bytes.Equal(b, valid) || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("the symlink's target was modified")
		}
	})
	t.Run("to an empty file", func(t *testing.T) {
		dir := t.TempDir()
		target, path := filepath.Join(dir, "target"), filepath.Join(dir, "link")
		if err := os.WriteFile(target, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o600)), path, ErrSymlink)
		if fi, err := os.Stat(target); err != nil || fi.Size() != 0 || fi.Mode() != 0o644 {
			t.Errorf("the symlink's empty target was adopted: %v, %v", fi, err)
		}
	})
	t.Run("to a nonexistent target", func(t *testing.T) {
		dir := t.TempDir()
		target, path := filepath.Join(dir, "missing"), filepath.Join(dir, "link")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, otCfg), path, ErrSymlink)
		if _, err := os.Lstat(target); !os.IsNotExist(err) {
			t.Errorf("the symlink's target was created: %v", err)
		}
	})
}

// otOpenBounded opens path in a goroutine and fails t if that takes more
// than 10s; a sketch that opens is closed.
func otOpenBounded(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		c, err := OpenCountMin(Path(path), otCfg, WithWaitTimeout(500*time.Millisecond))
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("OpenCountMin(%s) hangs", path)
		return nil
	}
}

func TestOpen_FIFO(t *testing.T) {
	path := tempPath(t, "cms")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	otWantErr(t, otOpenBounded(t, path), path, ErrCorrupt)
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO at the path was disturbed: %v, %v", fi, err)
	}
}

// TestOpen_SpecialFile puts other kinds of file at the path: each must
// fail, without hanging, with an error naming the path.
func TestOpen_SpecialFile(t *testing.T) {
	t.Run("character device", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to mknod")
		}
		path := tempPath(t, "cms")
		if err := unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); err != nil { // /dev/null
			t.Skipf("mknod: %v", err)
		}
		otWantErr(t, otOpenBounded(t, path), path, ErrCorrupt)
	})
	t.Run("unix socket", func(t *testing.T) {
		dir, err := os.MkdirTemp("", "ot") // a short path: sun_path holds 108 bytes
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		path := filepath.Join(dir, "s")
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Skipf("socket: %v", err)
		}
		defer unix.Close(fd)
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			t.Skipf("bind: %v", err)
		}
		err = otOpenBounded(t, path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("OpenCountMin on a socket = %v, want an error naming the path", err)
		}
		// open(2) of a socket fails with ENXIO before any type check.
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, unix.ENXIO) {
			t.Errorf("OpenCountMin on a socket = %v, want ErrCorrupt wrapping ENXIO", err)
		}
	})
}

func TestOpen_ErrNotOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a file to another user")
	}
	const nobody = 65534
	_, tmpl := otMakeFile(t, otCfg)
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty file", nil, ErrNotOwner},
		{"all-zero file of the requested size", make([]byte, len(tmpl)), ErrNotOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, nobody, nobody); err != nil {
				t.Fatal(err)
			}
			otWantErr(t, otOpenErr(t, path, otCfg, WithMode(0o600)), path, tc.want)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Size() != int64(len(tc.data)) || fi.Mode() != 0o644 || st.Uid != nobody {
				t.Errorf("the other user's file was modified: size %d, mode %v, uid %d", fi.Size(), fi.Mode(), st.Uid)
			}
		})
	}
	t.Run("empty file of a trusted user", func(t *testing.T) {
		// WithOwner trusts a user's sketches, but only the caller's own
		// empty file is adopted.
		path := tempPath(t, "cms")
		if err := os.WriteFile(path, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		otWantErr(t, otOpenErr(t, path, otCfg, WithOwner(nobody)), path, ErrNotOwner)
	})
}

func TestOpen_ErrIncompatible(t *testing.T) {
	created := CountMinConfig{Rows: 2, Width: 64, Seed: 5}
	byRate := CountMinConfig{ErrorRate: 0.01} // 5 x 512
	for _, tc := range []struct {
		name         string
		create, open CountMinConfig
		wantIncompat bool
		rows, width  int
	}{
		{"other rows", created, CountMinConfig{Rows: 3, Width: 64}, true, 0, 0},
		{"other width", created, CountMinConfig{Rows: 2, Width: 128}, true, 0, 0},
		{"error rate against a shape", created, CountMinConfig{ErrorRate: 0.001}, true, 0, 0},
		{"confidence against a shape", created, CountMinConfig{Confidence: 0.5}, true, 0, 0},
		{"other seed", created, CountMinConfig{Seed: 6}, true, 0, 0},
		{"same shape, other seed", created, CountMinConfig{Rows: 2, Width: 64, Seed: 6}, true, 0, 0},
		{"other error rate", byRate, CountMinConfig{ErrorRate: 0.001}, true, 0, 0},
		{"other confidence", byRate, CountMinConfig{ErrorRate: 0.01, Confidence: 0.9}, true, 0, 0},
		{"zero config", created, CountMinConfig{}, false, 2, 64},
		{"same seed only", created, CountMinConfig{Seed: 5}, false, 2, 64},
		{"same shape", created, CountMinConfig{Rows: 2, Width: 64}, false, 2, 64},
		{"same shape after rounding", created, CountMinConfig{Rows: 2, Width: 33}, false, 2, 64},
		{"same error rate", byRate, CountMinConfig{ErrorRate: 0.01}, false, 5, 512},
		{"zero config on a sized file", byRate, CountMinConfig{}, false, 5, 512},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, valid := otMakeFile(t, tc.create)
			if !tc.wantIncompat {
				c := mustOpen(t, path, tc.open)
				if c.Config().Rows != tc.rows || c.Config().Width != tc.width {
					t.Errorf("shape = %d x %d, want %d x %d", c.Config().Rows, c.Config().Width, tc.rows, tc.width)
				}
				if got := c.EstimateString("a"); got < 2 {
					t.Errorf("EstimateString(a) = %d, want >= 2 (counted before)", got)
				}
				return
			}
			otWantErr(t, otOpenErr(t, path, tc.open), path, ErrIncompatible)
			if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, valid) {
				t.Errorf("an incompatible attach modified the file (%v)", err)
			}
		})
	}
}

// TestOpen_Mode runs with a umask of 077: the mode a file is created or
// adopted with must be exactly the one asked for. The umask is
// process-wide, so none of this runs in parallel.
func TestOpen_Mode(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })

	for _, tc := range []struct {
		name string
		opts []Option
		want fs.FileMode
	}{
		{"default", nil, 0o600},
		{"0660", []Option{WithMode(0o660)}, 0o660},
		{"0640", []Option{WithMode(0o640)}, 0o640},
		{"0644", []Option{WithMode(0o644)}, 0o644},
		{"0775", []Option{WithMode(0o775)}, 0o775},
		{"last option wins", []Option{WithMode(0o644), WithMode(0o660)}, 0o660},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			c := mustOpen(t, path, otCfg, tc.opts...)
			if m := otMode(t, path); m != tc.want {
				t.Errorf("mode = %v, want %v", m, tc.want)
			}
			otWorks(t, c)
		})
		t.Run("adopt empty "+tc.name, func(t *testing.T) {
			path := tempPath(t, "cms")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o604); err != nil {
				t.Fatal(err)
			}
			mustOpen(t, path, otCfg, tc.opts...)
			if m := otMode(t, path); m != tc.want {
				t.Errorf("mode = %v, want %v", m, tc.want)
			}
		})
	}
	for _, m := range []fs.FileMode{fs.ModeDir | 0o600, fs.ModeSetuid | 0o600, fs.ModeSticky | 0o600, 0o4600, 0o1000} {
		t.Run(fmt.Sprintf("invalid %v", m), func(t *testing.T) {
			path := tempPath(t, "cms")
			_, err := OpenCountMin(Path(path), otCfg, WithMode(m))
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("WithMode(%v) error = %v, want ErrInvalidConfig", m, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("a rejected mode left a file behind: %v", err)
			}
		})
	}
	t.Run("existing file keeps its mode", func(t *testing.T) {
		path, _ := otMakeFile(t, otCfg, WithMode(0o640))
		c := mustOpen(t, path, otCfg, WithMode(0o664))
		if m := otMode(t, path); m != 0o640 {
			t.Errorf("mode after attaching with WithMode(0664) = %v, want 0640", m)
		}
		otWorks(t, c)
	})
}

// TestOpen_FullTmpfs creates sketches on a 1 MiB tmpfs: a create that does
// not fit must fail up front with ErrNoSpace and leave nothing behind.
func TestOpen_FullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a 1 MiB tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	wantNoSpace := func(t *testing.T, path string, cfg CountMinConfig) {
		t.Helper()
		err := otOpenErr(t, path, cfg)
		otWantErr(t, err, path, ErrNoSpace)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("error %v does not match syscall.ENOSPC", err)
		}
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Errorf("a failed create left a file at %s: %v", path, err)
		}
	}
	t.Run("2 MiB sketch", func(t *testing.T) {
		wantNoSpace(t, filepath.Join(dir, "big"), CountMinConfig{Rows: 4, Width: 1 << 16})
	})
	t.Run("small sketch after a failed create", func(t *testing.T) {
		path := filepath.Join(dir, "small")
		c, err := OpenCountMin(Path(path), otCfg)
		if err != nil {
			t.Fatalf("small sketch on the tmpfs: %v", err)
		}
		otWorks(t, c)
		if err := c.Sync(); err != nil {
			t.Errorf("Sync() = %v", err)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
	})
	t.Run("filled tmpfs", func(t *testing.T) {
		fill := filepath.Join(dir, "fill")
		f, err := os.Create(fill)
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(fill)
		chunk := make([]byte, 64<<10)
		for i := range chunk {
			chunk[i] = 0xa5
		}
		for i := 0; ; i++ {
			if i > 64 {
				f.Close()
				t.Fatal("wrote 4 MiB to a 1 MiB tmpfs without ENOSPC")
			}
			if _, err = f.Write(chunk); err != nil {
				break
			}
		}
		f.Close()
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("filling the tmpfs: %v, want ENOSPC", err)
		}
		wantNoSpace(t, filepath.Join(dir, "small"), otCfg)
		wantNoSpace(t, filepath.Join(dir, "default"), CountMinConfig{})
	})
}

func TestOpen_ErrTimeout(t *testing.T) {
	path := tempPath(t, "cms")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	const wait = 200 * time.Millisecond
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- otOpenErr(t, path, otCfg, WithWaitTimeout(wait)) }()
	select {
	case err := <-done:
		elapsed := time.Since(start)
		otWantErr(t, err, path, ErrTimeout)
		if elapsed < wait || elapsed > 5*time.Second {
			t.Errorf("ErrTimeout after %v, want about %v", elapsed, wait)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenCountMin waits past its timeout")
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the locked file was modified: %v, %v", fi, err)
	}
	// Once the lock is gone the empty file is adopted.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, path, otCfg, WithWaitTimeout(wait))
	otWorks(t, c)
}

func TestOpen_PathAndSync(t *testing.T) {
	path := tempPath(t, "cms")
	c := mustOpen(t, path, otCfg)
	if got := c.Path(); got != path {
		t.Errorf("Path() = %q, want %q", got, path)
	}
	c.AddN([]byte("synced"), 7)
	if err := c.Sync(); err != nil {
		t.Fatalf("Sync() = %v", err)
	}
	d := mustOpen(t, path, CountMinConfig{})
	if got := d.Estimate([]byte("synced")); got != 7 {
		t.Errorf("a second handle estimates %d, want 7", got)
	}
	if got := d.Path(); got != path {
		t.Errorf("second handle's Path() = %q, want %q", got, path)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), path) {
		t.Errorf("Sync after Close = %v, want ErrClosed naming the file", err)
	}
}

func TestOpen_Unlink(t *testing.T) {
	path := tempPath(t, "cms")
	c := mustOpen(t, path, otCfg)
	c.AddN([]byte("k"), 5)
	if err := c.Unlink(); err != nil {
		t.Fatalf("Unlink() = %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("file still there after Unlink: %v", err)
	}
	if got, err := c.AddN([]byte("k"), 1); err != nil || got != 6 {
		t.Errorf("AddN after Unlink = %d, %v, want 6", got, err)
	}
	otWorks(t, c)
	if err := c.Sync(); err != nil {
		t.Errorf("Sync after Unlink = %v", err)
	}
	if err := c.Unlink(); err != nil {
		t.Errorf("second Unlink() = %v, want nil", err)
	}
	// A new open of the path creates a new, empty sketch.
	d := mustOpen(t, path, otCfg)
	if got := d.Estimate([]byte("k")); got != 0 {
		t.Errorf("new sketch at the unlinked path estimates %d, want 0", got)
	}
	if got := c.Estimate([]byte("k")); got != 6 {
		t.Errorf("unlinked sketch estimates %d after a new create, want 6", got)
	}
	// Unlink through the old handle must leave the new file at the path.
	if err := c.Unlink(); err != nil {
		t.Errorf("Unlink through the old handle after a new create = %v, want nil", err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("Unlink through the old handle removed the new file at the path: %v", err)
	}
}

// TestOpen_EmptyPath: an empty path is an invalid argument, said as such,
// on every route, not a missing file with no name.
func TestOpen_EmptyPath(t *testing.T) {
	routes := map[string]func() error{
		"OpenCountMin": func() error { _, err := OpenCountMin(Path(""), otCfg); return err },
		"ReadOnly":     func() error { _, err := OpenCountMin(Path(""), otCfg, ReadOnly()); return err },
		"OpenBloom":    func() error { _, err := OpenBloom(Path(""), BloomConfig{Capacity: 100}); return err },
		"OpenArena":    func() error { _, err := OpenArena(Path(""), 1<<20); return err },
		"Inspect":      func() error { _, err := Inspect(""); return err },
	}
	for name, open := range routes {
		t.Run(name, func(t *testing.T) {
			err := open()
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "path is empty") {
				t.Errorf("%s(\"\") = %v, want ErrInvalidArgument saying the path is empty", name, err)
			}
		})
	}
}

// TestOpen_ShortFile: a sketch file cut to fewer bytes than a magic gets
// one answer, ErrCorrupt naming its size, from a read-write open, a
// read-only one and Inspect; never the advice for an interrupted create.
func TestOpen_ShortFile(t *testing.T) {
	_, tmpl := otMakeFile(t, otCfg)
	for n := 1; n <= 7; n++ {
		path := tempPath(t, "cms")
		if err := os.WriteFile(path, tmpl[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%d bytes is shorter than a header", n)
		routes := map[string]func() error{
			"read-write": func() error { return otOpenErr(t, path, otCfg) },
			"read-only":  func() error { return otOpenErr(t, path, otCfg, ReadOnly()) },
			"Inspect":    func() error { _, err := Inspect(path); return err },
		}
		for name, open := range routes {
			err := open()
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrInterruptedCreate) || !strings.Contains(err.Error(), want) {
				t.Errorf("%d bytes, %s: error = %v, want ErrCorrupt saying %q", n, name, err, want)
			}
		}
	}
}

// TestOpen_OutOfInodes: a filesystem out of inodes refuses a create with
// ErrNoSpace too, as one out of blocks does, and nothing is left behind.
func TestOpen_OutOfInodes(t *testing.T) {
	dir := mountTmpfs(t, "4m,nr_inodes=4")
	for i := 0; ; i++ { // use every inode the mount has left
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprint("f", i)), nil, 0o600); err != nil {
			break
		}
	}
	before, _ := os.ReadDir(dir)
	for name, open := range map[string]func(string) error{
		"count-min": func(p string) error { _, err := OpenCountMin(Path(p), CountMinConfig{Rows: 1, Width: 64}); return err },
		"bloom":     func(p string) error { _, err := OpenBloom(Path(p), BloomConfig{Capacity: 10}); return err },
		"arena":     func(p string) error { _, err := OpenArena(Path(p), 64<<10); return err },
	} {
		p := filepath.Join(dir, name)
		if err := open(p); !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s on a filesystem out of inodes: %v, want ErrNoSpace naming the file", name, err)
		}
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("the refused creates left %d entries behind", len(after)-len(before))
	}
}
