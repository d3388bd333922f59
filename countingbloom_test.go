package sketch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
)

// TestCountingBloom_Geometry: the seed's sizing, k = round(-log2 p) in
// 1..32 and m = next_pow2(n·k/ln 2), at least 64.
func TestCountingBloom_Geometry(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		p    float64
		m    uint64
		k    int
		fail bool
	}{
		{1_000_000, 0.01, 1 << 24, 7, false},
		{1000, 0.01, 1 << 14, 7, false},
		{1, 0.5, 64, 1, false},
		{10, 1e-12, 1 << 9, 32, false},
		{100, 0.9, 256, 1, false},
		{0, 0.01, 0, 0, true},
		{10, 0, 0, 0, true},
		{10, 1, 0, 0, true},
	} {
		m, k, err := cbfGeometry(tc.n, tc.p)
		if tc.fail {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("cbfGeometry(%d, %v) = %v, want ErrInvalidConfig", tc.n, tc.p, err)
			}
			continue
		}
		wantK := min(max(int(math.Round(-math.Log2(tc.p))), 1), 32)
		wantM := max(uint64(nextPow2(int(math.Ceil(float64(tc.n)*float64(wantK)/math.Ln2)))), 64)
		if err != nil || m != wantM || k != wantK {
			t.Errorf("cbfGeometry(%d, %v) = %d, %d, %v, want %d, %d", tc.n, tc.p, m, k, err, wantM, wantK)
		}
	}
}

// TestCountingBloom_Oracles: no false negatives, the false-positive rate
// at capacity near the target, counts never under below saturation, and
// Count near the number of items.
func TestCountingBloom_Oracles(t *testing.T) {
	const n, p = 100_000, 0.01
	b := mustCBF(t, CountingBloomConfig{Capacity: n, FPRate: p, Seed: 42})
	truth := map[string]int{}
	adds := uint64(0)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		times := 1
		if i%10 == 0 {
			times = 1 + r.IntN(12)
		}
		for range times {
			if _, err := b.Add(cbfKey("in", i)); err != nil {
				t.Fatal(err)
			}
		}
		truth[string(cbfKey("in", i))] = times
		adds += uint64(times)
	}
	for k, times := range truth {
		if !b.Contains([]byte(k)) {
			t.Fatalf("Contains(%q) = false for an added item", k)
		}
		if got := b.Estimate([]byte(k)); int(got) < min(times, 15) {
			t.Fatalf("CountOf(%q) = %d, added %d times", k, got, times)
		}
	}
	fp := 0
	const probes = 200_000
	for i := range probes {
		if b.Contains(cbfKey("out", i)) {
			fp++
		}
	}
	rate := float64(fp) / probes
	t.Logf("false-positive rate at capacity: %.4f (target %.4f, %d of %d)", rate, p, fp, probes)
	if rate > 1.5*p {
		t.Errorf("false-positive rate %.4f, more than 1.5x the target %.4f", rate, p)
	}
	if c := b.Stats().Estimated; math.Abs(c-n)/n > 0.05 {
		t.Errorf("Count() = %.0f, want within 5%% of %d", c, n)
	}
	st := b.Stats()
	if st.Capacity != n || st.FPRate != p || st.Counters != 1<<20 || st.Hashes != 7 || st.Adds != adds {
		t.Errorf("Stats() = %+v", st)
	}
}

// TestCountingBloom_StatsAdds: Stats().Adds counts each Add, each key of
// an AddBatch and each AddIfAbsent that added, as BloomStats.Adds does;
// Remove, Merge and a refused AddIfAbsent leave it, and Reset zeroes it.
func TestCountingBloom_StatsAdds(t *testing.T) {
	b := mustCBF(t, CountingBloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 5})
	other := mustCBF(t, CountingBloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 5})
	other.AddString("elsewhere")
	steps := []struct {
		name string
		do   func() error
		want uint64
	}{
		{"Add", func() error { _, err := b.AddString("a"); return err }, 1},
		{"Add again", func() error { _, err := b.AddString("a"); return err }, 2},
		{"AddBatch of 3", func() error { return b.AddBatch([][]byte{[]byte("b"), []byte("c"), []byte("a")}, nil) }, 5},
		{"AddIfAbsent, absent", func() error { _, err := b.AddIfAbsentString("d"); return err }, 6},
		{"AddIfAbsent, present", func() error { _, err := b.AddIfAbsentString("d"); return err }, 6},
		{"Remove", func() error { _, err := b.RemoveString("a"); return err }, 6},
		{"Merge", func() error { return b.Merge(other) }, 6},
		{"Reset", b.Reset, 0},
		{"Add after Reset", func() error { _, err := b.AddString("e"); return err }, 1},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := b.Stats().Adds; got != st.want {
			t.Fatalf("after %s: Stats().Adds = %d, want %d", st.name, got, st.want)
		}
	}
}

// TestCountingBloom_AddRemove: Add's already is exact in one process; removing
// every copy makes an item absent; a saturated item sticks at 15.
func TestCountingBloom_AddRemove(t *testing.T) {
	b := mustCBF(t, CountingBloomConfig{Capacity: 10_000, FPRate: 0.001})
	for i := range 1000 {
		k := cbfKey("k", i)
		if already, err := b.Add(k); already || err != nil {
			t.Fatalf("first Add(%q) = %v, %v, want false (not already there)", k, already, err)
		}
		if already, _ := b.Add(k); !already {
			t.Fatalf("second Add(%q) = false, want already there", k)
		}
	}
	for i := range 1000 {
		k := cbfKey("k", i)
		for range 2 {
			if removed, err := b.Remove(k); !removed || err != nil {
				t.Fatalf("Remove(%q) = %v, %v", k, removed, err)
			}
		}
		if removed, _ := b.Remove(k); removed {
			t.Fatalf("third Remove(%q) removed something", k)
		}
	}
	if st := b.Stats(); st.Set != 0 {
		t.Errorf("after removing everything, %d counters are set", st.Set)
	}
	hot := []byte("hot")
	for range 20 {
		b.Add(hot)
	}
	if got := b.Estimate(hot); got != 15 {
		t.Errorf("CountOf after 20 adds = %d, want 15 (saturated)", got)
	}
	if removed, _ := b.Remove(hot); !removed {
		t.Error("Remove of a saturated item = false, want true")
	}
	if got := b.Estimate(hot); got != 15 {
		t.Errorf("CountOf after removing a saturated item = %d, want 15 (it sticks)", got)
	}
}

// TestCountingBloom_MergeAndClear: a merge contains both sides' items with
// summed (saturating) counts; merging into itself doubles; another
// geometry or seed is ErrIncompatible; Clear empties.
func TestCountingBloom_MergeAndClear(t *testing.T) {
	cfg := CountingBloomConfig{Capacity: 5000, Seed: 9}
	a, b := mustCBF(t, cfg), mustCBF(t, cfg)
	for i := range 2000 {
		a.Add(cbfKey("a", i))
		b.Add(cbfKey("b", i))
		b.Add(cbfKey("b", i))
	}
	if err := a.Merge(b); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	for i := range 2000 {
		if !a.Contains(cbfKey("a", i)) || a.Estimate(cbfKey("b", i)) < 2 {
			t.Fatalf("after Merge: Contains(a-%d) = %v, CountOf(b-%d) = %d", i, a.Contains(cbfKey("a", i)), i, a.Estimate(cbfKey("b", i)))
		}
	}
	if err := a.Merge(a); err != nil {
		t.Fatalf("Merge with itself: %v", err)
	}
	if got := a.Estimate(cbfKey("b", 7)); got < 4 {
		t.Errorf("CountOf after merging with itself = %d, want >= 4", got)
	}
	for _, other := range []CountingBloomConfig{{Capacity: 50_000, Seed: 9}, {Capacity: 5000, Seed: 10}} {
		if err := a.Merge(mustCBF(t, other)); !errors.Is(err, ErrIncompatible) {
			t.Errorf("Merge of %+v = %v, want ErrIncompatible", other, err)
		}
	}
	if err := a.Reset(); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Set != 0 || a.Contains(cbfKey("a", 1)) {
		t.Errorf("after Clear: %d counters set", st.Set)
	}
}

// TestCountingBloom_Concurrent: goroutines add disjoint sets, through Add
// and AddMany, while others remove their own items: nothing added and not
// removed is ever missing.
func TestCountingBloom_Concurrent(t *testing.T) {
	b := mustCBF(t, CountingBloomConfig{Capacity: 50_000})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var batch [][]byte
			for i := range 5000 {
				k := cbfKey(fmt.Sprint("g", g), i)
				if i%2 == 0 {
					b.Add(k)
				} else {
					batch = append(batch, k)
				}
				if i%7 == 0 {
					junk := cbfKey(fmt.Sprint("junk", g), i)
					b.Add(junk)
					if removed, _ := b.Remove(junk); !removed {
						t.Errorf("Remove of an item just added = false")
					}
				}
			}
			if err := b.AddBatch(batch, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for g := range 4 {
		for i := range 5000 {
			if k := cbfKey(fmt.Sprint("g", g), i); !b.Contains(k) {
				t.Fatalf("Contains(%q) = false", k)
			}
		}
	}
}

// TestCountingBloom_Views: read-only views and a frozen file refuse every
// mutator and still answer.
func TestCountingBloom_Views(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cbf")
	b, err := OpenCountingBloom(Path(path), CountingBloomConfig{Capacity: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.Add([]byte("x"))
	ro, err := OpenCountingBloom(Path(path), CountingBloomConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	cbfMutationsFail(t, ro, ErrReadOnly)
	if !ro.Contains([]byte("x")) || ro.Estimate([]byte("x")) != 1 {
		t.Error("the read-only view does not see the item")
	}
	if err := b.Freeze(); err != nil {
		t.Fatal(err)
	}
	cbfMutationsFail(t, b, ErrFrozen)
	if _, err := OpenCountingBloom(Path(path), CountingBloomConfig{Capacity: 1000}); !errors.Is(err, ErrFrozen) {
		t.Errorf("read-write open of a frozen filter = %v, want ErrFrozen", err)
	}
	if !ro.Frozen() || !ro.Contains([]byte("x")) {
		t.Errorf("read-only view of the frozen filter: Frozen %v", ro.Frozen())
	}
	// The zero config attaches but cannot create.
	if _, err := OpenCountingBloom(Path(filepath.Join(t.TempDir(), "new")), CountingBloomConfig{}); !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("zero config on a missing file = %v, want ErrInvalidConfig and fs.ErrNotExist", err)
	}
	if _, err := OpenCountingBloom(Path(path+"2"), CountingBloomConfig{Capacity: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCountingBloom(Path(path+"2"), CountingBloomConfig{Capacity: 100_000}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("another geometry = %v, want ErrIncompatible", err)
	}
}

func cbfMutationsFail(t *testing.T, b *CountingBloom, want error) {
	t.Helper()
	_, add := b.Add([]byte("y"))
	many := b.AddBatch([][]byte{[]byte("y")}, nil)
	_, rm := b.Remove([]byte("x"))
	for name, err := range map[string]error{
		"Add": add, "AddBatch": many, "Remove": rm, "Reset": b.Reset(),
		"Merge": b.Merge(b), "Freeze": b.Freeze(),
	} {
		if !errors.Is(err, want) {
			t.Errorf("%s = %v, want %v", name, err, want)
		}
	}
}

// TestCountingBloom_Closed: a closed or zero handle never claims an item
// is absent and refuses every mutator.
func TestCountingBloom_Closed(t *testing.T) {
	b, err := OpenCountingBloom(Memory(), CountingBloomConfig{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	var zero CountingBloom
	for _, h := range []*CountingBloom{b, &zero} {
		cbfMutationsFail(t, h, ErrClosed)
		if !h.Contains([]byte("never added")) || h.Estimate([]byte("z")) != 15 {
			t.Errorf("a closed handle reports an item absent")
		}
		if st := h.Stats(); !st.Closed {
			t.Errorf("Stats of a closed handle = %+v, want Closed", st)
		}
	}
}

// TestCountingBloom_Allocs: the hot paths allocate nothing.
func TestCountingBloom_Allocs(t *testing.T) {
	b := mustCBF(t, CountingBloomConfig{Capacity: 1000})
	k := []byte("key")
	keys := [][]byte{k, k}
	for name, f := range map[string]func(){
		"Add":      func() { b.Add(k) },
		"Contains": func() { b.Contains(k) },
		"CountOf":  func() { b.Estimate(k) },
		"Remove":   func() { b.Remove(k) },
		"AddBatch": func() { b.AddBatch(keys, nil) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %.1f times a call", name, n)
		}
	}
}

// TestCountingBloom_StatsVar: the expvar form is JSON, also for a closed
// handle and a full filter.
func TestCountingBloom_StatsVar(t *testing.T) {
	b := mustCBF(t, CountingBloomConfig{Capacity: 1, FPRate: 0.5})
	for i := range 1000 {
		b.Add(cbfKey("fill", i))
	}
	for _, h := range []*CountingBloom{b, {}} {
		var got map[string]any
		if err := json.Unmarshal([]byte(h.StatsVar().String()), &got); err != nil {
			t.Fatalf("StatsVar().String() = %s: not JSON: %v", h.StatsVar(), err)
		}
		keys := []string{"capacity", "fp_rate", "counters", "hashes", "set", "fill", "estimated", "adds", "bytes", "frozen", "read_only", "closed"}
		if h.m == nil {
			keys = []string{"closed"} // a zero value has no kind to describe
		}
		for _, k := range keys {
			if _, ok := got[k]; !ok {
				t.Errorf("StatsVar has no %s: %v", k, got)
			}
		}
	}
}

// TestCountingBloom_EstimateBatch: EstimateBatch answers what Estimate
// answers for each key (absent, stored, saturated), with
// CountMin.EstimateBatch's contract: lengths that differ are
// ErrInvalidArgument and nothing is asked; a read-only handle and a frozen
// filter answer; a closed handle answers 15 for every key and returns
// ErrClosed.
func TestCountingBloom_EstimateBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "banned.cbf")
	b, err := OpenCountingBloom(Path(path), CountingBloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var keys [][]byte
	for i := range 40 {
		k := cbfKey("k", i)
		keys = append(keys, k)
		for range i % 20 { // 0 (absent) to 19 (saturated) copies
			if _, err := b.Add(k); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(name string, h *CountingBloom) {
		t.Helper()
		got := make([]uint64, len(keys))
		if err := h.EstimateBatch(keys, got); err != nil {
			t.Fatalf("%s: EstimateBatch: %v", name, err)
		}
		for i, k := range keys {
			if want := h.Estimate(k); got[i] != want || want < uint64(min(i%20, 15)) {
				t.Fatalf("%s: EstimateBatch: %q = %d, Estimate %d, stored %d times", name, k, got[i], want, i%20)
			}
		}
	}
	check("read-write", b)
	if err := b.EstimateBatch(nil, nil); err != nil {
		t.Errorf("EstimateBatch(nil, nil) = %v", err)
	}
	short := []uint64{7, 7}
	if err := b.EstimateBatch(keys[:3], short); !errors.Is(err, ErrInvalidArgument) || short[0] != 7 || short[1] != 7 {
		t.Errorf("EstimateBatch(3 keys, 2 estimates) = %v, estimates %v; want ErrInvalidArgument and nothing asked", err, short)
	}
	ro, err := OpenCountingBloom(Path(path), CountingBloomConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	check("read-only", ro)
	if err := b.Freeze(); err != nil {
		t.Fatal(err)
	}
	check("frozen", b)
	ro.Close()
	got := make([]uint64, len(keys))
	if err := ro.EstimateBatch(keys, got); !errors.Is(err, ErrClosed) {
		t.Errorf("EstimateBatch after Close = %v, want ErrClosed", err)
	}
	for i, v := range got {
		if v != 15 {
			t.Fatalf("EstimateBatch after Close: %q = %d, want 15", keys[i], v)
		}
	}
}
