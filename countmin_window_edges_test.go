//go:build linux

package sketch

import (
	"errors"
	"io/fs"
	"math"
	"strings"
	"sync"
	"testing"
)

// TestCountMinWindow_Saturation: AddN with the largest n in several
// periods saturates each counter and the sum over the window at 2^63.
func TestCountMinWindow_Saturation(t *testing.T) {
	for _, keep := range []int{1, 2, 3, 4, 5} {
		w := mustOpenWindow(t, tempPath(t, "win"), Window{Keep: keep}, winCfg)
		k := []byte("k")
		for round := range keep + 1 {
			est, err := w.AddN(k, math.MaxUint64)
			if err != nil {
				t.Fatal(err)
			}
			if est != maxCount {
				t.Errorf("keep %d round %d: AddN(max) = %d, want 2^63", keep, round, est)
			}
			if est, _ := w.AddN(k, maxCount-1); est != maxCount {
				t.Errorf("keep %d round %d: AddN(2^63-1) = %d, want 2^63", keep, round, est)
			}
			if est, _ := w.Add(k); est != maxCount {
				t.Errorf("keep %d round %d: Add after saturation = %d, want 2^63", keep, round, est)
			}
			if est, _ := w.AddN(k, 0); est != maxCount {
				t.Errorf("keep %d round %d: AddN(0) = %d, want 2^63", keep, round, est)
			}
			if got := w.Estimate(k); got != maxCount {
				t.Errorf("keep %d round %d: Estimate = %d, want 2^63", keep, round, got)
			}
			out := make([]uint64, 2)
			if err := w.EstimateBatch([][]byte{k, []byte("other")}, out); err != nil || out[0] != maxCount || out[1] != 0 {
				t.Errorf("keep %d round %d: EstimateBatch = %v, %v", keep, round, out, err)
			}
			if err := w.AddBatch([][]byte{k}, out[:1]); err != nil || out[0] != maxCount {
				t.Errorf("keep %d round %d: AddBatch = %v, %v", keep, round, out[:1], err)
			}
			st := w.Stats()
			if st.Total != maxCount {
				t.Errorf("keep %d round %d: Stats.Total = %d, want 2^63", keep, round, st.Total)
			}
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCountMinWindow_BadArguments: empty batches are no-ops;
// mismatched slices are ErrInvalidArgument naming the file; AddN(0)
// counts nothing.
func TestCountMinWindow_BadArguments(t *testing.T) {
	path := tempPath(t, "win")
	w := mustOpenWindow(t, path, Window{Keep: 3}, winCfg)
	if err := w.AddBatch(nil, nil); err != nil {
		t.Errorf("AddBatch(nil, nil) = %v", err)
	}
	if err := w.AddBatch([][]byte{}, []uint64{}); err != nil {
		t.Errorf("AddBatch(empty, empty) = %v", err)
	}
	if err := w.EstimateBatch(nil, nil); err != nil {
		t.Errorf("EstimateBatch(nil, nil) = %v", err)
	}
	for name, err := range map[string]error{
		"AddBatch short":      w.AddBatch([][]byte{[]byte("a"), []byte("b")}, make([]uint64, 1)),
		"AddBatch long":       w.AddBatch([][]byte{[]byte("a")}, make([]uint64, 2)),
		"AddBatch empty est":  w.AddBatch([][]byte{[]byte("a")}, []uint64{}),
		"EstimateBatch short": w.EstimateBatch([][]byte{[]byte("a"), []byte("b")}, make([]uint64, 1)),
		"EstimateBatch nil":   w.EstimateBatch([][]byte{[]byte("a")}, nil),
	} {
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "win") {
			t.Errorf("%s: %v, want ErrInvalidArgument naming the file", name, err)
		}
	}
	if got := w.Estimate([]byte("a")); got != 0 {
		t.Errorf("a mismatched AddBatch counted: Estimate = %d", got)
	}
	if est, err := w.AddN([]byte("z"), 0); err != nil || est != 0 {
		t.Errorf("AddN(0) = %d, %v", est, err)
	}
	if st := w.Stats(); st.Total != 0 {
		t.Errorf("Stats.Total = %d after adding nothing", st.Total)
	}
	// nil and empty keys are keys like any other.
	if est, err := w.Add(nil); err != nil || est != 1 {
		t.Errorf("Add(nil) = %d, %v", est, err)
	}
	if got := w.EstimateString(""); got != 1 {
		t.Errorf("EstimateString(\"\") = %d after Add(nil)", got)
	}
}

// TestWindows_ZeroValue: every method of the zero handles answers
// closed, without a panic.
func TestWindows_ZeroValue(t *testing.T) {
	var w CountMinWindow
	k := []byte("k")
	if _, err := w.Add(k); !errors.Is(err, ErrClosed) {
		t.Errorf("Add: %v", err)
	}
	if _, err := w.AddN(k, 3); !errors.Is(err, ErrClosed) {
		t.Errorf("AddN: %v", err)
	}
	if _, err := w.AddString("k"); !errors.Is(err, ErrClosed) {
		t.Errorf("AddString: %v", err)
	}
	if err := w.AddBatch([][]byte{k}, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("AddBatch: %v", err)
	}
	out := []uint64{7}
	if err := w.EstimateBatch([][]byte{k}, out); !errors.Is(err, ErrClosed) || out[0] != ClosedEstimate {
		t.Errorf("EstimateBatch: %v %v", out, err)
	}
	if w.Estimate(k) != ClosedEstimate || w.EstimateString("k") != ClosedEstimate {
		t.Error("Estimate of the zero value is not ClosedEstimate")
	}
	if err := w.Rotate(); !errors.Is(err, ErrClosed) {
		t.Errorf("Rotate: %v", err)
	}
	if err := w.Freeze(); !errors.Is(err, ErrClosed) {
		t.Errorf("Freeze: %v", err)
	}
	if st := w.Stats(); !st.Closed {
		t.Errorf("Stats: %+v", st)
	}
	_ = w.StatsVar().String()
	_ = w.String()
	_, _ = w.Current(), w.Config().CountMin.Rows+w.Config().CountMin.Width
	if _, err := w.File(); !errors.Is(err, ErrClosed) {
		t.Errorf("File: %v", err)
	}
	if err := w.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	var b BloomWindow
	if _, err := b.Add(k); !errors.Is(err, ErrClosed) {
		t.Errorf("Bloom window Add: %v", err)
	}
	if _, err := b.AddString("k"); !errors.Is(err, ErrClosed) {
		t.Errorf("Bloom window AddString: %v", err)
	}
	if err := b.AddBatch([][]byte{k}, make([]bool, 1)); !errors.Is(err, ErrClosed) {
		t.Errorf("Bloom window AddBatch: %v", err)
	}
	if !b.Contains(k) || !b.ContainsString("k") {
		t.Error("Bloom window Check of the zero value is not true")
	}
	res := []bool{false}
	b.ContainsBatch([][]byte{k}, res)
	if !res[0] {
		t.Error("Bloom window CheckBatch of the zero value is not true")
	}
	if err := b.Rotate(); !errors.Is(err, ErrClosed) {
		t.Errorf("Bloom window Rotate: %v", err)
	}
	if err := b.Freeze(); !errors.Is(err, ErrClosed) {
		t.Errorf("Bloom window Freeze: %v", err)
	}
	if st := b.Stats(); !st.Closed {
		t.Errorf("Bloom window Stats: %+v", st)
	}
	_ = b.StatsVar().String()
	_ = b.String()
	_, _, _, _ = b.Current(), b.Bits(), b.Hashes(), b.Config().Bloom.Capacity
	if err := b.Close(); err != nil {
		t.Errorf("Bloom window Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Bloom window second Close: %v", err)
	}

	var a Arena
	if _, err := OpenCountMinWindow(a.Place("x"), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: winCfg}); !errors.Is(err, ErrClosed) {
		t.Errorf("Arena.CountMinWindow: %v", err)
	}
	if _, err := OpenBloomWindow(a.Place("x"), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{Capacity: 100}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Arena.BloomWindow: %v", err)
	}
	if l := a.List(); len(l) != 0 {
		t.Errorf("List: %v", l)
	}
	if st := a.Stats(); !st.Closed {
		t.Errorf("Arena Stats: %+v", st)
	}
	if err := a.Freeze(); !errors.Is(err, ErrClosed) {
		t.Errorf("Arena Freeze: %v", err)
	}
	_ = a.String()
	if err := a.Close(); err != nil {
		t.Errorf("Arena Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Arena second Close: %v", err)
	}
}

// TestCountMinWindow_ZeroWindowAttach: the zero Window attaches to
// the stored window and reports it; on a missing file it cannot create,
// and the error names the file and wraps fs.ErrNotExist.
func TestCountMinWindow_ZeroWindowAttach(t *testing.T) {
	path := tempPath(t, "win")
	w := mustOpenWindow(t, path, Window{Keep: 3}, winCfg)
	w.AddString("a")
	z := mustOpenWindow(t, path, Window{}, CountMinConfig{})
	if z.Config().Window != (Window{Keep: 3}) || z.Config().CountMin.Rows != winCfg.Rows || z.Config().CountMin.Width != winCfg.Width {
		t.Errorf("zero Window attached as %v, %d x %d", z.Config().Window, z.Config().CountMin.Rows, z.Config().CountMin.Width)
	}
	if got := z.EstimateString("a"); got != 1 {
		t.Errorf("Estimate through the zero-Window handle = %d", got)
	}
	if _, err := z.AddString("a"); err != nil {
		t.Fatal(err)
	}
	if err := z.Rotate(); err != nil {
		t.Fatal(err)
	}
	if got := w.EstimateString("a"); got != 2 || w.Current() != 1 {
		t.Errorf("after the zero-Window handle's add and Rotate: estimate %d, current %d", got, w.Current())
	}
	missing := tempPath(t, "missing")
	_, err := OpenCountMinWindow(Path(missing), CountMinWindowConfig{Window: Window{}, CountMin: winCfg})
	if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("zero Window on a missing file: %v", err)
	}
	if _, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{}, CountMin: winCfg}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewCountMinWindow with the zero Window: %v", err)
	}
	// A window asked of a file that holds a plain Count-Min sketch.
	cm := tempPath(t, "cm")
	mustOpen(t, cm, winCfg)
	if _, err := OpenCountMinWindow(Path(cm), CountMinWindowConfig{Window: Window{}, CountMin: CountMinConfig{}}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("zero Window on a Count-Min file: %v", err)
	}
}

// TestCountMinWindow_CloseWhileInUse: Close races every method from
// other goroutines; calls answer or report ErrClosed, nothing panics.
func TestCountMinWindow_CloseWhileInUse(t *testing.T) {
	for range 20 {
		path := tempPath(t, "win")
		w, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: CountMinConfig{Rows: 2, Width: 256}})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				keys := [][]byte{[]byte("a"), []byte("b")}
				out := make([]uint64, 2)
				for i := range 300 {
					var err error
					switch (g + i) % 5 {
					case 0:
						_, err = w.Add(keys[0])
					case 1:
						err = w.AddBatch(keys, out)
					case 2:
						err = w.Rotate()
					case 3:
						err = w.EstimateBatch(keys, out)
						_ = w.Estimate(keys[1])
					case 4:
						_ = w.Stats()
					}
					if err != nil && !errors.Is(err, ErrClosed) {
						t.Errorf("%v", err)
						return
					}
				}
			}()
		}
		close(start)
		w.Close()
		w.Close()
		wg.Wait()
	}
}
