package sketch

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCountMinConservative_CloseThenClaim: goroutines raise through one
// handle (Add, AddN, AddBatch with and without estimates) while it
// closes; a handle opened as soon as Close returns claims the freed lane
// and raises the same keys at once. Every add that returned nil is in
// the estimates: the closing handle's raises end before its lane is
// freed, so the lane never has two raisers.
func TestCountMinConservative_CloseThenClaim(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cm")
	cfg := CountMinConfig{Rows: 2, Width: 16, Lanes: 1, ConservativeUpdate: true}
	keys := make([][]byte, 8)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k%d", i))
	}
	want := make([]atomic.Uint64, len(keys))
	count := func(err error, i int, n uint64) error {
		if err == nil {
			want[i].Add(n)
			return nil
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
		t.Error(err)
		return err
	}
	ops := []func(c *CountMin, r int) error{
		func(c *CountMin, r int) error { _, err := c.Add(keys[r%8]); return count(err, r%8, 1) },
		func(c *CountMin, r int) error { _, err := c.AddN(keys[r%8], 3); return count(err, r%8, 3) },
		func(c *CountMin, r int) error {
			err := c.AddBatch(keys, nil)
			if err == nil {
				for i := range keys {
					want[i].Add(1)
				}
			}
			return count(err, 0, 0)
		},
		func(c *CountMin, r int) error {
			err := c.AddBatch(keys, make([]uint64, len(keys)))
			if err == nil {
				for i := range keys {
					want[i].Add(1)
				}
			}
			return count(err, 0, 0)
		},
	}
	c := mustCountMin(t, Path(path), cfg)
	for round := range 30 {
		var wg sync.WaitGroup
		var started sync.WaitGroup
		for g := range 2 * len(ops) {
			started.Add(1)
			wg.Go(func() {
				for r := 0; ; r++ {
					if r == 50 {
						started.Done()
					}
					if ops[g%len(ops)](c, r+g) != nil {
						if r < 50 {
							started.Done()
						}
						return
					}
				}
			})
		}
		started.Wait()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		next := mustCountMin(t, Path(path), CountMinConfig{})
		if st := next.Stats(); !st.LaneOwned {
			t.Fatalf("round %d: the handle opened after Close owns no lane", round)
		}
		for r := range 2000 {
			if err := ops[r%len(ops)](next, r); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for i, k := range keys {
			if v, w := next.Estimate(k), want[i].Load(); v < w {
				t.Fatalf("round %d: Estimate(%q) = %d, want >= %d", round, k, v, w)
			}
		}
		c = next
	}
	c.Close()
}
