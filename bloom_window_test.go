//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// Single-process tests of the Bloom window: every answer against a model
// of one filter per period across turns, the rate of keys that left the
// window, configs, views, the arena, and the clear's election.

// bwinCfg holds a few thousand keys a period at 1%, with a fixed seed so
// that the model and the statistical bounds are reproducible.
var bwinCfg = BloomConfig{Capacity: 4000, FPRate: 0.01, Seed: 0xb1d0}

func mustOpenBloomWindow(t testing.TB, path string, w Window, cfg BloomConfig, opts ...Option) *BloomWindow {
	t.Helper()
	bw, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: w, Bloom: cfg}, opts...)
	if err != nil {
		t.Fatalf("OpenBloomWindow(%s, %+v, %+v): %v", path, w, cfg, err)
	}
	t.Cleanup(func() { bw.Close() })
	return bw
}

func mustNewBloomWindow(t testing.TB, w Window, cfg BloomConfig) *BloomWindow {
	t.Helper()
	bw, err := OpenBloomWindow(Memory(), BloomWindowConfig{Window: w, Bloom: cfg})
	if err != nil {
		t.Fatalf("NewBloomWindow(%+v, %+v): %v", w, cfg, err)
	}
	t.Cleanup(func() { bw.Close() })
	return bw
}

// bwinModel is the reference: one model filter (refBloom) per period.
type bwinModel struct {
	blocks uint64
	k      int
	seed   uint64
	keep   uint64
	period map[uint64]*refBloom
}

func newBwinModel(w *BloomWindow, seed uint64) *bwinModel {
	return &bwinModel{blocks: w.slots[0].blocks, k: w.slots[0].k, seed: seed, keep: uint64(w.win.Keep), period: map[uint64]*refBloom{}}
}

func (m *bwinModel) filter(p uint64) *refBloom {
	if m.period[p] == nil {
		m.period[p] = newRefBloom(m.blocks, m.k, m.seed)
	}
	return m.period[p]
}

func (m *bwinModel) first(p uint64) uint64 {
	if p < m.keep {
		return 0
	}
	return p - m.keep + 1
}

// inEarlier reports whether a period of p's window before p has the key.
func (m *bwinModel) inEarlier(key []byte, p uint64) bool {
	for q := m.first(p); q < p; q++ {
		if f := m.period[q]; f != nil && f.check(key) {
			return true
		}
	}
	return false
}

// add is Add's answer by the model: every bit already set in p's filter,
// or an earlier period of the window has the key.
func (m *bwinModel) add(key []byte, p uint64) bool {
	earlier := m.inEarlier(key, p)
	return m.filter(p).add(key) || earlier
}

// check is Check's answer by the model at period p.
func (m *bwinModel) check(key []byte, p uint64) bool {
	return m.filter(p).check(key) || m.inEarlier(key, p)
}

// bwinSetCores makes every batch of w go through core.
func bwinSetCores(w *BloomWindow, core bloomCore) {
	w.core = core
	for i := range w.slots {
		w.slots[i].prefetch = true
	}
}

// TestBloomWindow_RotateExact: adds over many Rotate turns, one by one and
// in batches through each core; every answer of Add, AddBatch, Check and
// CheckBatch equals the model's, no key added in a period the window
// covers is ever missing, and Stats names the periods covered and counts
// each slot as the model does.
func TestBloomWindow_RotateExact(t *testing.T) {
	for _, core := range bloomCores() {
		for _, keep := range []int{1, 2, 3, 5, 9} {
			t.Run(fmt.Sprintf("%s/keep=%d", core.name(), keep), func(t *testing.T) {
				w := mustOpenBloomWindow(t, tempPath(t, "bwin"), Window{Keep: keep}, bwinCfg)
				bwinSetCores(w, core)
				model := newBwinModel(w, bwinCfg.Seed)
				added := map[uint64][]string{} // period: keys added in it
				r := rand.New(rand.NewPCG(1, uint64(keep)))
				const universe = 3000
				key := func() []byte { return bloomKey("k", r.IntN(universe)) }
				for round := uint64(0); round < 10; round++ {
					if got := w.Current(); got != round {
						t.Fatalf("Current() = %d after %d rotations", got, round)
					}
					for i := range 400 {
						k := key()
						var got bool
						var err error
						if i%2 == 0 {
							got, err = w.Add(k)
						} else {
							got, err = w.AddString(string(k))
						}
						if err != nil {
							t.Fatal(err)
						}
						if want := model.add(k, round); got != want {
							t.Fatalf("round %d: Add(%q) = %v, model says %v", round, k, got, want)
						}
						added[round] = append(added[round], string(k))
					}
					batch := make([][]byte, 300)
					for i := range batch {
						batch[i] = key()
					}
					already := make([]bool, len(batch))
					if err := w.AddBatch(batch, already); err != nil {
						t.Fatal(err)
					}
					for i, k := range batch {
						if want := model.add(k, round); already[i] != want {
							t.Fatalf("round %d: AddBatch answer %d (%q) = %v, model says %v", round, i, k, already[i], want)
						}
						added[round] = append(added[round], string(k))
					}
					if err := w.AddBatch(batch[:100], nil); err != nil {
						t.Fatal(err)
					}
					for _, k := range batch[:100] {
						model.add(k, round)
					}
					// Every key added in the window is found.
					for q := model.first(round); q <= round; q++ {
						for _, k := range added[q] {
							if !w.ContainsString(k) {
								t.Fatalf("round %d: Check(%q) = false for a key added in period %d", round, k, q)
							}
						}
					}
					// Every answer, present or not, is the model's.
					all := make([][]byte, universe+500)
					for i := range all {
						all[i] = bloomKey("k", i) // the last 500 never added
					}
					out := make([]bool, len(all))
					w.ContainsBatch(all, out)
					for i, k := range all {
						want := model.check(k, round)
						if got := w.Contains(k); got != want || out[i] != want {
							t.Fatalf("round %d: Check(%q) = %v, CheckBatch %v, model says %v", round, k, got, out[i], want)
						}
					}
					st := w.Stats()
					first := model.first(round)
					if st.Current != round || st.Oldest != first || st.Rotations != round {
						t.Fatalf("round %d: Stats = current %d oldest %d rotations %d, want %d %d %d",
							round, st.Current, st.Oldest, st.Rotations, round, first, round)
					}
					states := map[string]int{}
					for i, sl := range st.Slots {
						states[sl.State]++
						if sl.State != "current" && sl.State != "window" {
							continue
						}
						f := model.filter(sl.Period)
						if uint64(i) != sl.Period%uint64(keep+1) || sl.Set != f.set() || sl.Added != f.added || sl.Seen != f.seen {
							t.Fatalf("round %d: slot %d of period %d: %d set, %d added, %d seen; model %d, %d, %d",
								round, i, sl.Period, sl.Set, sl.Added, sl.Seen, f.set(), f.added, f.seen)
						}
					}
					if states["current"] != 1 || states["window"] != min(keep-1, int(round)) {
						t.Fatalf("round %d: slot states %v", round, states)
					}
					if round > 0 && states["next"] != 1 {
						t.Fatalf("round %d: no slot cleared ahead for the next period: %v", round, states)
					}
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestBloomWindow_ExpiredRate: keys of periods that left the window are
// found only as false positives. Each period is filled to Capacity; after
// the turns, the share of the oldest periods' keys still found, and of
// keys never added, is within 1.2x the rate of the Keep filters asked
// (1 - (1 - FPRate)^Keep), and near Stats' CheckRate; every key of the
// covered periods is found.
func TestBloomWindow_ExpiredRate(t *testing.T) {
	for _, keep := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			const n = 20_000
			cfg := BloomConfig{Capacity: n, FPRate: 0.01, Seed: 0x0e1d}
			w := mustNewBloomWindow(t, Window{Keep: keep}, cfg)
			periods := keep + 2
			keys := make([][]byte, n)
			for p := range periods {
				if p > 0 {
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
				for i := range keys {
					keys[i] = bloomKey(fmt.Sprintf("p%d", p), i)
				}
				if err := w.AddBatch(keys, nil); err != nil {
					t.Fatal(err)
				}
			}
			out := make([]bool, n)
			rateOf := func(prefix string) float64 {
				for i := range keys {
					keys[i] = bloomKey(prefix, i)
				}
				w.ContainsBatch(keys, out)
				found := 0
				for _, f := range out {
					if f {
						found++
					}
				}
				return float64(found) / n
			}
			for p := periods - keep; p < periods; p++ {
				if got := rateOf(fmt.Sprintf("p%d", p)); got != 1 {
					t.Errorf("period %d, covered: %.4f of its keys found, want all", p, got)
				}
			}
			bound := 1.2 * (1 - math.Pow(1-cfg.FPRate, float64(keep)))
			model := w.Stats().CheckRate
			for _, prefix := range []string{"p0", "p1", "never"} {
				got := rateOf(prefix)
				t.Logf("keep %d: %s keys found at %.4f (bound %.4f, modelled %.4f)", keep, prefix, got, bound, model)
				if got > bound {
					t.Errorf("keep %d: %.4f of the %s keys found, more than %.4f: keys that left the window are not gone", keep, got, prefix, bound)
				}
				if got < model/2 {
					t.Errorf("keep %d: %.4f of the %s keys found, far under the modelled %.4f", keep, got, prefix, model)
				}
			}
		})
	}
}

// TestBloomWindow_ClockExact: with a 20 ms period, adds until its adds
// have seen six periods; Add's answers follow the model of the periods
// the adds went to, and no key added in a period a check covers is
// missing, during the run and after it.
func TestBloomWindow_ClockExact(t *testing.T) {
	w := mustOpenBloomWindow(t, tempPath(t, "bwin"), Window{Period: 20 * time.Millisecond, Keep: 2}, bwinCfg)
	model := newBwinModel(w, bwinCfg.Seed)
	period := map[string]uint64{} // each key's last period
	const want = 6
	deadline := time.Now().Add(seenBound)
	for i := 0; len(model.period) < want && time.Now().Before(deadline); i++ {
		k := bloomKey("c", i%3000)
		lo, hi := hashKey(k, w.slots[0].seed)
		already, addP, err := w.add(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		if want := model.add(k, addP); already != want {
			t.Fatalf("period %d: Add(%q) = %v, model says %v", addP, k, already, want)
		}
		period[string(k)] = addP
		if i%64 == 0 {
			time.Sleep(100 * time.Microsecond)
			for j := i - 63; j <= i; j++ {
				k := bloomKey("c", max(j, 0)%3000)
				lo, hi := hashKey(k, w.slots[0].seed)
				found, p := w.lookup(lo, hi)
				if q, ok := period[string(k)]; ok && !found && q >= model.first(p) && q <= p {
					t.Fatalf("Check(%q) = false at period %d; it was added in period %d", k, p, q)
				}
			}
		}
	}
	if len(model.period) < want {
		t.Errorf("adds saw %d periods of 20ms in %v, want %d", len(model.period), seenBound, want)
	}
	// Each check against the period it answered for: on a slow machine
	// (qemu) the period turns while this loop runs.
	for k, q := range period {
		lo, hi := hashKey([]byte(k), w.slots[0].seed)
		if found, p := w.lookup(lo, hi); !found && q >= model.first(p) && q <= p {
			t.Errorf("Check(%q) = false at period %d; it was added in period %d", k, p, q)
		}
	}
}

// TestBloomWindow_ErrInvalidConfig: windows and filters that cannot be
// built, and configs that only attach given nothing to attach to.
func TestBloomWindow_ErrInvalidConfig(t *testing.T) {
	for _, w := range []Window{
		{},
		{Keep: -1},
		{Keep: MaxWindowKeep + 1},
		{Period: -time.Second, Keep: 2},
		{Period: time.Microsecond, Keep: 2},
	} {
		t.Run(fmt.Sprintf("period=%v/keep=%d", w.Period, w.Keep), func(t *testing.T) {
			_, err := OpenBloomWindow(Path(tempPath(t, "bwin")), BloomWindowConfig{Window: w, Bloom: bwinCfg})
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("OpenBloomWindow = %v, want ErrInvalidConfig", err)
			}
			if _, err := OpenBloomWindow(Memory(), BloomWindowConfig{Window: w, Bloom: bwinCfg}); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewBloomWindow = %v, want ErrInvalidConfig", err)
			}
			if _, err := OpenBloomWindow(Memfd("bwin"), BloomWindowConfig{Window: w, Bloom: bwinCfg}); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewBloomWindowMemfd = %v, want ErrInvalidConfig", err)
			}
		})
	}
	for _, cfg := range []BloomConfig{
		{},
		{FPRate: 0.01},
		{Capacity: 10, FPRate: 2},
		{Capacity: 10, FPRate: -1},
		{Capacity: 10, FPRate: math.NaN()},
		{Capacity: 1 << 62},
	} {
		t.Run(fmt.Sprintf("capacity=%d/rate=%v", cfg.Capacity, cfg.FPRate), func(t *testing.T) {
			if _, err := OpenBloomWindow(Memory(), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: cfg}); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewBloomWindow = %v, want ErrInvalidConfig", err)
			}
			_, err := OpenBloomWindow(Path(tempPath(t, "bwin")), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: cfg})
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("OpenBloomWindow = %v, want ErrInvalidConfig", err)
			}
		})
	}
	// A config without Capacity, or the zero Window, only attaches.
	for _, w := range []Window{{}, {Keep: 2}} {
		path := tempPath(t, "bwin")
		_, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: w, Bloom: BloomConfig{}})
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("OpenBloomWindow(%+v, zero config) of no file = %v, want ErrInvalidConfig and fs.ErrNotExist naming the file", w, err)
		}
	}
	if _, err := OpenBloomWindow(Memfd("bwin"), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: bwinCfg}, ReadOnly()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("read-only NewBloomWindowMemfd = %v, want ErrInvalidConfig", err)
	}
	// 257 slots of 2^40 blocks do not fit a file.
	if _, err := OpenBloomWindow(Memory(), BloomWindowConfig{Window: Window{Keep: MaxWindowKeep}, Bloom: BloomConfig{Capacity: 1 << 44, FPRate: 0.5}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a window past the largest file = %v, want ErrInvalidConfig", err)
	}
}

// TestBloomWindow_ErrIncompatible: a window attached with another window
// or filter size than the file's, and other kinds' files, are refused; the
// zero Window and the zero config attach to what is stored.
func TestBloomWindow_ErrIncompatible(t *testing.T) {
	path := tempPath(t, "bwin")
	win := Window{Period: time.Minute, Keep: 3}
	first := mustOpenBloomWindow(t, path, win, bwinCfg)
	first.AddString("k")
	for _, tc := range []struct {
		name string
		w    Window
		cfg  BloomConfig
	}{
		{"keep", Window{Period: time.Minute, Keep: 2}, bwinCfg},
		{"period", Window{Period: time.Second, Keep: 3}, bwinCfg},
		{"rotate only", Window{Keep: 3}, bwinCfg},
		{"capacity", win, BloomConfig{Capacity: 40_000, FPRate: 0.01}},
		{"rate", win, BloomConfig{Capacity: 4000, FPRate: 0.001}},
		{"zero window, capacity", Window{}, BloomConfig{Capacity: 40_000}},
		{"keep, zero config", Window{Period: time.Minute, Keep: 2}, BloomConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: tc.w, Bloom: tc.cfg})
			if !errors.Is(err, ErrIncompatible) {
				t.Errorf("OpenBloomWindow(%+v, %+v) = %v, want ErrIncompatible", tc.w, tc.cfg, err)
			}
		})
	}
	if _, err := OpenBloom(Path(path), BloomConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenBloom of a Bloom window file = %v, want ErrIncompatible", err)
	}
	if _, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{}, CountMin: CountMinConfig{}}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountMinWindow of a Bloom window file = %v, want ErrIncompatible", err)
	}
	bloom := tempPath(t, "bloom")
	b, err := OpenBloom(Path(bloom), bwinCfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := OpenBloomWindow(Path(bloom), BloomWindowConfig{Window: Window{}, Bloom: BloomConfig{}}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenBloomWindow of a Bloom file = %v, want ErrIncompatible", err)
	}
	cmw := tempPath(t, "cmw")
	mustOpenWindow(t, cmw, win, CountMinConfig{})
	if _, err := OpenBloomWindow(Path(cmw), BloomWindowConfig{Window: win, Bloom: bwinCfg}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenBloomWindow of a Count-Min window file = %v, want ErrIncompatible", err)
	}
	for _, tc := range []struct {
		w   Window
		cfg BloomConfig
	}{{Window{}, BloomConfig{}}, {win, BloomConfig{}}, {Window{}, bwinCfg}, {win, BloomConfig{Capacity: 4000, FPRate: 0.01}}} {
		w, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: tc.w, Bloom: tc.cfg})
		if err != nil {
			t.Fatalf("OpenBloomWindow(%+v, %+v): %v", tc.w, tc.cfg, err)
		}
		if w.Config().Window != win || w.Config().Bloom.Capacity != bwinCfg.Capacity || w.Bits() != first.Bits() || w.Hashes() != first.Hashes() || !w.ContainsString("k") {
			t.Errorf("attached with %+v, %+v: %v, capacity %d", tc.w, tc.cfg, w, w.Config().Bloom.Capacity)
		}
		w.Close()
	}
}

// TestBloomWindow_Arena: a Bloom window in an arena, created by name,
// attached by a second handle with the zero Window, which sees the same
// periods; another Keep is ErrIncompatible, and List shows its config.
func TestBloomWindow_Arena(t *testing.T) {
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 4<<20)
	cfg := BloomConfig{Capacity: 10_000, FPRate: 0.001}
	w, err := OpenBloomWindow(a.Place("seen"), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if already, err := w.AddString("job-1"); already || err != nil {
		t.Fatalf("Add(job-1) = %v, %v, want new", already, err)
	}
	b := mustOpenArena(t, path, 0)
	w2, err := OpenBloomWindow(b.Place("seen"), BloomWindowConfig{Window: Window{}, Bloom: BloomConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if got := w2.Config().Window; got != (Window{Keep: 2}) {
		t.Errorf("attached window %+v, want Keep 2", got)
	}
	if err := w2.Rotate(); err != nil {
		t.Fatal(err)
	}
	if already, _ := w.AddString("job-1"); !already {
		t.Error("after one turn: Add(job-1) = false, want true (the previous period has it)")
	}
	if already, _ := w.AddString("job-2"); already {
		t.Error("Add(job-2) = true, want new")
	}
	w.Rotate()
	w.Rotate()
	if w2.ContainsString("job-1") || w2.ContainsString("job-2") {
		t.Error("after two more turns the window still has the keys")
	}
	if _, err := OpenBloomWindow(b.Place("seen"), BloomWindowConfig{Window: Window{Keep: 3}, Bloom: cfg}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("another Keep: %v, want ErrIncompatible", err)
	}
	if _, err := OpenBloom(b.Place("seen"), cfg); !errors.Is(err, ErrIncompatible) {
		t.Errorf("a Bloom filter of the window's name: %v, want ErrIncompatible", err)
	}
	for _, tc := range []struct {
		w   Window
		cfg BloomConfig
	}{{Window{}, cfg}, {Window{Keep: 2}, BloomConfig{}}} {
		if _, err := OpenBloomWindow(b.Place("new"), BloomWindowConfig{Window: tc.w, Bloom: tc.cfg}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v, %+v for a new name: %v, want ErrInvalidConfig (it cannot create)", tc.w, tc.cfg, err)
		}
	}
	got := b.List()
	want := BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{Capacity: 10_000, FPRate: 0.001}}
	if len(got) != 1 || got[0].Kind != KindBloomWindow || got[0].Config != want {
		t.Errorf("List() = %+v, want one %s of %+v", got, KindBloomWindow, want)
	}
}

// TestBloomWindow_ViewsAndClose: a read-only view checks and refuses
// mutators; a frozen window refuses them and keeps its window however
// late it is read; a closed handle reports ErrClosed and answers true;
// String hides the seed.
func TestBloomWindow_ViewsAndClose(t *testing.T) {
	path := tempPath(t, "bwin")
	// Periods long enough that k stays in the window until the freeze.
	win := Window{Period: 100 * time.Millisecond, Keep: 2}
	w := mustOpenBloomWindow(t, path, win, bwinCfg)
	if _, err := w.AddString("k"); err != nil {
		t.Fatal(err)
	}
	mutators := func(w *BloomWindow) map[string]error {
		_, add := w.Add([]byte("x"))
		_, addS := w.AddString("x")
		return map[string]error{"Add": add, "AddString": addS,
			"AddBatch": w.AddBatch([][]byte{[]byte("x")}, nil), "Rotate": w.Rotate(), "Freeze": w.Freeze()}
	}
	ro := mustOpenBloomWindow(t, path, win, bwinCfg, ReadOnly())
	if !ro.ContainsString("k") || ro.ContainsString("absent") {
		t.Errorf("read-only Check(k), Check(absent) = %v, %v; want true, false", ro.ContainsString("k"), ro.ContainsString("absent"))
	}
	for name, err := range mutators(ro) {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only %s = %v, want ErrReadOnly", name, err)
		}
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	frozenAt := w.Current()
	time.Sleep(3 * win.Period) // the clock moves past the window
	for name, err := range mutators(w) {
		if !errors.Is(err, ErrFrozen) {
			t.Errorf("frozen %s = %v, want ErrFrozen", name, err)
		}
	}
	for _, h := range []*BloomWindow{w, ro} {
		if !h.ContainsString("k") || h.ContainsString("x") || h.Current() != frozenAt {
			t.Errorf("frozen window: Check(k) = %v, Check(x) = %v at period %d, want true, false at %d", h.ContainsString("k"), h.ContainsString("x"), h.Current(), frozenAt)
		}
		if st := h.Stats(); !st.Frozen || st.Current != frozenAt {
			t.Errorf("frozen window: Stats = %+v", st)
		}
	}
	if _, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: win, Bloom: bwinCfg}); !errors.Is(err, ErrFrozen) {
		t.Errorf("read-write open of a frozen window = %v, want ErrFrozen", err)
	}
	s := fmt.Sprintf("%v %+v %#v %s", w, w, w, w.String())
	if strings.Contains(s, fmt.Sprint(w.slots[0].seed)) || strings.Contains(s, fmt.Sprintf("%x", w.slots[0].seed)) || !strings.Contains(s, "BloomWindow") {
		t.Errorf("String = %q: want a description without the seed", s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := w.AddString("k"); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if err := w.Rotate(); !errors.Is(err, ErrClosed) {
		t.Errorf("Rotate after Close = %v, want ErrClosed", err)
	}
	if !w.Contains([]byte("never")) || !w.ContainsString("never") {
		t.Error("Check after Close = false: a closed handle must not claim absence")
	}
	out := []bool{false}
	w.ContainsBatch([][]byte{[]byte("never")}, out)
	if !out[0] {
		t.Error("CheckBatch after Close = false")
	}
	if st := w.Stats(); !st.Closed || st.CheckRate != 1 || len(st.Slots) != 0 {
		t.Errorf("Stats after Close = %+v", st)
	}
	var zero BloomWindow
	if _, err := zero.Add([]byte("k")); !errors.Is(err, ErrClosed) || !zero.Contains(nil) || zero.Close() != nil || zero.Current() != 0 {
		t.Errorf("zero BloomWindow: Add = %v", err)
	}
	_ = zero.String()
	_ = zero.Stats()
}

// TestBloomWindow_BadArguments: a wrong-length answer slice is refused
// and adds nothing; a short out slice answers what it holds.
func TestBloomWindow_BadArguments(t *testing.T) {
	w := mustNewBloomWindow(t, Window{Keep: 2}, bwinCfg)
	keys := [][]byte{[]byte("a"), []byte("b")}
	if err := w.AddBatch(keys, make([]bool, 1)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("AddBatch with 1 answer for 2 keys = %v, want ErrInvalidArgument", err)
	}
	if w.ContainsString("a") {
		t.Error("a refused AddBatch added keys")
	}
	w.AddBatch(keys, nil)
	for _, out := range [][]bool{make([]bool, 1), make([]bool, 5)} {
		if err := w.ContainsBatch(keys, out); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ContainsBatch with %d answers for 2 keys = %v, want ErrInvalidArgument", len(out), err)
		}
	}
	out := make([]bool, 2)
	if err := w.ContainsBatch(keys, out); err != nil || !out[0] || !out[1] {
		t.Errorf("ContainsBatch = %v, %v, want both present", out, err)
	}
	if err := w.AddBatch(nil, nil); err != nil {
		t.Errorf("AddBatch(nil) = %v", err)
	}
}

// bwinRegion is the window's region with each slot's count stripes
// folded into its first line: which stripe a handle counts in is its
// own choice, the sums are the format.
func bwinRegion(w *BloomWindow) []byte {
	region := bytes.Clone(w.m.entryBytes())
	ctl := windowControlBytes(w.win.Keep)
	slot := bloomBytes(w.slots[0].blocks)
	for i := range uint64(w.win.Keep + 1) {
		stripes := region[ctl+i*slot:][:stripesBytes]
		var added, seen uint64
		for s := 0; s < stripeCount; s++ {
			added += native.Uint64(stripes[s*stripeBytes+bloomAddedOff:])
			seen += native.Uint64(stripes[s*stripeBytes+bloomSeenOff:])
		}
		clear(stripes)
		native.PutUint64(stripes[bloomAddedOff:], added)
		native.PutUint64(stripes[bloomSeenOff:], seen)
	}
	return region
}

// TestBloomWindow_CoresParity: the same operations, in batches through
// each core and one by one, leave byte-identical regions.
func TestBloomWindow_CoresParity(t *testing.T) {
	type run struct {
		name   string
		region []byte
	}
	var runs []run
	cfg := BloomConfig{Capacity: 3000, FPRate: 0.02, Seed: 42}
	for _, core := range append(append([]bloomCore{}, bloomCores()...), nil) {
		w := mustNewBloomWindow(t, Window{Keep: 2}, cfg)
		name := "single"
		if core != nil {
			bwinSetCores(w, core)
			name = core.name()
		}
		r := rand.New(rand.NewPCG(7, 7))
		for range 6 {
			keys := make([][]byte, 700)
			for i := range keys {
				keys[i] = bloomKey("k", r.IntN(5000))
			}
			if core == nil {
				for _, k := range keys {
					if _, err := w.Add(k); err != nil {
						t.Fatal(err)
					}
				}
			} else if err := w.AddBatch(keys, make([]bool, len(keys))); err != nil {
				t.Fatal(err)
			}
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		runs = append(runs, run{name, bwinRegion(w)})
	}
	for _, r := range runs[1:] {
		if !bytes.Equal(runs[0].region, r.region) {
			t.Errorf("%s's region differs from %s's", r.name, runs[0].name)
		}
	}
}

// TestBloomWindow_TakeOverDeadClearer: a slot left "clearing" under a
// token nobody holds (a dead process's) or under this handle's own id (a
// dead predecessor's) is cleared again by the next writer: the key the
// half-cleared slot still held is gone, and the new key is new.
func TestBloomWindow_TakeOverDeadClearer(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own=%v", own), func(t *testing.T) {
			w := mustOpenBloomWindow(t, tempPath(t, "bwin"), Window{Keep: 2}, bwinCfg)
			w.AddString("old") // period 0, slot 0
			for range 3 {
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
			// Period 3 uses slot 0, which Rotate cleared ahead; make it look
			// half cleared by a dead process.
			id := 4000
			if own {
				id = w.ctl.me
			}
			s := w.ctl.slotOf(3)
			atomic.StoreUint64(w.ctl.word(s), clearingWord(3, id))
			lo, hi := hashString("old", w.slots[0].seed)
			w.slots[s].addHashed(lo, hi)
			already, err := w.AddString("new")
			if err != nil || already {
				t.Fatalf("Add after a dead clearer = %v, %v; want new", already, err)
			}
			if w.ContainsString("old") {
				t.Error("Check(old) = true: the slot was not cleared")
			}
			if got := atomic.LoadUint64(w.ctl.word(s)); got != heldWord(3) {
				t.Errorf("slot word %#x, want held(3)", got)
			}
			if st := w.Stats().Slots[s]; st.Added != 1 || st.Seen != 0 {
				t.Errorf("slot %d counts %+v, want the one new add", s, st)
			}
		})
	}
}

// TestBloomWindow_WaitsForLiveClearer: a writer whose slot another live
// handle is clearing waits for it rather than adding into the clear.
func TestBloomWindow_WaitsForLiveClearer(t *testing.T) {
	path := tempPath(t, "bwin")
	a := mustOpenBloomWindow(t, path, Window{Keep: 2}, bwinCfg)
	b := mustOpenBloomWindow(t, path, Window{Keep: 2}, bwinCfg)
	a.AddString("k")
	a.Rotate()
	a.Rotate()
	// Period 4's slot (1) holds period 1: a clear is due, which b runs,
	// stopped inside it until released.
	inside, release := make(chan struct{}), make(chan struct{})
	testHookWindowClear = func(s, p uint64) {
		if p == 4 {
			close(inside)
			<-release
		}
	}
	t.Cleanup(func() { testHookWindowClear = nil })
	go b.ctl.prepare(4, true)
	select {
	case <-inside:
	case <-time.After(10 * time.Second):
		t.Fatal("the clear of period 4 did not start")
	}
	atomic.StoreUint64(a.ctl.epochWord(), 4) // turn without Rotate's own clear
	done := mustBlock(t, func() { a.AddString("k") }, 30*time.Millisecond)
	close(release)
	<-done
	if !a.ContainsString("k") {
		t.Error("Check(k) = false after the wait")
	}
	if st := a.Stats().Slots[1]; st.Period != 4 || st.Added != 1 {
		t.Errorf("slot 1 after the wait: %+v, want period 4 holding the one add", st)
	}
}

// TestBloomWindow_NoAllocs: adds and checks allocate nothing, one by one
// and in batches, on every core.
func TestBloomWindow_NoAllocs(t *testing.T) {
	w := mustNewBloomWindow(t, Window{Period: time.Hour, Keep: 3}, BloomConfig{Capacity: 1000, Seed: 1})
	keys := make([][]byte, 600)
	for i := range keys {
		keys[i] = bloomKey("allocs", i)
	}
	out := make([]bool, len(keys))
	key, skey := keys[3], string(keys[3])
	w.Rotate()
	w.AddBatch(keys[:300], nil) // some keys in an earlier period
	w.Rotate()
	for _, core := range bloomCores() {
		for _, ahead := range []bool{false, true} {
			w.core = core
			for i := range w.slots {
				w.slots[i].prefetch = ahead
			}
			for _, tc := range []struct {
				name string
				f    func()
			}{
				{"Add", func() { w.Add(key) }},
				{"AddString", func() { w.AddString(skey) }},
				{"Add/new", func() { w.Add(keys[599]) }},
				{"Check", func() { w.Contains(key) }},
				{"CheckString", func() { w.ContainsString(skey) }},
				{"Check/absent", func() { w.ContainsString("absent") }},
				{"AddBatch", func() { w.AddBatch(keys, nil) }},
				{"AddBatch/already", func() { w.AddBatch(keys, out) }},
				{"CheckBatch", func() { w.ContainsBatch(keys, out) }},
			} {
				if n := testing.AllocsPerRun(100, tc.f); n != 0 {
					t.Errorf("%s/ahead=%v: %s allocates %.1f times a call", core.name(), ahead, tc.name, n)
				}
			}
		}
	}
}

// TestBloomWindow_Format: the region is laid out as docs/FORMAT.md says:
// control words, then slots of kind 2's layout, each holding its period's
// bits and counts.
func TestBloomWindow_Format(t *testing.T) {
	cfg := BloomConfig{Capacity: 100, FPRate: 0.01, Seed: 9}
	w := mustOpenBloomWindow(t, tempPath(t, "bwin"), Window{Keep: 2}, cfg)
	blocks := w.slots[0].blocks
	if got, want := w.m.ent.size, 64+3*(4096+64*blocks); got != want {
		t.Errorf("region of %d bytes, want %d", got, want)
	}
	if p := w.m.ent.params; p[0] != 100 || math.Float64frombits(p[1]) != 0.01 || p[2] != blocks || p[4] != 0 || p[5] != 2 || p[6] != 0 || p[7] != 0 {
		t.Errorf("parameters %v", p)
	}
	w.AddString("a") // period 0
	w.Rotate()
	w.AddString("b") // period 1
	w.AddString("b")
	region := w.m.entryBytes()
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&region[0])), 8)
	if words[0] != 1 || words[4] != heldWord(0) || words[5] != heldWord(1) || words[6] != heldWord(2) {
		t.Errorf("control words %v: want epoch 1, slots holding 0, 1, 2", words)
	}
	slot := 4096 + 64*blocks
	for i, tc := range []struct {
		key         string
		added, seen uint64
	}{{"a", 1, 0}, {"b", 1, 1}} {
		ref := newRefBloom(blocks, w.slots[0].k, cfg.Seed)
		ref.add([]byte(tc.key))
		sb := region[64+uint64(i)*slot:][:slot]
		if !bytes.Equal(sb[stripesBytes:], ref.bytes()) {
			t.Errorf("slot %d's bits are not kind 2's for %q", i, tc.key)
		}
		var added, seen uint64
		for s := 0; s < stripeCount; s++ {
			added += native.Uint64(sb[s*stripeBytes+bloomAddedOff:])
			seen += native.Uint64(sb[s*stripeBytes+bloomSeenOff:])
		}
		if added != tc.added || seen != tc.seen {
			t.Errorf("slot %d counts %d added, %d seen, want %d, %d", i, added, seen, tc.added, tc.seen)
		}
	}
}

// TestBloomWindow_Corrupt: damaged window entries are refused with the
// sentinel that says what is wrong, naming the file.
func TestBloomWindow_Corrupt(t *testing.T) {
	win := Window{Keep: 2}
	cfg := BloomConfig{Capacity: 100, Seed: 3}
	src := tempPath(t, "bwin")
	w := mustOpenBloomWindow(t, src, win, cfg)
	w.AddString("a")
	w.Close()
	valid, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	param := func(i int, v uint64) func(b []byte) {
		return func(b []byte) { native.PutUint64(b[otDirOff+entParams+8*i:], v); otResum(b) }
	}
	for _, tc := range []struct {
		name string
		edit func(b []byte)
		want error
	}{
		{"capacity zero", param(0, 0), ErrCorrupt},
		{"rate one", param(1, math.Float64bits(1)), ErrCorrupt},
		{"blocks zero", param(2, 0), ErrCorrupt},
		{"blocks of another region", param(2, 1<<20), ErrCorrupt},
		{"hashes 33", param(3, 33), ErrCorrupt},
		{"period under a millisecond", param(4, 1000), ErrCorrupt},
		{"keep zero", param(5, 0), ErrCorrupt},
		{"keep too large", param(5, MaxWindowKeep+1), ErrCorrupt},
		{"keep of another region", param(5, 3), ErrCorrupt},
		{"unknown parameter", param(6, 1), ErrCorrupt},
		{"entry checksum", func(b []byte) { b[otDirOff+entParams+40] ^= 1 }, ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(valid)
			tc.edit(data)
			path := tempPath(t, "bwin")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: Window{}, Bloom: BloomConfig{}})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenBloomWindow = %v, want %v naming the file", err, tc.want)
			}
		})
	}
}

// TestBloomWindow_GarbageSlotWords: slot words that name periods far in
// the future (a damaged or crafted file) make adds fail with ErrCorrupt
// and checks answer, rather than loop.
func TestBloomWindow_GarbageSlotWords(t *testing.T) {
	w := mustOpenBloomWindow(t, tempPath(t, "bwin"), Window{Keep: 2}, bwinCfg)
	for s := range uint64(3) {
		atomic.StoreUint64(w.ctl.word(s), heldWord(maxPeriod))
	}
	if _, err := w.AddString("k"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Add = %v, want ErrCorrupt", err)
	}
	if err := w.AddBatch([][]byte{[]byte("k")}, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("AddBatch = %v, want ErrCorrupt", err)
	}
	if w.ContainsString("k") {
		t.Error("Check = true for a key never added")
	}
	w.ContainsBatch([][]byte{[]byte("k")}, make([]bool, 1))
}

// TestBloomWindow_MemfdAttach: a window in a memfd, attached through a
// duplicate of its descriptor with the zero Window and config, is the
// same window: a turn through one is a turn for the other. Another window
// is refused.
func TestBloomWindow_MemfdAttach(t *testing.T) {
	win := Window{Keep: 2}
	w, err := OpenBloomWindow(Memfd("bwin"), BloomWindowConfig{Window: win, Bloom: bwinCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddString("k")
	attach := func(aw Window, cfg BloomConfig) (*BloomWindow, error) {
		f, err := w.File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return OpenBloomWindow(Inherited(f.Fd()), BloomWindowConfig{Window: aw, Bloom: cfg})
	}
	a, err := attach(Window{}, BloomConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if !a.ContainsString("k") || a.Config().Window != win || a.Path() != "" {
		t.Errorf("attached: Check(k) = %v, Window() = %+v, Path() = %q", a.ContainsString("k"), a.Config().Window, a.Path())
	}
	if err := a.Rotate(); err != nil {
		t.Fatal(err)
	}
	if already, _ := w.AddString("k"); !already || w.Current() != 1 {
		t.Errorf("after the attached handle's Rotate: Add(k) = %v at period %d, want true at 1", already, w.Current())
	}
	for _, tc := range []struct {
		w   Window
		cfg BloomConfig
	}{{Window{Keep: 3}, BloomConfig{}}, {Window{}, BloomConfig{Capacity: 10}}, {win, BloomConfig{Capacity: 4000, FPRate: 0.01, Seed: 1}}} {
		if _, err := attach(tc.w, tc.cfg); !errors.Is(err, ErrIncompatible) {
			t.Errorf("AttachBloomWindow(%+v, %+v) = %v, want ErrIncompatible", tc.w, tc.cfg, err)
		}
	}
}
