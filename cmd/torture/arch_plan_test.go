package main

import (
	"fmt"
	"testing"
)

// The closed form for whole rounds must agree with doing every step.
func TestArchStepsCounts_MatchesStepByStep(t *testing.T) {
	for _, n := range []uint64{0, 1, archChunks, archChunks + 1, archStepsPerRound - 1, archStepsPerRound, 3*archStepsPerRound + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var want archCounts
			for s := uint64(0); s < n; s++ {
				want.addStep(s)
			}
			if got := archStepsCounts(n); got != want {
				t.Errorf("archStepsCounts(%d) differs from %d steps done one by one", n, n)
			}
		})
	}
}

// Every key of a plan gets every kind of add in one round.
func TestArchStep_RoundCoversEveryKeyOnce(t *testing.T) {
	c := archStepsCounts(archStepsPerRound)
	for u := 0; u < archPlanKeys; u++ {
		if c.countMin[u] != 1+archWeight(u) || c.countingBloom[u] != 1 || c.window[u] != 1 || !c.bloom[u] || !c.bloomWindow[u] {
			t.Fatalf("key %d after one round: %+v", u, c)
		}
	}
}

// Shared keys add up over processes, own keys stay apart, and a step in
// flight at a kill raises only the high bound.
func TestArchExpect(t *testing.T) {
	round := uint64(archStepsPerRound)
	procs := []archProcess{
		{Who: 0, Steps: 2 * round, InFlight: []uint64{0}}, // step 0: Count-Min batch of keys 0..15
		{Who: 1, Steps: round},
	}
	low, high := archExpect(procs)
	shared := string(archKey(0, archOwnKeys))
	if shared != string(archKey(1, archOwnKeys)) {
		t.Fatalf("shared key differs between processes")
	}
	u := archOwnKeys
	if got, want := low[shared].countMin, 3*(1+archWeight(u)); got != want {
		t.Errorf("shared key low Count-Min = %d, want %d", got, want)
	}
	own0, own1 := string(archKey(0, 0)), string(archKey(1, 0))
	if got, want := low[own0].countMin, 2*(1+archWeight(0)); got != want {
		t.Errorf("own key of 0: low = %d, want %d", got, want)
	}
	if got, want := high[own0].countMin, low[own0].countMin+1; got != want {
		t.Errorf("own key of 0: high = %d, want %d (one batch in flight)", got, want)
	}
	if low[own1].countMin != 1+archWeight(0) || high[own1] != low[own1] {
		t.Errorf("own key of 1: low %+v high %+v", low[own1], high[own1])
	}
	if len(low) != 2*archOwnKeys+archSharedKeys {
		t.Errorf("%d keys, want %d", len(low), 2*archOwnKeys+archSharedKeys)
	}
}
