//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch/internal/cells"
)

// Single-process tests of the Count-Min window's own promises: exact
// estimates against a reference across turns and idle periods, shapes,
// batches, cores and the format. What both windows share is in
// window_suite_test.go.

// winCfg is wide enough that a few hundred keys never collide in every
// row: estimates are exact.
var winCfg = CountMinConfig{Rows: 4, Width: 1 << 14}

func mustOpenWindow(t testing.TB, path string, w Window, cfg CountMinConfig, opts ...Option) *CountMinWindow {
	t.Helper()
	return mustOpenKind(t, countMinWindowKind, Path(path), w, windowCfgs{CountMin: cfg}, opts...).(cmWindow).CountMinWindow
}

// winRef is the reference: exact counts per period and key.
type winRef map[uint64]map[string]uint64

func (r winRef) add(p uint64, key string, n uint64) {
	if r[p] == nil {
		r[p] = map[string]uint64{}
	}
	r[p][key] += n
}

// over returns key's count over the periods first..last.
func (r winRef) over(key string, first, last uint64) uint64 {
	var n uint64
	for p := first; p <= last; p++ {
		n += r[p][key]
	}
	return n
}

// TestCountMinWindow_RotateExact: adds over many Rotate turns, each
// estimate (from Add and from Estimate) equal to the reference's count over
// the window, and Stats naming the periods covered (checkTurned) and
// totalling them.
func TestCountMinWindow_RotateExact(t *testing.T) {
	for _, keep := range []int{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			w := mustOpenWindow(t, tempPath(t, "win"), Window{Keep: keep}, winCfg)
			ref := winRef{}
			r := rand.New(rand.NewPCG(1, uint64(keep)))
			const keys = 200
			for round := uint64(0); round < 12; round++ {
				for range 500 {
					k := fmt.Sprintf("k%d", r.IntN(keys))
					n := uint64(r.IntN(3))
					var est uint64
					var err error
					switch {
					case n == 1:
						est, err = w.AddString(k)
					default:
						est, err = w.AddN([]byte(k), n)
					}
					if err != nil {
						t.Fatal(err)
					}
					ref.add(round, k, n)
					if want := ref.over(k, w.ctl.first(round), round); est != want {
						t.Fatalf("round %d: Add(%q) = %d, want %d", round, k, est, want)
					}
				}
				first := w.ctl.first(round)
				for i := range keys {
					k := fmt.Sprintf("k%d", i)
					if got, want := w.EstimateString(k), ref.over(k, first, round); got != want {
						t.Fatalf("round %d: Estimate(%q) = %d, want %d", round, k, got, want)
					}
				}
				checkTurned(t, cmWindow{w}, round)
				var total uint64
				for p := first; p <= round; p++ {
					for _, v := range ref[p] {
						total += v
					}
				}
				if got := w.Stats().Total; got != total {
					t.Fatalf("round %d: Stats.Total = %d, want %d", round, got, total)
				}
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestCountMinWindow_ClockExact: with a 20 ms period, adds until its adds
// have seen six periods; every Add's estimate equals the reference over
// the window it reports, and the final estimates equal the reference.
func TestCountMinWindow_ClockExact(t *testing.T) {
	w := mustOpenWindow(t, tempPath(t, "win"), Window{Period: 20 * time.Millisecond, Keep: 2}, winCfg)
	ref := winRef{}
	periods := map[uint64]bool{}
	const want = 6
	deadline := time.Now().Add(seenBound)
	for i := 0; len(periods) < want && time.Now().Before(deadline); i++ {
		k := fmt.Sprintf("k%d", i%50)
		lo, hi := cells.HashString(k, w.slots[0].Seed)
		est, addP, p, err := w.addOne(lo, hi, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref.add(addP, k, 1)
		periods[p] = true
		if want := ref.over(k, w.ctl.first(p), p); est != want {
			t.Fatalf("period %d: Add(%q) = %d, want %d", p, k, est, want)
		}
		if i%64 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	if len(periods) < want {
		t.Errorf("adds saw %d periods of 20ms in %v, want %d", len(periods), seenBound, want)
	}
	for i := range 50 {
		k := fmt.Sprintf("k%d", i)
		lo, hi := cells.HashString(k, w.slots[0].Seed)
		est, p := w.estimate(lo, hi)
		if want := ref.over(k, w.ctl.first(p), p); est != want {
			t.Errorf("Estimate(%q) over periods %d..%d = %d, want %d", k, w.ctl.first(p), p, est, want)
		}
	}
}

// TestCountMinWindow_ErrInvalidConfig: a shape no window can have (the
// windows that cannot be built are TestWindows_ErrInvalidConfig's).
func TestCountMinWindow_ErrInvalidConfig(t *testing.T) {
	if _, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 65, Width: 8}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("65 rows: %v, want ErrInvalidConfig", err)
	}
}

// TestCountMinWindow_ErrIncompatible: a window attached with another
// shape than the file's is refused; the zero shape attaches (another
// window, and other kinds' files: TestWindows_ErrIncompatible).
func TestCountMinWindow_ErrIncompatible(t *testing.T) {
	path := tempPath(t, "win")
	win := Window{Period: time.Minute, Keep: 3}
	mustOpenWindow(t, path, win, winCfg)
	checkIncompatible(t, countMinWindowKind, opener(countMinWindowKind, path), []incompatible{
		{"shape", win, windowCfgs{CountMin: CountMinConfig{Rows: 4, Width: 1 << 12}}},
	})
	w := mustOpenWindow(t, path, win, CountMinConfig{})
	if w.Config().CountMin.Rows != winCfg.Rows || w.Config().CountMin.Width != winCfg.Width || w.Config().Window != win {
		t.Errorf("attached %d x %d %v, want %d x %d %v", w.Config().CountMin.Rows, w.Config().CountMin.Width, w.Config().Window, winCfg.Rows, winCfg.Width, win)
	}
}

// openOnCore opens a window in memory whose batches core serves.
func openOnCore(t *testing.T, win Window, cfg CountMinConfig, core cells.CountMinCore) *CountMinWindow {
	t.Helper()
	w := mustOpenKind(t, countMinWindowKind, Memory(), win, windowCfgs{CountMin: cfg}).(cmWindow).CountMinWindow
	w.core = core
	for i := range w.slots {
		w.slots[i].Prefetch = true // serve batches from the core under test
	}
	return w
}

// TestCountMinWindow_Batches: AddBatch's estimates and EstimateBatch's
// equal the single-key ones, across turns, with each core.
func TestCountMinWindow_Batches(t *testing.T) {
	for _, core := range countMinCores() {
		t.Run(core.Name(), func(t *testing.T) {
			// Wide, with a fixed seed: no key shares all its counters.
			w := openOnCore(t, Window{Keep: 3}, CountMinConfig{Rows: 3, Width: 1 << 14, Seed: 99}, core)
			var keys [][]byte
			for i := range 600 {
				keys = append(keys, []byte(fmt.Sprintf("key-%d", i%97)))
			}
			for round := range 5 {
				est := make([]uint64, len(keys))
				if err := w.AddBatch(keys, est); err != nil {
					t.Fatal(err)
				}
				got := make([]uint64, len(keys))
				if err := w.EstimateBatch(keys, got); err != nil {
					t.Fatal(err)
				}
				for i, k := range keys {
					if single := w.Estimate(k); got[i] != single {
						t.Fatalf("round %d: EstimateBatch[%d] = %d, Estimate = %d", round, i, got[i], single)
					}
				}
				// The last copy of each key in the batch sees the whole batch.
				for i := len(keys) - 97; i < len(keys); i++ {
					if est[i] != got[i] {
						t.Fatalf("round %d: AddBatch estimate of the last %q = %d, Estimate = %d", round, keys[i], est[i], got[i])
					}
				}
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestCountMinWindow_CoresParity: the same operations through each core
// leave byte-identical regions and give the same estimates, with and
// without a fleet part (stored each period, values past 2^63 among them).
func TestCountMinWindow_CoresParity(t *testing.T) {
	for _, fleet := range []bool{false, true} {
		t.Run(fmt.Sprintf("fleet=%v", fleet), func(t *testing.T) {
			var regions [][]byte
			var answers [][]uint64
			for _, core := range countMinCores() {
				w := openOnCore(t, Window{Keep: 2}, CountMinConfig{Rows: 3, Width: 1 << 8, Seed: 42, Fleet: fleet}, core)
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
					est := make([]uint64, len(keys))
					if err := w.AddBatch(keys, est); err != nil {
						t.Fatal(err)
					}
					n, _ := w.AddN([]byte("n"), uint64(round)<<40)
					est2 := make([]uint64, len(keys))
					if err := w.EstimateBatch(keys, est2); err != nil {
						t.Fatal(err)
					}
					got = append(append(append(got, est...), est2...), n)
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
				// A window's slots keep no add count, whichever core adds.
				region := bytes.Clone(w.m.entryBytes())
				ctl, slot := windowControlBytes(2), countMinSlotBytes(3, 1<<8, 0, fleet)
				for i := range uint64(3) {
					if adds := stripeSum(region[ctl+i*slot:]); adds != 0 {
						t.Errorf("%s core: slot %d's stripes hold %d adds, want none", core.Name(), i, adds)
					}
				}
				regions = append(regions, region)
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

// TestCountMinWindow_NoAllocs: single-key adds and estimates allocate
// nothing.
func TestCountMinWindow_NoAllocs(t *testing.T) {
	w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Period: time.Hour, Keep: 2}, CountMin: CountMinConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	key := []byte("203.0.113.7")
	w.Add(key)
	if n := testing.AllocsPerRun(1000, func() { w.Add(key) }); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
	if n := testing.AllocsPerRun(1000, func() { w.Estimate(key) }); n != 0 {
		t.Errorf("Estimate allocates %v times", n)
	}
}

// stripeSum sums the add-count stripes at the start of a slot.
func stripeSum(slot []byte) (sum uint64) {
	for i := 0; i < cells.StripeCount; i++ {
		sum += native.Uint64(slot[i*cells.StripeBytes:])
	}
	return sum
}

// TestCountMinWindow_Format: the region is laid out as docs/FORMAT.md
// says: control words, then slots of kind 1's layout, whose add-count
// stripes a window leaves at zero.
func TestCountMinWindow_Format(t *testing.T) {
	w := mustOpenWindow(t, tempPath(t, "win"), Window{Keep: 2}, CountMinConfig{Rows: 2, Width: 4})
	if got, want := w.m.ent.size, uint64(64+3*(4096+64)); got != want {
		t.Errorf("region of %d bytes, want %d", got, want)
	}
	w.AddString("a")
	w.AddBatch([][]byte{[]byte("b")}, nil)
	w.Rotate()
	region := w.m.entryBytes()
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&region[0])), 8)
	if words[0] != 1 || words[4] != heldWord(0) || words[5] != heldWord(1) || words[6] != heldWord(2) {
		t.Errorf("control words %v: want epoch 1, slots holding 0, 1, 2", words)
	}
	slot0 := region[64:]
	var counted uint64
	for i := 0; i < 2*4; i++ {
		counted += native.Uint64(slot0[cells.StripesBytes+8*i:])
	}
	if adds := stripeSum(slot0); adds != 0 || counted != 4 {
		t.Errorf("slot 0 holds %d adds in its stripes and %d in its cells, want 0 and 4", adds, counted)
	}
}

// TestCountMinWindow_Corrupt: a damaged shape is refused as damaged
// window words are (TestWindows_Corrupt).
func TestCountMinWindow_Corrupt(t *testing.T) {
	checkDamaged(t, countMinWindowKind, []damage{{"width not a power of two", paramSet(1, 6), ErrCorrupt}})
}

// TestCountMinWindow_IdlePeriods: periods nobody added in leave their slot
// holding an older period (or empty); adds and estimates skip it and stay
// exact. The clock is moved by hand, periods of an hour keeping the real
// one out of the way.
func TestCountMinWindow_IdlePeriods(t *testing.T) {
	for _, keep := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			w := mustOpenWindow(t, tempPath(t, "win"), Window{Period: time.Hour, Keep: keep}, winCfg)
			start := w.ctl.clk.cur.Load()
			ref := winRef{}
			// Adds in periods 0, 1, 3 and 6 from the start (2, 4 and 5
			// idle), estimates after each group.
			for _, step := range []uint64{0, 1, 3, 6} {
				w.ctl.clk.cur.Store(start + step)
				p := w.Current()
				for i := range 40 {
					k := fmt.Sprintf("k%d", i%7)
					est, err := w.AddString(k)
					if err != nil {
						t.Fatal(err)
					}
					ref.add(p, k, 1)
					if want := ref.over(k, w.ctl.first(p), p); est != want {
						t.Fatalf("step %d: Add(%q) = %d, want %d", step, k, est, want)
					}
				}
				for i := range 7 {
					k := fmt.Sprintf("k%d", i)
					if got, want := w.EstimateString(k), ref.over(k, w.ctl.first(p), p); got != want {
						t.Errorf("step %d: Estimate(%q) = %d, want %d", step, k, got, want)
					}
				}
				// The next period, before anyone adds in it: its slot is
				// not ready, and the estimate covers what the window holds.
				w.ctl.clk.cur.Store(start + step + 1)
				q := w.Current()
				for i := range 7 {
					k := fmt.Sprintf("k%d", i)
					if got, want := w.EstimateString(k), ref.over(k, w.ctl.first(q), q); got != want {
						t.Errorf("step %d+1: Estimate(%q) = %d, want %d", step, k, got, want)
					}
				}
			}
			if w.ctl.clk.cur.Load() != start+7 {
				t.Skip("the hour turned during the test")
			}
		})
	}
}

// settle waits past Total's cache, so that the next Total reads the
// counters again.
func settle() { time.Sleep(2 * totalsFresh) }

// TestCountMinWindow_Total: Total is what the covered periods counted,
// period by period as they turn, through this handle and another one
// (another process's view), and equals Stats' total and bound when nothing
// runs; after Close it is ClosedEstimate.
func TestCountMinWindow_Total(t *testing.T) {
	for _, keep := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w")
			w := mustOpenWindow(t, path, Window{Keep: keep}, winCfg)
			other := mustOpenWindow(t, path, Window{}, CountMinConfig{})
			var counted []uint64 // per period, from 0
			for p := range 3 * keep {
				if p > 0 {
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
				n := uint64(10*p + 1)
				for i := range n {
					if _, err := w.AddN([]byte(fmt.Sprintf("k%d-%d", p, i%3)), 2); err != nil {
						t.Fatal(err)
					}
				}
				counted = append(counted, 2*n)
				var want uint64
				for q := max(0, p-keep+1); q <= p; q++ {
					want += counted[q]
				}
				if got := w.Total(); got != want {
					t.Fatalf("period %d: Total = %d right after the turn and the adds, want %d", p, got, want)
				}
				settle()
				for name, h := range map[string]*CountMinWindow{"this handle": w, "another": other} {
					if got := h.Total(); got != want {
						t.Fatalf("period %d: %s: Total = %d, want %d", p, name, got, want)
					}
					st := h.Stats()
					if st.Total != want || h.ErrorBound() != st.ErrorBound {
						t.Fatalf("period %d: %s: Stats total %d bound %d, Total %d ErrorBound %d", p, name, st.Total, st.ErrorBound, want, h.ErrorBound())
					}
				}
			}
			w.Close()
			if w.Total() != ClosedEstimate || w.ErrorBound() != ClosedEstimate {
				t.Errorf("after Close: Total %d, ErrorBound %d, want ClosedEstimate", w.Total(), w.ErrorBound())
			}
		})
	}
}

// TestCountMinWindow_TotalFresh: within one period, Total serves its
// cache for at most totalsFresh, then reads the adds made since.
func TestCountMinWindow_TotalFresh(t *testing.T) {
	w := mustOpenWindow(t, filepath.Join(t.TempDir(), "w"), Window{Keep: 2}, winCfg)
	w.AddString("a")
	if got := w.Total(); got != 1 {
		t.Fatalf("Total = %d, want 1", got)
	}
	w.AddString("b")
	if got := w.Total(); got != 1 && got != 2 {
		t.Fatalf("Total within the cache's life = %d, want 1 (cached) or 2", got)
	}
	settle()
	if got := w.Total(); got != 2 {
		t.Fatalf("Total after %v = %d, want 2", 2*totalsFresh, got)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if got := w.Total(); got != 2 {
		t.Fatalf("Total of the frozen window = %d, want 2", got)
	}
}
