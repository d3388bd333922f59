package sketch

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestCountMinConservative_TopNeverLow: two handles of a conservative
// sketch with a candidate table (one raising by Add and AddN, the other
// by AddBatch with and without estimates) count keys of skewed counts at
// once; Top lists the loudest keys, each with an estimate at least its
// count.
func TestCountMinConservative_TopNeverLow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cm")
	cfg := CountMinConfig{Rows: 4, Width: 256, Lanes: 2, ConservativeUpdate: true, Candidates: 8}
	a := mustCountMin(t, Path(path), cfg)
	defer a.Close()
	b := mustCountMin(t, Path(path), cfg)
	defer b.Close()
	const keys = 200
	count := func(i int) int { return 4000 / (i + 1) } // key i, per handle
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range keys {
			k := fmt.Appendf(nil, "key-%d", i)
			for j := range count(i) {
				var err error
				if j%2 == 0 {
					_, err = a.Add(k)
				} else {
					_, err = a.AddN(k, 1)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	wg.Go(func() {
		for i := range keys {
			k := fmt.Appendf(nil, "key-%d", i)
			batch := make([][]byte, count(i))
			for j := range batch {
				batch[j] = k
			}
			var est []uint64
			if i%2 == 0 {
				est = make([]uint64, len(batch))
			}
			if err := b.AddBatch(batch, est); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	top, err := a.Top(5)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 5 {
		t.Fatalf("Top(5) listed %d keys: %v", len(top), top)
	}
	for r, hh := range top {
		var i int
		if _, err := fmt.Sscanf(hh.Key, "key-%d", &i); err != nil {
			t.Fatalf("Top listed %q", hh.Key)
		}
		if want := uint64(2 * count(i)); hh.Estimate < want {
			t.Errorf("Top[%d] = %q with estimate %d, want >= %d", r, hh.Key, hh.Estimate, want)
		}
		if i != r {
			t.Errorf("Top[%d] = %q, want key-%d", r, hh.Key, r)
		}
	}
}
