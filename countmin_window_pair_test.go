//go:build linux

package sketch

// Tests of the window Add's short way: a handle that caches the period
// whose two slots it found ready (windows of Keep 2) and then checks the
// other slot's word after the read only.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// pairCachedWindow opens a window of Keep 2 at path, adds "k" once in
// period 0 and twice in period 1, so that the handle's pair cache holds
// period 1 (the second add of period 1 takes addOne's short way), and
// returns the handle.
func pairCachedWindow(t *testing.T, path string) *CountMinWindow {
	t.Helper()
	w := mustOpenWindow(t, path, Window{Keep: 2}, winCfg)
	if _, err := w.AddString("k"); err != nil {
		t.Fatal(err)
	}
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := w.AddString("k"); err != nil {
			t.Fatal(err)
		}
	}
	if v := w.ctl.pair.Load(); v>>slotBits != 1 {
		t.Fatalf("pair cache %#x, want period 1 cached", v)
	}
	return w
}

// TestCountMinWindow_PairGarbageSlotWords: slot words damaged to name
// periods far in the future (as in TestCountMinWindow_GarbageSlotWords)
// make Add fail with ErrCorrupt on a handle whose pair is cached too: the
// short way checks its own slot's word before it adds, and does not
// report an estimate of a window that holds nothing as a success.
func TestCountMinWindow_PairGarbageSlotWords(t *testing.T) {
	w := pairCachedWindow(t, tempPath(t, "win"))
	for s := range uint64(3) {
		atomic.StoreUint64(w.ctl.word(s), heldWord(maxPeriod))
	}
	est, err := w.AddString("k")
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Add on a handle with a cached pair = %d, %v; want ErrCorrupt, as a fresh handle gets", est, err)
	}
	if err == nil && est < 4 {
		t.Errorf("Add returned %d with no error; the window it covers holds at least 4 adds of the key (this one included)", est)
	}
}

// TestCountMinWindow_PairLiveClearer: a writer whose slot a live process
// is clearing waits for it rather than adding into the clear (docs/DESIGN.md,
// "it never writes into a slot being cleared"; after windowWait it returns
// ErrTimeout), also when its pair is cached.
func TestCountMinWindow_PairLiveClearer(t *testing.T) {
	path := tempPath(t, "win")
	w := pairCachedWindow(t, path)
	other := mustOpenWindow(t, path, Window{Keep: 2}, winCfg) // a live token
	old := windowWait
	windowWait = 50 * time.Millisecond
	t.Cleanup(func() { windowWait = old })
	s := w.ctl.slotOf(1)
	atomic.StoreUint64(w.ctl.word(s), clearingWord(1, other.ctl.me))
	lo, hi := cells.HashString("k", w.slots[0].Seed)
	before := w.slots[s].EstimateHashed(lo, hi)
	est, err := w.AddString("k")
	after := w.slots[s].EstimateHashed(lo, hi)
	if after != before {
		t.Errorf("Add wrote into a slot a live handle (token %d) is clearing: its counter went from %d to %d (Add = %d, %v)", other.ctl.me, before, after, est, err)
	}
	if err == nil {
		t.Errorf("Add into a slot a live handle is clearing = %d, nil; want it to wait, then ErrTimeout", est)
	}
}

// TestCountMinWindow_PairParity: the columns written by the window's
// short way (readThenAdd's running column) are byte for byte those the
// default core's AddBatch writes into a plain Count-Min of the same shape
// and seed, for n from 1 to fastAdd, and with counters near 2^63, where
// both saturate.
func TestCountMinWindow_PairParity(t *testing.T) {
	for _, shape := range []CountMinConfig{
		{Rows: 1, Width: 1, Seed: 42},
		{Rows: 5, Width: 1 << 12, Seed: 42},
		{Rows: 64, Width: 1 << 6, Seed: 42},
	} {
		for _, nearMax := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dx%d/nearMax=%v", shape.Rows, shape.Width, nearMax), func(t *testing.T) {
				w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: shape})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				c, err := OpenCountMin(Memory(), shape)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := w.AddString("period 0"); err != nil {
					t.Fatal(err)
				}
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				s := w.ctl.slotOf(1)
				ncells := uintptr(shape.Rows) * uintptr(shape.Width)
				wc := unsafe.Slice((*uint64)(w.slots[s].Cells), ncells)
				pc := unsafe.Slice((*uint64)(c.l.Cells), ncells)
				if nearMax {
					for i := range wc {
						wc[i] = cells.MaxCount - 3*cells.FastAdd/2 + uint64(i)
						pc[i] = wc[i]
					}
				}
				r := rand.New(rand.NewPCG(1, 2))
				byN := map[uint64][][]byte{}
				for i := range 2000 {
					key := []byte(fmt.Sprintf("k%d", r.IntN(500)))
					n := []uint64{1, 2, 77, cells.FastAdd - 1, cells.FastAdd}[r.IntN(5)]
					est, err := w.AddN(key, n)
					if err != nil {
						t.Fatal(err)
					}
					if est > cells.MaxCount {
						t.Fatalf("AddN(%q, %d) = %d, past 2^63", key, n, est)
					}
					if i == 0 && w.ctl.pair.Load()>>slotBits != 1 {
						t.Fatal("the pair was not cached: the short way is not tested")
					}
					byN[n] = append(byN[n], key)
				}
				for n, keys := range byN {
					buildCores.CountMin.AddBatch(&c.l, keys, n, nil)
				}
				wb := unsafe.Slice((*byte)(w.slots[s].Cells), ncells*8)
				pb := unsafe.Slice((*byte)(c.l.Cells), ncells*8)
				if !bytes.Equal(wb, pb) {
					for i := range wc {
						if wc[i] != pc[i] {
							t.Fatalf("cell %d: window's short way wrote %d, %s core's AddBatch %d", i, wc[i], buildCores.CountMin.Name(), pc[i])
						}
					}
				}
			})
		}
	}
}

// TestCountMinWindow_PairClose: Close races adds that take the short way
// (Keep 2, the pair cached), with and without another handle turning the
// period. Every Add answers, or reports ErrClosed with ClosedEstimate;
// nothing panics or faults.
func TestCountMinWindow_PairClose(t *testing.T) {
	for i := range 40 {
		path := tempPath(t, "win")
		cfg := CountMinConfig{Rows: 4, Width: 1 << 10}
		w, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: cfg})
		if err != nil {
			t.Fatal(err)
		}
		rot := mustOpenWindow(t, path, Window{Keep: 2}, cfg)
		w.AddString("k")
		w.Rotate()
		w.AddString("k")
		if w.ctl.pair.Load()>>slotBits != 1 {
			t.Fatal("the pair was not cached")
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for j := 0; ; j++ {
					var est uint64
					var err error
					if g == 2 && i%2 == 0 {
						err = rot.Rotate()
						if err != nil {
							t.Error(err)
							return
						}
						if j > 2000 {
							return
						}
						continue
					}
					est, err = w.AddN([]byte{byte(j)}, uint64(1+j%3))
					if err != nil {
						if !errors.Is(err, ErrClosed) || est != ClosedEstimate {
							t.Errorf("Add = %d, %v; want an answer or ErrClosed", est, err)
						}
						return
					}
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(i%4) * 100 * time.Microsecond)
		w.Close()
		wg.Wait()
	}
}

// TestCountMinWindow_PairClockLowerBound: two handles of one window of
// 1 ms periods (each with its own clock, so their timers turn at different
// moments) add one key through addOne while a third handle rotates now and
// then; each add's estimate is checked against the window it reports, as
// in TestCountMinWindow_AddTurnLowerBound, with periods turned by the
// clock as well as by Rotate.
func TestCountMinWindow_PairClockLowerBound(t *testing.T) {
	for _, keep := range []int{2, 3} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := tempPath(t, "win")
			cfg := CountMinConfig{Rows: 2, Width: 64}
			win := Window{Period: time.Millisecond, Keep: keep}
			adders := []*CountMinWindow{mustOpenWindow(t, path, win, cfg), mustOpenWindow(t, path, win, cfg)}
			rot := mustOpenWindow(t, path, win, cfg)
			ref := &landedRef{p0: adders[0].Current()}
			lo, hi := cells.Hash([]byte("hot"), adders[0].slots[0].Seed)
			var stop, failed atomic.Bool
			var turned, checked atomic.Uint64
			var wg sync.WaitGroup
			for _, adder := range adders {
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
			// At least 700 ms, and until some add was checked.
			least, deadline := time.Now().Add(700*time.Millisecond), time.Now().Add(seenBound)
			for (time.Now().Before(least) || checked.Load() == 0) && time.Now().Before(deadline) && !failed.Load() {
				time.Sleep(3 * time.Millisecond)
				if err := rot.Rotate(); err != nil {
					t.Error(err)
					break
				}
			}
			stop.Store(true)
			wg.Wait()
			if checked.Load() == 0 {
				t.Fatalf("no add checked in %v", seenBound)
			}
			t.Logf("%d adds checked, %d saw the period turn", checked.Load(), turned.Load())
		})
	}
}
