//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// arEntryAt returns the listed entry named name, failing the test when it
// is not listed.
func arEntryAt(t *testing.T, a *Arena, name string) ArenaEntry {
	t.Helper()
	for _, e := range a.List() {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("%s is not listed: %+v", name, a.List())
	return ArenaEntry{}
}

// arNotListed fails the test when name is listed.
func arNotListed(t *testing.T, a *Arena, name string) {
	t.Helper()
	for _, e := range a.List() {
		if e.Name == name {
			t.Errorf("%s is still listed: %+v", name, e)
		}
	}
}

// arWantStats compares the removal counts of the arena's Stats.
func arWantStats(t *testing.T, a *Arena, entries, removed, reusable int) {
	t.Helper()
	st := a.Stats()
	if st.Entries != entries || st.Removed != removed || st.Reusable != reusable {
		t.Errorf("Stats: %d entries, %d removed, %d reusable; want %d, %d, %d", st.Entries, st.Removed, st.Reusable, entries, removed, reusable)
	}
}

// TestArena_Remove: a removed name opens a new structure, of another kind
// and config, in the same room when no handle holds it; the old counts
// are gone from it.
func TestArena_Remove(t *testing.T) {
	for _, place := range []string{"path", "memory"} {
		t.Run(place, func(t *testing.T) {
			var a *Arena
			if place == "path" {
				a = mustOpenArena(t, tempPath(t, "arena"), 1<<20)
			} else {
				var err error
				if a, err = OpenArena(Memory(), ArenaConfig{Size: 1 << 20}); err != nil {
					t.Fatal(err)
				}
				defer a.Close()
			}
			c := mustIn(t, OpenCountMin, a.Place("clients"), CountMinConfig{Rows: 4, Width: 1024})
			c.AddString("k")
			after := mustIn(t, OpenBloom, a.Place("after"), BloomConfig{Capacity: 100, FPRate: 0.01})
			after.AddString("k")
			old := arEntryAt(t, a, "clients")
			c.Close()

			if err := a.Remove("clients"); err != nil {
				t.Fatalf("Remove(clients) = %v", err)
			}
			arNotListed(t, a, "clients")
			arWantStats(t, a, 1, 1, 1)
			if st := a.Stats(); st.RemovedBytes != arEntryAt(t, a, "after").Offset-old.Offset {
				t.Errorf("Stats().RemovedBytes = %d, want %d (the room up to the next region)", st.RemovedBytes, arEntryAt(t, a, "after").Offset-old.Offset)
			}
			if err := a.Remove("clients"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Remove of a removed name = %v, want fs.ErrNotExist", err)
			}

			// Another kind under the name, smaller than the room: the room.
			b := mustIn(t, OpenBloom, a.Place("clients"), BloomConfig{Capacity: 500, FPRate: 0.01})
			defer b.Close()
			if b.ContainsString("k") {
				t.Error("the new filter under the name holds the old sketch's key")
			}
			e := arEntryAt(t, a, "clients")
			if e.Kind != KindBloom || e.Offset != old.Offset {
				t.Errorf("the new structure: %s at %d, want a bloom at %d (the removed one's room)", e.Kind, e.Offset, old.Offset)
			}
			arWantStats(t, a, 2, 0, 0)
			if _, err := OpenCountMin(a.Place("clients"), CountMinConfig{Rows: 4, Width: 1024}); !errors.Is(err, ErrIncompatible) {
				t.Errorf("the old config after the name was reused: %v, want ErrIncompatible", err)
			}
			if !after.ContainsString("k") {
				t.Error("the neighbour lost its key")
			}
			if err := a.Check(); err != nil {
				t.Errorf("Check = %v", err)
			}
			if err := b.Check(); err != nil {
				t.Errorf("the new structure's Check = %v", err)
			}
			// Every byte of the reused region starts zero: the old
			// counters are gone.
			for i, v := range a.m.data[e.Offset : e.Offset+e.Bytes] {
				if v != 0 && i >= 4096 {
					// the filter's stripes hold no adds yet, and its
					// blocks no bits
					t.Fatalf("byte %d of the reused region is %#x", i, v)
				}
			}
		})
	}
}

// TestArena_RemoveHeld: a handle open on a removed structure keeps it: it
// works on its own bytes, the name opens a new structure elsewhere, and
// the room is reused only after the handle's Close.
func TestArena_RemoveHeld(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 1<<20)
	old := mustIn(t, OpenCountMin, a.Place("hits"), CountMinConfig{Rows: 2, Width: 256})
	old.AddString("old")
	oldAt := arEntryAt(t, a, "hits")
	// A second handle of the same structure: the room is held until both
	// are closed.
	twin := mustIn(t, OpenCountMin, a.Place("hits"), CountMinConfig{})
	if err := a.Remove("hits"); err != nil {
		t.Fatal(err)
	}
	arWantStats(t, a, 0, 1, 0)

	fresh := mustIn(t, OpenCountMin, a.Place("hits"), CountMinConfig{Rows: 2, Width: 256})
	freshAt := arEntryAt(t, a, "hits")
	if freshAt.Offset == oldAt.Offset {
		t.Fatalf("the name's new structure took the room a handle holds (offset %d)", oldAt.Offset)
	}
	fresh.AddString("new")
	old.AddString("old")
	if got := old.EstimateString("old"); got != 2 {
		t.Errorf("the removed structure's handle: Estimate(old) = %d, want 2", got)
	}
	if got := twin.EstimateString("old"); got != 2 {
		t.Errorf("its twin: Estimate(old) = %d, want 2", got)
	}
	if got, gotNew := fresh.EstimateString("old"), fresh.EstimateString("new"); got != 0 || gotNew != 1 {
		t.Errorf("the new structure: Estimate(old) = %d, Estimate(new) = %d, want 0, 1", got, gotNew)
	}
	if err := old.Check(); err != nil {
		t.Errorf("Check of the removed structure's handle = %v", err)
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check of the arena = %v", err)
	}

	// Held by the twin: a create that fits the room goes after the end.
	old.Close()
	arWantStats(t, a, 1, 1, 0)
	small := mustIn(t, OpenBloom, a.Place("small"), BloomConfig{Capacity: 10})
	defer small.Close()
	if got := arEntryAt(t, a, "small").Offset; got == oldAt.Offset {
		t.Fatal("a create reused a room still held by an open handle")
	}
	twin.Close()
	arWantStats(t, a, 2, 1, 1)
	other := mustIn(t, OpenBloom, a.Place("other"), BloomConfig{Capacity: 10})
	defer other.Close()
	if got := arEntryAt(t, a, "other").Offset; got != oldAt.Offset {
		t.Errorf("once every handle closed, a create went to %d, want the room at %d", got, oldAt.Offset)
	}
	fresh.Close()
}

// TestArena_RemoveSeenByOtherHandles: another handle of the arena (its own
// mapping, as another process has) that listed the name before sees the
// removal and the new structure.
func TestArena_RemoveSeenByOtherHandles(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	b := mustOpenArena(t, path, 0)
	c := mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 2, Width: 64})
	c.AddString("k")
	c.Close()
	if got := arEntryAt(t, b, "x"); got.Kind != KindCountMin {
		t.Fatalf("the other handle lists %+v", got)
	}
	if err := a.Remove("x"); err != nil {
		t.Fatal(err)
	}
	arNotListed(t, b, "x")
	bl := mustIn(t, OpenBloom, a.Place("x"), BloomConfig{Capacity: 10})
	bl.AddString("k")
	bl.Close()
	got := mustIn(t, OpenBloom, b.Place("x"), BloomConfig{})
	defer got.Close()
	if !got.ContainsString("k") {
		t.Error("the other handle opened another structure than the new one")
	}
	if _, err := OpenCountMin(b.Place("x"), CountMinConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("the other handle opens the removed sketch: %v, want ErrIncompatible", err)
	}
	if err := b.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestArena_RemoveRefused: Remove needs a read-write handle on an open,
// unfrozen arena and a name it holds.
func TestArena_RemoveRefused(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 2, Width: 64}).Close()
	ro := mustOpenArena(t, path, 0, WithReadOnly())
	for _, tt := range []struct {
		a    *Arena
		name string
		want error
	}{
		{ro, "x", ErrReadOnly},
		{a, "nothing", fs.ErrNotExist},
		{a, "", ErrInvalidArgument},
	} {
		if err := tt.a.Remove(tt.name); !errors.Is(err, tt.want) {
			t.Errorf("Remove(%q) = %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := a.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := ro.Remove("x"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Remove on a read-only handle of a frozen arena = %v, want ErrReadOnly", err)
	}
	b := mustOpenArena(t, path, 0, WithReadOnly())
	arEntryAt(t, b, "x")
	a.Close()
	if err := a.Remove("x"); !errors.Is(err, ErrClosed) && !errors.Is(err, ErrFrozen) {
		t.Errorf("Remove after Close = %v, want ErrClosed", err)
	}
}

// TestArena_RemoveFit: a create takes the smallest removed room it fits
// in, and goes after the last region when it fits none; rooms are not
// merged.
func TestArena_RemoveFit(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 4<<20)
	small, large := CountMinConfig{Rows: 1, Width: 512}, CountMinConfig{Rows: 4, Width: 4096}
	for _, n := range []struct {
		name string
		cfg  CountMinConfig
	}{{"large", large}, {"small", small}, {"keep", small}, {"small2", small}} {
		mustIn(t, OpenCountMin, a.Place(n.name), n.cfg).Close()
	}
	at := map[string]uint64{}
	for _, e := range a.List() {
		at[e.Name] = e.Offset
	}
	for _, n := range []string{"large", "small", "small2"} {
		if err := a.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
	mustIn(t, OpenCountMin, a.Place("s"), small).Close()
	if got := arEntryAt(t, a, "s").Offset; got != at["small"] {
		t.Errorf("a small sketch went to %d, want the smallest room that fits (%d)", got, at["small"])
	}
	mustIn(t, OpenCountMin, a.Place("l"), large).Close()
	if got := arEntryAt(t, a, "l").Offset; got != at["large"] {
		t.Errorf("a large sketch went to %d, want the large room (%d)", got, at["large"])
	}
	// small2 is the last region: its room runs to the file's end.
	huge := CountMinConfig{Rows: 8, Width: 16384}
	mustIn(t, OpenCountMin, a.Place("h"), huge).Close()
	if got := arEntryAt(t, a, "h").Offset; got != at["small2"] {
		t.Errorf("a sketch larger than every room went to %d, want the last room (%d), which runs to the end", got, at["small2"])
	}
	arWantStats(t, a, 4, 0, 0)
	if err := a.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestArena_RemoveSnapshot: a snapshot leaves removed structures out and
// keeps the others at their offsets.
func TestArena_RemoveSnapshot(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 1<<20)
	for _, n := range []string{"a", "b", "c"} {
		c := mustIn(t, OpenCountMin, a.Place(n), CountMinConfig{Rows: 2, Width: 64})
		c.AddString(n)
		c.Close()
	}
	if err := a.Remove("b"); err != nil {
		t.Fatal(err)
	}
	s, err := a.Snapshot(Path(filepath.Join(t.TempDir(), "snap")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.List()
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "c" || got[1].Offset != arEntryAt(t, a, "c").Offset {
		t.Fatalf("the snapshot lists %+v, want a and c at their offsets", got)
	}
	c := mustIn(t, OpenCountMin, s.Place("c"), CountMinConfig{}, WithReadOnly())
	defer c.Close()
	if got := c.EstimateString("c"); got != 1 {
		t.Errorf("the snapshot's c: Estimate = %d, want 1", got)
	}
	if err := s.Check(); err != nil {
		t.Errorf("the snapshot's Check = %v", err)
	}
}

// TestArena_RemoveCrafted: the directory's rules for removed entries and
// slots being reused, on files made by hand.
func TestArena_RemoveCrafted(t *testing.T) {
	valid := arMakeFile(t) // one, two, three, four
	state := func(i int, s uint32) func(b []byte) {
		return func(b []byte) { native.PutUint32(arEntry(b, i)[entFlags:], s) }
	}
	for _, tt := range []struct {
		name   string
		edit   func(b []byte)
		want   error // nil: opens, and Check passes
		listed int
	}{
		{"entry 1 removed", state(1, entryRemoved), nil, 3},
		{"entry 3 (the last) removed", state(3, entryRemoved), nil, 3},
		{"entry 1 being reused, its fields garbage", func(b []byte) {
			state(1, entryReusing)(b)
			eb := arEntry(b, 1)
			for i := entParams; i < entrySize; i++ {
				eb[i] = 0xa5
			}
			native.PutUint32(eb[entKind:], 99)
		}, nil, 3},
		{"entry 1 removed, its name used by entry 2", func(b []byte) {
			state(1, entryRemoved)(b)
			copy(arEntry(b, 2)[entName:entName+entNameSize], append([]byte("two"), make([]byte, entNameSize-3)...))
			arResumEntry(arEntry(b, 2))
		}, nil, 3},
		{"two live entries of one name", func(b []byte) {
			copy(arEntry(b, 2)[entName:entName+entNameSize], append([]byte("two"), make([]byte, entNameSize-3)...))
			arResumEntry(arEntry(b, 2))
		}, ErrCorrupt, 0},
		{"a removed entry's region over the next one's", func(b []byte) {
			state(1, entryRemoved)(b)
			eb := arEntry(b, 1)
			native.PutUint64(eb[entOff:], native.Uint64(arEntry(b, 2)[entOff:]))
			arResumEntry(eb)
		}, ErrCorrupt, 0},
		{"a live entry inside a removed one's region", func(b []byte) {
			state(1, entryRemoved)(b)
			eb := arEntry(b, 2)
			native.PutUint64(eb[entOff:], native.Uint64(arEntry(b, 1)[entOff:]))
			arResumEntry(eb)
		}, ErrCorrupt, 0},
		{"a slot being reused grown over the next region", func(b []byte) {
			state(1, entryReusing)(b)
			native.PutUint64(arEntry(b, 1)[entSize:], native.Uint64(arEntry(b, 2)[entOff:])-native.Uint64(arEntry(b, 1)[entOff:])+64)
		}, ErrCorrupt, 0},
		{"a slot being reused past the file", func(b []byte) {
			state(3, entryReusing)(b)
			native.PutUint64(arEntry(b, 3)[entSize:], uint64(len(b)))
		}, ErrCorrupt, 0},
		{"a removed entry with a damaged field", func(b []byte) {
			state(1, entryRemoved)(b)
			arEntry(b, 1)[entParams] ^= 1
		}, ErrChecksum, 0},
		{"state 3", state(1, 3), ErrCorrupt, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), valid...)
			tt.edit(b)
			path := filepath.Join(t.TempDir(), "arena")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			a, err := OpenArena(Path(path), ArenaConfig{})
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Errorf("OpenArena = %v, want %v", err, tt.want)
				}
				if err == nil {
					a.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenArena = %v", err)
			}
			defer a.Close()
			if err := a.Check(); err != nil {
				t.Errorf("Check = %v", err)
			}
			if got := len(a.List()); got != tt.listed {
				t.Errorf("List has %d entries, want %d", got, tt.listed)
			}
			// The removed or reused room takes a new structure.
			c, err := OpenCountMin(a.Place("new"), CountMinConfig{Rows: 2, Width: 64})
			if err != nil {
				t.Fatalf("a create after: %v", err)
			}
			c.Close()
			if err := a.Check(); err != nil {
				t.Errorf("Check after a create = %v", err)
			}
		})
	}
}

// TestArena_RemoveWhileOpening: one goroutine removes and creates a name
// again and again while others, through the same handle and through
// another handle of the file (another mapping, as another process has),
// open it, add a key and read it back: no open ever gets a structure that
// a create then reuses under it.
func TestArena_RemoveWhileOpening(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	b := mustOpenArena(t, path, 0)
	mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 2, Width: 64}).Close()
	stop := make(chan struct{})
	errs := make(chan error, 3)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				errs <- nil
				return
			default:
			}
			if err := a.Remove("x"); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs <- err
				return
			}
			// A reader's zero config may have created it first (with the
			// default shape): then this one is ErrIncompatible.
			c, err := OpenCountMin(a.Place("x"), CountMinConfig{Rows: 1 + i%2, Width: 64})
			if err != nil && !errors.Is(err, ErrIncompatible) {
				errs <- err
				return
			}
			if err == nil {
				c.Close()
			}
		}
	}()
	var opens [2]atomic.Int64
	for g, x := range []*Arena{a, b} {
		go func() {
			key := "reader-" + string(rune('a'+g))
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				c, err := OpenCountMin(x.Place("x"), CountMinConfig{})
				if err != nil {
					errs <- err
					return
				}
				opens[g].Add(1)
				c.AddString(key)
				for range 20 {
					if got := c.EstimateString(key); got < 1 {
						errs <- fmt.Errorf("%s: a structure open here was zeroed under the handle (Estimate %d)", key, got)
						c.Close()
						return
					}
				}
				// Adds of the other goroutine may be under way (Check
				// then says so); damage is ErrCorrupt.
				err = c.Check()
				c.Close()
				if errors.Is(err, ErrCorrupt) {
					errs <- err
					return
				}
			}
		}()
	}
	// Half a second at least, and until each handle opened the name 100
	// times, however the goroutines are scheduled; or until one failed.
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond || opens[0].Load() < 100 || opens[1].Load() < 100 {
		if len(errs) > 0 {
			break
		}
		if time.Since(start) > patience {
			t.Errorf("opens through each handle in %v: %d and %d; want 100 of each", patience, opens[0].Load(), opens[1].Load())
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	t.Logf("opens through the remover's handle and another: %d and %d; %+v", opens[0].Load(), opens[1].Load(), a.Stats())
}

// TestArena_RemoveMetrics: the metrics let go of a removed structure at
// the next scrape (its room becomes reusable), and a name made again
// while they held the old one is scraped anew.
func TestArena_RemoveMetrics(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	c := mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 2, Width: 64})
	c.AddString("k")
	c.Close()
	m := a.Metrics()
	defer m.Close()
	total := func(name string) any {
		for _, e := range m.Stats().Structures {
			if e.Name == name {
				st, _ := e.Stats.(CountMinStats)
				return st.Total
			}
		}
		return nil
	}
	if got := total("x"); got != uint64(1) {
		t.Fatalf("the first scrape: total %v, want 1", got)
	}
	other := mustOpenArena(t, path, 0)
	if err := other.Remove("x"); err != nil {
		t.Fatal(err)
	}
	// Made again while the metrics hold the old one: elsewhere.
	mustIn(t, OpenCountMin, other.Place("x"), CountMinConfig{Rows: 2, Width: 64}).Close()
	if got := total("x"); got != uint64(0) {
		t.Errorf("the scrape after x was made again: total %v, want 0 (the new x)", got)
	}
	arWantStats(t, a, 1, 1, 1)
	if err := other.Remove("x"); err != nil {
		t.Fatal(err)
	}
	if got := total("x"); got != nil {
		t.Errorf("a removed structure is scraped: total %v", got)
	}
	arWantStats(t, a, 0, 2, 2)
}

// TestArena_DirGenWrap: the directory's change count is 32 bits,
// and a handle that last read the directory at count g trusts its copy
// while the word says g. After 2^32 changes (a billion remove and create
// cycles by a long-running process) the word says g again over another
// directory. Here the word is set back to g, which is what the wrap
// leaves. A handle with the old copy must still find the structure made
// since in a removed one's room under its name, and must not create a
// second entry of that name (which makes every later open of the arena
// ErrCorrupt), nor fail to open a removed name again.
func TestArena_DirGenWrap(t *testing.T) {
	path := tempPath(t, "arena")
	a1 := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a1.Place("x"), CountMinConfig{Rows: 4, Width: 1024}).Close()
	mustIn(t, OpenBloom, a1.Place("y"), BloomConfig{Capacity: 100}).Close()
	a2 := mustOpenArena(t, path, 0)
	if n := len(a2.List()); n != 2 {
		t.Fatalf("the second handle lists %d structures, want 2", n)
	}
	g0 := loadDirGen(a2.m.data)

	if err := a1.Remove("x"); err != nil {
		t.Fatal(err)
	}
	z1 := mustIn(t, OpenBloom, a1.Place("z"), BloomConfig{Capacity: 100})
	defer z1.Close()
	if z, x := arEntryAt(t, a1, "z").Offset, a2.lay.entries[0].off; z != x {
		t.Fatalf("z at %d, want the removed x's room at %d", z, x)
	}
	z1.AddString("k")
	atomic.StoreUint32(dirGenWord(a1.m.data), g0) // the count wrapped

	if err := a2.Remove("x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove(x) through the handle with the old directory = %v, want fs.ErrNotExist (x was removed)", err)
	}
	if !z1.ContainsString("k") || len(a1.List()) != 2 {
		t.Errorf("after Remove(x) through the handle with the old directory the arena lists %+v, want y and z", a1.List())
	}
	z2, err := OpenBloom(a2.Place("z"), BloomConfig{Capacity: 100})
	if err != nil {
		t.Fatalf("OpenBloom(z) through the handle with the old directory: %v", err)
	}
	defer z2.Close()
	if !z2.ContainsString("k") {
		t.Error("the handle with the old directory opened another z than the one its name holds")
	}
	x2, err := OpenCountMin(a2.Place("x"), CountMinConfig{Rows: 4, Width: 1024})
	if err != nil {
		t.Errorf("OpenCountMin(x) after x was removed, through the handle with the old directory: %v", err)
	} else {
		x2.Close()
	}
	a3, err := OpenArena(Path(path), ArenaConfig{})
	if err != nil {
		t.Fatalf("OpenArena after the creates through the handle with the old directory: %v", err)
	}
	defer a3.Close()
	if err := a3.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	names := map[string]int{}
	for _, e := range a3.List() {
		names[e.Name]++
	}
	if want := map[string]int{"x": 1, "y": 1, "z": 1}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("the arena lists %v, want %v", names, want)
	}
}

// TestArena_RemovedClockWindowClearsNothing: a clock window starts, from its
// adds, a goroutine that clears the next period's slot ahead, which its
// user cannot wait for. Once the window is closed and removed, and a
// structure is created in its room, no such clear lands there: the new
// structure's counts stay exact, and its neighbour's too.
func TestArena_RemovedClockWindowClearsNothing(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 1<<20)
	wcfg := DistinctWindowConfig{Window: Window{Period: time.Millisecond, Keep: 2}, Distinct: DistinctConfig{Precision: 12}}
	w := mustIn(t, OpenDistinctWindow, a.Place("w"), wcfg)
	n := mustIn(t, OpenCountMin, a.Place("n"), CountMinConfig{Rows: 2, Width: 256})
	defer n.Close()
	room := arEntryAt(t, a, "n").Offset - arEntryAt(t, a, "w").Offset
	for round := range 20 {
		if w == nil {
			w = mustIn(t, OpenDistinctWindow, a.Place("w"), wcfg)
		}
		for end := time.Now().Add(3 * time.Millisecond); time.Now().Before(end); {
			w.AddString("k")
		}
		w.Close()
		w = nil
		if err := a.Remove("w"); err != nil {
			t.Fatal(err)
		}
		c := mustIn(t, OpenCountMin, a.Place("c"), CountMinConfig{Rows: 2, Width: 512})
		if e := arEntryAt(t, a, "c"); e.Bytes > room {
			t.Fatalf("the sketch needs %d bytes, the room has %d", e.Bytes, room)
		}
		for range 100 {
			c.AddString("x")
			n.AddString("y")
		}
		time.Sleep(3 * time.Millisecond) // any clear ahead had its time
		if got := c.EstimateString("x"); got != 100 {
			t.Fatalf("round %d: the sketch in the window's room: Estimate(x) = %d, want 100", round, got)
		}
		if got := n.EstimateString("y"); got != uint64(100*(round+1)) {
			t.Fatalf("round %d: the neighbour: Estimate(y) = %d, want %d", round, got, 100*(round+1))
		}
		c.Close()
		if err := a.Remove("c"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestArena_RemoveCreateReusesRooms: names removed and created again
// thousands of times, with configs of three sizes, reuse rooms instead of
// spending the directory or the file: no ErrArenaFull, and the directory
// holds a bounded number of entries.
func TestArena_RemoveCreateReusesRooms(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 256<<10)
	widths := []int{64, 256, 1024}
	held := map[string]*CountMin{}
	for i := range 3000 {
		name := fmt.Sprint("n", i%3)
		if c := held[name]; c != nil {
			c.Close()
			if err := a.Remove(name); err != nil {
				t.Fatalf("cycle %d: Remove(%s) = %v", i, name, err)
			}
		}
		c, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: 2, Width: widths[(i/3+i%3)%3]})
		if err != nil {
			t.Fatalf("cycle %d: create %s: %v (stats %+v)", i, name, err, a.Stats())
		}
		c.AddString(name)
		held[name] = c
	}
	st := a.Stats()
	if st.Entries != 3 || st.Entries+st.Removed > 12 {
		t.Errorf("Stats = %+v: want 3 structures, in at most 12 directory entries", st)
	}
	for name, c := range held {
		if got := c.EstimateString(name); got != 1 {
			t.Errorf("%s: Estimate = %d, want 1", name, got)
		}
		c.Close()
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestArena_RemoveFrozenByStructure: Freeze of one structure seals the
// whole arena: Remove through a read-write handle is then ErrFrozen and
// removes nothing, a create is ErrFrozen, and a snapshot of the sealed
// arena with a removed entry leaves it out and checks clean.
func TestArena_RemoveFrozenByStructure(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 1<<20)
	for _, name := range []string{"a", "b", "c"} {
		c := mustIn(t, OpenCountMin, a.Place(name), CountMinConfig{Rows: 2, Width: 64})
		c.AddString(name)
		c.Close()
	}
	if err := a.Remove("b"); err != nil {
		t.Fatal(err)
	}
	c := mustIn(t, OpenCountMin, a.Place("c"), CountMinConfig{})
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := a.Remove("a"); !errors.Is(err, ErrFrozen) {
		t.Errorf("Remove on a sealed arena = %v, want ErrFrozen", err)
	}
	arEntryAt(t, a, "a")
	if _, err := OpenBloom(a.Place("b"), BloomConfig{Capacity: 10}); !errors.Is(err, ErrFrozen) {
		t.Errorf("a create in a sealed arena = %v, want ErrFrozen", err)
	}
	s, err := a.Snapshot(Path(filepath.Join(t.TempDir(), "snap")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.List(); len(got) != 2 || got[0].Name != "a" || got[1].Name != "c" {
		t.Errorf("the snapshot lists %+v, want a and c", got)
	}
	if err := s.Check(); err != nil {
		t.Errorf("the snapshot's Check = %v", err)
	}
}

// TestArena_ReuseKilledBeforeCountStep: a process killed after a
// reuse's last state store (the slot live under its new name) and before
// the change count's step leaves the count where a handle that read the
// directory during the reuse (the slot "being reused") last saw it. That
// handle must still find the new structure by its name instead of
// writing a second entry of that name, which makes every later open of
// the arena ErrCorrupt. The kill is reproduced by taking the last step
// back.
func TestArena_ReuseKilledBeforeCountStep(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 4, Width: 1024}).Close()
	mustIn(t, OpenBloom, a.Place("y"), BloomConfig{Capacity: 100}).Close()
	b := mustOpenArena(t, path, 0)
	if err := a.Remove("x"); err != nil {
		t.Fatal(err)
	}
	arenaCreateHook = func() { b.List() } // b reads the slot being reused
	defer func() { arenaCreateHook = nil }()
	z := mustIn(t, OpenBloom, a.Place("z"), BloomConfig{Capacity: 100})
	arenaCreateHook = nil
	defer z.Close()
	z.AddString("k")
	atomic.AddUint32(dirGenWord(a.m.data), ^uint32(0)) // killed before the last step

	zb, err := OpenBloom(b.Place("z"), BloomConfig{Capacity: 100})
	if err != nil {
		t.Fatalf("OpenBloom(z) through the handle that read the reuse: %v", err)
	}
	defer zb.Close()
	if !zb.ContainsString("k") {
		t.Error("the handle that read the reuse opened another z than the one its name holds")
	}
	c, err := OpenArena(Path(path), ArenaConfig{})
	if err != nil {
		t.Fatalf("OpenArena afterwards: %v", err)
	}
	defer c.Close()
	if n := len(c.List()); n != 2 {
		t.Errorf("the arena lists %d structures, want 2 (y, z): %+v", n, c.List())
	}
}

// TestArena_RemoveKilledBeforeCountStep: the same for a Remove
// killed after its state store and before the count's step: a handle
// that read the directory before sees the name gone when it looks under
// the lock (Remove again is fs.ErrNotExist) and opens the name as a new
// structure, instead of failing or opening the removed one.
func TestArena_RemoveKilledBeforeCountStep(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	x := mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 2, Width: 64})
	x.AddString("old")
	x.Close()
	b := mustOpenArena(t, path, 0)
	arEntryAt(t, b, "x")
	if err := a.Remove("x"); err != nil {
		t.Fatal(err)
	}
	atomic.AddUint32(dirGenWord(a.m.data), ^uint32(0)) // killed before the step

	if err := b.Remove("x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove(x) again through the handle that read it live = %v, want fs.ErrNotExist", err)
	}
	c, err := OpenCountMin(b.Place("x"), CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatalf("OpenCountMin(x) through the handle that read it live: %v", err)
	}
	defer c.Close()
	if got := c.EstimateString("old"); got != 0 {
		t.Errorf("the x opened after the removal counts the removed one's key: Estimate = %d, want 0", got)
	}
	if n := len(a.List()); n != 1 {
		t.Errorf("the arena lists %+v, want the new x alone", a.List())
	}
}

// TestArena_RemoveInspectListAgree: Inspect, List, Stats and Check agree
// after removes and a reuse, with a distinct window among the structures:
// the live ones in directory order (the reused slot where the removed one
// was), the removed entry counted once, nothing else.
func TestArena_RemoveInspectListAgree(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 4, Width: 1024}).Close()
	mustIn(t, OpenDistinctWindow, a.Place("y"), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 8}}).Close()
	mustIn(t, OpenCountMin, a.Place("z"), CountMinConfig{Rows: 2, Width: 64}).Close()
	for _, n := range []string{"x", "z"} {
		if err := a.Remove(n); err != nil {
			t.Fatal(err)
		}
	}
	mustIn(t, OpenBloom, a.Place("w"), BloomConfig{Capacity: 100}).Close()
	fi, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range fi.Entries {
		got = append(got, e.Name+":"+string(e.Kind))
	}
	var listed []string
	for _, e := range a.List() {
		listed = append(listed, e.Name+":"+string(e.Kind))
	}
	want := "[w:bloom y:distinctwindow]"
	if fmt.Sprint(got) != want || fmt.Sprint(listed) != want || fi.Removed != 1 {
		t.Errorf("Inspect: %v, %d removed; List: %v; want %s and 1 removed", got, fi.Removed, listed, want)
	}
	arWantStats(t, a, 2, 1, 1)
	if err := a.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
}

// TestArena_RemoveWhileOtherMappingAdds: a goroutine adds through a
// handle opened from another arena handle of this process (its own
// mapping and descriptor, as another process has) while the name is
// removed and structures are created and removed again in a loop: none
// is created in the held room, and each counts exactly its own adds.
func TestArena_RemoveWhileOtherMappingAdds(t *testing.T) {
	path := tempPath(t, "arena")
	a1 := mustOpenArena(t, path, 1<<20)
	a2 := mustOpenArena(t, path, 0)
	x := mustIn(t, OpenCountMin, a2.Place("x"), CountMinConfig{Rows: 2, Width: 512})
	mustIn(t, OpenBloom, a1.Place("after"), BloomConfig{Capacity: 10}).Close()
	held := arEntryAt(t, a1, "x").Offset
	var stop atomic.Bool
	var adds atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			x.AddString("x")
			adds.Add(1)
		}
	}()
	if err := a1.Remove("x"); err != nil {
		t.Fatal(err)
	}
	for round := range 200 {
		name := fmt.Sprint("n", round%2)
		c := mustIn(t, OpenCountMin, a1.Place(name), CountMinConfig{Rows: 2, Width: 256})
		if off := arEntryAt(t, a1, name).Offset; off == held {
			t.Fatalf("round %d: %s was created in the room a handle of another mapping holds", round, name)
		}
		c.AddString("k")
		if got := c.EstimateString("k"); got != 1 {
			t.Fatalf("round %d: Estimate(k) = %d, want 1", round, got)
		}
		if got := c.EstimateString("x"); got != 0 {
			t.Fatalf("round %d: the new sketch counts %d of the removed one's adds", round, got)
		}
		c.Close()
		if err := a1.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	<-done
	if got, want := x.EstimateString("x"), adds.Load(); got != want {
		t.Errorf("the removed sketch: Estimate(x) = %d, want its %d adds", got, want)
	}
	x.Close()
	c := mustIn(t, OpenCountMin, a1.Place("n9"), CountMinConfig{Rows: 2, Width: 256})
	defer c.Close()
	if off := arEntryAt(t, a1, "n9").Offset; off != held {
		t.Errorf("after the holder's Close a create went to %d, want the freed room at %d", off, held)
	}
}

// TestArena_SnapshotAfterKilledReuse: a snapshot taken through a handle
// that read the directory during a reuse whose process was killed before
// the change count's step copies the structure the reuse made, as a
// snapshot through any other handle does, instead of leaving it out.
func TestArena_SnapshotAfterKilledReuse(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a.Place("x"), CountMinConfig{Rows: 4, Width: 1024}).Close()
	mustIn(t, OpenBloom, a.Place("y"), BloomConfig{Capacity: 100}).Close()
	b := mustOpenArena(t, path, 0)
	if err := a.Remove("x"); err != nil {
		t.Fatal(err)
	}
	arenaCreateHook = func() { b.List() } // b reads the slot being reused
	defer func() { arenaCreateHook = nil }()
	z := mustIn(t, OpenBloom, a.Place("z"), BloomConfig{Capacity: 100})
	arenaCreateHook = nil
	z.AddString("k")
	z.Close()
	atomic.AddUint32(dirGenWord(a.m.data), ^uint32(0)) // killed before the last step

	s, err := b.Snapshot(Path(filepath.Join(t.TempDir(), "snap")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var names []string
	for _, e := range s.List() {
		names = append(names, e.Name)
	}
	if fmt.Sprint(names) != "[z y]" {
		t.Fatalf("the snapshot lists %v, want [z y]", names)
	}
	sz := mustIn(t, OpenBloom, s.Place("z"), BloomConfig{}, WithReadOnly())
	defer sz.Close()
	if !sz.ContainsString("k") {
		t.Error("the snapshot's z lacks its key")
	}
}
