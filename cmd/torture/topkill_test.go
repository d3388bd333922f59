package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// hh is a listing entry of key index k at estimate e, as Top gives it (a
// long key as its 64-byte prefix).
func hh(k int, e uint64) sketch.HeavyHitter {
	key := hhKeyTable[k]
	return sketch.HeavyHitter{Key: string(key[:min(len(key), sketch.DefaultCandidateKeyBytes)]), Length: len(key), Estimate: e}
}

func TestHHIndex_LongKeyPrefix(t *testing.T) {
	if len(hhKeyTable[hhLong]) <= sketch.DefaultCandidateKeyBytes {
		t.Fatalf("the long key has %d bytes, want more than %d", len(hhKeyTable[hhLong]), sketch.DefaultCandidateKeyBytes)
	}
	for _, k := range []int{hhSingle, hhEven, hhLong, 100, hhGhost, hhControl} {
		if got := hhIndex(hh(k, 1)); got != k {
			t.Errorf("hhIndex(%q) = %d, want %d", hhKeyTable[k], got, k)
		}
	}
	// The prefix with another length is no key anyone adds.
	h := hh(hhLong, 1)
	h.Length++
	if got := hhIndex(h); got != -1 {
		t.Errorf("hhIndex of the long key's prefix at length %d = %d, want -1", h.Length, got)
	}
}

// TestJudgeListing_PlantedLow: a listed estimate below the key's
// returned adds is a violation named in FirstProblem; the control key's
// is the control caught; a key nobody adds is a violation too.
func TestJudgeListing_PlantedLow(t *testing.T) {
	want := func(k int) uint64 {
		switch k {
		case hhSingle:
			return 100
		case hhControl:
			return hhControlHuge
		}
		return 5
	}
	var r hhCheckerResult
	r.judgeListing(hhSketch, []sketch.HeavyHitter{hh(hhSingle, 100), hh(hhEven, 5)}, want, false)
	if r.Low[hhSketch] != 0 || r.Unknown[hhSketch] != 0 || r.Listed[hhSketch] != 2 {
		t.Fatalf("estimates at their adds: %+v, want 2 listed and nothing else", r)
	}
	r.judgeListing(hhSketch, []sketch.HeavyHitter{hh(hhSingle, 99)}, want, false)
	if r.Low[hhSketch] != 1 || !strings.Contains(r.FirstProblem, `"hh-loud-0" at 99, below its 100 adds`) {
		t.Errorf("an estimate of 99 for 100 adds: Low %d, first problem %q; want 1 and the key named", r.Low[hhSketch], r.FirstProblem)
	}
	r.judgeListing(hhWin, []sketch.HeavyHitter{hh(hhControl, 1000)}, want, true)
	if r.CaughtLow[hhWin] != 1 || r.CaughtLowFinal[hhWin] != 1 || r.Low[hhWin] != 0 {
		t.Errorf("the control below its claim: caught %d (final %d), low %d; want 1, 1, 0", r.CaughtLow[hhWin], r.CaughtLowFinal[hhWin], r.Low[hhWin])
	}
	r.judgeListing(hhWin, []sketch.HeavyHitter{{Key: "nobody", Length: 6, Estimate: 1 << 20}}, want, false)
	if r.Unknown[hhWin] != 1 {
		t.Errorf("a key nobody added: Unknown %d, want 1", r.Unknown[hhWin])
	}
}

func TestLoudKeys(t *testing.T) {
	counts := make([]uint64, 200)
	for i := range counts {
		counts[i] = 10 // the quiet ones
	}
	counts[3] = 1000 // loud
	counts[7] = 25   // over the floor, not twice the (K+1)th
	counts[9] = 900  // loud
	// total 100000 over width 1000: a noise floor of 100, so 2x plus the
	// bound of 50 is 250.
	counts[11] = 240 // twice the (K+1)th, not over 2 total/width + bound
	got := loudKeys(counts, 100000, 1000, 50, 4)
	if want := []int{3, 9}; !slices.Equal(got, want) {
		t.Errorf("loudKeys = %v, want %v", got, want)
	}
	// With K = 1 the second loudest is the (K+1)th: 1000 is not twice
	// 900, so no key is sure to be listed.
	if got := loudKeys(counts, 100000, 1000, 50, 1); len(got) != 0 {
		t.Errorf("loudKeys with K = 1 = %v, want none", got)
	}
	// Past hhMostShared louder keys a key may lose its buckets.
	many := make([]uint64, 40)
	for i := range 20 {
		many[i] = 1000 - uint64(i)
	}
	if got := loudKeys(many, 20000, 1000, 0, 32); len(got) != hhMostShared+1 {
		t.Errorf("loudKeys of 20 loud keys = %d keys, want %d", len(got), hhMostShared+1)
	}
}

// TestJudgeLoud_PlantedUnlisted: a loud key Top left out is a violation;
// the ghost left out is the control caught.
func TestJudgeLoud_PlantedUnlisted(t *testing.T) {
	counts := make([]uint64, allKeys)
	counts[hhSingle] = 5000
	counts[hhEven] = 4000
	counts[hhGhost] = hhControlHuge
	var r hhCheckerResult
	r.judgeLoud(hhSketch, []sketch.HeavyHitter{hh(hhSingle, 5000), hh(hhEven, 4000)}, counts, 10000, 1000, 30, 32)
	if r.Unlisted[hhSketch] != 0 || r.Loud[hhSketch] != 2 || r.CaughtGhost[hhSketch] != 1 {
		t.Fatalf("both loud keys listed: %+v; want 2 loud, none left out, the ghost caught", r)
	}
	r = hhCheckerResult{}
	r.judgeLoud(hhWin, []sketch.HeavyHitter{hh(hhSingle, 5000), hh(hhGhost, 1)}, counts, 10000, 1000, 30, 32)
	if r.Unlisted[hhWin] != 1 || !strings.Contains(r.FirstProblem, `left out "hh-loud-1" with 4000 adds`) {
		t.Errorf("a loud key left out: Unlisted %d, first problem %q; want 1 and the key named", r.Unlisted[hhWin], r.FirstProblem)
	}
	if r.CaughtGhost[hhWin] != 0 {
		t.Errorf("the ghost listed: caught %d, want 0", r.CaughtGhost[hhWin])
	}
}

// TestTopKillRows_Violations: each checker's findings reach a row's
// violations, and a control not caught by one checker is one.
func TestTopKillRows_Violations(t *testing.T) {
	good := hhCheckerResult{Backend: "cgo", Passes: 3,
		CaughtLow: [hhStructs]int{2, 2}, CaughtLowFinal: [hhStructs]int{1, 1}, CaughtGhost: [hhStructs]int{1, 1}}
	bad := good
	bad.Backend = "purego"
	bad.Low[hhWin] = 2
	bad.Unlisted[hhSketch] = 1
	bad.CheckOther = 1
	bad.CaughtGhost[hhWin] = 0
	rows := topKillRows(hhResult{cfg: hhConfig{workers: 4}, elapsed: 1, checkers: []hhCheckerResult{good, bad}})
	want := map[string]int{
		"Count-Min Top: no listed":                 2 - 2,
		"Count-Min window (Rotate) Top: no listed": 2,
		"Count-Min Top: every loud":                1,
		"heavy hitters Check":                      1,
		"heavy hitters negative control":           1,
	}
	for prefix, v := range want {
		found := false
		for _, r := range rows {
			if strings.HasPrefix(r.test, prefix) {
				found = true
				if r.violations != v {
					t.Errorf("row %q: %d violations, want %d", r.test, r.violations, v)
				}
			}
		}
		if !found {
			t.Errorf("no row %q", prefix)
		}
	}
}
