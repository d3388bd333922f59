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

// TestCountMinWindow_AddTurnLowerBound: goroutines add one key while
// another handle turns a Rotate-only window as fast as it can, and each
// add's estimate, and each estimate of a reader with its own handle, is
// checked against the window it says it covers, also when the period
// turned during the call (where the short ways of a window of two periods
// read a slot that may be cleared under them). The reference counts only
// adds that landed in a known period: those during which the period did
// not turn.
func TestCountMinWindow_AddTurnLowerBound(t *testing.T) {
	for _, keep := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := tempPath(t, "win")
			cfg := CountMinConfig{Rows: 2, Width: 64}
			adder := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			rot := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			reader := mustOpenWindow(t, path, Window{Keep: keep}, cfg)
			exact := new([1 << 20]atomic.Uint64) // adds that landed in each period
			lo, hi := hashKey([]byte("hot"), adder.slots[0].seed)
			const span = 4 // periods an add may see turn and still be checked
			var stop, failed atomic.Bool
			var turned, checked, reads atomic.Uint64
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				snap := make([]uint64, keep+span+1)
				for !stop.Load() {
					c0 := reader.Current()
					base := reader.ctl.first(c0)
					if c0+span >= uint64(len(exact)) {
						return
					}
					for i := range snap {
						snap[i] = exact[base+uint64(i)].Load()
					}
					est, winP := reader.estimateOne(lo, hi)
					if winP < c0 || winP > c0+span {
						continue
					}
					reads.Add(1)
					var want uint64
					for r := reader.ctl.first(winP); r <= winP; r++ {
						want += snap[r-base]
					}
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
					snap := make([]uint64, keep+span+1)
					for !stop.Load() {
						c0 := adder.Current()
						base := adder.ctl.first(c0)
						if c0+span >= uint64(len(exact)) {
							return
						}
						for i := range snap {
							snap[i] = exact[base+uint64(i)].Load()
						}
						est, _, winP, err := adder.addOne(lo, hi, 1)
						if err != nil {
							t.Error(err)
							return
						}
						c1 := adder.Current()
						if c1 == c0 {
							exact[c0].Add(1)
						} else {
							turned.Add(1)
						}
						if winP < c0 || winP > c0+span {
							continue
						}
						checked.Add(1)
						var want uint64
						for r := adder.ctl.first(winP); r <= winP; r++ {
							want += snap[r-base]
						}
						if winP-c0 < uint64(keep) {
							want++ // this add, in period c0 or later
						}
						if est < want {
							failed.Store(true)
							t.Errorf("add from period %d returned %d for the window ending at %d, but at least %d adds fall in it", c0, est, winP, want)
							return
						}
					}
				}()
			}
			deadline := time.Now().Add(500 * time.Millisecond)
			rotations := 0
			for time.Now().Before(deadline) && !failed.Load() && rotations < len(exact)-2*span {
				if err := rot.Rotate(); err != nil {
					t.Fatal(err)
				}
				rotations++
			}
			stop.Store(true)
			wg.Wait()
			if checked.Load() == 0 || turned.Load() == 0 || reads.Load() == 0 {
				t.Fatalf("%d adds checked, %d saw the period turn, %d estimates checked: the race was not run", checked.Load(), turned.Load(), reads.Load())
			}
			t.Logf("%d adds checked, %d saw the period turn, %d estimates checked, %d rotations", checked.Load(), turned.Load(), reads.Load(), rotations)
		})
	}
}
