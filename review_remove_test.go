//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestReview_ArenaSnapshotDistinct: Arena.Snapshot copies every kind an
// arena holds, the distinct count and the distinct window among them, as
// their own Snapshot copies them: the copy counts what the source counted.
// (It refused the arena with ErrInvalidArgument, "has no snapshot", for
// the two distinct kinds.)
func TestReview_ArenaSnapshotDistinct(t *testing.T) {
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

// TestReview_ArenaDirGenWrap: the directory's change count is 32 bits,
// and a handle that last read the directory at count g trusts its copy
// while the word says g. After 2^32 changes (a billion remove and create
// cycles by a long-running process) the word says g again over another
// directory. Here the word is set back to g, which is what the wrap
// leaves. A handle with the old copy must still find the structure made
// since in a removed one's room under its name, and must not create a
// second entry of that name (which makes every later open of the arena
// ErrCorrupt), nor fail to open a removed name again.
func TestReview_ArenaDirGenWrap(t *testing.T) {
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

// TestReview_RemoveClockWindowAhead: a clock window starts, from its
// adds, a goroutine that clears the next period's slot ahead, which its
// user cannot wait for. Once the window is closed and removed, and a
// structure is created in its room, no such clear lands there: the new
// structure's counts stay exact, and its neighbour's too.
func TestReview_RemoveClockWindowAhead(t *testing.T) {
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

// TestReview_RemoveCreateManyTimes: names removed and created again
// thousands of times, with configs of three sizes, reuse rooms instead of
// spending the directory or the file: no ErrArenaFull, and the directory
// holds a bounded number of entries.
func TestReview_RemoveCreateManyTimes(t *testing.T) {
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

// TestReview_RemoveFrozenByStructure: Freeze of one structure seals the
// whole arena: Remove through a read-write handle is then ErrFrozen and
// removes nothing, a create is ErrFrozen, and a snapshot of the sealed
// arena with a removed entry leaves it out and checks clean.
func TestReview_RemoveFrozenByStructure(t *testing.T) {
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

// TestReview_RemoveCreateRaceProcesses: right after a Remove, two
// processes create the name at once, one a Bloom filter and one a
// Count-Min sketch: exactly one gets it and the other ErrIncompatible, the
// name is listed once, in the removed room, with the winner's key, and the
// arena checks clean. Eight rounds.
func TestReview_RemoveCreateRaceProcesses(t *testing.T) {
	if kind := os.Getenv("SKETCH_REVIEW_KIND"); kind != "" {
		reviewCreateChild(kind)
		return
	}
	exe := selfExe(t)
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a.Place("n"), CountMinConfig{Rows: 2, Width: 1024}).Close()
	mustIn(t, OpenBloom, a.Place("after"), BloomConfig{Capacity: 10}).Close()
	room := arEntryAt(t, a, "n").Offset
	for round := range 8 {
		if err := a.Remove("n"); err != nil {
			t.Fatal(err)
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var outs [2]bytes.Buffer
		var cmds [2]*exec.Cmd
		for i, kind := range []string{"bloom", "countmin"} {
			cmd := exec.CommandContext(childContext(t), exe, "-test.run=^TestReview_RemoveCreateRaceProcesses$")
			cmd.Env = append(os.Environ(), "SKETCH_REVIEW_KIND="+kind, envPath+"="+path)
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			cmd.ExtraFiles = []*os.File{r}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds[i] = cmd
		}
		r.Close()
		time.Sleep(50 * time.Millisecond) // both open the arena, then wait on the pipe
		w.Close()                         // go
		won := map[string]int{}
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("round %d: child %d: %v\n%s", round, i, err, outs[i].String())
			}
			for _, res := range []string{"won", "incompatible"} {
				if bytes.Contains(outs[i].Bytes(), []byte("result="+res)) {
					won[res]++
				}
			}
		}
		if won["won"] != 1 || won["incompatible"] != 1 {
			t.Fatalf("round %d: results %v, want one won and one incompatible\n%s\n%s", round, won, outs[0].String(), outs[1].String())
		}
		e := arEntryAt(t, a, "n")
		if e.Offset != room {
			t.Errorf("round %d: n at %d, want the removed room at %d", round, e.Offset, room)
		}
		switch e.Kind {
		case KindBloom:
			b := mustIn(t, OpenBloom, a.Place("n"), BloomConfig{})
			if !b.ContainsString("winner") {
				t.Errorf("round %d: the filter under n lacks the winner's key", round)
			}
			b.Close()
		case KindCountMin:
			c := mustIn(t, OpenCountMin, a.Place("n"), CountMinConfig{})
			if got := c.EstimateString("winner"); got != 1 {
				t.Errorf("round %d: the sketch under n: Estimate(winner) = %d, want 1", round, got)
			}
			c.Close()
		}
		names := 0
		for _, l := range a.List() {
			if l.Name == "n" {
				names++
			}
		}
		if names != 1 {
			t.Errorf("round %d: n is listed %d times", round, names)
		}
		if err := a.Check(); err != nil {
			t.Errorf("round %d: Check = %v", round, err)
		}
	}
}

// reviewCreateChild opens the arena, waits for the parent to close the
// pipe on fd 3, creates n of its kind and prints what happened.
func reviewCreateChild(kind string) {
	a, err := OpenArena(Path(os.Getenv(envPath)), ArenaConfig{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	io.ReadAll(os.NewFile(3, "go"))
	var add func() error
	var closer io.Closer
	if kind == "bloom" {
		var b *Bloom
		if b, err = OpenBloom(a.Place("n"), BloomConfig{Capacity: 100}); err == nil {
			add, closer = func() error { _, err := b.AddString("winner"); return err }, b
		}
	} else {
		var c *CountMin
		if c, err = OpenCountMin(a.Place("n"), CountMinConfig{Rows: 2, Width: 64}); err == nil {
			add, closer = func() error { _, err := c.AddString("winner"); return err }, c
		}
	}
	switch {
	case err == nil:
		if err := add(); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		closer.Close()
		fmt.Println("result=won")
	case errors.Is(err, ErrIncompatible):
		fmt.Println("result=incompatible")
	default:
		fmt.Println("error:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// TestReview_RemoveKilledBeforeCountStep: a process killed after a
// reuse's last state store (the slot live under its new name) and before
// the change count's step leaves the count where a handle that read the
// directory during the reuse (the slot "being reused") last saw it. That
// handle must still find the new structure by its name instead of
// writing a second entry of that name, which makes every later open of
// the arena ErrCorrupt. The kill is reproduced by taking the last step
// back.
func TestReview_RemoveKilledBeforeCountStep(t *testing.T) {
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

// TestReview_RemoveKilledBeforeCountStepRemove: the same for a Remove
// killed after its state store and before the count's step: a handle
// that read the directory before sees the name gone when it looks under
// the lock (Remove again is fs.ErrNotExist) and opens the name as a new
// structure, instead of failing or opening the removed one.
func TestReview_RemoveKilledBeforeCountStepRemove(t *testing.T) {
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

// TestReview_RemoveInspect: Inspect, List, Stats and Check agree after
// removes and a reuse, with a distinct window among the structures: the
// live ones in directory order (the reused slot where the removed one
// was), the removed entry counted once, nothing else.
func TestReview_RemoveInspect(t *testing.T) {
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

// TestReview_RemoveWhileOtherMappingAdds: a goroutine adds through a
// handle opened from another arena handle of this process (its own
// mapping and descriptor, as another process has) while the name is
// removed and structures are created and removed again in a loop: none
// is created in the held room, and each counts exactly its own adds.
func TestReview_RemoveWhileOtherMappingAdds(t *testing.T) {
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

// TestReview_SnapshotAfterKilledReuse: a snapshot taken through a handle
// that read the directory during a reuse whose process was killed before
// the change count's step copies the structure the reuse made, as a
// snapshot through any other handle does, instead of leaving it out.
func TestReview_SnapshotAfterKilledReuse(t *testing.T) {
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
