package sketch

import (
	"bytes"
	"fmt"
	"testing"
)

// TestCandidates_ParityCores: the same adds, single and in batches, to a
// sketch with a table through each Count-Min core of this build (the C
// core and the Go one with cgo) leave equal regions: counters and table,
// byte for byte (the add count's stripes folded, as parityRun does). The
// table is written by Go code in every build from the estimates the core
// returns, so the cores agree on it when they agree on the estimates.
func TestCandidates_ParityCores(t *testing.T) {
	keys, _ := zipfStream(1.1, 20_000, 60_000, 5)
	var regions [][]byte
	var names []string
	for _, core := range countMinCores() {
		c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 24, CandidateKeyBytes: 8, Seed: 9})
		c.core = core
		c.l.Prefetch = true // batches go to the core under test
		for i := 0; i < len(keys); {
			if n := (i / 997) % 3; n == 0 {
				c.Add(keys[i])
				i++
				continue
			}
			end := min(i+1+i%300, len(keys))
			var est []uint64
			if i%2 == 0 {
				est = make([]uint64, end-i)
			}
			if err := c.AddBatch(keys[i:end], est); err != nil {
				t.Fatal(err)
			}
			i = end
		}
		if err := c.Check(); err != nil {
			t.Errorf("%s: Check: %v", core.Name(), err)
		}
		regions = append(regions, foldStripes(c.m.entryBytes()))
		names = append(names, core.Name())
	}
	for i := 1; i < len(regions); i++ {
		if !bytes.Equal(regions[0], regions[i]) {
			t.Errorf("%s and %s leave different regions", names[0], names[i])
		}
	}
	t.Logf("cores compared: %v", fmt.Sprint(names))
}
