//go:build linux

package sketch

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCountMinWindowLanes_AllowNeverPastLimit: handles of a window of
// lanes (some with a lane each, one sharing) allow one key from many
// goroutines at once: never more requests than the limit are allowed,
// with and without countRefused, in windows of two periods (Allow's one
// pass) and of more (add, then read again).
func TestCountMinWindowLanes_AllowNeverPastLimit(t *testing.T) {
	for _, keep := range []int{1, 3} {
		for _, countRefused := range []bool{false, true} {
			t.Run(fmt.Sprintf("keep=%d/countRefused=%v", keep, countRefused), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "win")
				cfg := CountMinWindowConfig{Window: Window{Keep: keep}, CountMin: CountMinConfig{Rows: 4, Width: 1 << 10, Lanes: 2}}
				hs := []*CountMinWindow{mustWindowAt(t, path, cfg), mustWindowAt(t, path, cfg), mustWindowAt(t, path, cfg)}
				if hs[2].Stats().LaneOwned {
					t.Fatal("a third handle of two lanes owns one")
				}
				const limit, per, workers = 500, 400, 6
				var allowed atomic.Int64
				var wg sync.WaitGroup
				for g := range workers {
					w := hs[g%len(hs)]
					wg.Go(func() {
						for range per {
							d, err := w.Allow([]byte("key"), limit, countRefused)
							if err != nil {
								t.Error(err)
								return
							}
							if d.Allowed() {
								allowed.Add(1)
							}
						}
					})
				}
				wg.Wait()
				if got := allowed.Load(); got > limit || got < limit/2 {
					t.Errorf("%d of %d requests allowed, limit %d", got, workers*per, limit)
				}
				if est := hs[0].Estimate([]byte("key")); est < uint64(allowed.Load()) {
					t.Errorf("Estimate(%q) = %d, want >= %d", "key", est, allowed.Load())
				}
			})
		}
	}
}
