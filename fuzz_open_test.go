//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

// FuzzOpen is the one fuzz target of the format: whatever bytes a file
// holds, every route that opens it (each kind's open and the arena's,
// read-write and read-only, with WithoutCreate or not, with another hard
// link or not) either refuses it with a classified error that names the
// file, or returns a handle whose every call returns: no panic, no fault,
// no hang. The corpus holds a valid file of every kind and layout (both
// windows turned by Rotate and by the clock, an arena holding every kind,
// a frozen filter, distinct counts of both profiles) and mutations of
// each.
//
// how picks the route: bit 0 WithoutCreate, bit 1 a second hard link, bit
// 2 WithReadOnly, the bits above the opener (fuzzOpeners, modulo their
// number). With resum set, the target recomputes the header's and the
// directory entries' checksums before writing the file, so that mutations
// reach the structural checks instead of stopping at ErrChecksum.
func FuzzOpen(f *testing.F) {
	// Each seed goes to its file's own opener by one route, the routes
	// taken in turn, and every third also to another opener: enough to
	// reach every route and refusal, few enough for the seeds to run as
	// a test in seconds.
	n := 0
	for _, valid := range fuzzValidFiles(f) {
		add := func(b []byte, resum bool) {
			n++
			f.Add(b, resum, byte(valid.opener)<<3|byte(n%8))
			if n%3 == 0 {
				other := (valid.opener + 1 + n/3%(len(fuzzOpeners)-1)) % len(fuzzOpeners)
				f.Add(b, resum, byte(other)<<3|byte(n/3%8))
			}
		}
		for _, edit := range fuzzEdits {
			b := edit(bytes.Clone(valid.data))
			add(b, false)
			add(b, true)
		}
		if valid.arena {
			for _, edit := range fuzzArenaEdits {
				b := bytes.Clone(valid.data)
				edit(b)
				add(b, true)
			}
		}
	}
	f.Add([]byte{}, false, byte(0))
	f.Add(make([]byte, headerSize), false, byte(0))

	f.Fuzz(func(t *testing.T, data []byte, resum bool, how byte) {
		if resum {
			data = otResumAll(bytes.Clone(data))
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "sketch")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := []Option{WithWaitTimeout(time.Second)}
		if how&1 != 0 {
			opts = append(opts, WithoutCreate())
		}
		if how&2 != 0 {
			if err := os.Link(path, filepath.Join(dir, "other")); err != nil {
				t.Fatal(err)
			}
		}
		readOnly := how&4 != 0
		if readOnly {
			opts = append(opts, WithReadOnly())
		}
		op := fuzzOpeners[int(how>>3)%len(fuzzOpeners)]
		h, err := op.open(path, opts)
		if err != nil {
			if !fuzzClassified(err) {
				t.Errorf("%s: unclassified error: %v", op.name, err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("%s: error %q does not name the file", op.name, err)
			}
			return
		}
		defer h.Close()
		if how&2 != 0 && !readOnly && (len(data) < 8 || native.Uint64(data) == 0) {
			t.Errorf("%s: a file with another link and no magic was initialised", op.name)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic using an opened handle: %v\n%s", op.name, r, debug.Stack())
				}
			}()
			op.exercise(t, h)
		}()
		select {
		case <-done:
		case <-time.After(patience):
			t.Fatalf("%s: calls on an opened handle did not return within %v", op.name, patience)
		}
	})
}

// fuzzClassified reports whether an open's error is one a caller can act
// on: a damaged or foreign file, a mismatch, a refusal by the file's state
// or place.
func fuzzClassified(err error) bool {
	for _, want := range []error{ErrCorrupt, ErrIncompatible, ErrNoSpace, ErrHardLinked, ErrFrozen, ErrInvalidConfig, ErrTimeout, ErrSparse} {
		if errors.Is(err, want) {
			return true
		}
	}
	return false
}

// A fuzzOpener is one route to a handle, and the calls made on what it
// opens. The calls' errors are not judged (a mutated file may be frozen,
// or torn): only that they return.
type fuzzOpener struct {
	name     string
	open     func(path string, opts []Option) (interface{ Close() error }, error)
	exercise func(t *testing.T, h any)
}

// fuzzOpeners are every kind's opener with the zero config (testKinds),
// and the arena's.
var fuzzOpeners = append(fuzzKindOpeners(), fuzzOpener{"OpenArena",
	func(p string, o []Option) (interface{ Close() error }, error) {
		return OpenArena(Path(p), ArenaConfig{}, o...)
	},
	func(t *testing.T, h any) { fuzzArena(t, h.(*Arena)) }})

func fuzzKindOpeners() []fuzzOpener {
	var ops []fuzzOpener
	for _, k := range testKinds {
		ops = append(ops, fuzzOpener{"Open" + k.name,
			func(p string, o []Option) (interface{ Close() error }, error) { return k.openZero(Path(p), o...) },
			func(t *testing.T, h any) { k.exercise(t, h.(testStructure)) }})
	}
	return ops
}

// fuzzOpenerOf is the index in fuzzOpeners of the opener named name.
func fuzzOpenerOf(name string) int {
	for i, op := range fuzzOpeners {
		if op.name == name {
			return i
		}
	}
	panic("no fuzz opener " + name)
}

// fuzzArena opens every listed structure by its kind, with the config the
// listing gives, and creates one more.
func fuzzArena(t *testing.T, a *Arena) {
	a.Stats()
	for _, e := range a.List() {
		if k := testKindFor(e.Kind); k != nil {
			if s, err := k.openZero(a.Place(e.Name)); err == nil {
				k.exercise(t, s)
				s.Close()
			}
		}
	}
	if c, err := OpenCountMin(a.Place("fuzz-new"), CountMinConfig{Rows: 1, Width: 8}); err == nil {
		c.AddString("y")
		c.Close()
	}
}

// fuzzValid is a valid file of the corpus.
type fuzzValid struct {
	data   []byte
	opener int // its kind's, in fuzzOpeners
	arena  bool
}

// fuzzValidFiles makes a small valid file of every kind and layout, with
// adds in it.
func fuzzValidFiles(t testing.TB) []fuzzValid {
	t.Helper()
	dir := t.TempDir()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	must := func(err error) {
		if err != nil {
			t.Helper()
			t.Fatal(err)
		}
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	var out []fuzzValid

	c, err := OpenCountMin(Path(p("cms")), CountMinConfig{Rows: 2, Width: 64, Seed: 3})
	must(err)
	c.AddString("k")
	c.Close()
	out = append(out, fuzzValid{data: read("cms"), opener: fuzzOpenerOf("OpenCountMin")})

	// With a candidate table holding keys, one longer than its slot.
	ct, err := OpenCountMin(Path(p("cmstop")), CountMinConfig{Rows: 2, Width: 64, Candidates: 8, CandidateKeyBytes: 8, Seed: 3})
	must(err)
	for _, k := range []string{"k", "k", "key-longer-than-8"} {
		ct.AddString(k)
	}
	ct.Close()
	out = append(out, fuzzValid{data: read("cmstop"), opener: fuzzOpenerOf("OpenCountMin")})

	b, err := OpenBloom(Path(p("bloom")), BloomConfig{Capacity: 100, Seed: 3})
	must(err)
	b.AddString("k")
	b.Close()
	out = append(out, fuzzValid{data: read("bloom"), opener: fuzzOpenerOf("OpenBloom")})

	fb, err := OpenBloom(Path(p("frozen")), BloomConfig{Capacity: 100, Seed: 3})
	must(err)
	fb.AddString("k")
	must(fb.Freeze())
	fb.Close()
	out = append(out, fuzzValid{data: read("frozen"), opener: fuzzOpenerOf("OpenBloom")})

	cb, err := OpenCountingBloom(Path(p("cbf")), CountingBloomConfig{Capacity: 10, Seed: 3})
	must(err)
	cb.AddString("k")
	cb.Close()
	out = append(out, fuzzValid{data: read("cbf"), opener: fuzzOpenerOf("OpenCountingBloom")})

	for i, win := range []Window{{Keep: 2}, {Period: time.Hour, Keep: 3}} {
		cw, err := OpenCountMinWindow(Path(p("cmw")), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: 2, Width: 32, Candidates: 8 * i, Seed: 3}})
		must(err)
		cw.AddString("k")
		if i == 0 {
			must(cw.Rotate())
			cw.AddString("k")
		}
		cw.Close()
		out = append(out, fuzzValid{data: read("cmw"), opener: fuzzOpenerOf("OpenCountMinWindow")})
		must(os.Remove(p("cmw")))

		bw, err := OpenBloomWindow(Path(p("bw")), BloomWindowConfig{Window: win, Bloom: BloomConfig{Capacity: 50, Seed: 3}})
		must(err)
		bw.AddString("k")
		if i == 0 {
			must(bw.Rotate())
		}
		bw.Close()
		out = append(out, fuzzValid{data: read("bw"), opener: fuzzOpenerOf("OpenBloomWindow")})
		must(os.Remove(p("bw")))
	}

	for i, cfg := range []DistinctConfig{{Precision: 4, Seed: 3}, {Redis: true}} {
		d, err := OpenDistinct(Path(p("hll")), cfg)
		must(err)
		d.AddString("k")
		if i == 1 {
			must(d.Freeze())
		}
		d.Close()
		out = append(out, fuzzValid{data: read("hll"), opener: fuzzOpenerOf("OpenDistinct")})
		must(os.Remove(p("hll")))
	}
	for i, cfg := range []DistinctWindowConfig{{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 4, Seed: 3}}, {Window: Window{Keep: 1, Period: time.Hour}, Distinct: DistinctConfig{Redis: true}}} {
		w, err := OpenDistinctWindow(Path(p("hllw")), cfg)
		must(err)
		w.AddString("k")
		if i == 0 {
			must(w.Rotate())
			w.AddString("j")
		} else {
			must(w.Freeze())
		}
		w.Close()
		out = append(out, fuzzValid{data: read("hllw"), opener: fuzzOpenerOf("OpenDistinctWindow")})
		must(os.Remove(p("hllw")))
	}

	a, err := OpenArena(Path(p("arena")), ArenaConfig{Size: 256 << 10, Seed: 3})
	must(err)
	for _, name := range []string{"one", "two"} {
		c, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: 2, Width: 64})
		must(err)
		c.AddString("k")
		c.Close()
	}
	ab, err := OpenCountingBloom(a.Place("three"), CountingBloomConfig{Capacity: 100})
	must(err)
	ab.AddString("k")
	ab.Close()
	bl, err := OpenBloom(a.Place("four"), BloomConfig{Capacity: 100})
	must(err)
	bl.AddString("k")
	bl.Close()
	aw, err := OpenCountMinWindow(a.Place("five"), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 1, Width: 16, Candidates: 8}})
	must(err)
	aw.AddString("k")
	aw.Close()
	abw, err := OpenBloomWindow(a.Place("six"), BloomWindowConfig{Window: Window{Period: time.Hour, Keep: 2}, Bloom: BloomConfig{Capacity: 20}})
	must(err)
	abw.AddString("k")
	abw.Close()
	ad, err := OpenDistinct(a.Place("seven"), DistinctConfig{Precision: 6})
	must(err)
	ad.AddString("k")
	ad.Close()
	adw, err := OpenDistinctWindow(a.Place("eight"), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 5}})
	must(err)
	adw.AddString("k")
	adw.Close()
	a.Close()
	out = append(out, fuzzValid{data: read("arena"), opener: fuzzOpenerOf("OpenArena"), arena: true})
	return out
}

// fuzzEdits are the mutations every valid file of the corpus gets: the
// header's fields, the first directory entry's, the lock's words, cuts.
var fuzzEdits = []func(b []byte) []byte{
	func(b []byte) []byte { return b },
	func(b []byte) []byte { clear(b[:8]); return b },
	func(b []byte) []byte { b[offVersion]++; return b },
	func(b []byte) []byte { b[offSeed] ^= 1; return b },
	func(b []byte) []byte { b[otDirOff+entParams+8] ^= 1; return b },
	func(b []byte) []byte { b[otDirOff+entParams+24] ^= 0x41; return b },
	func(b []byte) []byte { native.PutUint64(b[otDirOff+entParams+8:], 16); otResum(b); return b },
	func(b []byte) []byte {
		native.PutUint64(b[otDirOff+entOff:], native.Uint64(b[otDirOff+entOff:])+64)
		otResum(b)
		return b
	},
	func(b []byte) []byte { b[otDirOff+entSize] ^= 0x41; return b },
	func(b []byte) []byte { b[offSealed] ^= 1; return b },
	func(b []byte) []byte {
		for _, off := range []int{lockStateOff, lockDrainOff, lockHWOff, slotsOff, slotsOff + 8} {
			for i := range 4 {
				b[off+i] = 0xff
			}
		}
		return b
	},
	func(b []byte) []byte {
		native.PutUint64(b[offFileSize:], 16384)
		otResum(b)
		return b[:min(len(b), 16384)]
	},
	func(b []byte) []byte { native.PutUint32(b[offDirCount:], 0); return b },
	func(b []byte) []byte { return b[:len(b)/2] },
	func(b []byte) []byte { return b[:len(b)-64] },
	func(b []byte) []byte { return b[:headerSize] },
	func(b []byte) []byte { return otConvert(b, native, otOther) },
	func(b []byte) []byte { otConvertField(b, 8, native, otOther); return b },
	// Zero magic with a header behind it; all zero at twice the size.
	func(b []byte) []byte { clear(b[:8]); return append(b, make([]byte, len(b))...) },
	func(b []byte) []byte { clear(b); return append(b, make([]byte, len(b))...) },
}

// fuzzArenaEdits are the arena's own: its directory's count and capacity,
// entries out of place, names without their NUL, entry states.
var fuzzArenaEdits = []func(b []byte){
	func(b []byte) { native.PutUint32(b[offDirCount:], 4) },
	func(b []byte) { native.PutUint32(b[offDirCount:], 1000) },
	func(b []byte) { native.PutUint64(arEntry(b, 2)[entOff:], uint64(len(b))) },
	func(b []byte) { native.PutUint64(arEntry(b, 1)[entSize:], math.MaxUint64) },
	func(b []byte) { copy(arEntry(b, 0)[entName:], bytes.Repeat([]byte{'n'}, entNameSize)) },
	func(b []byte) { native.PutUint64(b[offFlags:], 0) },
	func(b []byte) { native.PutUint32(b[offDirCap:], 1) },
	func(b []byte) { native.PutUint64(arEntry(b, 4)[entParams+16:], 1) },
	func(b []byte) { native.PutUint64(arEntry(b, 5)[entParams+40:], 0) },
	func(b []byte) { native.PutUint64(arEntry(b, 6)[entParams:], cells.DistinctMaxP+1) },
	func(b []byte) { native.PutUint64(arEntry(b, 6)[entParams+8:], 1) },
	// Removed entries and a slot being reused (Arena.Remove), and a
	// removed name given to a later live entry.
	func(b []byte) { native.PutUint32(arEntry(b, 1)[entFlags:], entryRemoved) },
	func(b []byte) {
		native.PutUint32(arEntry(b, 2)[entFlags:], entryReusing)
		clear(arEntry(b, 2)[entParams:entChecksum])
	},
	func(b []byte) {
		native.PutUint32(arEntry(b, 0)[entFlags:], entryRemoved)
		copy(arEntry(b, 1)[entName:entName+entNameSize], arEntry(b, 0)[entName:entName+entNameSize])
	},
	func(b []byte) { native.PutUint32(b[offDirGen:], 7) },
}
