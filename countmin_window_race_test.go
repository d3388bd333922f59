//go:build linux

package sketch

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// rotateRaceRef counts completed adds by the number of Rotate calls that
// had returned when each add started: such an add lands in that period or
// a later one.
type rotateRaceRef struct {
	rotDone atomic.Uint64
	done    [1 << 20]atomic.Uint64
}

// lower returns a lower bound of what the window of period p holds, from
// a snapshot of done taken before p was read.
func lowerInWindow(snap map[uint64]uint64, first, p uint64) uint64 {
	var n uint64
	for r := first; r <= p; r++ {
		n += snap[r]
	}
	return n
}

// TestCountMinWindow_RotateRaceLowerBound: goroutines add one key
// through one handle while another handle turns a Rotate-only window as
// fast as it can; a third checks, through its own handle, that Estimate
// and EstimateBatch are never below the adds that certainly fall in the
// window (those started after the window's first period began and done
// before the estimate started).
func TestCountMinWindow_RotateRaceLowerBound(t *testing.T) {
	for _, keep := range []int{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := tempPath(t, "win")
			cfg := CountMinConfig{Rows: 2, Width: 64}
			adder := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			rot := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			reader := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			ref := new(rotateRaceRef)
			key := []byte("hot")
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var failed atomic.Bool
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						c0 := adder.Current()
						first := adder.ctl.first(c0)
						var lower uint64
						for r := first; r <= c0; r++ {
							lower += ref.done[r].Load()
						}
						r := ref.rotDone.Load()
						var err error
						var est uint64
						if g == 1 && i%2 == 0 {
							out := make([]uint64, 1)
							err = adder.AddBatch([][]byte{key}, out)
							est = out[0]
						} else {
							est, err = adder.Add(key)
						}
						if err != nil {
							t.Error(err)
							return
						}
						ref.done[r].Add(1)
						if adder.Current() == c0 && est < lower+1 {
							failed.Store(true)
							t.Errorf("period %d: add (batch %v) returned %d, but at least %d adds fall in periods %d..%d", c0, g == 1 && i%2 == 0, est, lower+1, first, c0)
							return
						}
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if ref.rotDone.Load() >= uint64(len(ref.done))-8 {
						return
					}
					if err := rot.Rotate(); err != nil {
						t.Error(err)
						return
					}
					ref.rotDone.Add(1)
				}
			}()
			checks, bad := 0, 0
			deadline := time.Now().Add(700 * time.Millisecond)
			for time.Now().Before(deadline) && !failed.Load() {
				rd := ref.rotDone.Load()
				lo := uint64(0)
				if rd > uint64(keep)+3 {
					lo = rd - uint64(keep) - 3
				}
				hi := rd + 3
				snap := map[uint64]uint64{}
				for r := lo; r <= hi; r++ {
					snap[r] = ref.done[r].Load()
				}
				p0 := reader.Current()
				var est uint64
				batch := checks%2 == 1
				if batch {
					out := make([]uint64, 1)
					if err := reader.EstimateBatch([][]byte{key}, out); err != nil {
						t.Fatal(err)
					}
					est = out[0]
				} else {
					est = reader.Estimate(key)
				}
				p1 := reader.Current()
				first := reader.ctl.first(p0)
				if p0 != p1 || first < lo || p0 > hi {
					continue
				}
				checks++
				if want := lowerInWindow(snap, first, p0); est < want {
					bad++
					if bad <= 3 {
						t.Errorf("period %d (batch %v): estimate %d, but at least %d adds fall in periods %d..%d", p0, batch, est, want, first, p0)
					}
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d checks, %d below the reference, %d rotations", checks, bad, ref.rotDone.Load())
		})
	}
}

// seenBound bounds a test that runs until it has seen what it checks
// (periods turned, adds checked): only a machine that makes no progress
// at all gets near it.
const seenBound = time.Minute

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
			lo, hi := hashKey([]byte("hot"), adder.slots[0].seed)
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
