//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch/internal/cells"
)

var (
	arCMS   = CountMinConfig{Rows: 4, Width: 1024}
	arCBF   = CountingBloomConfig{Capacity: 1000, FPRate: 0.01}
	arBloom = BloomConfig{Capacity: 1000, FPRate: 0.01}
)

// TestArena_GatewayStructures is the gateway of the docs: one arena, a
// sketch of requests per client and a counting filter of banned keys;
// a second handle (another worker) finds both by name and sees the adds.
func TestArena_GatewayStructures(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	c, err := OpenCountMin(a.Place("clients"), arCMS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := OpenCountingBloom(a.Place("banned"), arCBF)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for range 3 {
		c.AddString("10.0.0.1")
	}
	b.AddString("evil")
	seen, err := OpenBloom(a.Place("seen"), arBloom)
	if err != nil {
		t.Fatal(err)
	}
	defer seen.Close()
	seen.AddString("req-1")

	w := mustOpenArena(t, path, 0)
	c2, err := OpenCountMin(w.Place("clients"), CountMinConfig{}) // zero config: whatever is stored
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := c2.EstimateString("10.0.0.1"); got != 3 {
		t.Errorf("second handle: Estimate(10.0.0.1) = %d, want 3", got)
	}
	if est, _ := c2.AddString("10.0.0.1"); est != 4 {
		t.Errorf("second handle: AddString = %d, want 4", est)
	}
	if got := c.EstimateString("10.0.0.1"); got != 4 {
		t.Errorf("first handle: Estimate = %d, want 4", got)
	}
	b2, err := OpenCountingBloom(w.Place("banned"), CountingBloomConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if !b2.ContainsString("evil") || b2.ContainsString("good") {
		t.Errorf("second handle: Contains(evil) = %v, Contains(good) = %v", b2.ContainsString("evil"), b2.ContainsString("good"))
	}
	seen2, err := OpenBloom(w.Place("seen"), BloomConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer seen2.Close()
	if !seen2.ContainsString("req-1") {
		t.Error("second handle: the Bloom filter lost req-1")
	}
	if already, _ := seen2.AddString("req-1"); !already {
		t.Error("second handle: req-1 not already present")
	}
	want := []ArenaEntry{
		{Name: "clients", Kind: KindCountMin, Bytes: countMinBytes(4, 1024), Config: CountMinConfig{Rows: 4, Width: 1024}},
		{Name: "banned", Kind: KindCountingBloom, Bytes: countingBloomBytes(b.Counters(), false), Config: arCBF},
		{Name: "seen", Kind: KindBloom, Bytes: bloomBytes(seen.Bits() / cells.BloomBlockBits), Config: arBloom},
	}
	got := w.List()
	for i := range got {
		if got[i].Offset%64 != 0 {
			t.Errorf("%s at offset %d, not 64-byte aligned", got[i].Name, got[i].Offset)
		}
		if i > 0 && got[i].Offset < got[i-1].Offset+got[i-1].Bytes {
			t.Errorf("%s at %d overlaps %s ending at %d", got[i].Name, got[i].Offset, got[i-1].Name, got[i-1].Offset+got[i-1].Bytes)
		}
		got[i].Offset = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List() (-want +got):\n%s", diff)
	}
	st := w.Stats()
	if st.Entries != 3 || st.Bytes != 1<<20 || st.Used+st.Free != st.Bytes || st.Capacity != 256 {
		t.Errorf("Stats() = %+v", st)
	}
	if !strings.Contains(c2.String(), "clients") || strings.Contains(fmt.Sprint(c2), fmt.Sprint(c2.Seed())) {
		t.Errorf("String() = %q: want the name and no seed", c2.String())
	}
}

func TestArena_ErrIncompatible(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	if _, err := OpenCountMin(a.Place("x"), arCMS); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		open func() error
		want string
	}{
		{"other kind", func() error { _, err := OpenCountingBloom(a.Place("x"), arCBF); return err }, "holds a Count-Min sketch, not a counting Bloom filter"},
		{"other shape", func() error { _, err := OpenCountMin(a.Place("x"), CountMinConfig{Rows: 2, Width: 1024}); return err }, "asked for 2 x 1024 counters, the file has 4 x 1024"},
		{"other seed", func() error {
			_, err := OpenCountMin(a.Place("x"), CountMinConfig{Rows: 4, Width: 1024, Seed: 1})
			return err
		}, "seed is not the arena's"},
		{"standalone open", func() error { _, err := OpenCountMin(Path(path), arCMS); return err }, "is an arena; open it with OpenArena"},
		{"other size", func() error { _, err := OpenArena(Path(path), ArenaConfig{Size: 2 << 20}); return err }, "arena of 2097152 bytes, the file has 1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.open()
			if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrIncompatible saying %q", err, tc.want)
			}
		})
	}
	standalone := tempPath(t, "cms")
	mustOpen(t, standalone, arCMS)
	if _, err := OpenArena(Path(standalone), ArenaConfig{Size: 1 << 20}); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "not an arena") {
		t.Errorf("OpenArena on a standalone sketch: %v, want ErrIncompatible", err)
	}
}

func TestArena_Names(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 1<<20)
	long := strings.Repeat("n", MaxNameLen)
	if c, err := OpenCountMin(a.Place(long), arCMS); err != nil {
		t.Errorf("name of MaxNameLen bytes: %v", err)
	} else {
		c.Close()
	}
	for _, name := range []string{"", long + "x", "a\x00b"} {
		if _, err := OpenCountMin(a.Place(name), arCMS); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("CountMin(%q) = %v, want ErrInvalidArgument", name, err)
		}
	}
	if got := a.List(); len(got) != 1 || got[0].Name != long {
		t.Errorf("List() = %+v, want only the long name", got)
	}
	// Messages and String show a name plain when it is made of letters,
	// digits and "._-/", and quoted otherwise.
	for name, want := range map[string]string{
		"clients/v1.2_x-y": ":clients/v1.2_x-y: ",
		"two words":        `:"two words": `,
		"a:b":              `:"a:b": `,
		"née":              `:"née": `,
	} {
		_, err := OpenBloom(a.Place(name), BloomConfig{Capacity: 1 << 22, FPRate: 0.001}) // 7.7 MiB: more than the arena, and mappable on 32-bit machines
		if !errors.Is(err, ErrArenaFull) || !strings.Contains(err.Error(), want) {
			t.Errorf("Bloom(%q) = %v, want ErrArenaFull naming it as %s", name, err, want)
		}
	}
	// A name that does not print is refused at create, and quoted in the
	// message: a control character or an escape sequence (which retitles
	// a terminal), a format character (which reverses text), bytes that
	// are not UTF-8. Printable names of any script are made.
	for _, name := range []string{"a\x01b", "\x1b]0;owned\x07", "tab\tname", "del\x7f", "rtl\u202eexe.txt", "bad\xffutf8"} {
		_, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: 1, Width: 8})
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("CountMin(%q) = %v, want ErrInvalidArgument with the name quoted", name, err)
		}
	}
	if c, err := OpenCountMin(a.Place("née"), CountMinConfig{Rows: 1, Width: 8}); err != nil {
		t.Errorf("CountMin(%q) = %v, want it made", "née", err)
	} else {
		c.Close()
	}
	c, err := OpenCountMin(a.Place("two words"), CountMinConfig{Rows: 1, Width: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := c.String(); !strings.Contains(s, `:"two words"`) {
		t.Errorf("String() = %s, want the name quoted", s)
	}
}

func TestArena_ErrArenaFull(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 64<<10)
	cfg := CountMinConfig{Rows: 1, Width: 512} // 8 KiB with its stripes
	var n int
	var err error
	for n = 0; n < 100; n++ {
		var c *CountMin
		if c, err = OpenCountMin(a.Place(fmt.Sprint("s", n)), cfg); err != nil {
			break
		}
		c.Close()
	}
	st := a.Stats()
	if !errors.Is(err, ErrArenaFull) || !strings.Contains(err.Error(), fmt.Sprintf("needs %d bytes, %d are left", countMinBytes(1, 512), st.Free)) {
		t.Fatalf("after %d structures: %v, want ErrArenaFull saying what is left (%+v)", n, err, st)
	}
	if st.Entries != n || st.Free >= countMinBytes(1, 512) {
		t.Errorf("Stats() = %+v after %d structures", st, n)
	}
	// What still fits is still given.
	small := CountMinConfig{Rows: 1, Width: 1}
	if st.Free >= countMinBytes(1, 1)+64 {
		if _, err := OpenCountMin(a.Place("small"), small); err != nil {
			t.Errorf("a structure that fits: %v", err)
		}
	}
}

// TestArena_CloseOrder closes the arena before and after its structures.
func TestArena_CloseOrder(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	c, err := OpenCountMin(a.Place("c"), arCMS)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenCountingBloom(a.Place("b"), arCBF)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := OpenCountMin(a.Place("d"), arCMS); !errors.Is(err, ErrClosed) {
		t.Errorf("CountMin after the arena's Close: %v, want ErrClosed", err)
	}
	// The structures outlive the arena's handle.
	if est, err := c.AddString("k"); est != 1 || err != nil {
		t.Errorf("Add after the arena's Close = %d, %v", est, err)
	}
	if _, err := b.AddString("k"); err != nil || !b.ContainsString("k") {
		t.Errorf("counting filter after the arena's Close: %v", err)
	}
	c.Close()
	if got := c.EstimateString("k"); got != ClosedEstimate {
		t.Errorf("Estimate after Close = %d, want ClosedEstimate", got)
	}
	// The filter still works after its sibling closed.
	if !b.ContainsString("k") {
		t.Error("the counting filter lost its key when its sibling closed")
	}
	b.Close()

	// Structures closed first, then the arena.
	a2 := mustOpenArena(t, path, 0)
	c2, err := OpenCountMin(a2.Place("c"), CountMinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c2.EstimateString("k"); got != 1 {
		t.Errorf("reopened: Estimate = %d, want 1", got)
	}
	c2.Close()
	if got := len(a2.List()); got != 2 {
		t.Errorf("List after a structure closed: %d entries, want 2", got)
	}
	if err := a2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestArena_ReadOnlyAndFrozen(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	c, err := OpenCountMin(a.Place("c"), arCMS)
	if err != nil {
		t.Fatal(err)
	}
	c.AddString("k")

	ro := mustOpenArena(t, path, 0, WithReadOnly())
	rc, err := OpenCountMin(ro.Place("c"), CountMinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rc.EstimateString("k"); got != 1 {
		t.Errorf("read-only view: Estimate = %d, want 1", got)
	}
	if _, err := rc.AddString("k"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only view: Add = %v, want ErrReadOnly", err)
	}
	if _, err := OpenCountMin(ro.Place("missing"), arCMS); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only arena, new name: %v, want fs.ErrNotExist", err)
	}
	if err := ro.Freeze(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Freeze of a read-only arena: %v, want ErrReadOnly", err)
	}

	if err := a.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := a.Freeze(); !errors.Is(err, ErrFrozen) {
		t.Errorf("second Freeze: %v, want ErrFrozen", err)
	}
	if _, err := c.AddString("k"); !errors.Is(err, ErrFrozen) {
		t.Errorf("Add in a frozen arena: %v, want ErrFrozen", err)
	}
	if _, err := OpenCountMin(a.Place("new"), arCMS); !errors.Is(err, ErrFrozen) {
		t.Errorf("create in a frozen arena: %v, want ErrFrozen", err)
	}
	if _, err := OpenArena(Path(path), ArenaConfig{}); !errors.Is(err, ErrFrozen) {
		t.Errorf("read-write open of a frozen arena: %v, want ErrFrozen", err)
	}
	if !ro.Stats().Frozen || !rc.Frozen() {
		t.Error("the read-only view does not see the freeze")
	}
}

func TestArena_Memfd(t *testing.T) {
	a, err := OpenArena(Memfd("arena"), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	c, err := OpenCountMin(a.Place("c"), arCMS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.AddN([]byte("k"), 5)
	f, err := a.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := OpenArena(Inherited(f.Fd()), ArenaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c2, err := OpenCountMin(b.Place("c"), arCMS)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got := c2.Estimate([]byte("k")); got != 5 {
		t.Errorf("through the attached descriptor: Estimate = %d, want 5", got)
	}
	if _, err := OpenCountingBloom(b.Place("f"), arCBF); err != nil {
		t.Errorf("create through the attached descriptor: %v", err)
	}
	if got := len(a.List()); got != 2 {
		t.Errorf("the creator lists %d entries, want 2", got)
	}

	mem, err := OpenArena(Memory(), ArenaConfig{Size: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if _, err := OpenCountingBloom(mem.Place("f"), arCBF); err != nil {
		t.Errorf("in-memory arena: %v", err)
	}
	for _, size := range []int64{0, -1} {
		if _, err := OpenArena(Memory(), ArenaConfig{Size: size}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewArena(%d) = %v, want ErrInvalidConfig", size, err)
		}
	}
	if _, err := OpenArena(Path(tempPath(t, "none")), ArenaConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("OpenArena of a missing file with size 0 = %v, want ErrInvalidConfig", err)
	}
}

func TestArena_Seed(t *testing.T) {
	dir := t.TempDir()
	var seeds []uint64
	for _, name := range []string{"a", "b"} {
		a := mustIn(t, OpenArena, Path(dir+"/"+name), ArenaConfig{Size: 1 << 20, Seed: 42})
		c, err := OpenCountMin(a.Place("c"), arCMS)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, c.Seed())
		c.Close()
	}
	if seeds[0] != 42 || seeds[1] != 42 {
		t.Errorf("seeds %v, want 42 twice", seeds)
	}
	if _, err := OpenArena(Path(dir+"/a"), ArenaConfig{Seed: 43}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("attach with another seed: %v, want ErrIncompatible", err)
	}
}

func TestArena_StandaloneHandlesUnchanged(t *testing.T) {
	// A standalone file's directory holds exactly one unnamed entry.
	path := tempPath(t, "cms")
	mustOpen(t, path, arCMS)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lay, err := decodeHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if lay.isArena() || len(lay.entries) != 1 || lay.entries[0].name != "" {
		t.Errorf("standalone layout: arena %v, entries %+v", lay.isArena(), lay.entries)
	}
}

// TestArena_CountMinWindow keeps a rate limiter's window in an arena: a
// second handle attaches with the zero Window and sees the same periods.
func TestArena_CountMinWindow(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 4<<20)
	w, err := OpenCountMinWindow(a.Place("rate"), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: arCMS})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddString("k")
	b := mustOpenArena(t, path, 0)
	w2, err := OpenCountMinWindow(b.Place("rate"), CountMinWindowConfig{Window: Window{}, CountMin: CountMinConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got := w2.Config().Window; got != (Window{Keep: 2}) {
		t.Errorf("attached window %+v, want Keep 2", got)
	}
	if err := w2.Rotate(); err != nil {
		t.Fatal(err)
	}
	if est, _ := w.AddString("k"); est != 2 {
		t.Errorf("after one turn: Add = %d, want 2 (both periods)", est)
	}
	w.Rotate()
	if got := w2.EstimateString("k"); got != 1 {
		t.Errorf("after two turns: Estimate = %d, want 1 (the first period left the window)", got)
	}
	if _, err := OpenCountMinWindow(b.Place("rate"), CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: arCMS}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("another Keep: %v, want ErrIncompatible", err)
	}
	if _, err := OpenCountMinWindow(b.Place("new"), CountMinWindowConfig{Window: Window{}, CountMin: arCMS}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("zero Window for a new name: %v, want ErrInvalidConfig (it cannot create)", err)
	}
	got := b.List()
	if len(got) != 1 || got[0].Kind != KindCountMinWindow || got[0].Config != (CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 4, Width: 1024}}) {
		t.Errorf("List() = %+v", got)
	}
}

// TestArena_FreezeHoldsWindows seals an arena through the arena: a
// clock-driven window in it must keep answering for the periods it had,
// not empty as the clock moves on.
func TestArena_FreezeHoldsWindows(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 4<<20)
	w, err := OpenCountMinWindow(a.Place("rate"), CountMinWindowConfig{Window: Window{Period: 20 * time.Millisecond, Keep: 2}, CountMin: arCMS})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddN([]byte("k"), 5)
	if err := a.Freeze(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // five periods
	if got := w.EstimateString("k"); got != 5 {
		t.Errorf("Estimate after the arena froze and five periods passed = %d, want 5", got)
	}
}

// TestConfigBytes: each config's Bytes is the size of the standalone file
// it makes.
func TestConfigBytes(t *testing.T) {
	dir := t.TempDir()
	check := func(name string, want uint64, err error, open func(string) error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: Bytes: %v", name, err)
		}
		path := dir + "/" + name
		if err := open(path); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(st.Size()) != want {
			t.Errorf("%s: Bytes() = %d, the file has %d", name, want, st.Size())
		}
	}
	n, err := arBloom.Bytes()
	check("bloom", n, err, func(p string) error { b, err := OpenBloom(Path(p), arBloom); b.Close(); return err })
	n, err = arCBF.Bytes()
	check("cbf", n, err, func(p string) error { b, err := OpenCountingBloom(Path(p), arCBF); b.Close(); return err })
	if _, err := (BloomConfig{}).Bytes(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("zero BloomConfig.Bytes: %v, want ErrInvalidConfig", err)
	}
}

// TestArena_StatsBytes: each structure of an arena reports its own region
// as its Bytes, for every kind, so the structures sum to at most the file;
// a standalone structure still reports its whole file.
func TestArena_StatsBytes(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 4<<20)
	got := map[string]uint64{}
	for i := range testKinds {
		k := &testKinds[i]
		got[k.name] = fileStatsOf(t, mustOpenTestKind(t, k, a.Place(k.name))).Bytes
	}
	var sum uint64
	for _, e := range a.List() {
		if got[e.Name] != e.Bytes {
			t.Errorf("%s: Stats().Bytes = %d, want its region's %d", e.Name, got[e.Name], e.Bytes)
		}
		sum += got[e.Name]
	}
	if sum > a.Stats().Bytes {
		t.Errorf("the structures' Bytes sum to %d, more than the arena's %d", sum, a.Stats().Bytes)
	}
	c := mustOpen(t, tempPath(t, "cms"), arCMS)
	if n, _ := arCMS.Bytes(); c.Stats().Bytes != n {
		t.Errorf("standalone Stats().Bytes = %d, want the file's %d", c.Stats().Bytes, n)
	}
}

// TestArena_CheckAfterList: Check verifies every entry from the first,
// also once the handle has read them all (it used to check each against
// a layout that held them all already, and called a sound arena corrupt).
func TestArena_CheckAfterList(t *testing.T) {
	path := tempPath(t, "checked")
	a, err := OpenArena(Path(path), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, name := range []string{"x", "y", "z"} {
		c, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: 2, Width: 64})
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if len(a.List()) != 3 {
		t.Fatalf("List: %v", a.List())
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check of a sound arena: %v", err)
	}
	b, err := OpenArena(Path(path), ArenaConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Check(); err != nil {
		t.Errorf("Check of a sound arena, another handle: %v", err)
	}
}

// TestArena_SnapshotDistinct: Arena.Snapshot copies every kind an
// arena holds, the distinct count and the distinct window among them, as
// their own Snapshot copies them: the copy counts what the source counted.
// (It refused the arena with ErrInvalidArgument, "has no snapshot", for
// the two distinct kinds.)
func TestArena_SnapshotDistinct(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 4<<20)
	d := mustIn(t, OpenDistinct, a.Place("d"), DistinctConfig{Precision: 10})
	defer d.Close()
	w := mustIn(t, OpenDistinctWindow, a.Place("w"), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 10}})
	defer w.Close()
	for i := range 300 {
		d.AddString(fmt.Sprint("d", i))
		w.AddString(fmt.Sprint("old", i))
	}
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		w.AddString(fmt.Sprint("new", i))
	}
	wantD, wantW := d.Count(), w.Count()

	s, err := a.Snapshot(Path(filepath.Join(t.TempDir(), "snap")))
	if err != nil {
		t.Fatalf("Snapshot of an arena with a distinct count and a distinct window: %v", err)
	}
	defer s.Close()
	if got := len(s.List()); got != 2 {
		t.Fatalf("the snapshot lists %d structures, want 2: %+v", got, s.List())
	}
	sd := mustIn(t, OpenDistinct, s.Place("d"), DistinctConfig{}, WithReadOnly())
	defer sd.Close()
	if got := sd.Count(); got != wantD {
		t.Errorf("the snapshot's distinct count: Count = %d, want %d", got, wantD)
	}
	sw := mustIn(t, OpenDistinctWindow, s.Place("w"), DistinctWindowConfig{}, WithReadOnly())
	defer sw.Close()
	if got := sw.Count(); got != wantW {
		t.Errorf("the snapshot's distinct window: Count = %d, want %d", got, wantW)
	}
	if got, want := sw.Current(), w.Current(); got != want {
		t.Errorf("the snapshot's window: Current = %d, want %d (fixed at the copy's period)", got, want)
	}
	if err := s.Check(); err != nil {
		t.Errorf("the snapshot's Check = %v", err)
	}
}
