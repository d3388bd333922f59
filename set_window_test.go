package sketch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func mustOpenSetWindow(t testing.TB, at Place, cfg SetWindowConfig, opts ...Option) *SetWindow {
	t.Helper()
	w, err := OpenSetWindow(at, cfg, opts...)
	if err != nil {
		t.Fatalf("OpenSetWindow: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func windowKeys(t testing.TB, w *SetWindow) []string {
	t.Helper()
	ks, err := w.Keys()
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	slices.Sort(out)
	return out
}

// TestSetWindow_KeysExpireWithTheirPeriod: a key is held for Keep
// periods from the one it was added in, then is new again; a key added
// again while held keeps its first period.
func TestSetWindow_KeysExpireWithTheirPeriod(t *testing.T) {
	w := mustOpenSetWindow(t, Memory(), SetWindowConfig{Window: Window{Keep: 2}, Set: SetConfig{Capacity: 10, KeyBytes: 8}})
	mustAdd := func(k string, want bool) {
		t.Helper()
		if added, err := w.AddString(k); err != nil || added != want {
			t.Fatalf("period %d: Add(%q) = %v, %v; want %v", w.Current(), k, added, err, want)
		}
	}
	mustAdd("a", true)
	mustAdd("a", false)
	w.Rotate() // period 1: a (0) still held
	mustAdd("a", false)
	mustAdd("b", true)
	if got := windowKeys(t, w); !slices.Equal(got, []string{"a", "b"}) || w.Len() != 2 {
		t.Errorf("period 1: Keys = %v, Len = %d", got, w.Len())
	}
	w.Rotate() // period 2: a left with period 0
	if w.ContainsString("a") || !w.ContainsString("b") {
		t.Errorf("period 2: Contains(a), Contains(b) = %v, %v; want false, true", w.ContainsString("a"), w.ContainsString("b"))
	}
	if got := windowKeys(t, w); !slices.Equal(got, []string{"b"}) {
		t.Errorf("period 2: Keys = %v", got)
	}
	mustAdd("a", true) // a replay after the window is new again
	if removed, _ := w.RemoveString("b"); !removed || w.ContainsString("b") {
		t.Error("Remove(b) in its window")
	}
	w.Rotate()
	w.Rotate() // period 4: a (2) left too
	if removed, _ := w.RemoveString("a"); removed {
		t.Error("Remove of an expired key = true")
	}
	if st := w.Stats(); st.Live != 0 || st.Current != 4 || st.Rotations != 4 {
		t.Errorf("Stats = %+v", st)
	}
	if err := w.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestSetWindow_ExactAgainstMap: random adds, removes and turns answer
// as a map of each key's period does.
func TestSetWindow_ExactAgainstMap(t *testing.T) {
	const keep, capacity = 3, 300
	w := mustOpenSetWindow(t, Memory(), SetWindowConfig{Window: Window{Keep: keep}, Set: SetConfig{Capacity: capacity, KeyBytes: 16}})
	ref := map[string]uint64{} // key: the period it was added in
	held := func(k string, p uint64) bool {
		q, ok := ref[k]
		return ok && q+keep > p
	}
	r := rand.New(rand.NewPCG(3, 4))
	for op := range 30000 {
		p := w.Current()
		k := fmt.Sprint("k", r.IntN(400))
		switch n := r.IntN(100); {
		case n < 2:
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		case n < 70:
			live := 0
			for k := range ref {
				if held(k, p) {
					live++
				}
			}
			added, err := w.AddString(k)
			want := !held(k, p)
			if want && live == capacity {
				if !errors.Is(err, ErrFull) {
					t.Fatalf("op %d: Add(%q) to a full window = %v, %v", op, k, added, err)
				}
				continue
			}
			if err != nil || added != want {
				t.Fatalf("op %d: Add(%q) in period %d = %v, %v; want %v", op, k, p, added, err, want)
			}
			if added {
				ref[k] = p
			}
		default:
			removed, err := w.RemoveString(k)
			if err != nil || removed != held(k, p) {
				t.Fatalf("op %d: Remove(%q) = %v, %v; want %v", op, k, removed, err, held(k, p))
			}
			delete(ref, k)
		}
		probe := fmt.Sprint("k", r.IntN(400))
		if got := w.ContainsString(probe); got != held(probe, w.Current()) {
			t.Fatalf("op %d: Contains(%q) = %v, want %v", op, probe, got, held(probe, w.Current()))
		}
	}
	if err := w.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestSetWindow_FullUntilPeriodsLeave: a full window refuses a new id
// and evicts nothing; once the periods of its ids leave the window, new
// ids fit again.
func TestSetWindow_FullUntilPeriodsLeave(t *testing.T) {
	w := mustOpenSetWindow(t, Memory(), SetWindowConfig{Window: Window{Keep: 2}, Set: SetConfig{Capacity: 20, KeyBytes: 8}})
	for i := range 20 {
		w.AddString(fmt.Sprint(i))
	}
	w.Rotate()
	if added, err := w.AddString("x"); added || !errors.Is(err, ErrFull) {
		t.Fatalf("Add to a full window = %v, %v; want ErrFull", added, err)
	}
	for i := range 20 {
		if !w.ContainsString(fmt.Sprint(i)) {
			t.Fatalf("id %d evicted", i)
		}
	}
	w.Rotate() // the ids' period left
	for i := range 20 {
		if added, err := w.AddString(fmt.Sprint("n", i)); !added || err != nil {
			t.Fatalf("Add(n%d) once the window moved on = %v, %v", i, added, err)
		}
	}
	if st := w.Stats(); st.Live != 20 || st.Held != 20 {
		t.Errorf("Stats: Live %d, Held %d; want 20, 20", st.Live, st.Held)
	}
}

// TestSetWindow_ClockPeriods: with a Period, keys expire as the clock
// turns (moved by hand: periods of an hour keep the real clock out of
// the way), and a reader's late clock follows a writer's turn.
func TestSetWindow_ClockPeriods(t *testing.T) {
	cfg := SetWindowConfig{Window: Window{Period: time.Hour, Keep: 2}, Set: SetConfig{Capacity: 10, KeyBytes: 8}}
	path := tempPath(t, "setwin")
	w := mustOpenSetWindow(t, Path(path), cfg)
	other := mustOpenSetWindow(t, Path(path), cfg)
	w.AddString("a")
	w.ctl.clk.cur.Add(1)
	if added, _ := w.AddString("b"); !added || !w.ContainsString("a") {
		t.Fatal("a left after one period")
	}
	// other's clock has not turned: it follows the period w published.
	if !other.ContainsString("b") || other.Current() != w.Current() {
		t.Errorf("the other handle: Contains(b) %v, Current %d against %d", other.ContainsString("b"), other.Current(), w.Current())
	}
	w.ctl.clk.cur.Add(1)
	if w.ContainsString("a") || !w.ContainsString("b") {
		t.Error("after two periods: a should have left, b stayed")
	}
}

// TestSetWindow_SnapshotFrozen: a snapshot keeps answering for the
// period it was taken in, however the source turns.
func TestSetWindow_SnapshotFrozen(t *testing.T) {
	w := mustOpenSetWindow(t, Memory(), SetWindowConfig{Window: Window{Keep: 2}, Set: SetConfig{Capacity: 10, KeyBytes: 8}})
	w.AddString("a")
	w.Rotate()
	w.AddString("b")
	cp, err := w.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	w.Rotate()
	w.Rotate()
	if got := windowKeys(t, cp); !slices.Equal(got, []string{"a", "b"}) || !cp.Frozen() {
		t.Errorf("snapshot Keys = %v, frozen %v", got, cp.Frozen())
	}
	if w.ContainsString("b") {
		t.Error("the source still holds b")
	}
	if _, err := cp.AddString("c"); !errors.Is(err, ErrReadOnly) && !errors.Is(err, ErrFrozen) {
		t.Errorf("Add to the snapshot = %v", err)
	}
}

// TestSetWindow_ReadersWhileWritersTurn: goroutines read while others add,
// remove and turn the window: a key added in the current period and
// never removed is found until the window turns twice past it, a key
// never added never is, and a read-only handle lists only whole keys.
func TestSetWindow_ReadersWhileWritersTurn(t *testing.T) {
	path := tempPath(t, "setwin")
	cfg := SetWindowConfig{Window: Window{Keep: 3}, Set: SetConfig{Capacity: 512, KeyBytes: 16}}
	w := mustOpenSetWindow(t, Path(path), cfg)
	ro := mustOpenSetWindow(t, Path(path), SetWindowConfig{}, WithReadOnly())
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	wg.Add(1)
	go func() { // the writer: adds, removes, a turn every 200 ops
		defer wg.Done()
		defer stop.Store(true)
		r := rand.New(rand.NewPCG(1, 1))
		for n := range 20000 {
			k := fmt.Sprint("w", r.IntN(300))
			if r.IntN(3) == 0 {
				w.RemoveString(k)
			} else if _, err := w.AddString(k); err != nil && !errors.Is(err, ErrFull) {
				errs <- err.Error()
				return
			}
			if n%200 == 0 {
				w.Rotate()
			}
		}
	}()
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				// A key of this reader's own, added in the current
				// period: found at once, whatever turns.
				k := fmt.Sprintf("r%d-%d", g, n)
				p := w.Current()
				if _, err := w.AddString(k); err != nil && !errors.Is(err, ErrFull) {
					errs <- err.Error()
					return
				} else if err == nil && !ro.ContainsString(k) && w.Current() < p+uint64(cfg.Window.Keep) {
					errs <- fmt.Sprintf("Contains(%q) = false just after its Add", k)
					return
				}
				if ro.ContainsString(fmt.Sprint("never-", n)) {
					errs <- "Contains of a key never added = true"
					return
				}
				if n%200 == 0 {
					ks, err := ro.Keys()
					if err != nil {
						errs <- err.Error()
						return
					}
					for _, k := range ks {
						if k[0] != 'w' && k[0] != 'r' {
							errs <- fmt.Sprintf("Keys listed %q, never added", k)
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if err := w.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestSet_ContainsAllocatesNothing: lookups allocate nothing.
func TestSet_ContainsAllocatesNothing(t *testing.T) {
	s := mustOpenSet(t, Memory(), SetConfig{Capacity: 100, KeyBytes: 16})
	w := mustOpenSetWindow(t, Memory(), SetWindowConfig{Window: Window{Keep: 2}, Set: SetConfig{Capacity: 100, KeyBytes: 16}})
	s.AddString("held")
	w.AddString("held")
	for _, k := range []string{"held", "absent"} {
		if n := testing.AllocsPerRun(100, func() { s.ContainsString(k); w.ContainsString(k) }); n != 0 {
			t.Errorf("Contains(%q): %v allocations", k, n)
		}
	}
}
