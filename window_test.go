//go:build linux

package sketch

// Tests of what every window counts for good (window.go): Adds, which
// the slots' folds keep through their clears, and Turns.

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// countsOf is what the window h's Stats say of its monotonic counts,
// through its row of testKinds.
func countsOf(t *testing.T, h any) winCounts {
	t.Helper()
	k := testKindHolding(h)
	if k == nil || k.counts == nil {
		t.Fatalf("no window: %T", h)
	}
	return k.counts(h.(testStructure))
}

// TestWindows_AddsAcrossRotations: a Rotate-driven window's Adds is every
// add since it was made, exactly, through 40 turns in which each slot is
// cleared ten times and more, while its Total only covers the window; its
// Turns are its Rotate calls.
func TestWindows_AddsAcrossRotations(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		if k.raisesOnly {
			t.Skipf("the %s counts the adds that raised a register: TestDistinctWindow_ChangesAcrossRotations", k.name)
		}
		for _, keep := range []int{1, 3} {
			t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
				w := mustOpenKind(t, k, Path(tempPath(t, "win")), Window{Keep: keep}, exactCfgs)
				var want uint64
				for turn := range 40 {
					for i := range 5 + turn%7 {
						n := uint64(1 + i%3)
						if _, err := w.addN(fmt.Appendf(nil, "k%d-%d", turn, i), n); err != nil {
							t.Fatal(err)
						}
						want += min(n, k.most) // a filter's add is one add
					}
					if turn%4 == 0 {
						keys := [][]byte{[]byte("b1"), []byte("b2"), []byte("b3")}
						if err := w.addBatch(keys, nil); err != nil {
							t.Fatal(err)
						}
						want += 3
					}
					got := countsOf(t, w.handle())
					if got.adds != want || got.turns != uint64(turn) || got.rotations != uint64(turn) {
						t.Fatalf("turn %d: Adds, Turns, Rotations = %d, %d, %d; want %d, %d, %d", turn, got.adds, got.turns, got.rotations, want, turn, turn)
					}
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
				if got := countsOf(t, w.handle()); got.adds != want || got.total >= want {
					t.Errorf("after the last turn: Adds %d, Total %d; want Adds %d and a Total below it", got.adds, got.total, want)
				}
			})
		}
	})
}

// TestWindows_AddsAndTurnsClock: a clock window's Turns count the periods
// the clock turned from the first one used, idle ones included, and a
// Rotate's; its Adds stay exact as slots are cleared. The clock is moved
// by hand, periods of an hour keeping the real one out of the way.
func TestWindows_AddsAndTurnsClock(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		w := mustOpenKind(t, k, Path(tempPath(t, "win")), Window{Period: time.Hour, Keep: 2}, exactCfgs)
		ctl := &w.base().ctl
		start := ctl.clk.cur.Load()
		var want uint64
		// Adds in periods 0, 1, 2, 5, 6 and 10 from the start (3, 4 and
		// 7 to 9 idle), then a Rotate.
		for _, step := range []uint64{0, 1, 2, 5, 6, 10} {
			ctl.clk.cur.Store(start + step)
			for i := range 50 {
				if _, err := w.addN(fmt.Appendf(nil, "s%d-%d", step, i), 1); err != nil {
					t.Fatal(err)
				}
			}
			if k.raisesOnly {
				// What the period's slot counted: the adds that raised
				// a register.
				want += ctl.slotTotal(ctl.slotOf(start + step))
			} else {
				want += 50
			}
			if got := countsOf(t, w.handle()); got.adds != want || got.turns != step || got.rotations != 0 {
				t.Fatalf("step %d: Adds, Turns, Rotations = %d, %d, %d; want %d, %d, 0", step, got.adds, got.turns, got.rotations, want, step)
			}
		}
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
		if got := countsOf(t, w.handle()); got.adds != want || got.turns != 11 || got.rotations != 1 {
			t.Errorf("after Rotate: Adds, Turns, Rotations = %d, %d, %d; want %d, 11, 1", got.adds, got.turns, got.rotations, want)
		}
		if ctl.clk.cur.Load() != start+10 {
			t.Skip("the hour turned during the test")
		}
	})
}

// TestWindows_FoldTakenOver: a clear left by a dead clearer, before or
// after its fold committed, is finished without losing or counting twice
// what the slot held: the fold is done once.
func TestWindows_FoldTakenOver(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, committed := range []bool{false, true} {
			t.Run(fmt.Sprintf("committed=%v", committed), func(t *testing.T) {
				w := mustOpenKind(t, k, Path(tempPath(t, "win")), Window{Keep: 2}, exactCfgs)
				ctl := &w.base().ctl
				for i := range 6 {
					w.addN(fmt.Appendf(nil, "old%d", i), 1) // period 0, slot 0
				}
				// Period 1; the clear ahead took slot 2, never used.
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				want := countsOf(t, w.handle()).adds
				if want != 6 {
					t.Fatalf("Adds = %d before the turn, want 6", want)
				}
				// Period 3's slot (0) holds period 0: make it look won for
				// period 3 by a dead process (a token id past the table),
				// with or without its fold. The next Rotate clears it ahead.
				s := ctl.slotOf(3)
				if committed {
					ctl.fold(s, 3)
				}
				atomic.StoreUint64(ctl.word(s), clearingWord(3, 4000))
				if got := countsOf(t, w.handle()).adds; got != want {
					t.Errorf("Adds = %d while the slot is left clearing, want %d", got, want)
				}
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				if got := atomic.LoadUint64(ctl.word(s)); got != heldWord(3) {
					t.Fatalf("slot word %#x, want held(3)", got)
				}
				w.addN([]byte("new"), 1)
				if got := countsOf(t, w.handle()).adds; got != want+1 {
					t.Errorf("Adds = %d after the takeover and one add, want %d", got, want+1)
				}
			})
		}
	})
}
