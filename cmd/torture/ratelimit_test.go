package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestJudgeGCRA: the span check passes decisions at the rate with the
// burst at one instant, and catches one decision too many at an instant,
// over a span, and across logs of several keys kept apart.
func TestJudgeGCRA(t *testing.T) {
	const iv = 10 * time.Millisecond
	const burst = 4
	at := func(k uint32, t0 int64, costs ...uint32) []gcraEntry {
		var out []gcraEntry
		for _, c := range costs {
			out = append(out, gcraEntry{at: t0, key: k, cost: c})
		}
		return out
	}
	onBound := at(0, 1e9, 1, 1, 1, 1, 1) // burst+1 at once
	for i := range 100 {                 // then one an interval
		onBound = append(onBound, gcraEntry{at: 1e9 + int64(i+1)*int64(iv), key: 0, cost: 1})
	}
	for _, tc := range []struct {
		name    string
		entries []gcraEntry
		bad     bool
	}{
		{"burst+1 at once", at(0, 5, 1, 2, 1, 1), false},
		{"burst+2 at once", at(0, 5, 1, 2, 1, 1, 1), true},
		{"on the bound for 100 intervals", onBound, false},
		{"one more on the bound", append(onBound, gcraEntry{at: 1e9 + 50*int64(iv), key: 0, cost: 1}), true},
		{"two keys at their bound each", append(at(1, 7, 1, 1, 1, 1, 1), at(2, 7, 5)...), false},
		{"the control", gcraControl(burst), true},
	} {
		v := judgeGCRA(tc.entries, iv, burst)
		if (v.violations > 0) != tc.bad {
			t.Errorf("%s: %d violations (worst %d ns: %s), want bad %v", tc.name, v.violations, v.worst, v.first, tc.bad)
		}
	}
}

// TestGCRARows: a violation, an unread log and a failed Check each make
// a violation in the rate limiter's rows; none makes none.
func TestGCRARows(t *testing.T) {
	sum := func(r gcraResult) int {
		n := 0
		for _, row := range gcraRows(r) {
			n += row.violations
		}
		return n
	}
	if n := sum(gcraResult{}); n != 0 {
		t.Errorf("a clean result: %d violations, want 0", n)
	}
	for _, r := range []gcraResult{
		{v: gcraVerdict{violations: 3}},
		{readError: errTest},
		{checkErr: errTest},
	} {
		if n := sum(r); n == 0 {
			t.Errorf("%+v: no violation", r)
		}
	}
	if rows := gcraRows(gcraResult{}); !strings.Contains(rows[0].figure, "control caught 1") {
		t.Errorf("the control's figure: %q", rows[0].figure)
	}
}

var errTest = errors.New("planted")
