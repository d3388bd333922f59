//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// Single-process tests of the Count-Min window: exact estimates against a
// reference across turns, configs, views and the clear's election.

// winCfg is wide enough that a few hundred keys never collide in every
// row: estimates are exact.
var winCfg = CountMinConfig{Rows: 4, Width: 1 << 14}

func mustOpenWindow(t testing.TB, path string, w Window, cfg CountMinConfig, opts ...Option) *CountMinWindow {
	t.Helper()
	cw, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: w, CountMin: cfg}, opts...)
	if err != nil {
		t.Fatalf("OpenCountMinWindow(%s, %+v, %+v): %v", path, w, cfg, err)
	}
	t.Cleanup(func() { cw.Close() })
	return cw
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
// the window, and Stats naming the periods covered.
func TestCountMinWindow_RotateExact(t *testing.T) {
	for _, keep := range []int{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			w := mustOpenWindow(t, tempPath(t, "win"), Window{Keep: keep}, winCfg)
			ref := winRef{}
			r := rand.New(rand.NewPCG(1, uint64(keep)))
			const keys = 200
			for round := uint64(0); round < 12; round++ {
				if got := w.Current(); got != round {
					t.Fatalf("Current() = %d after %d rotations", got, round)
				}
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
				st := w.Stats()
				var total uint64
				for p := first; p <= round; p++ {
					for _, v := range ref[p] {
						total += v
					}
				}
				if st.Current != round || st.Oldest != first || st.Total != total || st.Rotations != round {
					t.Fatalf("round %d: Stats = current %d oldest %d total %d rotations %d, want %d %d %d %d",
						round, st.Current, st.Oldest, st.Total, st.Rotations, round, first, total, round)
				}
				states := map[string]int{}
				for _, sl := range st.Slots {
					states[sl.State]++
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
		lo, hi := hashString(k, w.slots[0].seed)
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
		lo, hi := hashString(k, w.slots[0].seed)
		est, p := w.estimate(lo, hi)
		if want := ref.over(k, w.ctl.first(p), p); est != want {
			t.Errorf("Estimate(%q) over periods %d..%d = %d, want %d", k, w.ctl.first(p), p, est, want)
		}
	}
}

// TestCountMinWindow_ErrInvalidConfig: windows that cannot be built.
func TestCountMinWindow_ErrInvalidConfig(t *testing.T) {
	for _, w := range []Window{
		{},
		{Keep: -1},
		{Keep: MaxWindowKeep + 1},
		{Period: -time.Second, Keep: 2},
		{Period: time.Microsecond, Keep: 2},
	} {
		t.Run(fmt.Sprintf("period=%v/keep=%d", w.Period, w.Keep), func(t *testing.T) {
			_, err := OpenCountMinWindow(Path(tempPath(t, "win")), CountMinWindowConfig{Window: w, CountMin: winCfg})
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("OpenCountMinWindow = %v, want ErrInvalidConfig", err)
			}
			if _, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: w, CountMin: winCfg}); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("NewCountMinWindow = %v, want ErrInvalidConfig", err)
			}
		})
	}
	if _, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 65, Width: 8}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("65 rows: %v, want ErrInvalidConfig", err)
	}
}

// TestCountMinWindow_ErrIncompatible: a window attached with another
// window or shape than the file's, and a Count-Min file, are refused; the
// zero shape attaches.
func TestCountMinWindow_ErrIncompatible(t *testing.T) {
	path := tempPath(t, "win")
	win := Window{Period: time.Minute, Keep: 3}
	mustOpenWindow(t, path, win, winCfg)
	for _, tc := range []struct {
		name string
		w    Window
		cfg  CountMinConfig
	}{
		{"keep", Window{Period: time.Minute, Keep: 2}, winCfg},
		{"period", Window{Period: time.Second, Keep: 3}, winCfg},
		{"rotate only", Window{Keep: 3}, winCfg},
		{"shape", win, CountMinConfig{Rows: 4, Width: 1 << 12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: tc.w, CountMin: tc.cfg})
			if !errors.Is(err, ErrIncompatible) {
				t.Errorf("OpenCountMinWindow(%+v, %+v) = %v, want ErrIncompatible", tc.w, tc.cfg, err)
			}
		})
	}
	if _, err := OpenCountMin(Path(path), CountMinConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountMin of a window file = %v, want ErrIncompatible", err)
	}
	cms := tempPath(t, "cms")
	mustOpen(t, cms, CountMinConfig{})
	if _, err := OpenCountMinWindow(Path(cms), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{}}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountMinWindow of a Count-Min file = %v, want ErrIncompatible", err)
	}
	w := mustOpenWindow(t, path, win, CountMinConfig{})
	if w.Config().CountMin.Rows != winCfg.Rows || w.Config().CountMin.Width != winCfg.Width || w.Config().Window != win {
		t.Errorf("attached %d x %d %v, want %d x %d %v", w.Config().CountMin.Rows, w.Config().CountMin.Width, w.Config().Window, winCfg.Rows, winCfg.Width, win)
	}
}

// TestCountMinWindow_ViewsAndClose: a read-only view reads and refuses
// mutators; a frozen window refuses them and keeps its window however
// late it is read; a closed handle reports ErrClosed and estimates that
// cannot pass for counts; String hides the seed.
func TestCountMinWindow_ViewsAndClose(t *testing.T) {
	path := tempPath(t, "win")
	win := Window{Period: 100 * time.Millisecond, Keep: 2} // long enough that a loaded machine does not move it past the add
	w := mustOpenWindow(t, path, win, winCfg)
	if _, err := w.AddN([]byte("k"), 7); err != nil {
		t.Fatal(err)
	}
	mutators := func(w *CountMinWindow) map[string]error {
		_, add := w.Add([]byte("x"))
		_, addN := w.AddN([]byte("x"), 2)
		_, addS := w.AddString("x")
		return map[string]error{"Add": add, "AddN": addN, "AddString": addS,
			"AddBatch": w.AddBatch([][]byte{[]byte("x")}, nil), "Rotate": w.Rotate(), "Freeze": w.Freeze()}
	}
	ro := mustOpenWindow(t, path, win, winCfg, ReadOnly())
	if got := ro.EstimateString("k"); got != 7 {
		t.Errorf("read-only Estimate = %d, want 7", got)
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
	time.Sleep(4 * win.Period) // the clock moves past the window
	for name, err := range mutators(w) {
		if !errors.Is(err, ErrFrozen) {
			t.Errorf("frozen %s = %v, want ErrFrozen", name, err)
		}
	}
	for _, h := range []*CountMinWindow{w, ro} {
		if got := h.EstimateString("k"); got != 7 || h.Current() != frozenAt {
			t.Errorf("frozen window: Estimate = %d at period %d, want 7 at %d", got, h.Current(), frozenAt)
		}
	}
	if _, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: win, CountMin: winCfg}); !errors.Is(err, ErrFrozen) {
		t.Errorf("read-write open of a frozen window = %v, want ErrFrozen", err)
	}
	s := fmt.Sprintf("%v %+v %#v", w, w, w)
	if strings.Contains(s, fmt.Sprint(w.slots[0].seed)) || !strings.Contains(s, "CountMinWindow") {
		t.Errorf("String = %q: want a description without the seed", s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := w.Add([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if got := w.Estimate([]byte("k")); got != ClosedEstimate {
		t.Errorf("Estimate after Close = %d, want ClosedEstimate", got)
	}
	est := []uint64{0}
	if err := w.EstimateBatch([][]byte{[]byte("k")}, est); !errors.Is(err, ErrClosed) || est[0] != ClosedEstimate {
		t.Errorf("EstimateBatch after Close = %v, %d", err, est[0])
	}
	if st := w.Stats(); !st.Closed || st.Total != ClosedEstimate {
		t.Errorf("Stats after Close = %+v", st)
	}
	var zero CountMinWindow
	if _, err := zero.Add([]byte("k")); !errors.Is(err, ErrClosed) || zero.Estimate(nil) != ClosedEstimate || zero.Close() != nil {
		t.Errorf("zero CountMinWindow: Add = %v", err)
	}
	_ = zero.String()
}

// TestCountMinWindow_Batches: AddBatch's estimates and EstimateBatch's
// equal the single-key ones, across turns, with each core.
func TestCountMinWindow_Batches(t *testing.T) {
	for _, core := range countMinCores() {
		t.Run(core.name(), func(t *testing.T) {
			// Wide, with a fixed seed: no key shares all its counters.
			w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: CountMinConfig{Rows: 3, Width: 1 << 14, Seed: 99}})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.core = core
			for i := range w.slots {
				w.slots[i].prefetch = true // serve batches from the core under test
			}
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
// leave byte-identical regions.
func TestCountMinWindow_CoresParity(t *testing.T) {
	var regions [][]byte
	for _, core := range countMinCores() {
		w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 3, Width: 1 << 8, Seed: 42}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.core = core
		for i := range w.slots {
			w.slots[i].prefetch = true
		}
		r := rand.New(rand.NewPCG(7, 7))
		for round := range 6 {
			var keys [][]byte
			for range 300 {
				keys = append(keys, []byte(fmt.Sprintf("k%d", r.IntN(1000))))
			}
			if err := w.AddBatch(keys, nil); err != nil {
				t.Fatal(err)
			}
			w.AddN([]byte("n"), uint64(round)<<40)
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		// A window's slots keep no add count, whichever core adds.
		region := bytes.Clone(w.m.entryBytes())
		ctl, slot := windowControlBytes(2), countMinSlotBytes(3, 1<<8)
		for i := range uint64(3) {
			if adds := stripeSum(region[ctl+i*slot:]); adds != 0 {
				t.Errorf("%s core: slot %d's stripes hold %d adds, want none", core.name(), i, adds)
			}
		}
		regions = append(regions, region)
	}
	for i := 1; i < len(regions); i++ {
		if !bytes.Equal(regions[0], regions[i]) {
			t.Errorf("%s core's region differs from %s core's", countMinCores()[i].name(), countMinCores()[0].name())
		}
	}
}

// TestCountMinWindow_TakeOverDeadClearer: a slot left "clearing" under a
// token nobody holds (a dead process's) or under this handle's own id (a
// dead predecessor's) is cleared again by the next writer, whose add then
// counts exactly.
func TestCountMinWindow_TakeOverDeadClearer(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own=%v", own), func(t *testing.T) {
			w := mustOpenWindow(t, tempPath(t, "win"), Window{Keep: 2}, winCfg)
			w.AddN([]byte("old"), 5) // period 0, slot 0
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
			w.slots[s].addHashed(lo, hi, 5)
			start := time.Now()
			est, err := w.AddString("new")
			if err != nil || est != 1 {
				t.Fatalf("Add after a dead clearer = %d, %v; want 1", est, err)
			}
			if got := w.EstimateString("old"); got != 0 {
				t.Errorf("Estimate(old) = %d, want 0: the slot was not cleared", got)
			}
			if got := atomic.LoadUint64(w.ctl.word(s)); got != heldWord(3) {
				t.Errorf("slot word %#x, want held(3)", got)
			}
			t.Logf("taken over in %v", time.Since(start))
		})
	}
}

// TestCountMinWindow_WaitsForLiveClearer: a writer whose slot another live
// handle is clearing waits for it rather than adding into the clear.
func TestCountMinWindow_WaitsForLiveClearer(t *testing.T) {
	path := tempPath(t, "win")
	a := mustOpenWindow(t, path, Window{Keep: 2}, winCfg)
	b := mustOpenWindow(t, path, Window{Keep: 2}, winCfg)
	a.AddString("k")
	a.Rotate()
	a.Rotate()
	// Rotate cleared period 3's slot ahead; period 4's (1) holds period 1:
	// a clear is due. b is its clearer, stopped inside the clear until
	// released.
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
	if got := a.EstimateString("k"); got != 1 {
		t.Errorf("Estimate = %d after the wait, want 1", got)
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
	for i := 0; i < stripeCount; i++ {
		sum += native.Uint64(slot[i*stripeBytes:])
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
	var cells uint64
	for i := 0; i < 2*4; i++ {
		cells += native.Uint64(slot0[stripesBytes+8*i:])
	}
	if adds := stripeSum(slot0); adds != 0 || cells != 4 {
		t.Errorf("slot 0 holds %d adds in its stripes and %d in its cells, want 0 and 4", adds, cells)
	}
}

// TestCountMinWindow_Corrupt: damaged window entries are refused with the
// sentinel that says what is wrong.
func TestCountMinWindow_Corrupt(t *testing.T) {
	win := Window{Keep: 2}
	cfg := CountMinConfig{Rows: 2, Width: 8}
	src := tempPath(t, "win")
	w := mustOpenWindow(t, src, win, cfg)
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
		{"keep zero", param(3, 0), ErrCorrupt},
		{"keep too large", param(3, MaxWindowKeep+1), ErrCorrupt},
		{"keep of another region", param(3, 3), ErrCorrupt},
		{"period under a millisecond", param(2, 1000), ErrCorrupt},
		{"width not a power of two", param(1, 6), ErrCorrupt},
		{"unknown parameter", param(4, 1), ErrCorrupt},
		{"entry checksum", func(b []byte) { b[otDirOff+entParams+24] ^= 1 }, ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(valid)
			tc.edit(data)
			path := tempPath(t, "win")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{}})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenCountMinWindow = %v, want %v naming the file", err, tc.want)
			}
		})
	}
}

// TestCountMinWindow_GarbageSlotWords: slot words that name periods far in
// the future (a damaged or crafted file) make adds fail with ErrCorrupt and
// estimates answer, rather than loop.
func TestCountMinWindow_GarbageSlotWords(t *testing.T) {
	w := mustOpenWindow(t, tempPath(t, "win"), Window{Keep: 2}, winCfg)
	for s := range uint64(3) {
		atomic.StoreUint64(w.ctl.word(s), heldWord(maxPeriod))
	}
	if _, err := w.AddString("k"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Add = %v, want ErrCorrupt", err)
	}
	if got := w.EstimateString("k"); got != 0 {
		t.Errorf("Estimate = %d, want 0", got)
	}
}

// TestCountMinWindow_FreezeRacingRotate: a Rotate in another handle whose
// turn of the epoch lands just after Freeze recorded its period must not
// clear, ahead, a slot of a period the frozen window covers.
func TestCountMinWindow_FreezeRacingRotate(t *testing.T) {
	path := tempPath(t, "win")
	w := mustOpenWindow(t, path, Window{Keep: 2}, winCfg)
	r := mustOpenWindow(t, path, Window{}, CountMinConfig{})
	w.AddN([]byte("k"), 10) // period 0
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	w.AddN([]byte("k"), 10) // period 1: the window is periods 0 and 1
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	// What the racing Rotate does after its checks: turn the epoch, then
	// clear the slot after the new current one, which holds period 0.
	atomic.AddUint64(r.ctl.epochWord(), 1)
	if err := r.ctl.prepare(r.ctl.current()+1, false); !errors.Is(err, ErrFrozen) {
		t.Errorf("a clear after the freeze: %v, want ErrFrozen", err)
	}
	if err := r.Rotate(); !errors.Is(err, ErrFrozen) {
		t.Errorf("Rotate of a frozen window: %v, want ErrFrozen", err)
	}
	for _, h := range []*CountMinWindow{w, r} {
		if got := h.EstimateString("k"); got != 20 {
			t.Errorf("frozen window: Estimate = %d, want 20 (periods 0 and 1)", got)
		}
	}
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

// TestWindow_DamagedEpoch: an epoch word no window can reach (damage, or
// a crafted file) makes Rotate and adds say the file is corrupt, on both
// windows, rather than blame the caller's argument.
func TestWindow_DamagedEpoch(t *testing.T) {
	cw := mustOpenWindow(t, tempPath(t, "win"), Window{Keep: 2}, winCfg)
	bw, err := OpenBloomWindow(Path(tempPath(t, "bwin")), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{Capacity: 100}})
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Close()
	for _, ctl := range []*windowCtl{&cw.ctl, &bw.ctl} {
		atomic.StoreUint64(ctl.epochWord(), maxPeriod+5)
	}
	if err := cw.Rotate(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("count-min window Rotate = %v, want ErrCorrupt", err)
	}
	if err := bw.Rotate(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bloom window Rotate = %v, want ErrCorrupt", err)
	}
	if _, err := cw.AddString("k"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("count-min window Add = %v, want ErrCorrupt", err)
	}
	if _, err := bw.AddString("k"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bloom window Add = %v, want ErrCorrupt", err)
	}
}
