package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
)

// lanesCfg is the shape of the lanes tests: small enough that keys share
// counters, so a lane lost or counted twice shows in the estimates.
var lanesCfg = CountMinConfig{Rows: 4, Width: 256, Seed: 0x1a4e}

// mustCountMin opens a Count-Min sketch at a place, closed at the end.
func mustCountMin(t testing.TB, at Place, cfg CountMinConfig, opts ...Option) *CountMin {
	t.Helper()
	c, err := OpenCountMin(at, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCountMinLanes_AnswerAsOneGrid: four handles of a sketch of four
// lanes, each in a lane of its own, add by every verb; every answer
// (Estimate, its batch, Add's, Total, ExportCounts, Stats, Top's
// estimates) is the answer of one grid fed the same adds, and Check,
// Merge both ways, Snapshot and Reset keep it so.
func TestCountMinLanes_AnswerAsOneGrid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes")
	cfg := lanesCfg
	cfg.Lanes = 4
	var hs []*CountMin
	for range 4 {
		hs = append(hs, mustCountMin(t, Path(path), cfg))
	}
	seen := map[int]bool{}
	for i, h := range hs {
		if st := h.Stats(); !st.LaneOwned || seen[st.Lane] {
			t.Fatalf("handle %d: lane %d, owned %v: want a lane of its own", i, st.Lane, st.LaneOwned)
		}
		seen[h.Stats().Lane] = true
	}
	one := mustCountMin(t, Memory(), lanesCfg)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 2000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%d", rng.IntN(700))
	}
	for i := 0; i < len(keys); i += 50 {
		h, chunk := hs[(i/50)%4], keys[i:i+50]
		switch (i / 50) % 3 {
		case 0: // blind batch
			if err := h.AddBatch(chunk, nil); err != nil {
				t.Fatal(err)
			}
			one.AddBatch(chunk, nil)
		case 1: // batch with answers: each the one grid's
			got, want := make([]uint64, len(chunk)), make([]uint64, len(chunk))
			h.AddBatch(chunk, got)
			one.AddBatch(chunk, want)
			if !slicesEqual(got, want) {
				t.Fatalf("AddBatch's estimates differ from one grid's:\n%v\n%v", got, want)
			}
		default:
			for _, k := range chunk {
				got, _ := h.AddN(k, 3)
				if want, _ := one.AddN(k, 3); got != want {
					t.Fatalf("AddN(%q) = %d, one grid says %d", k, got, want)
				}
			}
		}
	}
	lanesAsOne(t, "after the adds", hs[0], one, keys)
	for _, h := range hs {
		if err := h.Check(); err != nil {
			t.Fatalf("Check: %v", err)
		}
	}

	// Merged into a sketch of one grid, and one grid into the lanes.
	into := mustCountMin(t, Memory(), lanesCfg)
	if err := into.Merge(hs[1]); err != nil {
		t.Fatal(err)
	}
	lanesAsOne(t, "merged into one grid", into, one, keys)
	other := mustCountMin(t, Memory(), lanesCfg)
	other.AddBatch(keys[:300], nil)
	if err := hs[2].Merge(other); err != nil {
		t.Fatal(err)
	}
	one.Merge(other)
	lanesAsOne(t, "one grid merged in", hs[0], one, keys)

	snap, err := hs[3].Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if snap.Config().Lanes != 4 {
		t.Errorf("the snapshot keeps %d lanes, want 4", snap.Config().Lanes)
	}
	lanesAsOne(t, "a snapshot", snap, one, keys)

	if err := hs[1].Reset(); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if e := hs[0].Estimate(k); e != 0 {
			t.Fatalf("after Reset, Estimate(%q) = %d", k, e)
		}
	}
}

// lanesAsOne checks that the laned sketch c answers as the one grid one.
func lanesAsOne(t *testing.T, when string, c, one *CountMin, keys [][]byte) {
	t.Helper()
	got, want := make([]uint64, len(keys)), make([]uint64, len(keys))
	c.EstimateBatch(keys, got)
	one.EstimateBatch(keys, want)
	for i, k := range keys {
		if got[i] != want[i] || c.Estimate(k) != want[i] {
			t.Fatalf("%s: Estimate(%q) = %d (batch %d), one grid %d", when, k, c.Estimate(k), got[i], want[i])
		}
	}
	if c.Total() != one.Total() {
		t.Errorf("%s: Total %d, one grid %d", when, c.Total(), one.Total())
	}
	if s, o := c.Stats(), one.Stats(); s.Total != o.Total || s.ErrorBound != o.ErrorBound {
		t.Errorf("%s: Stats total %d, bound %d; one grid %d, %d", when, s.Total, s.ErrorBound, o.Total, o.ErrorBound)
	}
	ge, err := c.ExportCounts()
	if err != nil {
		t.Fatal(err)
	}
	we, _ := one.ExportCounts()
	if !bytes.Equal(ge, we) {
		t.Errorf("%s: ExportCounts differs from one grid's", when)
	}
}

// TestCountMinLanes_Claims: handles past the lanes share them, a lane
// closed is free for the next handle, and a read-only handle claims none.
func TestCountMinLanes_Claims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes")
	cfg := lanesCfg
	cfg.Lanes = 2
	a := mustCountMin(t, Path(path), cfg)
	b := mustCountMin(t, Path(path), CountMinConfig{})
	sa, sb := a.Stats(), b.Stats()
	if !sa.LaneOwned || !sb.LaneOwned || sa.Lane == sb.Lane {
		t.Fatalf("two handles of two lanes: lanes %d and %d, owned %v and %v", sa.Lane, sb.Lane, sa.LaneOwned, sb.LaneOwned)
	}
	ro := mustCountMin(t, Path(path), CountMinConfig{}, WithReadOnly())
	if ro.Stats().LaneOwned {
		t.Error("a read-only handle claimed a lane")
	}
	c := mustCountMin(t, Path(path), CountMinConfig{})
	if c.Stats().LaneOwned {
		t.Fatalf("a third handle of two lanes owns lane %d", c.Stats().Lane)
	}
	c.AddString("shared")
	if e := ro.EstimateString("shared"); e != 1 {
		t.Errorf("an add to a shared lane reads %d, want 1", e)
	}
	freed := sa.Lane
	a.AddString("kept")
	a.Close()
	d := mustCountMin(t, Path(path), CountMinConfig{})
	if sd := d.Stats(); !sd.LaneOwned || sd.Lane != freed {
		t.Fatalf("after a Close the next handle got lane %d (owned %v), want lane %d", sd.Lane, sd.LaneOwned, freed)
	}
	if e := d.EstimateString("kept"); e != 1 {
		t.Errorf("the closed handle's lane reads %d for its add, want 1 (counts stay)", e)
	}
	if s := d.Stats(); s.Lanes != 2 {
		t.Errorf("Stats().Lanes = %d, want 2", s.Lanes)
	}
}

// TestCountMinLanes_Config: the config's lanes at create and attach,
// Inspect's parameter, and what is refused.
func TestCountMinLanes_Config(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lanes")
	cfg := lanesCfg
	cfg.Lanes = 3
	c := mustCountMin(t, Path(path), cfg)
	if got := c.Config().Lanes; got != 3 {
		t.Errorf("Config().Lanes = %d, want 3", got)
	}
	fi := mustInspect(t, path)
	if fi.Entries[0].Params["lanes"] != 3 {
		t.Errorf("Inspect's lanes = %v", fi.Entries[0].Params["lanes"])
	}
	for _, tc := range []struct {
		name string
		at   Place
		cfg  CountMinConfig
		want error
	}{
		{"other lanes on attach", Path(path), CountMinConfig{Lanes: 2}, ErrIncompatible},
		{"one lane asked of three", Path(path), CountMinConfig{Lanes: 1}, ErrIncompatible},
		{"lanes past MaxLanes", Memory(), CountMinConfig{Lanes: MaxLanes + 1}, ErrInvalidConfig},
		{"negative lanes", Memory(), CountMinConfig{Lanes: -1}, ErrInvalidConfig},
	} {
		if _, err := OpenCountMin(tc.at, tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	one := mustCountMin(t, Path(filepath.Join(dir, "one")), CountMinConfig{Rows: 2, Width: 64, Lanes: 1})
	if one.Config().Lanes != 0 || mustInspect(t, filepath.Join(dir, "one")).Entries[0].Params["lanes"] != 0 {
		t.Errorf("one lane is not today's layout: config %+v", one.Config())
	}
	four, _ := (CountMinConfig{Rows: 4, Width: 4096, Lanes: 4}).Bytes()
	single, _ := (CountMinConfig{Rows: 4, Width: 4096}).Bytes()
	if four < single+3*4*4096*8 {
		t.Errorf("four lanes of 4 x 4096 take %d bytes, one %d: not three grids more", four, single)
	}
}

// TestCountMinLanes_BlindBatchesPastL2: on a sketch past L2, whose blind
// batches the C core adds (cgo build) to the handle's lane, two handles'
// batches read as one grid's.
func TestCountMinLanes_BlindBatchesPastL2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes")
	cfg := CountMinConfig{Rows: 2, Width: 1 << 19, Seed: 7, Lanes: 2}
	a := mustCountMin(t, Path(path), cfg)
	b := mustCountMin(t, Path(path), CountMinConfig{})
	if !a.l.Prefetch || a.Stats().Lane == b.Stats().Lane {
		t.Fatalf("prefetch %v, lanes %d and %d: want a grid past L2 and two lanes", a.l.Prefetch, a.Stats().Lane, b.Stats().Lane)
	}
	one := mustCountMin(t, Memory(), CountMinConfig{Rows: 2, Width: 1 << 19, Seed: 7})
	keys := make([][]byte, 600)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%d", i%250)
	}
	for i, h := range []*CountMin{a, b, a} {
		chunk := keys[i*200 : (i+1)*200]
		if err := h.AddBatch(chunk, nil); err != nil {
			t.Fatal(err)
		}
		one.AddBatch(chunk, nil)
	}
	lanesAsOne(t, "blind batches", b, one, keys)
}

// TestCountMinLanes_InAnArena: a sketch of lanes in an arena gives each
// of its handles a lane of its own, as a file does.
func TestCountMinLanes_InAnArena(t *testing.T) {
	ar := mustOpenArena(t, filepath.Join(t.TempDir(), "arena"), 8<<20)
	cfg := lanesCfg
	cfg.Seed = 0 // the arena's
	cfg.Lanes = 2
	a := mustCountMin(t, ar.Place("hits"), cfg)
	b := mustCountMin(t, ar.Place("hits"), CountMinConfig{})
	if sa, sb := a.Stats(), b.Stats(); !sa.LaneOwned || !sb.LaneOwned || sa.Lane == sb.Lane {
		t.Fatalf("two handles in an arena: lanes %d (owned %v) and %d (owned %v)", sa.Lane, sa.LaneOwned, sb.Lane, sb.LaneOwned)
	}
	a.AddString("x")
	b.AddString("x")
	if e := a.EstimateString("x"); e != 2 {
		t.Errorf("an add in each lane reads %d, want 2", e)
	}
	if got := ar.List()[0].Config.(CountMinConfig).Lanes; got != 2 {
		t.Errorf("the arena lists %d lanes, want 2", got)
	}
}

// TestCountMinLanes_GoroutinesOfOneHandle: a blind batch that finds the
// handle's lane busy (another goroutine's batch in it) goes to a lane the
// handle claims then, and Close frees every lane it claimed; goroutines
// racing on one handle count exactly.
func TestCountMinLanes_GoroutinesOfOneHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes")
	cfg := lanesCfg
	cfg.Lanes = 3
	c := mustCountMin(t, Path(path), cfg)
	first := c.Stats().Lane
	// Hold the handle's lane as a goroutine's batch would.
	held := c.lanes.take(&c.l)
	if held == nil || held.lane != first {
		t.Fatalf("took %v, want the first lane %d", held, first)
	}
	for range 64 {
		if err := c.AddBatch([][]byte{[]byte("x")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	held.busy.Store(0)
	slots := *c.lanes.slots.Load()
	if len(slots) != 2 || slots[1].tag == 0 || slots[1].lane == first {
		t.Fatalf("after batches that found its lane busy the handle holds %d lanes", len(slots))
	}
	if e := c.EstimateString("x"); e != 64 {
		t.Errorf("x reads %d after 64 adds", e)
	}
	// Racing goroutines: exact.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			keys := [][]byte{fmt.Appendf(nil, "g%d", g), []byte("all")}
			for range 500 {
				c.AddBatch(keys, nil)
			}
		})
	}
	wg.Wait()
	for g := range 4 {
		if e := c.EstimateString(fmt.Sprint("g", g)); e < 500 {
			t.Errorf("g%d reads %d after 500 adds", g, e)
		}
	}
	if e := c.EstimateString("all"); e < 2000 {
		t.Errorf("all reads %d after 2000 adds", e)
	}
	if tot := c.Stats().Total; tot != 64+4000 {
		t.Errorf("total %d, want %d", tot, 64+4000)
	}
	c.Close()
	// Every lane it held is free: three new handles own three lanes.
	for i := range 3 {
		if st := mustCountMin(t, Path(path), CountMinConfig{}).Stats(); !st.LaneOwned {
			t.Errorf("handle %d after the Close shares a lane", i)
		}
	}
}

// TestCountMinLanes_WithAFleetPart: a sketch of lanes keeps its fleet part
// after the last lane; every answer is its lanes plus the fleet part, one
// grid's fed this host's adds and the fleet's; ExportCounts is the lanes
// summed, without the fleet part, and Stats keep the two totals apart.
func TestCountMinLanes_WithAFleetPart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes")
	cfg := lanesCfg
	cfg.Lanes, cfg.Fleet = 2, true
	a := mustCountMin(t, Path(path), cfg)
	b := mustCountMin(t, Path(path), CountMinConfig{})
	other := mustCountMin(t, Memory(), lanesCfg) // another host's adds
	mine := mustCountMin(t, Memory(), lanesCfg)  // this host's, in one grid
	one := mustCountMin(t, Memory(), lanesCfg)   // both
	keys := make([][]byte, 600)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%d", i%350)
	}
	other.AddBatch(keys[:300], nil)
	one.AddBatch(keys[:300], nil)
	theirs, _ := other.ExportCounts()
	if err := a.SetFleetCounts(theirs); err != nil {
		t.Fatal(err)
	}
	for i, h := range []*CountMin{a, b} {
		chunk := keys[300+i*150 : 450+i*150]
		h.AddBatch(chunk, nil)
		mine.AddBatch(chunk, nil)
		one.AddBatch(chunk, nil)
	}
	k := []byte("k7")
	got, _ := b.AddN(k, 5)
	mine.AddN(k, 5)
	if want, _ := one.AddN(k, 5); got != want {
		t.Fatalf("AddN's estimate %d, one grid of both hosts' adds %d", got, want)
	}
	for _, k := range keys {
		if got, want := a.Estimate(k), one.Estimate(k); got != want {
			t.Fatalf("Estimate(%q) = %d, one grid of both hosts' adds %d", k, got, want)
		}
	}
	exp, _ := a.ExportCounts()
	want, _ := mine.ExportCounts()
	if !bytes.Equal(exp, want) {
		t.Error("ExportCounts is not this host's lanes summed")
	}
	if s, o, m := a.Stats(), other.Stats(), mine.Stats(); s.Total != m.Total || s.FleetTotal != o.Total {
		t.Errorf("Stats: total %d, fleet total %d; want %d and %d", s.Total, s.FleetTotal, m.Total, o.Total)
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCountMinLanes_WithoutLane: a handle opened WithoutLane claims no
// lane, at open or when its blind batches find its lane busy, so writers
// opened after it own every lane; its adds count, in a lane shared with
// its owner (plain) or in the shared lane (conservative update).
func TestCountMinLanes_WithoutLane(t *testing.T) {
	for _, conservative := range []bool{false, true} {
		t.Run(fmt.Sprint("conservative=", conservative), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lanes")
			cfg := lanesCfg
			cfg.Lanes, cfg.ConservativeUpdate = 2, conservative
			quiet := mustCountMin(t, Path(path), cfg, WithoutLane())
			held := quiet.lanes.take(&quiet.l) // as a goroutine's batch would
			for range 130 {
				if err := quiet.AddBatch([][]byte{[]byte("q")}, nil); err != nil {
					t.Fatal(err)
				}
			}
			held.put()
			if st := quiet.Stats(); st.LaneOwned || len(*quiet.lanes.slots.Load()) != 1 {
				t.Fatalf("a handle WithoutLane owns lane %d (owned %v), holds %d slots", st.Lane, st.LaneOwned, len(*quiet.lanes.slots.Load()))
			}
			a, b := mustCountMin(t, Path(path), CountMinConfig{}), mustCountMin(t, Path(path), CountMinConfig{})
			if sa, sb := a.Stats(), b.Stats(); !sa.LaneOwned || !sb.LaneOwned || sa.Lane == sb.Lane {
				t.Fatalf("writers after it: lanes %d and %d, owned %v and %v; want one each", sa.Lane, sb.Lane, sa.LaneOwned, sb.LaneOwned)
			}
			quiet.AddString("q")
			a.AddString("q")
			if e := b.EstimateString("q"); e != 132 {
				t.Errorf("q reads %d after 132 adds", e)
			}
		})
	}
}
