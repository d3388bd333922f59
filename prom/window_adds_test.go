//go:build linux

package prom

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmsketch/sketch"
)

// TestArenaCollector_WindowAdds: every window's scrape has a counter that
// only grows across turns: sketch_adds_total of a Count-Min and a Bloom
// window (every add since it was made, where sketch_counted drops as
// periods leave), sketch_distinct_changes_total of a distinct window; and
// sketch_window_rotations_total counts a clock window's turns, not only
// Rotate's.
func TestArenaCollector_WindowAdds(t *testing.T) {
	a, _ := newArena(t)
	cmw, err := sketch.OpenCountMinWindow(a.Place("per-client"), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 256}})
	if err != nil {
		t.Fatal(err)
	}
	defer cmw.Close()
	bw, err := sketch.OpenBloomWindow(a.Place("recent"), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 2}, Bloom: sketch.BloomConfig{Capacity: 1000, FPRate: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Close()
	dw, err := sketch.OpenDistinctWindow(a.Place("visitors/min"), sketch.DistinctWindowConfig{Window: sketch.Window{Keep: 2}, Distinct: sketch.DistinctConfig{Precision: 8}})
	if err != nil {
		t.Fatal(err)
	}
	defer dw.Close()
	m := a.Metrics()
	defer m.Close()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewArenaCollector(m)); err != nil {
		t.Fatal(err)
	}
	var cmAdds, bwAdds float64
	last := map[series]float64{}
	for turn := range 6 {
		for i := range 10 {
			cmw.AddN(fmt.Appendf(nil, "k%d", i), 3)
			bw.AddString(fmt.Sprintf("r%d-%d", turn, i))
			dw.AddString(fmt.Sprintf("v%d-%d", turn, i))
		}
		cmAdds, bwAdds = cmAdds+30, bwAdds+10
		fams := parse(t, scrape(t, reg))
		changes := float64(dw.Stats().RegisterChanges)
		for s, want := range map[series]float64{
			{"sketch_adds_total", "per-client"}:               cmAdds,
			{"sketch_adds_total", "recent"}:                   bwAdds,
			{"sketch_distinct_changes_total", "visitors/min"}: changes,
			{"sketch_window_rotations_total", "per-client"}:   float64(turn),
			{"sketch_window_rotations_total", "recent"}:       float64(turn),
			{"sketch_window_rotations_total", "visitors/min"}: float64(turn),
		} {
			got, ok := value(t, fams, s)
			if !ok || got != want {
				t.Errorf("turn %d: %s{structure=%q} = %v (found %v), want %v", turn, s.family, s.structure, got, ok, want)
			}
			if got < last[s] {
				t.Errorf("turn %d: %s{structure=%q} dropped from %v to %v", turn, s.family, s.structure, last[s], got)
			}
			last[s] = got
		}
		// Each period's 10 keys land in 256 registers, under the arena's
		// random seed: a key that meets a register already as high
		// changes nothing, about 0.7 keys in the 60, and 3 or more in 3%
		// of runs. 9 or more misses would take odds under 1e-9.
		if changes < float64(10*(turn+1)-8) {
			t.Errorf("turn %d: %v register changes for %d new keys", turn, changes, 10*(turn+1))
		}
		if got, _ := value(t, fams, series{"sketch_counted", "per-client"}); turn >= 2 && got >= cmAdds {
			t.Errorf("turn %d: sketch_counted = %v, want below the %v adds: periods left the window", turn, got, cmAdds)
		}
		for _, r := range []interface{ Rotate() error }{cmw, bw, dw} {
			if err := r.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// A clock window turns by itself: its turns are counted as adds meet
	// them, and once frozen the count stays put for the scrape.
	clock, err := sketch.OpenCountMinWindow(a.Place("clock"), sketch.CountMinWindowConfig{Window: sketch.Window{Period: 5 * time.Millisecond, Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 64}})
	if err != nil {
		t.Fatal(err)
	}
	defer clock.Close()
	kinds["clock"] = sketch.KindCountMinWindow
	defer delete(kinds, "clock")
	var adds float64
	for deadline := time.Now().Add(time.Minute); clock.Stats().Turns < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("the clock window did not turn 3 times in a minute: %+v", clock.Stats())
		}
		clock.AddString("x")
		adds++
		time.Sleep(time.Millisecond)
	}
	if err := clock.Freeze(); err != nil {
		t.Fatal(err)
	}
	st := clock.Stats()
	fams := parse(t, scrape(t, reg))
	if got, _ := value(t, fams, series{"sketch_window_rotations_total", "clock"}); got != float64(st.Turns) || st.Rotations != 0 {
		t.Errorf("clock window: sketch_window_rotations_total = %v, want its %d turns (%d by Rotate)", got, st.Turns, st.Rotations)
	}
	if got, _ := value(t, fams, series{"sketch_adds_total", "clock"}); got != adds {
		t.Errorf("clock window: sketch_adds_total = %v, want %v", got, adds)
	}
}
