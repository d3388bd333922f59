package main

import (
	"math"
	"os"
	"strings"
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

// TestLanesTable checks the table's labels and that its ratios are
// throughputs over one writer's on a file of as many lanes, round by
// round, beside the floor's.
func TestLanesTable(t *testing.T) {
	res := &results{Samples: map[string][]float64{}}
	set := func(k Key, xs ...float64) { res.Samples[k.String()] = xs }
	set(lanesKey("cgo", 2, 1, 1, 1), 10, 20, 10)
	set(writerKinds[0].key("cgo", 2, 2), 5, 10, 4)
	set(floorGridsKey(1), 8, 8, 8)
	set(floorGridsKey(4), 4, 2, math.NaN())
	v := &view{res: res, builds: map[string]bool{"cgo": true}}
	got := v.lanesTable().String()
	for _, want := range []string{
		"| blind `AddBatch` ×64, zipf keys, default shape | 1 lane (no lanes) | 2 lanes | 4 lanes | bare floor, a grid a writer |\n",
		"| one writer, ns per key, cgo build | – | 10.0 (10.0–20.0) | – | 8.00 (8.00–8.00) |\n",
		"| 2 processes, a handle each, throughput ×, cgo build | – | 2.00x (2.00–2.50) | – | – |\n",
		"| 4 goroutines of one handle, throughput ×, cgo build | – | – | – | 2.67x (2.00–4.00) |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lanesTable lacks\n%s\nin\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 2+1+6 {
		t.Errorf("lanesTable has %d lines, want %d:\n%s", n, 2+1+6, got)
	}
}
