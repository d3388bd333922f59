package sketch

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// Two Closes of one handle of lanes at once: the first frees the lanes
// once no goroutine adds to them, and the second must return too, not
// wait for slots the first left taken for good. A goroutine holds a slot
// while both Closes start, so that the second gets past the handle's
// open check before the first is done.

// closeBothWhileHeld holds a slot of h, starts two Closes, gives the slot
// back and reports whether both returned within limit.
func closeBothWhileHeld(t *testing.T, h *handleLanes, take func() *laneSlot, closeFn func() error) {
	t.Helper()
	s := take()
	if s == nil {
		t.Fatal("no slot taken")
	}
	errs := make(chan error, 2)
	go func() { errs <- closeFn() }()
	for deadline := time.Now().Add(patience); !h.closed.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("the first Close did not start releasing the lanes")
		}
		time.Sleep(time.Millisecond)
	}
	second := make(chan struct{})
	go func() { close(second); errs <- closeFn() }()
	<-second
	time.Sleep(20 * time.Millisecond) // let the second Close reach the lanes
	s.put()
	for i := range 2 {
		select {
		case err := <-errs:
			if err != nil && !errors.Is(err, ErrClosed) {
				t.Errorf("Close %d = %v", i, err)
			}
		case <-time.After(patience):
			t.Fatalf("Close %d did not return within %v of the slot's release (two Closes at once)", i, patience)
		}
	}
}

func TestCountMin_CloseTwiceAtOnce(t *testing.T) {
	for _, cu := range []bool{false, true} {
		name := map[bool]string{false: "lanes", true: "conservative"}[cu]
		t.Run(name, func(t *testing.T) {
			c := mustCountMin(t, Path(filepath.Join(t.TempDir(), "cm")), CountMinConfig{Rows: 2, Width: 64, Lanes: 2, ConservativeUpdate: cu})
			closeBothWhileHeld(t, c.lanes, func() *laneSlot { return c.lanes.take(&c.l) }, c.Close)
			if _, err := c.Add([]byte("k")); !errors.Is(err, ErrClosed) {
				t.Errorf("Add after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestCountMinWindow_CloseTwiceAtOnce(t *testing.T) {
	w := mustIn(t, OpenCountMinWindow, Path(filepath.Join(t.TempDir(), "win")), CountMinWindowConfig{Window: Window{Keep: 1}, CountMin: CountMinConfig{Rows: 2, Width: 64, Lanes: 2}})
	closeBothWhileHeld(t, w.lanes, func() *laneSlot { return w.lanes.take(&w.slots[0]) }, w.Close)
}
