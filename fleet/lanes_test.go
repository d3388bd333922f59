package fleet

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestSync_CountMinLanes: hosts whose Count-Min sketches keep lanes (two
// writing handles each, in lanes of their own) and a fleet part sync as
// sketches of one grid do: each host pushes its lanes summed, and after a
// round of each host and another, every estimate of every host is that of
// one sketch fed every host's adds.
func TestSync_CountMinLanes(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: true, Lanes: 2, Seed: 0x1a}
	union := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Seed: 0x1a})
	var agents []*Agent
	var sketches []*sketch.CountMin
	for h := range hosts {
		path := filepath.Join(t.TempDir(), "hits")
		c := mustOpen(t, sketch.OpenCountMin, sketch.Path(path), cfg)
		second := mustOpen(t, sketch.OpenCountMin, sketch.Path(path), sketch.CountMinConfig{})
		if c.Stats().Lane == second.Stats().Lane {
			t.Fatalf("host %d: both handles in lane %d", h, c.Stats().Lane)
		}
		first, n := hostKeys(h)
		var keys [][]byte
		for i := first; i < first+n; i++ {
			keys = append(keys, []byte(key(i%4000)))
		}
		c.AddBatch(keys[:n/2], nil) // blind, each handle in its lane
		second.AddBatch(keys[n/2:], nil)
		union.AddBatch(keys, nil)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddCountMin("hits", c); err != nil {
			t.Fatal(err)
		}
		agents, sketches = append(agents, a), append(sketches, second)
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	for h, c := range sketches {
		for i := range 4000 {
			k := key(i)
			if got, want := c.EstimateString(k), union.EstimateString(k); got != want {
				t.Fatalf("host %d: Estimate(%q) = %d; one sketch fed every host's adds says %d", h, k, got, want)
			}
		}
	}
}

// TestSync_CountMinWindowLanes is TestSync_CountMinLanes for Count-Min
// windows of lanes: each host pushes its period's lanes summed, and
// after a round of each host and another, every estimate of every host is
// that of one sketch fed every host's adds.
func TestSync_CountMinWindowLanes(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinWindowConfig{Window: sketch.Window{Period: forever, Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: true, Lanes: 2, Seed: 0x1b}}
	union := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Seed: 0x1b})
	var agents []*Agent
	var wins []*sketch.CountMinWindow
	for h := range hosts {
		path := filepath.Join(t.TempDir(), "rate")
		w := mustOpen(t, sketch.OpenCountMinWindow, sketch.Path(path), cfg)
		second := mustOpen(t, sketch.OpenCountMinWindow, sketch.Path(path), sketch.CountMinWindowConfig{})
		if w.Stats().Lane == second.Stats().Lane {
			t.Fatalf("host %d: both handles in lane %d", h, w.Stats().Lane)
		}
		first, n := hostKeys(h)
		var keys [][]byte
		for i := first; i < first+n; i++ {
			keys = append(keys, []byte(key(i%4000)))
		}
		w.AddBatch(keys[:n/2], nil) // blind, each handle in its lane
		second.AddBatch(keys[n/2:], nil)
		union.AddBatch(keys, nil)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddCountMinWindow("rate", w); err != nil {
			t.Fatal(err)
		}
		agents, wins = append(agents, a), append(wins, second)
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	for h, w := range wins {
		for i := range 4000 {
			k := key(i)
			if got, want := w.EstimateString(k), union.EstimateString(k); got != want {
				t.Fatalf("host %d: Estimate(%q) = %d; one sketch fed every host's adds says %d", h, k, got, want)
			}
		}
	}
}

// TestAddFile_ClaimsNoLane: the handle the agent opens for a file of
// lanes (AddFile) stores fleet counts and exports, and claims no lane:
// two writers opened after it own a lane each, and their raises (the
// sketch has conservative update) sync as plain adds would count them.
func TestAddFile_ClaimsNoLane(t *testing.T) {
	rs := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "hits")
	mustOpen(t, sketch.OpenCountMin, sketch.Path(path), sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: true, Lanes: 2, ConservativeUpdate: true, Seed: 0x1c}).Close()
	a := newAgent(t, rs, "host0")
	if err := a.AddFile(path); err != nil {
		t.Fatal(err)
	}
	w1 := mustOpen(t, sketch.OpenCountMin, sketch.Path(path), sketch.CountMinConfig{})
	w2 := mustOpen(t, sketch.OpenCountMin, sketch.Path(path), sketch.CountMinConfig{})
	if s1, s2 := w1.Stats(), w2.Stats(); !s1.LaneOwned || !s2.LaneOwned || s1.Lane == s2.Lane {
		t.Fatalf("writers opened after the agent: lanes %d and %d, owned %v and %v; want a lane each", s1.Lane, s2.Lane, s1.LaneOwned, s2.LaneOwned)
	}
	for range 10 {
		w1.AddString("k")
		w2.AddString("k")
	}
	mustSync(t, a)
	if e := w1.EstimateString("k"); e != 20 {
		t.Errorf("k reads %d after 20 adds and a sync, want 20", e)
	}
}

// TestSync_CountMinConservative: hosts with conservative update raise
// their rows by less than they add; the agent sends each host's add total
// with its counts, so every host's error bound covers what the whole
// fleet added (it read low from the raised rows' sums before), and every
// estimate is never below the fleet's count nor above what plain adds of
// the same keys would say.
func TestSync_CountMinConservative(t *testing.T) {
	rs := redistest.Start(t)
	shape := sketch.CountMinConfig{Rows: 4, Width: 1 << 8, Seed: 0xc0}
	cfg := shape
	cfg.Fleet, cfg.ConservativeUpdate = true, true
	plain := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), shape)
	truth := map[string]uint64{}
	var agents []*Agent
	var sketches []*sketch.CountMin
	var adds uint64
	for h := range hosts {
		c := mustOpen(t, sketch.OpenCountMin, sketch.Path(filepath.Join(t.TempDir(), "hits")), cfg)
		first, n := hostKeys(h)
		var keys [][]byte
		for i := first; i < first+n; i++ {
			k := key(i % 1500)
			keys, truth[k] = append(keys, []byte(k)), truth[k]+1
		}
		if err := c.AddBatch(keys, nil); err != nil {
			t.Fatal(err)
		}
		plain.AddBatch(keys, nil)
		adds += uint64(n)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddCountMin("hits", c); err != nil {
			t.Fatal(err)
		}
		agents, sketches = append(agents, a), append(sketches, c)
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	for h, c := range sketches {
		st := c.Stats()
		if st.Total+st.FleetTotal != adds || c.ErrorBound() != plain.ErrorBound() {
			t.Errorf("host %d: Total %d + FleetTotal %d, ErrorBound %d; the fleet added %d, bound %d", h, st.Total, st.FleetTotal, c.ErrorBound(), adds, plain.ErrorBound())
		}
		for k, n := range truth {
			if got := c.EstimateString(k); got < n || got > plain.EstimateString(k) {
				t.Fatalf("host %d: Estimate(%q) = %d; the fleet counted %d, plain adds say %d", h, k, got, n, plain.EstimateString(k))
			}
		}
	}
}
