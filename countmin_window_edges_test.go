//go:build linux

package sketch

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
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
			if est != cells.MaxCount {
				t.Errorf("keep %d round %d: AddN(max) = %d, want 2^63", keep, round, est)
			}
			if est, _ := w.AddN(k, cells.MaxCount-1); est != cells.MaxCount {
				t.Errorf("keep %d round %d: AddN(2^63-1) = %d, want 2^63", keep, round, est)
			}
			if est, _ := w.Add(k); est != cells.MaxCount {
				t.Errorf("keep %d round %d: Add after saturation = %d, want 2^63", keep, round, est)
			}
			if est, _ := w.AddN(k, 0); est != cells.MaxCount {
				t.Errorf("keep %d round %d: AddN(0) = %d, want 2^63", keep, round, est)
			}
			if got := w.Estimate(k); got != cells.MaxCount {
				t.Errorf("keep %d round %d: Estimate = %d, want 2^63", keep, round, got)
			}
			out := make([]uint64, 2)
			if err := w.EstimateBatch([][]byte{k, []byte("other")}, out); err != nil || out[0] != cells.MaxCount || out[1] != 0 {
				t.Errorf("keep %d round %d: EstimateBatch = %v, %v", keep, round, out, err)
			}
			if err := w.AddBatch([][]byte{k}, out[:1]); err != nil || out[0] != cells.MaxCount {
				t.Errorf("keep %d round %d: AddBatch = %v, %v", keep, round, out[:1], err)
			}
			st := w.Stats()
			if st.Total != cells.MaxCount {
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
