//go:build linux

package sketch

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// The clear's election is the windows' shared base (window_base.go), which
// window_suite_test.go tests over the Count-Min and Bloom windows; these
// are its two cases for the distinct window, whose slots are registers.

// TestDistinctWindow_TakeOverDeadClearer: a slot left half cleared by a
// dead process (or by this one, killed in an earlier life with the same
// token) is cleared again by the next add, which then counts in it alone.
func TestDistinctWindow_TakeOverDeadClearer(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own=%v", own), func(t *testing.T) {
			w := mustIn(t, OpenDistinctWindow, Path(tempPath(t, "dw")), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 10}})
			addRange(t, w, 0, 1000) // period 0, slot 0
			for range 3 {
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			// Period 3 uses slot 0, which Rotate cleared ahead; make it
			// look half cleared by a dead process, with registers left.
			id := 4000
			if own {
				id = w.ctl.me
			}
			s := w.ctl.slotOf(3)
			atomic.StoreUint64(w.ctl.word(s), clearingWord(3, id))
			for i := range w.slots[s].M() / 8 {
				atomic.StoreUint64(w.slots[s].Word(i), 0x0505050505050505)
			}
			if err := w.AddString("new"); err != nil {
				t.Fatalf("Add after a dead clearer: %v", err)
			}
			if got := w.Count(); got != 1 {
				t.Errorf("Count = %d, want 1: the slot was not cleared", got)
			}
			if got := atomic.LoadUint64(w.ctl.word(s)); got != heldWord(3) {
				t.Errorf("slot word %#x, want held(3)", got)
			}
			if err := w.check(); err != nil {
				t.Errorf("check: %v", err)
			}
		})
	}
}

// TestDistinctWindow_WaitsForLiveClearer: a writer whose slot another live
// handle is clearing waits for it rather than adding into the clear, and
// its key is counted after.
func TestDistinctWindow_WaitsForLiveClearer(t *testing.T) {
	path := tempPath(t, "dw")
	cfg := DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 10}}
	a := mustIn(t, OpenDistinctWindow, Path(path), cfg)
	b := mustIn(t, OpenDistinctWindow, Path(path), cfg)
	addRange(t, a, 0, 500) // period 0, slot 0
	a.Rotate()
	addRange(t, a, 500, 1000) // period 1, slot 1
	a.Rotate()
	// Rotate cleared period 3's slot ahead; period 4's (1) holds period 1,
	// whose registers a clear is due to empty. b is its clearer, stopped
	// inside the clear until released.
	inside, release := make(chan struct{}), make(chan struct{})
	testHookWindowClear = func(s, p uint64) {
		if p == 4 {
			close(inside)
			<-release
		}
	}
	t.Cleanup(func() { testHookWindowClear = nil })
	go b.ctl.prepare(4, true)
	select {
	case <-inside:
	case <-time.After(patience):
		t.Fatal("the clear of period 4 did not start")
	}
	atomic.StoreUint64(a.ctl.epochWord(), 4) // turn without Rotate's own clear
	done := mustBlock(t, func() {
		if err := a.AddString("late"); err != nil {
			t.Errorf("Add that waited: %v", err)
		}
	}, 30*time.Millisecond)
	close(release)
	<-done
	if got := a.Count(); got != 1 {
		t.Errorf("Count = %d after the wait, want 1 (the periods 3 and 4 hold only the late key)", got)
	}
	if st := a.Stats().Slots[1]; st.Period != 4 {
		t.Errorf("slot 1 after the wait: %+v, want period 4", st)
	}
}
