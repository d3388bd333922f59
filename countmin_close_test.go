package sketch

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// TestCountMin_CloseWhileInUse: Close while other goroutines add and
// estimate (single keys and batches, on the core that serves batches past
// L2) must not crash the process, every call after it must report the
// handle closed, and a sketch mapped right after it must stay untouched by
// the calls still in flight.
func TestCountMin_CloseWhileInUse(t *testing.T) {
	cfg := CountMinConfig{Rows: 4, Width: 1 << 12}
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%d", i))
	}
	for round := range 20 {
		c, err := OpenCountMin(Memfd("close-race"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.l.Prefetch = true // batches go to the default core (C with cgo)
		var (
			stop    atomic.Bool
			started sync.WaitGroup
			done    sync.WaitGroup
			bad     atomic.Value
		)
		worker := func(op func() error) {
			started.Add(1)
			done.Go(func() {
				for i := 0; !stop.Load(); i++ {
					if err := op(); err != nil && !errors.Is(err, ErrClosed) {
						bad.Store(err)
					}
					if i == 100 {
						started.Done()
					}
				}
			})
		}
		worker(func() error { _, err := c.Add(keys[0]); return err })
		worker(func() error { _, err := c.AddString("s"); return err })
		worker(func() error { return c.AddBatch(keys, nil) })
		worker(func() error {
			est := make([]uint64, len(keys))
			err := c.EstimateBatch(keys, est)
			if err == nil && est[0] == ClosedEstimate {
				return fmt.Errorf("EstimateBatch returned ClosedEstimate without ErrClosed")
			}
			return err
		})
		worker(func() error {
			if v := c.Estimate(keys[1]); v != ClosedEstimate && v > 1<<40 {
				return fmt.Errorf("Estimate = %d", v)
			}
			return nil
		})
		started.Wait()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		// Mapped where the closed sketch was, had its pages been unmapped.
		d, err := OpenCountMin(Memfd("close-race-next"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			if _, err := c.Add(keys[2]); !errors.Is(err, ErrClosed) {
				t.Fatalf("round %d: Add after Close = %v, want ErrClosed", round, err)
			}
		}
		stop.Store(true)
		done.Wait()
		if err, _ := bad.Load().(error); err != nil {
			t.Fatalf("round %d: a call racing Close: %v", round, err)
		}
		region := unsafe.Slice((*uint64)(d.l.Stripes), d.m.ent.size/8)
		for i, v := range region {
			if v != 0 {
				t.Fatalf("round %d: word %d of the sketch mapped after Close is %d: calls on the closed handle wrote to it", round, i, v)
			}
		}
		d.Close()
	}
}

// tornAdd adds n to key's counter in rows [from, to) only, as an add cut
// short or one that raced a reset would leave it.
func tornAdd(c *CountMin, key []byte, n uint64, from, to int) {
	lo, hi := cells.Hash(key, c.l.Seed)
	for i := from; i < to; i++ {
		col := cells.Spread(lo+uint64(i)*(hi|1)) & c.l.Mask
		cells.AddCell((*uint64)(unsafe.Add(c.l.Cells, uintptr(i)*c.l.RowBytes+uintptr(col)*8)), n)
	}
}

// TestCountMin_CheckClassifies: a key counted in a prefix of its rows is
// an add cut short (ErrTornAdd); counted in a suffix after a Reset, it is
// what an add racing that Reset leaves (ErrInconsistent, not ErrTornAdd);
// a suffix with no Reset ever is not explained by one.
func TestCountMin_CheckClassifies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reset    bool
		from, to int
		want     error
	}{
		{"prefix", false, 0, 2, ErrTornAdd},
		{"prefix after a reset", true, 0, 3, ErrTornAdd},
		{"suffix after a reset", true, 2, 5, ErrInconsistent},
		{"suffix, never reset", false, 1, 5, ErrTornAdd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 5, Width: 64})
			c.AddN([]byte("before"), 3)
			if tc.reset {
				if err := c.Reset(); err != nil {
					t.Fatal(err)
				}
			}
			c.AddN([]byte("whole"), 4)
			if err := c.Check(); err != nil {
				t.Fatalf("Check before the torn add = %v", err)
			}
			tornAdd(c, []byte("torn"), 2, tc.from, tc.to)
			err := c.Check()
			if !errors.Is(err, tc.want) {
				t.Fatalf("Check() = %v, want %v", err, tc.want)
			}
			if tc.want == ErrInconsistent && errors.Is(err, ErrTornAdd) {
				t.Errorf("Check() = %v, want a Reset's leftovers, not ErrTornAdd", err)
			}
			if errors.Is(err, ErrCorrupt) {
				t.Errorf("Check() = %v calls counters that disagree damage", err)
			}
			if err := c.Reset(); err != nil {
				t.Fatal(err)
			}
			if err := c.Check(); err != nil {
				t.Errorf("Check after a quiet Reset = %v, want nil", err)
			}
		})
	}
}

// TestCountMin_CheckAfterResetRace: Resets while other goroutines add
// (single keys and batches) leave rows that may disagree, which Check must
// never report as a torn add or as damage.
func TestCountMin_CheckAfterResetRace(t *testing.T) {
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 5, Width: 1 << 14})
	keys := make([][]byte, 256)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%d", i))
	}
	leftovers := 0
	for round := range 50 {
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				c.Add(keys[i%len(keys)])
			}
		})
		wg.Go(func() {
			for !stop.Load() {
				c.AddBatch(keys, nil)
			}
		})
		for range 5 {
			if err := c.Reset(); err != nil {
				t.Fatal(err)
			}
		}
		stop.Store(true)
		wg.Wait()
		switch err := c.Check(); {
		case err == nil:
		case errors.Is(err, ErrTornAdd) || !errors.Is(err, ErrInconsistent):
			t.Fatalf("round %d: Check after Resets raced adds = %v, want nil or a Reset's leftovers", round, err)
		default:
			leftovers++
		}
	}
	t.Logf("%d of 50 rounds left rows that disagree", leftovers)
}

// TestCountMin_ResetAndCheckRacingClose: a Reset or a Check cut short by
// Close says the handle is closed, never that it succeeded on memory that
// is no longer the file, nor that the file is torn; the file reopened is
// never reported damaged.
func TestCountMin_ResetAndCheckRacingClose(t *testing.T) {
	cfg := CountMinConfig{Rows: 5, Width: 1 << 16}
	for round := range 40 {
		path := tempPath(t, "cms")
		c := mustOpen(t, path, cfg)
		for i := range 1000 {
			c.AddString(fmt.Sprint(i))
		}
		var resetErr, checkErr error
		var wg sync.WaitGroup
		wg.Go(func() { resetErr = c.Reset() })
		wg.Go(func() { checkErr = c.Check() })
		c.Close()
		wg.Wait()
		if checkErr != nil && !errors.Is(checkErr, ErrClosed) && (errors.Is(checkErr, ErrTornAdd) || !errors.Is(checkErr, ErrInconsistent)) {
			t.Fatalf("round %d: Check racing Close and Reset = %v", round, checkErr)
		}
		d := mustOpen(t, path, cfg)
		st := d.Stats()
		if resetErr == nil && st.Total != 0 {
			t.Fatalf("round %d: Reset racing Close returned nil, but the file still totals %d", round, st.Total)
		}
		if err := d.Check(); err != nil && (errors.Is(err, ErrTornAdd) || !errors.Is(err, ErrInconsistent)) {
			t.Fatalf("round %d: Check of the reopened file = %v, want nil or a Reset cut short", round, err)
		}
		d.Close()
	}
}

// TestCountMin_StringHidesSeed: printing a handle, as a log line would,
// shows its file and shape but not its secret seed.
func TestCountMin_StringHidesSeed(t *testing.T) {
	const seed uint64 = 0x1234_5678_9abc
	c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{Rows: 2, Width: 8, Seed: seed})
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		got := fmt.Sprintf(format, c)
		if strings.Contains(got, fmt.Sprint(seed)) || strings.Contains(got, fmt.Sprintf("%x", seed)) {
			t.Errorf("Sprintf(%q) = %s, shows the seed", format, got)
		}
		if !strings.Contains(got, c.Path()) {
			t.Errorf("Sprintf(%q) = %s, want the path in it", format, got)
		}
	}
}
