//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// Single-process tests of the Bloom window's own promises: every answer
// against a model of one filter per period across turns, the rate of keys
// that left the window, its filters' configs, the arena, cores and the
// format. What both windows share is in window_suite_test.go.

// bwinCfg holds a few thousand keys a period at 1%, with a fixed seed so
// that the model and the statistical bounds are reproducible.
var bwinCfg = BloomConfig{Capacity: 4000, FPRate: 0.01, Seed: 0xb1d0}

func mustOpenBloomWindow(t testing.TB, path string, w Window, cfg BloomConfig, opts ...Option) *BloomWindow {
	t.Helper()
	return mustOpenBloomWindowAt(t, Path(path), w, cfg, opts...)
}

func mustNewBloomWindow(t testing.TB, w Window, cfg BloomConfig) *BloomWindow {
	t.Helper()
	return mustOpenBloomWindowAt(t, Memory(), w, cfg)
}

func mustOpenBloomWindowAt(t testing.TB, at Place, w Window, cfg BloomConfig, opts ...Option) *BloomWindow {
	t.Helper()
	return mustOpenKind(t, bloomWindowKind, at, w, windowCfgs{Bloom: cfg}, opts...).(bloomWindow).BloomWindow
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
	return &bwinModel{blocks: w.slots[0].Blocks, k: w.slots[0].K, seed: seed, keep: uint64(w.win.Keep), period: map[uint64]*refBloom{}}
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
func bwinSetCores(w *BloomWindow, core cells.BloomCore) {
	w.core = core
	for i := range w.slots {
		w.slots[i].Prefetch = true
	}
}

// TestBloomWindow_RotateExact: adds over many Rotate turns, one by one and
// in batches through each core; every answer of Add, AddBatch, Check and
// CheckBatch equals the model's, no key added in a period the window
// covers is ever missing, and Stats names the periods covered
// (checkTurned) and counts each slot as the model does.
func TestBloomWindow_RotateExact(t *testing.T) {
	for _, core := range bloomCores() {
		for _, keep := range []int{1, 2, 3, 5, 9} {
			t.Run(fmt.Sprintf("%s/keep=%d", core.Name(), keep), func(t *testing.T) {
				w := mustOpenBloomWindow(t, tempPath(t, "bwin"), Window{Keep: keep}, bwinCfg)
				bwinSetCores(w, core)
				model := newBwinModel(w, bwinCfg.Seed)
				added := map[uint64][]string{} // period: keys added in it
				r := rand.New(rand.NewPCG(1, uint64(keep)))
				const universe = 3000
				key := func() []byte { return bloomKey("k", r.IntN(universe)) }
				for round := uint64(0); round < 10; round++ {
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
					checkTurned(t, bloomWindow{w}, round)
					for i, sl := range w.Stats().Slots {
						if sl.State != "current" && sl.State != "window" {
							continue
						}
						f := model.filter(sl.Period)
						if uint64(i) != sl.Period%uint64(keep+1) || sl.Set != f.set() || sl.Adds != f.added+f.seen || sl.AddsPresent != f.seen {
							t.Fatalf("round %d: slot %d of period %d: %d set, %d adds, %d present; model %d, %d, %d",
								round, i, sl.Period, sl.Set, sl.Adds, sl.AddsPresent, f.set(), f.added+f.seen, f.seen)
						}
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
// (1 - (1 - FPRate)^Keep), and near Stats' FPRateNow; every key of the
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
			model := w.Stats().FPRateNow
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
		lo, hi := cells.Hash(k, w.slots[0].Seed)
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
				lo, hi := cells.Hash(k, w.slots[0].Seed)
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
		lo, hi := cells.Hash([]byte(k), w.slots[0].Seed)
		if found, p := w.lookup(lo, hi); !found && q >= model.first(p) && q <= p {
			t.Errorf("Check(%q) = false at period %d; it was added in period %d", k, p, q)
		}
	}
}

// TestBloomWindow_ErrInvalidConfig: filters that cannot be built, and
// configs that only attach given nothing to attach to (the windows that
// cannot be built are TestWindows_ErrInvalidConfig's).
func TestBloomWindow_ErrInvalidConfig(t *testing.T) {
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
	// A config without Capacity only attaches.
	path := tempPath(t, "bwin")
	_, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{}})
	if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("OpenBloomWindow(Keep 2, zero config) of no file = %v, want ErrInvalidConfig and fs.ErrNotExist naming the file", err)
	}
	if _, err := OpenBloomWindow(Memfd("bwin"), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: bwinCfg}, WithReadOnly()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("read-only NewBloomWindowMemfd = %v, want ErrInvalidConfig", err)
	}
	// 257 slots of 2^40 blocks do not fit a file.
	if _, err := OpenBloomWindow(Memory(), BloomWindowConfig{Window: Window{Keep: MaxWindowKeep}, Bloom: BloomConfig{Capacity: 1 << 44, FPRate: 0.5}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a window past the largest file = %v, want ErrInvalidConfig", err)
	}
}

// TestBloomWindow_ErrIncompatible: a window attached with another filter
// size than the file's is refused; the zero Window and the zero config
// attach to what is stored (another window, and other kinds' files:
// TestWindows_ErrIncompatible).
func TestBloomWindow_ErrIncompatible(t *testing.T) {
	path := tempPath(t, "bwin")
	win := Window{Period: time.Minute, Keep: 3}
	first := mustOpenBloomWindow(t, path, win, bwinCfg)
	first.AddString("k")
	checkIncompatible(t, bloomWindowKind, opener(bloomWindowKind, path), []incompatible{
		{"capacity", win, windowCfgs{Bloom: BloomConfig{Capacity: 40_000, FPRate: 0.01}}},
		{"rate", win, windowCfgs{Bloom: BloomConfig{Capacity: 4000, FPRate: 0.001}}},
		{"zero window, capacity", Window{}, windowCfgs{Bloom: BloomConfig{Capacity: 40_000}}},
		{"keep, zero config", Window{Period: time.Minute, Keep: 2}, windowCfgs{}},
	})
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

// TestBloomWindow_ZeroShape: the zero handle has no filters: 0 bits and
// 0 hashes (the rest of it answers closed: TestWindows_ZeroValue).
func TestBloomWindow_ZeroShape(t *testing.T) {
	var w BloomWindow
	if w.Bits() != 0 || w.Hashes() != 0 {
		t.Errorf("zero BloomWindow: %d bits, %d hashes, want 0, 0", w.Bits(), w.Hashes())
	}
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
	slot := bloomBytes(w.slots[0].Blocks)
	for i := range uint64(w.win.Keep + 1) {
		stripes := region[ctl+i*slot:][:cells.StripesBytes]
		var added, seen uint64
		for s := 0; s < cells.StripeCount; s++ {
			added += native.Uint64(stripes[s*cells.StripeBytes+cells.BloomAddedOff:])
			seen += native.Uint64(stripes[s*cells.StripeBytes+cells.BloomSeenOff:])
		}
		clear(stripes)
		native.PutUint64(stripes[cells.BloomAddedOff:], added)
		native.PutUint64(stripes[cells.BloomSeenOff:], seen)
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
	for _, core := range append(append([]cells.BloomCore{}, bloomCores()...), nil) {
		w := mustNewBloomWindow(t, Window{Keep: 2}, cfg)
		name := "single"
		if core != nil {
			bwinSetCores(w, core)
			name = core.Name()
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
				w.slots[i].Prefetch = ahead
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
					t.Errorf("%s/ahead=%v: %s allocates %.1f times a call", core.Name(), ahead, tc.name, n)
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
	blocks := w.slots[0].Blocks
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
		ref := newRefBloom(blocks, w.slots[0].K, cfg.Seed)
		ref.add([]byte(tc.key))
		sb := region[64+uint64(i)*slot:][:slot]
		if !bytes.Equal(sb[cells.StripesBytes:], ref.bytes()) {
			t.Errorf("slot %d's bits are not kind 2's for %q", i, tc.key)
		}
		var added, seen uint64
		for s := 0; s < cells.StripeCount; s++ {
			added += native.Uint64(sb[s*cells.StripeBytes+cells.BloomAddedOff:])
			seen += native.Uint64(sb[s*cells.StripeBytes+cells.BloomSeenOff:])
		}
		if added != tc.added || seen != tc.seen {
			t.Errorf("slot %d counts %d added, %d seen, want %d, %d", i, added, seen, tc.added, tc.seen)
		}
	}
}

// TestBloomWindow_Corrupt: damaged filter words are refused as damaged
// window words are (TestWindows_Corrupt).
func TestBloomWindow_Corrupt(t *testing.T) {
	checkDamaged(t, bloomWindowKind, []damage{
		{"capacity zero", paramSet(0, 0), ErrCorrupt},
		{"rate one", paramSet(1, math.Float64bits(1)), ErrCorrupt},
		{"blocks zero", paramSet(2, 0), ErrCorrupt},
		{"blocks of another region", paramSet(2, 1<<20), ErrCorrupt},
		{"hashes 33", paramSet(3, 33), ErrCorrupt},
	})
}

// TestBloomWindow_MergePeriod: one host's periods, exported and merged
// into another host's window of the same config and seed, make it find
// the first host's keys in their periods, and only while those periods
// stay in the window: byte for byte the first host's filters, merging
// again changes nothing, a period outside the window is not merged, and a
// past period the second window never used is claimed for the merge.
func TestBloomWindow_MergePeriod(t *testing.T) {
	cfg := BloomWindowConfig{Window: Window{Keep: 3}, Bloom: BloomConfig{Capacity: 1000, FPRate: 0.001, Seed: 0xf1ee7}}
	a := mustIn(t, OpenBloomWindow, Memory(), cfg)
	b := mustIn(t, OpenBloomWindow, Memory(), cfg)
	mustNoErr := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.AddString("in-0")
	mustNoErr(err)
	mustNoErr(a.Rotate())
	mustNoErr(b.Rotate())
	_, err = a.AddString("in-1")
	mustNoErr(err)
	exp, err := a.ExportPeriods()
	mustNoErr(err)
	if len(exp) != 2 || exp[0].Period != 1 || exp[1].Period != 0 {
		t.Fatalf("ExportPeriods gave periods %v, want 1 and 0", periodsOf(exp))
	}
	for _, e := range exp {
		merged, err := b.MergePeriod(e.Period, e.Data)
		if err != nil || !merged {
			t.Fatalf("MergePeriod(%d) = %v, %v; want true, nil (period 0's slot never used here is claimed)", e.Period, merged, err)
		}
	}
	for _, k := range []string{"in-0", "in-1"} {
		if !b.ContainsString(k) {
			t.Errorf("after merging the other window's periods, %s is not found", k)
		}
	}
	got, err := b.ExportPeriods()
	mustNoErr(err)
	if len(got) != len(exp) || !bytes.Equal(got[0].Data, exp[0].Data) || !bytes.Equal(got[1].Data, exp[1].Data) {
		t.Fatalf("the merged window's periods %v are not the source's %v", periodsOf(got), periodsOf(exp))
	}
	for _, e := range exp {
		if _, err := b.MergePeriod(e.Period, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	if again, _ := b.ExportPeriods(); !bytes.Equal(again[0].Data, got[0].Data) || !bytes.Equal(again[1].Data, got[1].Data) {
		t.Error("merging the same periods again changed the filters")
	}
	if s := b.Stats(); s.Adds != 0 {
		t.Errorf("Adds = %d after merges only", s.Adds)
	}

	// At period 3 the window is 1-3: period 0 left it.
	for range 2 {
		mustNoErr(b.Rotate())
	}
	if b.Current() != 3 {
		t.Fatalf("Current() = %d, want 3", b.Current())
	}
	if merged, err := b.MergePeriod(0, exp[1].Data); merged || err != nil {
		t.Errorf("MergePeriod of period 0, out of the window 1-3: %v, %v; want false, nil", merged, err)
	}
	if merged, err := b.MergePeriod(4, exp[1].Data); merged || err != nil {
		t.Errorf("MergePeriod of period 4, not begun: %v, %v; want false, nil", merged, err)
	}
	if b.ContainsString("in-0") {
		t.Error("in-0, merged into period 0, still found once period 0 left the window")
	}
	if !b.ContainsString("in-1") {
		t.Error("in-1, merged into period 1, not found while period 1 is in the window")
	}
	if _, err := b.MergePeriod(3, exp[0].Data[1:]); !errors.Is(err, ErrIncompatible) {
		t.Errorf("MergePeriod of bits of another length = %v, want ErrIncompatible", err)
	}
	b.Close()
	if _, err := b.MergePeriod(3, exp[0].Data); !errors.Is(err, ErrClosed) {
		t.Errorf("MergePeriod after Close = %v, want ErrClosed", err)
	}
	if _, err := b.ExportPeriods(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportPeriods after Close = %v, want ErrClosed", err)
	}
}
