package main

import (
	"strings"
	"testing"
	"time"
)

// A checker that did not catch the negative control fails the run, as a
// real violation does: otherwise a broken checker would pass everything.
func TestStormRows_MissedControlIsViolation(t *testing.T) {
	var caughtAll [fields]int
	for f := range caughtAll {
		caughtAll[f] = controlKeys
	}
	good := checkerResult{Backend: "cgo", Passes: 10, Caught: caughtAll, CaughtFinal: caughtAll}
	blind := good
	blind.Backend = "purego"
	blind.Caught[fieldBloom], blind.CaughtFinal[fieldBloom] = 0, 0
	// A checker that never asks the clock's windows, or brackets them
	// with the wrong periods, catches none of their control claims.
	clockBlind := good
	clockBlind.Caught[fieldCountMinClock], clockBlind.CaughtFinal[fieldCountMinClock] = 0, 0
	clockBlind.Caught[fieldBloomClock], clockBlind.CaughtFinal[fieldBloomClock] = 0, 0
	// One that caught the clock's control during the storm but not in its
	// final pass, when the claims had stopped moving with the clock.
	clockLate := good
	clockLate.CaughtFinal[fieldBloomClock] = 0
	low := good
	low.Low[fieldCountMin] = 1
	low.FirstProblem = `Estimate("k") = 1, want >= 2`

	tests := []struct {
		name     string
		checkers []checkerResult
		want     int
	}{
		{"all caught, none low", []checkerResult{good, good}, 0},
		{"one checker blind to the control", []checkerResult{good, blind}, 1},
		{"one checker blind to the clock windows' control", []checkerResult{clockBlind, good}, 2},
		{"one checker missing the clock windows' control at the end", []checkerResult{good, clockLate}, 1},
		{"one low estimate", []checkerResult{good, low}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := stormResult{cfg: stormConfig{workers: 2, gap: time.Millisecond}, elapsed: time.Second, checkers: tt.checkers}
			var out strings.Builder
			if got := printSummary(&out, stormRows(r)); got != tt.want {
				t.Errorf("violations = %d, want %d; table:\n%s", got, tt.want, out.String())
			}
		})
	}
}

func TestLockRows_SlowIsViolation(t *testing.T) {
	r := lockResult{c: lockCases[0], kills: 2, slow: 1, times: []time.Duration{time.Millisecond, 2 * slowRecovery}}
	var out strings.Builder
	if got := printSummary(&out, lockRows([]lockResult{r})); got != 1 {
		t.Errorf("violations = %d, want 1; table:\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "max 2000.0 ms") {
		t.Errorf("table lacks the maximum:\n%s", out.String())
	}
}
