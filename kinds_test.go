package sketch

// The test kinds table: every kind of structure, one row each, as the
// tests that hold for every kind drive it (place, seed, freeze, stats,
// inspect, fuzz-open). It is kinds.go's table for the tests, and
// TestKinds_EveryKind keeps the two in step: a new kind is one row here.

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"
)

// testStructure is a structure of any kind: what every kind's Handle
// gives.
type testStructure interface {
	Close() error
	Check() error
	Freeze() error
	Frozen() bool
	ReadOnly() bool
	Seed() uint64
	Path() string
	Sync() error
	StatsVar() StatsVar
	String() string
}

// testKind is one kind of structure as the tests drive it.
type testKind struct {
	name   string // the type's name, which String shows: "CountMin"
	kind   Kind   // its listings' name: "countmin"
	window bool   // a window (Rotate, Current, periods)
	// open opens one of the kind at a place with a small config (a few
	// KiB; a window of Keep 2, turned by Rotate only), whose Seed is seed
	// (0: none, as the options say).
	open func(at Place, seed uint64, opts ...Option) (testStructure, error)
	// openZero opens one with the zero config, which attaches to what is
	// stored (and creates only where the zero config has a default
	// shape).
	openZero func(at Place, opts ...Option) (testStructure, error)
	// add adds key once.
	add func(s testStructure, key []byte) error
	// exercise calls the kind's operations once each, whatever state the
	// file is in: their errors are not judged, only that they return (the
	// fuzz and corruption tests use it on damaged files).
	exercise func(t testing.TB, s testStructure)
	// counts is what a window's Stats say of its monotonic counts (nil
	// for a kind that is no window).
	counts func(s testStructure) winCounts
	// holds says whether s is a structure of the kind.
	holds func(s any) bool
}

// winCounts is what a window's Stats say of its monotonic counts: Adds
// (a distinct window's RegisterChanges) and Turns, with Rotations and
// Total (what the window covers: a Bloom window's adds of its periods, a
// distinct window's estimate).
type winCounts struct{ adds, turns, rotations, total uint64 }

// testKindOf makes a row from the kind's constructor, its small config
// for a seed, and its verbs; counts is nil unless the kind is a window.
func testKindOf[S testStructure, C any](name string, kind Kind, window bool,
	open func(Place, C, ...Option) (S, error), small func(seed uint64) C,
	add func(S, []byte) error, exercise func(testing.TB, S), counts func(S) winCounts) testKind {
	asTest := func(s S, err error) (testStructure, error) {
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	k := testKind{name: name, kind: kind, window: window,
		open: func(at Place, seed uint64, opts ...Option) (testStructure, error) {
			return asTest(open(at, small(seed), opts...))
		},
		openZero: func(at Place, opts ...Option) (testStructure, error) {
			var zero C
			return asTest(open(at, zero, opts...))
		},
		add:      func(s testStructure, key []byte) error { return add(s.(S), key) },
		exercise: func(t testing.TB, s testStructure) { exercise(t, s.(S)) },
		holds:    func(s any) bool { _, ok := s.(S); return ok },
	}
	if counts != nil {
		k.counts = func(s testStructure) winCounts { return counts(s.(S)) }
	}
	return k
}

// testWin is the small configs' window: two periods kept, turned by
// Rotate only.
var testWin = Window{Keep: 2}

// exerciseKeys are the keys exercise adds and asks in batches.
var exerciseKeys = [][]byte{[]byte("k0"), []byte("k1"), []byte("k2"), []byte("k3"), []byte("k4"), []byte("k5"), []byte("k6"), []byte("k7"), []byte("k8")}

// testKinds is every kind, in the order of their kind numbers.
var testKinds = []testKind{
	testKindOf("CountMin", KindCountMin, false, OpenCountMin,
		func(seed uint64) CountMinConfig { return CountMinConfig{Rows: 2, Width: 64, Seed: seed} },
		func(c *CountMin, k []byte) error { _, err := c.Add(k); return err },
		func(_ testing.TB, c *CountMin) {
			c.Add([]byte("x"))
			c.AddN([]byte("y"), 3)
			c.AddString("z")
			est := make([]uint64, len(exerciseKeys))
			c.AddBatch(exerciseKeys, est)
			c.EstimateBatch(exerciseKeys, est)
			c.Estimate([]byte("x"))
			c.EstimateString("y")
			c.Stats()
			c.Check()
			c.Merge(c)
			c.Top(0)
		}, nil),
	testKindOf("Bloom", KindBloom, false, OpenBloom,
		func(seed uint64) BloomConfig { return BloomConfig{Capacity: 100, Seed: seed} },
		func(b *Bloom, k []byte) error { _, err := b.Add(k); return err },
		func(t testing.TB, b *Bloom) {
			b.AddString("x")
			b.AddBatch(exerciseKeys, make([]bool, len(exerciseKeys)))
			if !b.ContainsString("x") && !b.Frozen() && !b.ReadOnly() {
				t.Error("Bloom: Check(x) = false after Add(x)")
			}
			b.ContainsBatch(exerciseKeys, make([]bool, len(exerciseKeys)))
			b.Stats()
			b.Merge(b)
			b.Reset()
		}, nil),
	testKindOf("CountingBloom", KindCountingBloom, false, OpenCountingBloom,
		func(seed uint64) CountingBloomConfig { return CountingBloomConfig{Capacity: 100, Seed: seed} },
		func(b *CountingBloom, k []byte) error { _, err := b.Add(k); return err },
		func(_ testing.TB, b *CountingBloom) {
			b.AddString("x")
			b.AddBatch(exerciseKeys, nil)
			b.ContainsString("x")
			b.EstimateString("k1")
			b.RemoveString("x")
			b.Stats()
			b.Merge(b)
			b.Reset()
		}, nil),
	testKindOf("CountMinWindow", KindCountMinWindow, true, OpenCountMinWindow,
		func(seed uint64) CountMinWindowConfig {
			return CountMinWindowConfig{Window: testWin, CountMin: CountMinConfig{Rows: 2, Width: 64, Seed: seed}}
		},
		func(w *CountMinWindow, k []byte) error { _, err := w.Add(k); return err },
		func(_ testing.TB, w *CountMinWindow) {
			w.AddN([]byte("x"), 2)
			w.AddString("y")
			est := make([]uint64, len(exerciseKeys))
			w.AddBatch(exerciseKeys, est)
			w.EstimateBatch(exerciseKeys, est)
			w.EstimateString("x")
			w.Current()
			w.Stats()
			w.Rotate()
			w.Estimate([]byte("y"))
			w.AddString("y")
			w.Top(0)
			w.TopCovered(1)
			w.Check()
		}, func(w *CountMinWindow) winCounts {
			s := w.Stats()
			return winCounts{s.Adds, s.Turns, s.Rotations, s.Total}
		}),
	testKindOf("BloomWindow", KindBloomWindow, true, OpenBloomWindow,
		func(seed uint64) BloomWindowConfig {
			return BloomWindowConfig{Window: testWin, Bloom: BloomConfig{Capacity: 100, Seed: seed}}
		},
		func(w *BloomWindow, k []byte) error { _, err := w.Add(k); return err },
		func(_ testing.TB, w *BloomWindow) {
			w.AddString("x")
			w.AddBatch(exerciseKeys, make([]bool, len(exerciseKeys)))
			w.ContainsString("x")
			w.ContainsBatch(exerciseKeys, make([]bool, len(exerciseKeys)))
			w.Current()
			w.Stats()
			w.Rotate()
			w.Contains([]byte("y"))
		}, func(w *BloomWindow) winCounts {
			s := w.Stats()
			var total uint64
			for _, sl := range s.Slots {
				if sl.State == "current" || sl.State == "window" {
					total += sl.Adds
				}
			}
			return winCounts{s.Adds, s.Turns, s.Rotations, total}
		}),
	testKindOf("Distinct", KindDistinct, false, OpenDistinct,
		func(seed uint64) DistinctConfig { return DistinctConfig{Precision: 8, Seed: seed} },
		(*Distinct).Add,
		func(_ testing.TB, d *Distinct) {
			d.AddString("x")
			d.Add([]byte("y"))
			d.AddBatch(exerciseKeys)
			d.Count()
			d.Stats()
			d.ExportRedis()
			d.Merge(d)
			d.Reset()
		}, nil),
	testKindOf("DistinctWindow", KindDistinctWindow, true, OpenDistinctWindow,
		func(seed uint64) DistinctWindowConfig {
			return DistinctWindowConfig{Window: testWin, Distinct: DistinctConfig{Precision: 8, Seed: seed}}
		},
		(*DistinctWindow).Add,
		func(_ testing.TB, w *DistinctWindow) {
			w.AddString("x")
			w.Add([]byte("y"))
			w.AddBatch(exerciseKeys)
			w.Count()
			w.Stats()
			w.ExportRedis()
			w.Rotate()
			w.CountCovered()
			if d, err := w.Snapshot(Memory()); err == nil {
				d.Count()
				d.Close()
			}
		}, func(w *DistinctWindow) winCounts {
			s := w.Stats()
			return winCounts{s.RegisterChanges, s.Turns, s.Rotations, uint64(math.Round(s.Estimate))}
		}),
	testKindOf("GCRA", KindGCRA, false, OpenGCRA,
		func(seed uint64) GCRAConfig {
			return GCRAConfig{Rate: Rate{Count: 10, Per: time.Second}, Burst: 5, Rows: 2, Width: 64, Seed: seed}
		},
		func(g *GCRA, k []byte) error { _, err := g.Allow(k, 1); return err },
		func(_ testing.TB, g *GCRA) {
			g.AllowString("x", 1)
			g.Allow([]byte("y"), 0)
			g.AllowAt([]byte("y"), 2, time.Unix(0, 1))
			g.AllowBatch(exerciseKeys, 1, make([]RateDecision, len(exerciseKeys)))
			g.Stats()
			g.Merge(g)
			g.Reset()
		}, nil),
	testKindOf("Counters", KindCounters, false, OpenCounters,
		func(seed uint64) CountersConfig { return CountersConfig{Names: testCounterNames, Seed: seed} },
		func(c *Counters, k []byte) error { return c.Add(testCounterName(k), 1) },
		func(_ testing.TB, c *Counters) {
			c.Add("200", 1)
			c.Add("nope", 1)
			if k, err := c.Counter("404"); err == nil {
				k.Add(2)
				k.Value()
			}
			c.Value("500")
			c.Values()
			c.Stats()
			if s, err := c.Snapshot(Memory()); err == nil {
				c.Merge(s)
				s.Close()
			}
			c.Reset()
		}, nil),
	testKindOf("Set", KindSet, false, OpenSet,
		func(seed uint64) SetConfig { return SetConfig{Capacity: 100, KeyBytes: 16, Seed: seed} },
		func(s *Set, k []byte) error { _, err := s.Add(k); return err },
		func(_ testing.TB, s *Set) {
			s.AddString("x")
			s.Add([]byte("y"))
			s.ContainsString("x")
			s.Contains([]byte("y"))
			s.RemoveString("x")
			s.Keys()
			s.Len()
			s.Stats()
			s.Merge(s)
			s.Reset()
		}, nil),
	testKindOf("SetWindow", KindSetWindow, true, OpenSetWindow,
		func(seed uint64) SetWindowConfig {
			return SetWindowConfig{Window: testWin, Set: SetConfig{Capacity: 100, KeyBytes: 16, Seed: seed}}
		},
		func(w *SetWindow, k []byte) error { _, err := w.Add(k); return err },
		func(_ testing.TB, w *SetWindow) {
			w.AddString("x")
			w.Add([]byte("y"))
			w.ContainsString("x")
			w.Rotate()
			w.Contains([]byte("y"))
			w.RemoveString("x")
			w.Keys()
			w.Len()
			w.Current()
			w.Stats()
		}, func(w *SetWindow) winCounts {
			s := w.Stats()
			return winCounts{s.Adds, s.Turns, s.Rotations, s.Live}
		}),
}

// testCounterNames are the counters of the tables' counters structures.
var testCounterNames = []string{"200", "404", "500", "other"}

// testCounterName is the counter a table's key adds to: a key named
// for one, else "other".
func testCounterName(k []byte) string {
	for _, name := range testCounterNames {
		if string(k) == name {
			return name
		}
	}
	return "other"
}

// kindNumbers is the kinds table's numbers in order: testKinds' rows
// are theirs, row by row. A number may be missing (a kind being added on
// another branch).
func kindNumbers() []uint32 {
	ns := make([]uint32, 0, len(kinds))
	for n := range kinds {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// testKindHolding is the row of the kind s is, nil when testKinds lacks
// it.
func testKindHolding(s any) *testKind {
	for i := range testKinds {
		if testKinds[i].holds(s) {
			return &testKinds[i]
		}
	}
	return nil
}

// testKindFor is the row of kind k, nil when testKinds lacks it.
func testKindFor(k Kind) *testKind {
	for i := range testKinds {
		if testKinds[i].kind == k {
			return &testKinds[i]
		}
	}
	return nil
}

// mustOpenTestKind opens one of kind k at a place with its small config for
// the test, and closes it when the test ends.
func mustOpenTestKind(t testing.TB, k *testKind, at Place, opts ...Option) testStructure {
	t.Helper()
	s, err := k.open(at, 0, opts...)
	if err != nil {
		t.Fatalf("open %s: %v", k.name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fileStatsOf is the part of s's Stats every kind has, as its StatsVar
// shows it.
func fileStatsOf(t testing.TB, s testStructure) FileStats {
	t.Helper()
	var fs FileStats
	if err := json.Unmarshal([]byte(s.StatsVar().String()), &fs); err != nil {
		t.Fatalf("%s: Stats as JSON: %v", s, err)
	}
	return fs
}

// TestKinds_EveryKind: testKinds has one row for each kind of the
// format's table, in kind-number order, and each row opens a structure
// that lists as its kind, takes a key and the exercise, passes Check, and
// reattaches with the zero config.
func TestKinds_EveryKind(t *testing.T) {
	if len(testKinds) != len(kinds) {
		t.Errorf("testKinds has %d rows, the kinds table %d", len(testKinds), len(kinds))
	}
	for i, n := range kindNumbers() {
		info := kinds[n]
		if i >= len(testKinds) || testKinds[i].kind != info.kind {
			t.Errorf("testKinds row %d is not %s (%s, kind %d): add its row, in kind-number order", i+1, info.kind, info.name, n)
		}
	}
	a := mustOpenArena(t, tempPath(t, "arena"), 1<<20)
	for i := range testKinds {
		k := &testKinds[i]
		t.Run(k.name, func(t *testing.T) {
			s := mustOpenTestKind(t, k, a.Place(k.name))
			if _, rotates := s.(interface{ Rotate() error }); rotates != k.window {
				t.Errorf("window = %v, but Rotate is there: %v", k.window, rotates)
			}
			if (k.counts != nil) != k.window {
				t.Errorf("window = %v, but counts is there: %v", k.window, k.counts != nil)
			}
			if !k.holds(s) {
				t.Errorf("holds(%T) = false for the row's own structure", s)
			}
			if err := k.add(s, []byte("key")); err != nil {
				t.Fatalf("add: %v", err)
			}
			k.exercise(t, s)
			if err := s.Check(); err != nil {
				t.Errorf("Check after exercise: %v", err)
			}
			z, err := k.openZero(a.Place(k.name))
			if err != nil {
				t.Fatalf("open with the zero config: %v", err)
			}
			z.Close()
			for _, e := range a.List() {
				if e.Name == k.name && e.Kind != k.kind {
					t.Errorf("listed as %q, want %q", e.Kind, k.kind)
				}
			}
		})
	}
}
