package sketch

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestAllocs asserts that the hot paths allocate nothing, on both cores and
// on a sketch small enough for the plain loops and one large enough for the
// batches that fetch ahead (prefetchAbove).
func TestAllocs(t *testing.T) {
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = appendBenchKey(nil, uint64(i))
	}
	est := make([]uint64, len(keys))
	for _, core := range countMinCores() {
		for _, sh := range []struct{ rows, width int }{{5, 4096}, {4, 1 << 16}} {
			t.Run(fmt.Sprintf("%s/%dx%d", core.Name(), sh.rows, sh.width), func(t *testing.T) {
				cfg := CountMinConfig{Rows: sh.rows, Width: sh.width, Seed: 1}
				path := filepath.Join(t.TempDir(), "cms")
				c, err := OpenCountMin(Path(path), cfg)
				if err != nil {
					t.Fatalf("OpenCountMin(%s, %+v): %v", path, cfg, err)
				}
				defer c.Close()
				c.core = core
				key, skey := keys[7], string(keys[7])
				for _, tc := range []struct {
					name string
					f    func()
				}{
					{"Add", func() { c.Add(key) }},
					{"AddN", func() { c.AddN(key, 3) }},
					{"AddString", func() { c.AddString(skey) }},
					{"Estimate", func() { c.Estimate(key) }},
					{"EstimateString", func() { c.EstimateString(skey) }},
					{"AddBatch", func() { c.AddBatch(keys, nil) }},
					{"AddBatch/estimates", func() { c.AddBatch(keys, est) }},
					{"EstimateBatch", func() { c.EstimateBatch(keys, est) }},
				} {
					if got := testing.AllocsPerRun(raceScale(1000), tc.f); got != 0 {
						t.Errorf("%s: %v allocations per call, want 0", tc.name, got)
					}
				}
			})
		}
	}
}
