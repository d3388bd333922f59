//go:build linux

package sketch

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

// landedRef counts the adds that landed in a known period, from period p0
// on: those during which the period did not turn. It checks a call's
// answer against the window the call reports, from a snapshot of the
// counts taken before the call: adds completed by then that landed in
// the window's periods.
type landedRef struct {
	p0    uint64
	exact [1 << 20]atomic.Uint64
}

// landedSpan is how many periods a call may see turn and still be checked.
const landedSpan = 4

// snapshot reads into buf (Keep+landedSpan+1 long) the counts from the
// first period of c0's window on, before a call made in period c0; ok is
// false when c0 is outside the reference.
func (r *landedRef) snapshot(w *CountMinWindow, c0 uint64, buf []uint64) (base uint64, ok bool) {
	base = w.ctl.first(c0)
	if base < r.p0 || c0-r.p0+landedSpan >= uint64(len(r.exact)) {
		return 0, false
	}
	for i := range buf {
		buf[i] = r.exact[base-r.p0+uint64(i)].Load()
	}
	return base, true
}

// landed counts an add made in period c0 if the period is still c0, and
// reports whether it turned.
func (r *landedRef) landed(w *CountMinWindow, c0 uint64) (turned bool) {
	if w.Current() != c0 {
		return true
	}
	r.exact[c0-r.p0].Add(1)
	return false
}

// least returns what the window ending at winP certainly held when the
// snapshot of a call made in period c0 was taken; ok is false when winP
// is past the snapshot.
func (r *landedRef) least(w *CountMinWindow, c0, winP, base uint64, buf []uint64) (n uint64, ok bool) {
	if winP < c0 || winP > c0+landedSpan {
		return 0, false
	}
	for q := w.ctl.first(winP); q <= winP; q++ {
		n += buf[q-base]
	}
	return n, true
}

// checkAdd adds once through w's addOne and checks its estimate against
// the reference; it returns false (after reporting) when the estimate is
// low or the add failed.
func (r *landedRef) checkAdd(t *testing.T, w *CountMinWindow, lo, hi uint64, buf []uint64, turned, checked *atomic.Uint64) bool {
	c0 := w.Current()
	base, ok := r.snapshot(w, c0, buf)
	est, _, winP, err := w.addOne(lo, hi, 1)
	if err != nil {
		t.Error(err)
		return false
	}
	if !ok {
		return true
	}
	if r.landed(w, c0) {
		turned.Add(1)
	}
	want, ok := r.least(w, c0, winP, base, buf)
	if !ok {
		return true
	}
	checked.Add(1)
	if winP-c0 < w.ctl.keep {
		want++ // this add, in period c0 or later
	}
	if est < want {
		t.Errorf("add from period %d returned %d for the window ending at %d, but at least %d adds fall in it", c0, est, winP, want)
		return false
	}
	return true
}

// TestCountMinWindow_AddTurnLowerBound: goroutines add one key while
// another handle turns a Rotate-only window as fast as it can, and each
// add's estimate, and each estimate of a reader with its own handle, is
// checked against the window it says it covers, also when the period
// turned during the call (where the short ways of a window of two periods
// read a slot that may be cleared under them).
func TestCountMinWindow_AddTurnLowerBound(t *testing.T) {
	for _, keep := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := tempPath(t, "win")
			cfg := CountMinConfig{Rows: 2, Width: 64}
			adder := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			rot := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			reader := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			ref := new(landedRef)
			lo, hi := cells.Hash([]byte("hot"), adder.slots[0].Seed)
			var stop, failed atomic.Bool
			var turned, checked, reads atomic.Uint64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]uint64, keep+landedSpan+1)
				for !stop.Load() {
					c0 := reader.Current()
					base, ok := ref.snapshot(reader, c0, buf)
					if !ok {
						return
					}
					est, winP := reader.estimateOne(lo, hi)
					want, ok := ref.least(reader, c0, winP, base, buf)
					if !ok {
						continue
					}
					reads.Add(1)
					if est < want {
						failed.Store(true)
						t.Errorf("estimate from period %d returned %d for the window ending at %d, but at least %d adds fall in it", c0, est, winP, want)
						return
					}
				}
			}()
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]uint64, keep+landedSpan+1)
					for !stop.Load() {
						if !ref.checkAdd(t, adder, lo, hi, buf, &turned, &checked) {
							failed.Store(true)
							return
						}
					}
				}()
			}
			// At least 500 ms, and until the race has been seen from every
			// side.
			least, deadline := time.Now().Add(500*time.Millisecond), time.Now().Add(seenBound)
			seen := func() bool { return checked.Load() > 0 && turned.Load() > 0 && reads.Load() > 0 }
			rotations := 0
			for (time.Now().Before(least) || !seen()) && time.Now().Before(deadline) && !failed.Load() && rotations < len(ref.exact)-2*landedSpan {
				if err := rot.Rotate(); err != nil {
					t.Fatal(err)
				}
				rotations++
			}
			stop.Store(true)
			wg.Wait()
			if checked.Load() == 0 || turned.Load() == 0 || reads.Load() == 0 {
				t.Fatalf("%d adds checked, %d saw the period turn, %d estimates checked in %v: the race was not run", checked.Load(), turned.Load(), reads.Load(), seenBound)
			}
			t.Logf("%d adds checked, %d saw the period turn, %d estimates checked, %d rotations", checked.Load(), turned.Load(), reads.Load(), rotations)
		})
	}
}
