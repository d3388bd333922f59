//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	opens := make([]int, 2)
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
				opens[g]++
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
	time.Sleep(500 * time.Millisecond)
	close(stop)
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if opens[0] == 0 || opens[1] == 0 {
		t.Errorf("opens through each handle: %v; want some of each", opens)
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	t.Logf("opens through the remover's handle and another: %v; %+v", opens, a.Stats())
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
