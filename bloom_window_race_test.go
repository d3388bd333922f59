//go:build linux

package sketch

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestBloomWindow_RotateRaceNoFalseNegative: as the Count-Min
// window's race test, for a Bloom window: a key some add certainly put in
// the window before Check started is always found, by Check and by
// CheckBatch, while another handle turns the window as fast as it can.
func TestBloomWindow_RotateRaceNoFalseNegative(t *testing.T) {
	for _, keep := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := tempPath(t, "bwin")
			cfg := BloomConfig{Capacity: 64}
			open := func() *BloomWindow {
				w, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: Window{Keep: keep}, Bloom: cfg})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Close() })
				return w
			}
			adder, rot, reader := open(), open(), open()
			ref := new(rotateRaceRef)
			key := []byte("hot")
			stop := make(chan struct{})
			var wg sync.WaitGroup
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
						r := ref.rotDone.Load()
						var err error
						if g == 1 && i%2 == 0 {
							err = adder.AddBatch([][]byte{key}, make([]bool, 1))
						} else {
							_, err = adder.Add(key)
						}
						if err != nil {
							t.Error(err)
							return
						}
						ref.done[r].Add(1)
						// Leave periods without the key now and then.
						if i%64 == 0 {
							time.Sleep(50 * time.Microsecond)
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
			for time.Now().Before(deadline) {
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
				batch := checks%2 == 1
				var found bool
				if batch {
					out := make([]bool, 1)
					reader.ContainsBatch([][]byte{key}, out)
					found = out[0]
				} else {
					found = reader.Contains(key)
				}
				p1 := reader.Current()
				first := reader.ctl.first(p0)
				if p0 != p1 || first < lo || p0 > hi {
					continue
				}
				checks++
				if n := lowerInWindow(snap, first, p0); n > 0 && !found {
					bad++
					if bad <= 3 {
						t.Errorf("period %d (batch %v): key not found, but %d adds fall in periods %d..%d", p0, batch, n, first, p0)
					}
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("%d checks, %d false negatives, %d rotations", checks, bad, ref.rotDone.Load())
		})
	}
}
