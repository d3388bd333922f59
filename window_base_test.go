//go:build linux

package sketch

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWindow_Covered: an answer's Periods are the window's when it
// answered, and the answer is exact for them, while another goroutine
// turns the window between and during the calls: every key added in a
// period the answer covers is counted (Count-Min: never below; Bloom:
// found), and a key added only in periods it does not cover is not
// (the windows are wide enough that no key collides).
func TestWindow_Covered(t *testing.T) {
	dir := t.TempDir()
	cw, err := OpenCountMinWindow(Path(filepath.Join(dir, "cmw")), CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: winCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Close()
	bw, err := OpenBloomWindow(Path(filepath.Join(dir, "bw")), BloomWindowConfig{Window: Window{Keep: 3}, Bloom: BloomConfig{Capacity: 100_000, FPRate: 1e-9}})
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Close()
	// One key per period, added in that period only, by a goroutine that
	// turns the window and then adds; the reader asks for the newest keys
	// while it does, so turns fall between and during the reads.
	const periods = 300
	var done atomic.Uint64 // the last period whose key was added
	var turns sync.WaitGroup
	turns.Add(1)
	go func() {
		defer turns.Done()
		for p := uint64(1); p <= periods; p++ {
			cw.Rotate()
			bw.Rotate()
			key := fmt.Sprintf("p%d", p)
			cw.AddN([]byte(key), 5)
			bw.AddString(key)
			done.Store(p)
		}
	}()
	reads := 0
	for done.Load() < periods {
		d := done.Load()
		for p := d - min(d, 4); p <= d+1; p++ {
			key := []byte(fmt.Sprintf("p%d", p))
			est, in := cw.EstimateCovered(key)
			found, bin := bw.ContainsCovered(key)
			reads++
			if in.Current < d || in.Current-in.Oldest != 2 && in.Current >= 2 {
				t.Fatalf("EstimateCovered periods %+v after period %d was done: not the window of 3 then", in, d)
			}
			switch inside := p >= in.Oldest && p <= in.Current; {
			case inside && p >= 1 && p <= d && est < 5:
				t.Fatalf("EstimateCovered(%s) = %d over %+v, want >= 5 (added in period %d)", key, est, in, p)
			case !inside && est != 0:
				t.Fatalf("EstimateCovered(%s) = %d over %+v, want 0 (added in period %d only)", key, est, in, p)
			}
			switch inside := p >= bin.Oldest && p <= bin.Current; {
			case inside && p >= 1 && p <= d && !found:
				t.Fatalf("ContainsCovered(%s) = false over %+v, want true (added in period %d)", key, bin, p)
			case !inside && found:
				t.Fatalf("ContainsCovered(%s) = true over %+v, want false (added in period %d only)", key, bin, p)
			}
		}
	}
	t.Logf("%d reads while the window turned %d times", reads, periods)
	turns.Wait()
	cw.Close()
	bw.Close()
	if est, in := cw.EstimateCovered([]byte("p1")); est != ClosedEstimate || in != (Periods{}) {
		t.Errorf("EstimateCovered after Close = %d, %+v", est, in)
	}
	if found, in := bw.ContainsCovered([]byte("p1")); !found || in != (Periods{}) {
		t.Errorf("ContainsCovered after Close = %v, %+v", found, in)
	}
}
