//go:build linux

package sketch

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestArena_WindowsOutliveArena: windows of an arena keep turning,
// counting and freezing after the arena's handle (and a sibling) closed,
// and Close of the arena racing the creation of windows in other
// goroutines either hands out a working window or reports ErrClosed.
func TestArena_WindowsOutliveArena(t *testing.T) {
	path := tempPath(t, "arena")
	a, err := OpenArena(Path(path), ArenaConfig{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	cw, err := OpenCountMinWindow(a.Place("c"), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 256}})
	if err != nil {
		t.Fatal(err)
	}
	bw, err := OpenBloomWindow(a.Place("b"), BloomWindowConfig{Window: Window{Period: 5 * time.Millisecond, Keep: 2}, Bloom: BloomConfig{Capacity: 100}})
	if err != nil {
		t.Fatal(err)
	}
	sib, err := OpenCountMin(a.Place("s"), CountMinConfig{Rows: 1, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	sib.Close()
	for i := range 5 {
		if _, err := cw.AddString("k"); err != nil {
			t.Fatal(err)
		}
		if err := cw.Rotate(); err != nil {
			t.Fatal(err)
		}
		added := bw.Current()
		if _, err := bw.AddString("k"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Millisecond)
		if got := cw.EstimateString("k"); got != uint64(min(i+1, 1)) {
			t.Errorf("round %d: estimate %d", i, got)
		}
		// The key is due only while the window keeps the period it went
		// to: a machine that stalled past it gives no verdict.
		if !bw.CheckString("k") && bw.Current() <= added+1 {
			t.Errorf("round %d: Bloom window lost its key", i)
		}
	}
	if err := cw.Freeze(); err != nil {
		t.Fatal(err)
	}
	if _, err := bw.AddString("x"); !errors.Is(err, ErrFrozen) {
		t.Errorf("Bloom window add after its sibling froze the file: %v", err)
	}
	cw.Close()
	bw.Close()

	for range 20 {
		a, err := OpenArena(Path(path), ArenaConfig{}, WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := OpenCountMinWindow(a.Place("c"), CountMinWindowConfig{Window: Window{}, CountMin: CountMinConfig{}})
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Error(err)
					}
					return
				}
				defer w.Close()
				if got := w.EstimateString("k"); got != 1 && got != ClosedEstimate {
					t.Errorf("frozen window estimate %d", got)
				}
			}()
		}
		a.Close()
		wg.Wait()
	}
}
