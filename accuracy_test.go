package sketch

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCountMin_AccuracyZipf streams a Zipf(1.1) sequence of client-like
// keys into the default shape through each core and compares every key
// with an exact map: no estimate may be low (the contract), and at most
// 1-Confidence of the keys may be over the error bound (the sizing).
func TestCountMin_AccuracyZipf(t *testing.T) {
	for _, core := range cores() {
		t.Run(core.name(), func(t *testing.T) {
			c := mustOpen(t, tempPath(t, "cms"), CountMinConfig{ErrorRate: 0.001, Confidence: 0.99, Seed: 42})
			c.core = core
			r := rand.New(rand.NewPCG(7, 11))
			zipf := rand.NewZipf(r, 1.1, 1, 1<<20)
			truth := map[string]uint64{}
			const adds = 300_000
			batch := make([][]byte, 0, 512)
			for i := 0; i < adds; i++ {
				v := zipf.Uint64()
				k := fmt.Sprintf("10.%d.%d.%d", v>>16, v>>8&0xff, v&0xff)
				truth[k]++
				batch = append(batch, []byte(k))
				if len(batch) == cap(batch) || i == adds-1 {
					if err := c.AddBatch(batch, nil); err != nil {
						t.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			st := c.Stats()
			if st.Total != adds || st.Adds != adds {
				t.Fatalf("Stats() Total, Adds = %d, %d, want %d", st.Total, st.Adds, adds)
			}
			over, exact := 0, 0
			for k, n := range truth {
				est := c.EstimateString(k)
				if est < n {
					t.Fatalf("Estimate(%q) = %d, want >= %d", k, est, n)
				}
				if est-n > st.ErrorBound {
					over++
				}
				if est == n {
					exact++
				}
			}
			frac := float64(over) / float64(len(truth))
			t.Logf("%d distinct keys, total %d, error bound %d: %d over the bound (%.4f%%), %d exact",
				len(truth), st.Total, st.ErrorBound, over, 100*frac, exact)
			if frac > 1-st.Confidence {
				t.Errorf("%.4f of keys exceed the error bound %d, want <= %.4f", frac, st.ErrorBound, 1-st.Confidence)
			}
			if st.ErrorBound != errorBound(adds, 4096) || st.ErrorBound == 0 {
				t.Errorf("ErrorBound = %d, want ceil(e/4096*%d) = %d", st.ErrorBound, adds, errorBound(adds, 4096))
			}
		})
	}
}
