package sketch

import (
	"fmt"
	"testing"
)

// TestCandidates_WeightedResidues: a key counted with AddN is listed
// first once it is the loudest, whatever residues mod 8 its weights have.
// Offering adds by the estimate's low bits alone left out a key whose
// first weight was odd and every later one even (its estimate never a
// multiple of 8): a client that sent 27 times the next was not listed.
func TestCandidates_WeightedResidues(t *testing.T) {
	type adder interface {
		AddN([]byte, uint64) (uint64, error)
		AddString(string) (uint64, error)
		Top(int) ([]HeavyHitter, error)
	}
	kinds := map[string]func(t *testing.T) adder{
		"countmin": func(t *testing.T) adder {
			return mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 8, Seed: 5})
		},
		"window": func(t *testing.T) adder {
			return mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{
				Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 8, Seed: 5}})
		},
	}
	for name, open := range kinds {
		for first := uint64(1); first <= 8; first++ {
			for _, step := range []uint64{1, 2, 3, 4, 5, 6, 7, 8, 10, 1000, 1001} {
				t.Run(fmt.Sprintf("%s/first=%d/step=%d", name, first, step), func(t *testing.T) {
					s := open(t)
					// Sixteen keys fill the table of 8 past an estimate of 64.
					for i := range 16 {
						for range 100 + i {
							if _, err := s.AddString(fmt.Sprintf("quiet-%d", i)); err != nil {
								t.Fatal(err)
							}
						}
					}
					loud := []byte("loud")
					total, err := s.AddN(loud, first)
					if err != nil {
						t.Fatal(err)
					}
					for total < 4000 {
						if total, err = s.AddN(loud, step); err != nil {
							t.Fatal(err)
						}
					}
					hs, err := s.Top(1)
					if err != nil {
						t.Fatal(err)
					}
					if len(hs) != 1 || hs[0].Key != "loud" || hs[0].Estimate < total {
						t.Errorf("Top(1) = %+v, want \"loud\" with at least %d", hs, total)
					}
				})
			}
		}
	}
}
