package main

import (
	"os"
	"testing"

	"github.com/shmsketch/sketch"
)

// TestLanesRows_EachHandleItsLane starts every lanes row of this build in
// one process, as the worker sets them all up before measuring, with
// their peers: each row's handles (in this process and its peers) hold
// lanes of a file of their own, one each while there are lanes, which a
// probe handle opened afterwards on the row's file finds taken.
func TestLanesRows_EachHandleItsLane(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t.TempDir(), self, true)
	defer e.close()
	var rows []subject
	for _, s := range lanesRows([]string{sketch.Backend}) {
		if s.Impl != "sketch" {
			continue
		}
		_, stop, err := s.start(e, 0)
		if err != nil {
			t.Fatalf("%s: start: %v", s.ID(), err)
		}
		if stop != nil {
			defer stop()
		}
		rows = append(rows, s)
	}
	for _, s := range rows {
		hs, err := e.laneHandles(s.Key)
		if err != nil {
			t.Fatal(err)
		}
		if len(hs) != s.Handles {
			t.Errorf("%s: %d handles, want %d", s.ID(), len(hs), s.Handles)
		}
		writers := s.Handles * s.Procs // read-write handles of the row's file
		lanes := map[int]bool{}
		for i, c := range hs {
			st := c.Stats()
			if want := i < s.Lanes && s.Lanes > 1; st.LaneOwned != want {
				t.Errorf("%s: handle %d owns its lane %d: %v, want %v", s.ID(), i, st.Lane, st.LaneOwned, want)
			}
			lanes[st.Lane] = true
		}
		if s.Lanes > 1 && len(lanes) != min(s.Handles, s.Lanes) {
			t.Errorf("%s: the %d handles of this process add to %d lanes, want %d", s.ID(), len(hs), len(lanes), min(s.Handles, s.Lanes))
		}
		if s.Lanes == 1 {
			continue
		}
		cfg := shapeNamed(s.Shape).config()
		cfg.Lanes = s.Lanes
		probe, err := sketch.OpenCountMin(sketch.Path(hs[0].Path()), cfg)
		if err != nil {
			t.Fatal(err)
		}
		st := probe.Stats()
		probe.Close()
		if free := writers < s.Lanes; st.LaneOwned != free || free && st.Lane != writers {
			t.Errorf("%s: a probe after %d writing handles got lane %d (claimed: %v), want a free lane %v", s.ID(), writers, st.Lane, st.LaneOwned, free)
		}
	}
}
