package sketch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch/internal/cells"
)

// tempPath returns a path for a sketch file in the test's temporary dir.
func tempPath(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(t.TempDir(), name)
}

func mustOpen(t testing.TB, path string, cfg CountMinConfig, opts ...Option) *CountMin {
	t.Helper()
	c, err := OpenCountMin(Path(path), cfg, opts...)
	if err != nil {
		t.Fatalf("OpenCountMin(%s, %+v): %v", path, cfg, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestSuggestCountMin(t *testing.T) {
	for _, tc := range []struct {
		eps, conf   float64
		rows, width int
	}{
		{0.001, 0.99, 5, 4096},
		{0.01, 0.9, 3, 512},
		{0.001, 0.999, 7, 4096},
		{0.5, 0.5, 1, 8},
		{0.0001, 0.99, 5, 32768},
		{0, 0.99, 0, 0},
		{1, 0.99, 0, 0},
		{0.01, 1, 0, 0},
		{0.01, -0.5, 0, 0},
		{1e-30, 0.99, 0, 0},
	} {
		t.Run(fmt.Sprintf("eps=%v,conf=%v", tc.eps, tc.conf), func(t *testing.T) {
			rows, width := SuggestCountMin(tc.eps, tc.conf)
			if rows != tc.rows || width != tc.width {
				t.Errorf("SuggestCountMin(%v, %v) = %d, %d, want %d, %d", tc.eps, tc.conf, rows, width, tc.rows, tc.width)
			}
		})
	}
}

func TestOpenCountMin_Defaults(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{})
	if c.Config().Rows != 5 || c.Config().Width != 4096 {
		t.Fatalf("default shape = %d x %d, want 5 x 4096", c.Config().Rows, c.Config().Width)
	}
	st := c.Stats()
	want := CountMinStats{Rows: 5, Width: 4096, FileStats: FileStats{Bytes: st.Bytes}, ErrorRate: st.ErrorRate, Confidence: st.Confidence}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Stats of a new sketch (-want +got):\n%s", diff)
	}
	if c.Seed() == 0 {
		t.Errorf("Seed() = 0, want a random seed")
	}
	if st.Bytes != uint64(st.Bytes) || st.Bytes < 5*4096*8 {
		t.Errorf("Stats().Bytes = %d, want at least %d", st.Bytes, 5*4096*8)
	}
}

func TestOpenCountMin_InvalidConfig(t *testing.T) {
	for _, cfg := range []CountMinConfig{
		{ErrorRate: -1},
		{ErrorRate: 1.5},
		{Confidence: 1},
		{Rows: 5},
		{Width: 10},
		{Rows: -1, Width: 10},
		{Rows: 65, Width: 10},
		{Rows: 2, Width: maxWidth + 1},
		{Rows: 2, Width: 16, ErrorRate: 0.01},
		{ErrorRate: 1e-20},
		{Rows: maxRows, Width: maxWidth}, // past the largest file a sketch may have
	} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			path := tempPath(t, "cms")
			_, err := OpenCountMin(Path(path), cfg)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("OpenCountMin(%+v) error = %v, want ErrInvalidConfig", cfg, err)
			}
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("a rejected config left a file behind: %v", err)
			}
		})
	}
}

// TestCountMin_ExactSmall checks estimates against an exact map when the
// sketch is wide enough that collisions are rare, and the upper-bound
// promise always.
func TestCountMin_ExactSmall(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 4, Width: 1 << 16, Seed: 7})
	truth := map[string]uint64{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		k := fmt.Sprintf("key-%d", r.IntN(500))
		n := uint64(r.IntN(3) + 1)
		truth[k] += n
		got, err := c.AddN([]byte(k), n)
		if err != nil {
			t.Fatal(err)
		}
		if got < truth[k] {
			t.Fatalf("AddN(%q) = %d, want >= %d", k, got, truth[k])
		}
	}
	var total uint64
	for k, n := range truth {
		total += n
		if got := c.EstimateString(k); got != n {
			t.Errorf("Estimate(%q) = %d, want %d", k, got, n)
		}
	}
	st := c.Stats()
	if st.Total != total || st.Adds != total {
		t.Errorf("Stats() Total, Adds = %d, %d, want %d, %d", st.Total, st.Adds, total, total)
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
}

func TestCountMin_Saturates(t *testing.T) {
	for _, core := range countMinCores() {
		t.Run(core.Name(), func(t *testing.T) {
			c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 3, Width: 64, Seed: 1})
			c.core = core
			k := []byte("big")
			for i := 0; i < 3; i++ {
				core.Add(&c.l, k, 1<<62)
			}
			if got := c.Estimate(k); got != cells.MaxCount {
				t.Fatalf("Estimate after 3 x 2^62 = %d, want %d", got, cells.MaxCount)
			}
			if got := core.Add(&c.l, k, 1); got != cells.MaxCount {
				t.Errorf("add(1) on a saturated key = %d, want %d", got, cells.MaxCount)
			}
			if got := core.Add(&c.l, k, ^uint64(0)); got != cells.MaxCount {
				t.Errorf("add(MaxUint64) on a saturated key = %d, want %d", got, cells.MaxCount)
			}
			if err := c.Check(); err != nil {
				t.Errorf("Check() with saturated counters = %v, want nil", err)
			}
		})
	}
}

func TestCountMin_Reset(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 3, Width: 256})
	for i := 0; i < 1000; i++ {
		c.AddString(fmt.Sprint(i))
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Total != 0 || st.Adds != 0 || st.ErrorBound != 0 {
		t.Errorf("after Reset: Total, Adds, ErrorBound = %d, %d, %d, want 0", st.Total, st.Adds, st.ErrorBound)
	}
	if got := c.EstimateString("1"); got != 0 {
		t.Errorf("EstimateString(1) after Reset = %d, want 0", got)
	}
}

func TestCountMin_Closed(t *testing.T) {
	c, err := OpenCountMin(Path(tempPath(t, "cms")), CountMinConfig{Rows: 1, Width: 8})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddN([]byte("x"), 7); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
	testClosedHandle(t, c)
}

// TestCountMin_ZeroValue: a CountMin that was never opened behaves as a
// closed one, without panicking.
func TestCountMin_ZeroValue(t *testing.T) {
	var c CountMin
	testClosedHandle(t, &c)
	if err := c.Close(); err != nil {
		t.Errorf("Close of a zero CountMin = %v, want nil", err)
	}
	if err := c.Unlink(); err != nil {
		t.Errorf("Unlink of a zero CountMin = %v, want nil", err)
	}
	if c.Path() != "" {
		t.Errorf("Path of a zero CountMin = %q, want empty", c.Path())
	}
}

// testClosedHandle checks that every call on a closed handle says so, and
// that no answer could be taken for a count.
func testClosedHandle(t *testing.T, c *CountMin) {
	t.Helper()
	for name, f := range map[string]func() (uint64, error){
		"Add":       func() (uint64, error) { return c.Add([]byte("x")) },
		"AddN":      func() (uint64, error) { return c.AddN([]byte("x"), 0) },
		"AddString": func() (uint64, error) { return c.AddString("x") },
	} {
		if got, err := f(); !errors.Is(err, ErrClosed) || got != ClosedEstimate {
			t.Errorf("%s after Close = %d, %v, want ClosedEstimate, ErrClosed", name, got, err)
		}
	}
	if got := c.Estimate([]byte("x")); got != ClosedEstimate {
		t.Errorf("Estimate after Close = %d, want ClosedEstimate", got)
	}
	if got := c.EstimateString("x"); got != ClosedEstimate {
		t.Errorf("EstimateString after Close = %d, want ClosedEstimate", got)
	}
	est := []uint64{1, 2}
	if err := c.EstimateBatch([][]byte{[]byte("x"), []byte("y")}, est); !errors.Is(err, ErrClosed) || est[0] != ClosedEstimate || est[1] != ClosedEstimate {
		t.Errorf("EstimateBatch after Close = %v, %v, want ErrClosed and ClosedEstimate each", err, est)
	}
	_, fileErr := c.File()
	for name, err := range map[string]error{"Reset": c.Reset(), "Check": c.Check(), "Sync": c.Sync(), "AddBatch": c.AddBatch([][]byte{[]byte("x")}, nil), "File": fileErr} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	st := c.Stats()
	if !st.Closed || st.Total != ClosedEstimate || st.ErrorBound != ClosedEstimate || st.Adds != 0 {
		t.Errorf("Stats after Close = %+v, want Closed with Total and ErrorBound ClosedEstimate", st)
	}
}

// withCore returns another handle on c's mapping that uses core.
func (c *CountMin) withCore(core cells.CountMinCore) *CountMin {
	v := &CountMin{l: c.l, core: core}
	v.init(c.m, v)
	v.open.Store(true)
	return v
}

// TestCountMin_StatsVar: the expvar form is the Stats as JSON, with the
// documented field names, and no seed.
func TestCountMin_StatsVar(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 2, Width: 64, Seed: 77})
	c.AddN([]byte("k"), 5)
	var got map[string]any
	if err := json.Unmarshal([]byte(c.StatsVar().String()), &got); err != nil {
		t.Fatalf("StatsVar().String() is not JSON: %v", err)
	}
	want := map[string]any{"rows": 2.0, "width": 64.0, "total": 5.0, "adds": 5.0, "closed": false, "frozen": false, "read_only": false}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("StatsVar %s = %v, want %v", k, got[k], v)
		}
	}
	for _, k := range []string{"bytes", "error_bound", "error_rate", "confidence"} {
		if _, ok := got[k]; !ok {
			t.Errorf("StatsVar has no %s", k)
		}
	}
	if len(got) != len(want)+4 {
		t.Errorf("StatsVar has fields %v", got)
	}
}

// TestCountMinConfig_Bytes: a config says what it costs before it is
// opened, and a half-given shape says what is missing.
func TestCountMinConfig_Bytes(t *testing.T) {
	n, err := CountMinConfig{}.Bytes()
	if err != nil || n < 5*4096*8 {
		t.Errorf("default Bytes() = %d, %v", n, err)
	}
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{})
	if c.Stats().Bytes != n {
		t.Errorf("Bytes() = %d, the file has %d", n, c.Stats().Bytes)
	}
	huge := CountMinConfig{ErrorRate: 1e-9, Confidence: 0.99} // 5 x 2^32 counters
	n, err = huge.Bytes()
	switch {
	case bits.UintSize == 32:
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Bytes of %+v on a 32-bit platform = %d, %v, want ErrInvalidConfig", huge, n, err)
		}
	case err != nil || n < 160<<30:
		t.Errorf("Bytes of %+v = %d, %v, want over 160 GiB", huge, n, err)
	}
	for cfg, want := range map[CountMinConfig]string{
		{Rows: 4}:  "Width is missing",
		{Width: 8}: "Rows is missing",
	} {
		if _, err := cfg.Bytes(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("Bytes of %+v = %v, want %q", cfg, err, want)
		}
	}
}

// TestCountMin_CheapTotal: Total and ErrorBound, from the add count, agree
// with Stats on a quiet sketch, count AddN by its n, and say
// ClosedEstimate after Close; an add count above every row is reported.
func TestCountMin_CheapTotal(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 3, Width: 256})
	c.AddN([]byte("a"), 40)
	c.Add([]byte("b"))
	c.AddBatch([][]byte{[]byte("c"), []byte("d")}, nil)
	st := c.Stats()
	if c.Total() != 43 || st.Total != 43 || st.Adds != 43 {
		t.Errorf("Total() = %d, Stats Total %d, Adds %d, want 43", c.Total(), st.Total, st.Adds)
	}
	if c.ErrorBound() != st.ErrorBound {
		t.Errorf("ErrorBound() = %d, Stats says %d", c.ErrorBound(), st.ErrorBound)
	}
	c.l.CountAdds(5) // as an add that raced a Reset leaves it
	if err := c.Check(); !errors.Is(err, ErrInconsistent) || errors.Is(err, ErrTornAdd) {
		t.Errorf("Check with the add count above the rows = %v, want ErrInconsistent", err)
	}
	c.Close()
	if c.Total() != ClosedEstimate || c.ErrorBound() != ClosedEstimate {
		t.Errorf("after Close: Total %d, ErrorBound %d, want ClosedEstimate", c.Total(), c.ErrorBound())
	}
}
