//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Lanes in a Count-Min window (CountMinConfig.Lanes): every slot keeps
// the lanes, a handle adds to one lane index in each, and every read sums
// them, so the window answers as one of one grid fed the same adds.

// mustWindowAt opens the Count-Min window at path for the test.
func mustWindowAt(t testing.TB, path string, cfg CountMinWindowConfig, opts ...Option) *CountMinWindow {
	t.Helper()
	return mustIn(t, OpenCountMinWindow, Path(path), cfg, opts...)
}

// TestCountMinWindowLanes_RotateExact: two handles of a window of lanes,
// each in a lane of its own, add by Add, AddN, AddBatch with estimates
// and blind AddBatch over many turns; every estimate (from the adds, from
// Estimate and EstimateBatch of a third, read-only handle) equals the
// reference's count over the window, as do Stats.Total and each period's
// ExportPeriods against a window of one grid fed the same adds.
func TestCountMinWindowLanes_RotateExact(t *testing.T) {
	for _, lanes := range []int{2, 4} {
		for _, keep := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("lanes=%d/keep=%d", lanes, keep), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "win")
				cfg := CountMinWindowConfig{Window: Window{Keep: keep}, CountMin: CountMinConfig{Rows: 4, Width: 1 << 14, Seed: 5, Lanes: lanes}}
				a := mustWindowAt(t, path, cfg)
				b := mustWindowAt(t, path, CountMinWindowConfig{})
				ro := mustWindowAt(t, path, CountMinWindowConfig{}, WithReadOnly())
				one := mustWindowAt(t, filepath.Join(dir, "one"), CountMinWindowConfig{Window: cfg.Window, CountMin: CountMinConfig{Rows: 4, Width: 1 << 14, Seed: 5}})
				sa, sb := a.Stats(), b.Stats()
				if sa.Lanes != lanes || !sa.LaneOwned || !sb.LaneOwned || sa.Lane == sb.Lane {
					t.Fatalf("Stats: lanes %d, lane %d (owned %v) and %d (owned %v): want %d lanes, one each", sa.Lanes, sa.Lane, sa.LaneOwned, sb.Lane, sb.LaneOwned, lanes)
				}
				ref := winRef{}
				r := rand.New(rand.NewPCG(3, uint64(lanes*10+keep)))
				const keys = 300
				for round := uint64(0); round < 10; round++ {
					first := a.ctl.first(round)
					for range 60 {
						h := []*CountMinWindow{a, b}[r.IntN(2)]
						switch op := r.IntN(4); op {
						case 0, 1:
							k := fmt.Sprintf("k%d", r.IntN(keys))
							n := uint64(r.IntN(3))
							est, err := h.AddN([]byte(k), n)
							if err != nil {
								t.Fatal(err)
							}
							one.AddN([]byte(k), n)
							ref.add(round, k, n)
							if want := ref.over(k, first, round); est != want {
								t.Fatalf("round %d: AddN(%q, %d) = %d, want %d", round, k, n, est, want)
							}
						default:
							batch := make([][]byte, 1+r.IntN(40))
							for i := range batch {
								batch[i] = fmt.Appendf(nil, "k%d", r.IntN(keys))
							}
							var est []uint64
							if op == 2 {
								est = make([]uint64, len(batch))
							}
							if err := h.AddBatch(batch, est); err != nil {
								t.Fatal(err)
							}
							one.AddBatch(batch, nil)
							for i, k := range batch {
								ref.add(round, string(k), 1)
								// The last copy of a key in the batch sees all of it.
								if est != nil && bytes.Equal(k, batch[len(batch)-1]) && i == len(batch)-1 {
									if want := ref.over(string(k), first, round); est[i] != want {
										t.Fatalf("round %d: AddBatch estimate of %q = %d, want %d", round, k, est[i], want)
									}
								}
							}
						}
					}
					all := make([][]byte, keys)
					for i := range all {
						all[i] = fmt.Appendf(nil, "k%d", i)
					}
					got := make([]uint64, keys)
					if err := ro.EstimateBatch(all, got); err != nil {
						t.Fatal(err)
					}
					for i, k := range all {
						want := ref.over(string(k), first, round)
						if e := ro.Estimate(k); e != want || got[i] != want {
							t.Fatalf("round %d: Estimate(%q) = %d, EstimateBatch %d, want %d", round, k, e, got[i], want)
						}
					}
					var total uint64
					for p := first; p <= round; p++ {
						for _, v := range ref[p] {
							total += v
						}
					}
					if st := ro.Stats(); st.Total != total || st.Adds != one.Stats().Adds {
						t.Fatalf("round %d: Stats Total %d, Adds %d; want %d, %d", round, st.Total, st.Adds, total, one.Stats().Adds)
					}
					gp, err := ro.ExportPeriods()
					if err != nil {
						t.Fatal(err)
					}
					wp, _ := one.ExportPeriods()
					if len(gp) != len(wp) {
						t.Fatalf("round %d: ExportPeriods gave %d periods, one grid's %d", round, len(gp), len(wp))
					}
					for i := range wp {
						if gp[i].Period != wp[i].Period || !bytes.Equal(gp[i].Data, wp[i].Data) {
							t.Fatalf("round %d: ExportPeriods' period %d differs from one grid's", round, wp[i].Period)
						}
					}
					if err := a.Rotate(); err != nil {
						t.Fatal(err)
					}
					if err := one.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestCountMinWindowLanes_Claims: handles past the lanes share them, a
// read-only handle claims none, the claims outlive every slot's clear
// (they are the window's, not a slot's), and a lane closed is free for
// the next handle, its counts kept.
func TestCountMinWindowLanes_Claims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "win")
	a := mustWindowAt(t, path, CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 256, Lanes: 2}})
	b := mustWindowAt(t, path, CountMinWindowConfig{})
	if ro := mustWindowAt(t, path, CountMinWindowConfig{}, WithReadOnly()); ro.Stats().LaneOwned {
		t.Error("a read-only handle claimed a lane")
	}
	for range 7 { // every slot cleared at least twice
		if err := a.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	c := mustWindowAt(t, path, CountMinWindowConfig{})
	if c.Stats().LaneOwned {
		t.Fatalf("after seven turns a third handle of two lanes owns lane %d: a clear freed a claim", c.Stats().Lane)
	}
	a.AddString("kept")
	b.AddString("kept")
	if e, _ := c.AddString("kept"); e != 3 {
		t.Errorf("three adds, one in a shared lane, read %d, want 3", e)
	}
	freed := a.Stats().Lane
	a.Close()
	d := mustWindowAt(t, path, CountMinWindowConfig{})
	if sd := d.Stats(); !sd.LaneOwned || sd.Lane != freed {
		t.Fatalf("after a Close the next handle got lane %d (owned %v), want lane %d", sd.Lane, sd.LaneOwned, freed)
	}
	if e := d.EstimateString("kept"); e != 3 {
		t.Errorf("the closed handle's lane reads %d with the others, want 3 (counts stay)", e)
	}
}

// TestCountMinWindowLanes_Config: the lanes at create and attach, in the
// config, Stats and Inspect; what is refused; and one lane keeps the
// layout of a window without lanes.
func TestCountMinWindowLanes_Config(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "win")
	win := Window{Keep: 3}
	w := mustWindowAt(t, path, CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: 2, Width: 128, Lanes: 3}})
	if got := w.Config().CountMin.Lanes; got != 3 {
		t.Errorf("Config().CountMin.Lanes = %d, want 3", got)
	}
	if got := mustWindowAt(t, path, CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Lanes: 3}}).Config().CountMin.Lanes; got != 3 {
		t.Errorf("attached with its lanes: Config().CountMin.Lanes = %d, want 3", got)
	}
	if fi := mustInspect(t, path); fi.Entries[0].Params["lanes"] != 3 {
		t.Errorf("Inspect's lanes = %v, want 3", fi.Entries[0].Params["lanes"])
	}
	for _, tc := range []struct {
		name string
		at   Place
		cfg  CountMinWindowConfig
		want error
		says string
	}{
		{"other lanes", Path(path), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Lanes: 2}}, ErrIncompatible, "asked for 2 lanes, the file has 3"},
		{"one lane asked of three", Path(path), CountMinWindowConfig{CountMin: CountMinConfig{Lanes: 1}}, ErrIncompatible, "asked for 1 lanes, the file has 3"},
		{"lanes past MaxLanes", Memory(), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Lanes: MaxLanes + 1}}, ErrInvalidConfig, "lanes"},
		{"negative lanes", Memory(), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Lanes: -1}}, ErrInvalidConfig, "lanes"},
	} {
		_, err := OpenCountMinWindow(tc.at, tc.cfg)
		if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
	}
	onePath := filepath.Join(dir, "one")
	one := mustWindowAt(t, onePath, CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: 2, Width: 128, Lanes: 1}})
	plain := mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: 2, Width: 128}})
	if one.Config().CountMin.Lanes != 0 || one.Stats().Lanes != 0 || one.m.ent.size != plain.m.ent.size {
		t.Errorf("one lane is not the layout of no lanes: config %+v, %d bytes against %d", one.Config().CountMin, one.m.ent.size, plain.m.ent.size)
	}
	if _, ok := mustInspect(t, onePath).Entries[0].Params["lanes"]; ok {
		t.Error("Inspect lists lanes for a window of one grid")
	}
	if want := countMinWindowBytes(2, 128, 3, 3, false); w.m.ent.size != want || want < plain.m.ent.size+4*2*2*128*8 {
		t.Errorf("a window of three lanes takes %d bytes, want %d: two grids more a slot than %d", w.m.ent.size, want, plain.m.ent.size)
	}
}

// TestCountMinWindowLanes_SnapshotAndMerge: the snapshot of a window of
// lanes, written by two handles, is one grid holding the lanes' sums,
// with and without a fleet part: it answers as the window did, equals
// the snapshot of a window of one grid fed the same adds, and merges
// into a plain sketch as that one does.
func TestCountMinWindowLanes_SnapshotAndMerge(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet=%v", fleet), func(t *testing.T) {
			dir := t.TempDir()
			shape := CountMinConfig{Rows: 3, Width: 1 << 12, Seed: 11, Fleet: fleet}
			laned := shape
			laned.Lanes = 3
			win := Window{Keep: 2}
			path := filepath.Join(dir, "win")
			a := mustWindowAt(t, path, CountMinWindowConfig{Window: win, CountMin: laned})
			b := mustWindowAt(t, path, CountMinWindowConfig{})
			one := mustWindowAt(t, filepath.Join(dir, "one"), CountMinWindowConfig{Window: win, CountMin: shape})
			r := rand.New(rand.NewPCG(9, 9))
			for round := range 3 {
				if fleet {
					_, counts := fleetCounts(3<<12, byte(round+1))
					for _, w := range []*CountMinWindow{a, one} {
						if ok, err := w.SetFleetPeriod(w.Current(), counts); !ok || err != nil {
							t.Fatalf("SetFleetPeriod = %v, %v", ok, err)
						}
					}
				}
				for range 500 {
					k := fmt.Appendf(nil, "k%d", r.IntN(200))
					if r.IntN(2) == 0 {
						a.Add(k)
					} else {
						b.AddBatch([][]byte{k}, nil)
					}
					one.Add(k)
				}
				if round < 2 {
					a.Rotate()
					one.Rotate()
				}
			}
			snap, ps, err := b.SnapshotCovered(Memory())
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Close()
			want, wps, err := one.SnapshotCovered(Memory())
			if err != nil {
				t.Fatal(err)
			}
			defer want.Close()
			if ps != wps {
				t.Fatalf("covered %+v, one grid's %+v", ps, wps)
			}
			if !bytes.Equal(snap.m.entryBytes(), want.m.entryBytes()) {
				t.Error("the snapshot differs from one grid's")
			}
			merged := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 3, Width: 1 << 12, Seed: 11})
			plain := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 3, Width: 1 << 12, Seed: 11})
			if err := merged.Merge(snap); err != nil {
				t.Fatal(err)
			}
			if err := plain.Merge(want); err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				k := fmt.Appendf(nil, "k%d", i)
				// A sum of the slots' row minima is at most the minimum of
				// the summed rows: equal without a fleet part, here.
				if got, w := snap.Estimate(k), a.Estimate(k); got < w || (!fleet && got != w) {
					t.Fatalf("snapshot Estimate(%q) = %d, the window says %d", k, got, w)
				}
				if got, w := merged.Estimate(k), plain.Estimate(k); got != w {
					t.Fatalf("merged Estimate(%q) = %d, one grid's merge %d", k, got, w)
				}
			}
			if err := snap.Check(); err != nil {
				t.Errorf("the snapshot's Check: %v", err)
			}
		})
	}
}

// TestCountMinWindowLanes_CoresParity: the same operations on a window of
// lanes, through each core (the C core serves the blind batches into the
// handle's lane, the Go core the rest), leave byte-identical regions and
// answers, with and without a fleet part.
func TestCountMinWindowLanes_CoresParity(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet=%v", fleet), func(t *testing.T) {
			var regions [][]byte
			var answers [][]uint64
			for _, core := range countMinCores() {
				w := openOnCore(t, Window{Keep: 2}, CountMinConfig{Rows: 3, Width: 1 << 8, Seed: 42, Fleet: fleet, Lanes: 2}, core)
				r := rand.New(rand.NewPCG(7, 7))
				var got []uint64
				for round := range 6 {
					var keys [][]byte
					for range 300 {
						keys = append(keys, []byte(fmt.Sprintf("k%d", r.IntN(1000))))
					}
					if fleet {
						_, counts := fleetCounts(3<<8, byte(round))
						if ok, err := w.SetFleetPeriod(w.ctl.current(), counts); !ok || err != nil {
							t.Fatalf("SetFleetPeriod = %v, %v", ok, err)
						}
					}
					if err := w.AddBatch(keys[:200], nil); err != nil {
						t.Fatal(err)
					}
					est := make([]uint64, 100)
					if err := w.AddBatch(keys[200:], est); err != nil {
						t.Fatal(err)
					}
					n, _ := w.AddN([]byte("n"), uint64(round)<<40)
					est2 := make([]uint64, len(keys))
					if err := w.EstimateBatch(keys, est2); err != nil {
						t.Fatal(err)
					}
					got = append(append(append(got, est...), est2...), n, w.Stats().Total)
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
				regions = append(regions, bytes.Clone(w.m.entryBytes()))
				answers = append(answers, got)
			}
			for i := 1; i < len(regions); i++ {
				if !bytes.Equal(regions[0], regions[i]) {
					t.Errorf("%s core's region differs from %s core's", countMinCores()[i].Name(), countMinCores()[0].Name())
				}
				if diff := cmp.Diff(answers[0], answers[i]); diff != "" {
					t.Errorf("%s core's answers differ from %s core's (-first +other):\n%s", countMinCores()[i].Name(), countMinCores()[0].Name(), diff)
				}
			}
		})
	}
}

// TestCountMinWindowLanes_BlindBatchesPastL2: on slots past L2, whose
// blind batches the C core adds (cgo build) to the handle's lane, two
// handles' batches read as one grid's.
func TestCountMinWindowLanes_BlindBatchesPastL2(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "win")
	win := Window{Keep: 2}
	a := mustWindowAt(t, path, CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: 2, Width: 1 << 19, Seed: 7, Lanes: 2}})
	b := mustWindowAt(t, path, CountMinWindowConfig{})
	one := mustWindowAt(t, filepath.Join(dir, "one"), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: 2, Width: 1 << 19, Seed: 7}})
	if !a.slots[0].Prefetch || a.Stats().Lane == b.Stats().Lane {
		t.Fatalf("prefetch %v, lanes %d and %d: want slots past L2 and two lanes", a.slots[0].Prefetch, a.Stats().Lane, b.Stats().Lane)
	}
	keys := make([][]byte, 600)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%d", i%250)
	}
	for round := range 3 {
		for i, h := range []*CountMinWindow{a, b, a} {
			chunk := keys[i*200 : (i+1)*200]
			if err := h.AddBatch(chunk, nil); err != nil {
				t.Fatal(err)
			}
			one.AddBatch(chunk, nil)
		}
		got, want := make([]uint64, len(keys)), make([]uint64, len(keys))
		b.EstimateBatch(keys, got)
		one.EstimateBatch(keys, want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("round %d: estimates differ from one grid's (-one +lanes):\n%s", round, diff)
		}
		a.Rotate()
		one.Rotate()
	}
}

// TestCountMinWindowLanes_GoroutinesOfOneHandle: goroutines of one handle
// adding blind batches at once claim further lanes when theirs is busy,
// and every add counts; Close frees all the handle's lanes.
func TestCountMinWindowLanes_GoroutinesOfOneHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "win")
	w := mustWindowAt(t, path, CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 1 << 10, Lanes: 4}})
	const goroutines, batches = 4, 400
	done := make(chan struct{})
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			keys := [][]byte{fmt.Appendf(nil, "g%d", g), []byte("all")}
			for range batches {
				w.AddBatch(keys, nil)
			}
		}()
	}
	for range goroutines {
		<-done
	}
	if e := w.EstimateString("all"); e != goroutines*batches {
		t.Errorf("Estimate(all) = %d, want %d", e, goroutines*batches)
	}
	w.Close()
	for j := range 4 {
		// Any handle now finds every lane free.
		h := mustWindowAt(t, path, CountMinWindowConfig{})
		if !h.Stats().LaneOwned {
			t.Fatalf("handle %d after Close owns no lane: the closed handle kept one", j)
		}
	}
}

// TestCountMinWindowLanes_Allow: requests through two handles of a
// window of lanes, each in its lane, are allowed up to the limit and no
// further, the window's count of them over their own lanes summed.
func TestCountMinWindowLanes_Allow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "win")
	a := mustWindowAt(t, path, CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 4, Width: 1 << 12, Lanes: 2}})
	b := mustWindowAt(t, path, CountMinWindowConfig{})
	const limit = 50
	for round := range 3 {
		var allowed int
		for i := range 4 * limit {
			d, err := []*CountMinWindow{a, b}[i%2].AllowString(fmt.Sprint("key", round), limit, false)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed() {
				allowed++
			}
		}
		if allowed != limit {
			t.Errorf("round %d: %d requests allowed, want %d", round, allowed, limit)
		}
		for range 2 {
			a.Rotate()
		}
	}
}

// TestCountMinWindowLanes_InAnArena: a window of lanes in an arena gives
// each of its handles a lane of its own, as a file does, and the arena's
// snapshot copies every lane of the covered slots, so that the copy
// answers as the window did.
func TestCountMinWindowLanes_InAnArena(t *testing.T) {
	dir := t.TempDir()
	ar := mustOpenArena(t, filepath.Join(dir, "arena"), 8<<20)
	cfg := CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 256, Lanes: 2}}
	a := mustIn(t, OpenCountMinWindow, ar.Place("rate"), cfg)
	b := mustIn(t, OpenCountMinWindow, ar.Place("rate"), CountMinWindowConfig{})
	if sa, sb := a.Stats(), b.Stats(); !sa.LaneOwned || !sb.LaneOwned || sa.Lane == sb.Lane {
		t.Fatalf("two handles in an arena: lanes %d (owned %v) and %d (owned %v)", sa.Lane, sa.LaneOwned, sb.Lane, sb.LaneOwned)
	}
	a.AddString("x")
	b.AddBatch([][]byte{[]byte("x"), []byte("y")}, nil)
	a.Rotate()
	b.AddString("x")
	if e := a.EstimateString("x"); e != 3 {
		t.Errorf("adds in each lane over two periods read %d, want 3", e)
	}
	if got := ar.List()[0].Config.(CountMinWindowConfig).CountMin.Lanes; got != 2 {
		t.Errorf("the arena lists %d lanes, want 2", got)
	}
	snap, err := ar.Snapshot(Path(filepath.Join(dir, "copy")))
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	c := mustIn(t, OpenCountMinWindow, snap.Place("rate"), CountMinWindowConfig{}, WithReadOnly())
	if x, y := c.EstimateString("x"), c.EstimateString("y"); x != 3 || y != 1 {
		t.Errorf("the arena's copy reads x %d, y %d; want 3 and 1", x, y)
	}
}

// TestCountMinWindowLanes_NoAllocs: a window of lanes adds and estimates
// single keys without allocating. (A blind batch copies the slot's
// locator for the lane it takes, one allocation a batch, as
// CountMin.addBlind's does.)
func TestCountMinWindowLanes_NoAllocs(t *testing.T) {
	w := mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Lanes: 2}})
	key := []byte("203.0.113.7")
	w.Add(key)
	if n := testing.AllocsPerRun(1000, func() { w.Add(key) }); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { w.Estimate(key) }); n != 0 {
		t.Errorf("Estimate allocates %v times", n)
	}
}
