package sketch

import (
	"path/filepath"
	"testing"
)

// TestArenaMetrics_LeavesLanes: scraping an arena opens a handle of each
// structure for its stats, and that handle never adds: it must not take
// a lane of a sketch of lanes, or a writer opened after the scrape finds
// them taken and a conservative sketch's adds become plain ones.
func TestArenaMetrics_LeavesLanes(t *testing.T) {
	for _, cu := range []bool{false, true} {
		t.Run(map[bool]string{false: "lanes", true: "conservative"}[cu], func(t *testing.T) {
			a := mustOpenArena(t, filepath.Join(t.TempDir(), "arena"), 1<<20)
			defer a.Close()
			cfg := CountMinConfig{Rows: 2, Width: 64, Lanes: 2, ConservativeUpdate: cu}
			first, err := OpenCountMin(a.Place("cm"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			first.Close() // made, then left for the scrape
			m := a.Metrics()
			m.Stats()
			hs := make([]*CountMin, 2)
			for i := range hs {
				if hs[i], err = OpenCountMin(a.Place("cm"), cfg); err != nil {
					t.Fatal(err)
				}
				defer hs[i].Close()
				if st := hs[i].Stats(); !st.LaneOwned {
					t.Errorf("writer %d after a scrape: owns no lane of %d (lane %d)", i, st.Lanes, st.Lane)
				}
			}
		})
	}
}

// TestArenaMetrics_LeavesWindowLanes is TestArenaMetrics_LeavesLanes for
// a Count-Min window of lanes.
func TestArenaMetrics_LeavesWindowLanes(t *testing.T) {
	a := mustOpenArena(t, filepath.Join(t.TempDir(), "arena"), 1<<20)
	defer a.Close()
	cfg := CountMinWindowConfig{Window: Window{Keep: 1}, CountMin: CountMinConfig{Rows: 2, Width: 64, Lanes: 2}}
	first, err := OpenCountMinWindow(a.Place("w"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	a.Metrics().Stats()
	for i := range 2 {
		w, err := OpenCountMinWindow(a.Place("w"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if st := w.Stats(); !st.LaneOwned {
			t.Errorf("writer %d after a scrape: owns no lane of %d (lane %d)", i, st.Lanes, st.Lane)
		}
	}
}
