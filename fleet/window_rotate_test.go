package fleet

import (
	"errors"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestAddWindow_RefusesARotatedWindow: a window that turns by the clock
// but was also turned by Rotate numbers its periods Rotations ahead of
// the fleet's: synced, it would push this hour's keys into a period the
// other hosts reach only later, and pull theirs into the wrong slots.
// The agent refuses it (ErrNotSynced) as it refuses a window turned by
// Rotate only.
func TestAddWindow_RefusesARotatedWindow(t *testing.T) {
	rs := redistest.Start(t)
	a := newAgent(t, rs, "h")
	a.rotateAlike = false
	win := sketch.Window{Period: time.Hour, Keep: 3}
	bw := mustOpen(t, sketch.OpenBloomWindow, sketch.Memory(), sketch.BloomWindowConfig{Window: win, Bloom: sketch.BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 1}})
	dw := mustOpen(t, sketch.OpenDistinctWindow, sketch.Memory(), sketch.DistinctWindowConfig{Window: win, Distinct: sketch.DistinctConfig{Seed: 1}})
	if err := bw.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := dw.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBloomWindow("ids", bw); !errors.Is(err, ErrNotSynced) {
		t.Errorf("AddBloomWindow of a clock window turned by Rotate = %v, want ErrNotSynced", err)
	}
	if err := a.AddDistinctWindow("clients", dw); !errors.Is(err, ErrNotSynced) {
		t.Errorf("AddDistinctWindow of a clock window turned by Rotate = %v, want ErrNotSynced", err)
	}

	// One turned after it was added is refused from its next round on.
	bw2 := mustOpen(t, sketch.OpenBloomWindow, sketch.Memory(), sketch.BloomWindowConfig{Window: win, Bloom: sketch.BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 1}})
	if err := a.AddBloomWindow("ids2", bw2); err != nil {
		t.Fatal(err)
	}
	if err := bw2.Rotate(); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(t.Context()); !errors.Is(err, ErrMismatch) {
		t.Errorf("Sync of a window turned by Rotate after it was added = %v, want ErrMismatch", err)
	}
	if s := a.Stats(); s.State != StateRefused {
		t.Errorf("State = %s, want refused", s.State)
	}
}
