//go:build linux

package sketch

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

const (
	envReadOnly = "SKETCH_TEST_READONLY" // "1": open the arena with WithReadOnly
	envName     = "SKETCH_TEST_NAME"     // the structure a child opens
	// envCreateKind is what an arenacreate child creates: "bloom" or
	// "countmin".
	envCreateKind = "SKETCH_TEST_CREATE_KIND"
)

var _ = role("arenahold", childArenaHold)

// childArenaHold opens a structure of the arena (read-only with
// envReadOnly) and holds it open: it tells the parent on fd 3 and waits
// to be killed.
func childArenaHold() error {
	var opts []Option
	if os.Getenv(envReadOnly) == "1" {
		opts = append(opts, WithReadOnly())
	}
	a, err := OpenArena(Path(os.Getenv(envPath)), ArenaConfig{}, opts...)
	if err != nil {
		return err
	}
	c, err := OpenCountMin(a.Place(os.Getenv(envName)), CountMinConfig{}, opts...)
	if err != nil {
		return err
	}
	a.Close() // the structure's handle alone holds the room
	os.NewFile(3, "ready").Write([]byte{1})
	time.Sleep(time.Hour)
	return fmt.Errorf("still holding %v", c)
}

var _ = role("arenareusekill", childArenaReuseKill)

// childArenaReuseKill creates envName, which takes a removed room, and
// stops inside the reuse (the slot rewritten, not published), holding the
// write lock: it tells the parent on fd 3 and waits to be killed.
func childArenaReuseKill() error {
	a, err := OpenArena(Path(os.Getenv(envPath)), ArenaConfig{})
	if err != nil {
		return err
	}
	arenaCreateHook = func() {
		os.NewFile(3, "ready").Write([]byte{1})
		time.Sleep(time.Hour)
	}
	_, err = OpenBloom(a.Place(os.Getenv(envName)), BloomConfig{Capacity: 100})
	return fmt.Errorf("the create returned (%v) instead of stopping", err)
}

// arChurnNames are the names the churn removes and creates.
const arChurnNames = 6

var _ = role("arenachurn", childArenaChurn)

// childArenaChurn removes and creates structures of random kinds and
// sizes under a few names, holding some open, until it is killed.
func childArenaChurn() error {
	a, err := OpenArena(Path(os.Getenv(envPath)), ArenaConfig{})
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), 3))
	var held []interface{ Close() error }
	os.NewFile(3, "ready").Write([]byte{1})
	for i := 0; ; i++ {
		name := "n" + strconv.Itoa(r.IntN(arChurnNames))
		switch r.IntN(3) {
		case 0:
			if err := a.Remove(name); err != nil && !isNotExist(err) {
				return err
			}
		case 1:
			c, err := OpenCountMin(a.Place(name), CountMinConfig{Rows: 1 + r.IntN(3), Width: 64 << r.IntN(4)})
			if err == nil {
				c.AddString("k")
				held = append(held, c)
			} else if !isIncompatible(err) {
				return err
			}
		case 2:
			b, err := OpenBloom(a.Place(name), BloomConfig{Capacity: 100 << r.IntN(5)})
			if err == nil {
				b.AddString("k")
				held = append(held, b)
			} else if !isIncompatible(err) {
				return err
			}
		}
		if len(held) > 3 {
			j := r.IntN(len(held))
			held[j].Close()
			held = slices.Delete(held, j, j+1)
		}
	}
}

func isNotExist(err error) bool     { return errors.Is(err, fs.ErrNotExist) }
func isIncompatible(err error) bool { return errors.Is(err, ErrIncompatible) }

// TestArena_RemoveHeldByProcess: a read-write handle in another process
// keeps a removed structure's room from being reused; once that process
// is killed with SIGKILL, the room is reused. A read-only one keeps
// nothing: the next create takes the room at once.
func TestArena_RemoveHeldByProcess(t *testing.T) {
	requireReexec(t)
	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("readonly=%v", ro), func(t *testing.T) {
			path := tempPath(t, "arena")
			a := mustOpenArena(t, path, 1<<20)
			mustIn(t, OpenCountMin, a.Place("victim"), CountMinConfig{Rows: 2, Width: 256}).Close()
			mustIn(t, OpenCountMin, a.Place("after"), CountMinConfig{Rows: 2, Width: 256}).Close()
			victim := arEntryAt(t, a, "victim").Offset
			if ro {
				// A reader that may only read the file holds it too.
				if err := os.Chmod(path, 0o400); err != nil {
					t.Fatal(err)
				}
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			roEnv := map[bool]string{true: "1", false: "0"}[ro]
			h := startHelper(t, childContext(t), "", "holder", "arenahold", envs(envPath, path, envName, "victim", envReadOnly, roEnv), w)
			w.Close()
			r.SetReadDeadline(time.Now().Add(childTimeout))
			if _, err := r.Read(make([]byte, 1)); err != nil {
				t.Fatalf("the holder never opened the structure: %v", err)
			}
			if ro {
				os.Chmod(path, 0o600)
			}
			if err := a.Remove("victim"); err != nil {
				t.Fatal(err)
			}
			if ro {
				arWantStats(t, a, 1, 1, 1)
				mustIn(t, OpenBloom, a.Place("x"), BloomConfig{Capacity: 10}).Close()
				if got := arEntryAt(t, a, "x").Offset; got != victim {
					t.Errorf("with a read-only handle open on the removed structure, a create went to %d, want its room at %d", got, victim)
				}
				return
			}
			arWantStats(t, a, 1, 1, 0)
			mustIn(t, OpenBloom, a.Place("x"), BloomConfig{Capacity: 10}).Close()
			if got := arEntryAt(t, a, "x").Offset; got == victim {
				t.Fatal("a create reused the room another process holds")
			}
			h.cmd.Process.Kill() // SIGKILL
			<-h.done
			arWantStats(t, a, 2, 1, 1)
			mustIn(t, OpenBloom, a.Place("y"), BloomConfig{Capacity: 10}).Close()
			if got := arEntryAt(t, a, "y").Offset; got != victim {
				t.Errorf("after the holder died, a create went to %d, want the room at %d", got, victim)
			}
			if err := a.Check(); err != nil {
				t.Errorf("Check = %v", err)
			}
		})
	}
}

// TestArena_RemoveKilledInReuse kills a process in the middle of reusing a
// room, holding the write lock: the arena opens and checks clean, the
// new name is not there, and the next create takes the room.
func TestArena_RemoveKilledInReuse(t *testing.T) {
	requireReexec(t)
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a.Place("victim"), CountMinConfig{Rows: 4, Width: 1024}).Close()
	after := mustIn(t, OpenCountMin, a.Place("after"), CountMinConfig{Rows: 2, Width: 64})
	defer after.Close()
	after.AddString("k")
	victim := arEntryAt(t, a, "victim").Offset
	if err := a.Remove("victim"); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := startHelper(t, childContext(t), "", "killed reuser", "arenareusekill", envs(envPath, path, envName, "new"), w)
	w.Close()
	r.SetReadDeadline(time.Now().Add(childTimeout))
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the child never reached the reuse: %v", err)
	}
	h.cmd.Process.Kill()
	<-h.done

	b := mustOpenArena(t, path, 0)
	for _, x := range []*Arena{a, b} {
		if err := x.Check(); err != nil {
			t.Errorf("Check after the kill = %v", err)
		}
		arNotListed(t, x, "new")
		arWantStats(t, x, 1, 1, 1)
	}
	n := mustIn(t, OpenCountMin, b.Place("new"), CountMinConfig{Rows: 1, Width: 64})
	defer n.Close()
	if got := arEntryAt(t, a, "new").Offset; got != victim {
		t.Errorf("the create after the kill went to %d, want the room at %d", got, victim)
	}
	if got := n.EstimateString("k"); got != 0 {
		t.Errorf("the new structure estimates %d, want 0", got)
	}
	if got := after.EstimateString("k"); got != 1 {
		t.Errorf("the neighbour estimates %d, want 1", got)
	}
}

// TestArena_RemoveChurnKilled kills a process that removes and creates
// structures in a loop, at random moments: every time the arena opens and
// checks clean, its names are unique, no two structures overlap, and each
// opens and checks.
func TestArena_RemoveChurnKilled(t *testing.T) {
	requireReexec(t)
	path := tempPath(t, "arena")
	mustOpenArena(t, path, 2<<20).Close()
	r := rand.New(rand.NewPCG(5, 6))
	const rounds = 8
	for round := range rounds {
		rp, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		h := startHelper(t, childContext(t), "", fmt.Sprintf("churn %d", round), "arenachurn", envs(envPath, path), w)
		w.Close()
		rp.SetReadDeadline(time.Now().Add(childTimeout))
		if _, err := rp.Read(make([]byte, 1)); err != nil {
			t.Fatalf("round %d: the child never started: %v", round, err)
		}
		rp.Close()
		time.Sleep(time.Duration(5+r.IntN(100)) * time.Millisecond)
		h.cmd.Process.Kill()
		<-h.done
		if h.err == nil || h.stderr.String() != "" {
			t.Fatalf("round %d: the churn stopped by itself: %v %s", round, h.err, h.stderr.String())
		}
		arCheckWhole(t, path)
	}
}

// TestArena_CreateRaceAfterRemove: right after a Remove, two
// processes create the name at once, one a Bloom filter and one a
// Count-Min sketch: exactly one gets it and the other ErrIncompatible, the
// name is listed once, in the removed room, with the winner's key, and the
// arena checks clean. Eight rounds.
func TestArena_CreateRaceAfterRemove(t *testing.T) {
	requireReexec(t)
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
		var hs [2]*helper
		for i, kind := range []string{"bloom", "countmin"} {
			hs[i] = startHelper(t, childContext(t), "", fmt.Sprintf("round %d: %s child", round, kind), "arenacreate",
				envs(envCreateKind, kind, envPath, path), r)
		}
		r.Close()
		time.Sleep(50 * time.Millisecond) // both open the arena, then wait on the pipe
		w.Close()                         // go
		won := map[string]int{}
		for _, h := range hs {
			h.wait(t)
			for _, res := range []string{"won", "incompatible"} {
				if bytes.Contains(h.stdout.Bytes(), []byte("result="+res)) {
					won[res]++
				}
			}
		}
		if t.Failed() {
			t.FailNow()
		}
		if won["won"] != 1 || won["incompatible"] != 1 {
			t.Fatalf("round %d: results %v, want one won and one incompatible", round, won)
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

var _ = role("arenacreate", childArenaCreate)

// childArenaCreate opens the arena, waits for the parent to close the pipe
// on fd 3, creates n of kind envCreateKind and prints what happened:
// result=won or result=incompatible.
func childArenaCreate() error {
	a, err := OpenArena(Path(os.Getenv(envPath)), ArenaConfig{})
	if err != nil {
		return err
	}
	defer a.Close()
	io.ReadAll(os.NewFile(3, "go"))
	var add func() error
	var closer io.Closer
	if os.Getenv(envCreateKind) == "bloom" {
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
			return err
		}
		closer.Close()
		fmt.Println("result=won")
	case errors.Is(err, ErrIncompatible):
		fmt.Println("result=incompatible")
	default:
		return err
	}
	return nil
}

// arCheckWhole opens the arena at path and checks it: Check, unique names,
// no overlap, every structure opens and checks.
func arCheckWhole(t *testing.T, path string) {
	t.Helper()
	a, err := OpenArena(Path(path), ArenaConfig{})
	if err != nil {
		t.Fatalf("OpenArena after the kill: %v", err)
	}
	defer a.Close()
	if err := a.Check(); err != nil {
		t.Fatalf("Check after the kill: %v", err)
	}
	list := a.List()
	seen := map[string]bool{}
	for _, e := range list {
		if seen[e.Name] {
			t.Errorf("%s is listed twice", e.Name)
		}
		seen[e.Name] = true
	}
	byOff := slices.SortedFunc(slices.Values(list), func(x, y ArenaEntry) int { return cmp.Compare(x.Offset, y.Offset) })
	for i := 1; i < len(byOff); i++ {
		if p := byOff[i-1]; p.Offset+p.Bytes > byOff[i].Offset {
			t.Errorf("%s (%d+%d) overlaps %s at %d", p.Name, p.Offset, p.Bytes, byOff[i].Name, byOff[i].Offset)
		}
	}
	for _, e := range list {
		s, err := openMetered(a.Place(e.Name), e.Kind)
		if err != nil {
			t.Errorf("open %s: %v", e.Name, err)
			continue
		}
		if c, ok := s.(interface{ Check() error }); ok {
			if err := c.Check(); err != nil {
				t.Errorf("Check of %s: %v", e.Name, err)
			}
		}
		s.Close()
	}
	st := a.Stats()
	t.Logf("%d structures, %d removed rooms (%d reusable), %d bytes free", st.Entries, st.Removed, st.Reusable, st.Free)
}
