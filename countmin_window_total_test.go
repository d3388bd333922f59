//go:build linux

package sketch

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

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
