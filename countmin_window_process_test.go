//go:build linux

package sketch

// The Count-Min window's part in the process tests of both windows
// (window_suite_test.go): its child adder, which checks its own estimates,
// and the truth its counts give the parent.

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

var _ = role("winadd", childWinAdd)

// childWinAdd adds its own keys until told to stop, in bursts, checking that
// every estimate (Add's and Estimate's) is at least its own count over the
// periods the estimate covers; then it prints its counts per period as
// "ref PERIOD KEY N" lines. Its keys are its own, so its counts are the
// truth for them.
func childWinAdd() error { return inChildWindow(countMinWindowKind, countMinWinAdd) }

// countMinWinAdd is childWinAdd's work, as child me, on its window.
func countMinWinAdd(tw testWindow, me string) error {
	w := tw.(cmWindow).CountMinWindow
	ref := winRef{}
	stop := newWinStop()
	for i := 0; !stop.now(i); i++ {
		k := fmt.Sprintf("c%s-%d", me, i%20)
		lo, hi := cells.HashString(k, w.slots[0].Seed)
		est, addP, p, err := w.addOne(lo, hi, 1)
		if err != nil {
			return err
		}
		ref.add(addP, k, 1)
		if want := ref.over(k, w.ctl.first(p), p); est < want {
			return fmt.Errorf("period %d: Add(%q) = %d, want >= %d", p, k, est, want)
		}
		if i%50 == 0 {
			est, p := w.estimate(lo, hi)
			if want := ref.over(k, w.ctl.first(p), p); est < want {
				return fmt.Errorf("period %d: Estimate(%q) = %d, want >= %d", p, k, est, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for p, keys := range ref {
		for k, n := range keys {
			fmt.Printf("ref %d %s %d\n", p, k, n)
		}
	}
	return nil
}

// readRefs sums the children's "ref" lines.
func readRefs(t *testing.T, hs []*helper) winRef {
	t.Helper()
	ref := winRef{}
	scanRefs(t, hs, func(_ int, f []string) error {
		p, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return err
		}
		n, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return err
		}
		ref.add(p, f[1], n)
		return nil
	})
	return ref
}

// countMinWindowTruth checks, for every child key, that the estimate over
// the window it covers is at least the children's count over those
// periods, and that nearly all are exact.
func countMinWindowTruth(t *testing.T, tw testWindow, hs []*helper, _ bool) {
	t.Helper()
	w, ref := tw.(cmWindow).CountMinWindow, readRefs(t, hs)
	exact, keys := 0, 0
	for c := range hs {
		for j := range 20 {
			k := fmt.Sprintf("c%d-%d", c, j)
			lo, hi := cells.HashString(k, w.slots[0].Seed)
			est, p := w.estimate(lo, hi)
			want := ref.over(k, w.ctl.first(p), p)
			if est < want {
				t.Errorf("Estimate(%q) over periods %d..%d = %d, want >= %d", k, w.ctl.first(p), p, est, want)
			}
			if est == want {
				exact++
			}
			keys++
		}
	}
	if exact*100 < keys*95 {
		t.Errorf("only %d of %d keys estimated exactly", exact, keys)
	}
}
