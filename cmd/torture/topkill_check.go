package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// The heavy-hitters checkers: a checker reads every record, then asks each
// structure's Top, pass after pass while the workers are killed, and once
// more when they are all stopped. Every pass: each listed key's estimate
// at least the adds of it that returned (the window's over the periods the
// listing certainly covers), and no key listed that nobody added. The
// final pass, with nothing adding: every key loud enough listed.

// The two structures of a result's arrays.
const (
	hhSketch = iota
	hhWin
	hhStructs
)

var hhNames = [hhStructs]string{"Count-Min", "Count-Min window (Rotate)"}

// hhCheckerResult is one checker's count, printed as one JSON line at its
// end.
type hhCheckerResult struct {
	Backend string `json:"backend"`
	Passes  int    `json:"passes"`
	// Listed counts the listings judged; Low those of real keys below
	// their returned adds, Unknown keys listed that nobody added (both
	// violations).
	Listed  [hhStructs]int `json:"listed"`
	Low     [hhStructs]int `json:"low"`
	Unknown [hhStructs]int `json:"unknown"`
	// Loud counts the keys of the final pass loud enough to be listed;
	// Unlisted those of them Top left out (a violation).
	Loud     [hhStructs]int `json:"loud"`
	Unlisted [hhStructs]int `json:"unlisted"`
	// The controls: the control key's inflated record caught as a low
	// estimate (in any pass, and in the final one), the ghost caught as
	// a loud key left out (final pass).
	CaughtLow      [hhStructs]int `json:"caught_low"`
	CaughtLowFinal [hhStructs]int `json:"caught_low_final"`
	CaughtGhost    [hhStructs]int `json:"caught_ghost"`
	// Uncovered counts window passes with no period certainly covered
	// (the window turned Keep times during the question): not judged.
	Uncovered int `json:"uncovered"`
	// Check: clean, ErrTornAdd, anything else (a violation); and Top
	// calls that failed (a violation).
	CheckClean   int    `json:"check_clean"`
	CheckTorn    int    `json:"check_torn"`
	CheckOther   int    `json:"check_other"`
	TopErrs      int    `json:"top_errs"`
	FirstProblem string `json:"first_problem,omitempty"`
}

func (r *hhCheckerResult) problem(s string) {
	if r.FirstProblem == "" {
		r.FirstProblem = s
		fmt.Fprintf(os.Stderr, "torture: heavy hitters checker (%s): %s\n", sketch.Backend, s)
	}
}

// hhIndex finds a listed key's index: a key kept whole by its bytes, a
// longer one by its prefix and length. -1 for a key nobody adds.
var hhIndex = func() func(h sketch.HeavyHitter) int {
	m := make(map[string]int, allKeys)
	for i, k := range hhKeyTable {
		m[string(k[:min(len(k), sketch.DefaultCandidateKeyBytes)])] = i
	}
	return func(h sketch.HeavyHitter) int {
		if i, ok := m[h.Key]; ok && len(hhKeyTable[i]) == h.Length {
			return i
		}
		return -1
	}
}()

// judgeListing holds a listing of structure st to the adds that returned:
// want(k) is what the records say of key k. The control key below its
// claim is the control caught.
func (r *hhCheckerResult) judgeListing(st int, hs []sketch.HeavyHitter, want func(k int) uint64, final bool) {
	for _, h := range hs {
		r.Listed[st]++
		k := hhIndex(h)
		switch {
		case k < 0:
			r.Unknown[st]++
			r.problem(fmt.Sprintf("%s Top listed %q (length %d), which nobody added", hhNames[st], h.Key, h.Length))
		case h.Estimate >= want(k):
		case isControl(k):
			r.CaughtLow[st]++
			if final {
				r.CaughtLowFinal[st]++
			}
		default:
			r.Low[st]++
			r.problem(fmt.Sprintf("%s Top listed %q at %d, below its %d adds that returned", hhNames[st], h.Key, h.Estimate, want(k)))
		}
	}
}

// judgeLoud holds a final listing of structure st to the loud keys: those
// of counts (the returned adds by key index) that loudKeys names must be
// listed. The ghost left out is the control caught.
func (r *hhCheckerResult) judgeLoud(st int, hs []sketch.HeavyHitter, counts []uint64, total, width, bound uint64, k int) {
	listed := map[int]bool{}
	for _, h := range hs {
		listed[hhIndex(h)] = true
	}
	for _, i := range loudKeys(counts, total, width, bound, k) {
		if listed[i] {
			if !isControl(i) {
				r.Loud[st]++
			}
			continue
		}
		switch {
		case i == hhGhost:
			r.CaughtGhost[st]++
		case isControl(i):
			// The control key is added for real: a listing that left it
			// out would be a miss too, but its count is the claim's.
			r.Unlisted[st]++
			r.problem(fmt.Sprintf("%s Top left out the control key", hhNames[st]))
		default:
			r.Loud[st]++
			r.Unlisted[st]++
			r.problem(fmt.Sprintf("%s Top left out %q with %d adds returned (total %d, width %d, error bound %d)", hhNames[st], hhKeyTable[i], counts[i], total, width, bound))
		}
	}
}

// hhMostShared is how many louder keys a key may have and still be sure of
// a way: a key that shares its two buckets of 8 ways with 15 louder keys
// is not listed (CountMin.Top), and a key's two buckets may be the same
// one, of 8 ways.
const hhMostShared = 7

// loudKeys are the indexes of counts Top must list: among the K loudest
// by a clear margin (more than twice the (K+1)th loudest count plus the
// error bound), with fewer louder keys than could fill its buckets, and
// above the noise floor Top documents by a margin (more than twice total
// over width plus the error bound).
func loudKeys(counts []uint64, total, width, bound uint64, k int) []int {
	idx := make([]int, len(counts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case counts[a] > counts[b]:
			return -1
		case counts[a] < counts[b]:
			return 1
		}
		return 0
	})
	var next uint64
	if k < len(idx) {
		next = counts[idx[k]]
	}
	var out []int
	for rank, i := range idx {
		if rank >= k || rank > hhMostShared {
			break
		}
		c := counts[i]
		if c > 2*(total/width)+bound && c > 2*next+bound {
			out = append(out, i)
		}
	}
	return out
}

// runHHChecker checks until its standard input closes, then makes the
// final pass and prints its result.
func runHHChecker(dir string, slots int) error {
	recs := make([]*record, 0, slots+1)
	for slot := -1; slot < slots; slot++ {
		r, err := openRecord(recordPath(dir, slot))
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	f, err := openHH(dir, sketch.WithReadOnly())
	if err != nil {
		return err
	}
	var stop atomic.Bool
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	c := &hhChecker{res: hhCheckerResult{Backend: sketch.Backend}, recs: recs, f: f}
	for !stop.Load() {
		c.pass(false)
	}
	c.pass(true)
	return json.NewEncoder(os.Stdout).Encode(c.res)
}

type hhChecker struct {
	res  hhCheckerResult
	recs []*record
	f    *hhFiles
	t    tally
	ws   windowSnap
}

func (c *hhChecker) pass(final bool) {
	r := &c.res
	sumRecords(c.recs, &c.t)
	if hs, err := c.f.cms.Top(0); err != nil {
		r.TopErrs++
		r.problem(fmt.Sprintf("Count-Min Top: %v", err))
	} else {
		r.judgeListing(hhSketch, hs, func(k int) uint64 { return c.t[fieldCountMin][k] }, final)
		if final {
			r.judgeLoud(hhSketch, hs, c.t[fieldCountMin][:], c.f.cms.Total(), uint64(hhCountMin.Width), c.f.cms.ErrorBound(), hhCountMin.Candidates)
		}
	}

	c.ws.read(c.recs)
	c0 := c.f.cmw.Current()
	hs, err := c.f.cmw.Top(0)
	lo, hi := covered(c0, c.f.cmw.Current())
	switch {
	case err != nil:
		r.TopErrs++
		r.problem(fmt.Sprintf("Count-Min window Top: %v", err))
	case lo > hi:
		r.Uncovered++
	default:
		want := func(k int) uint64 { return c.ws.landed(fieldCountMinWindow, k, lo, hi) }
		r.judgeListing(hhWin, hs, want, final)
		if final {
			counts := make([]uint64, allKeys)
			for k := range counts {
				counts[k] = want(k)
			}
			r.judgeLoud(hhWin, hs, counts, c.f.cmw.Total(), uint64(hhCountMin.Width), c.f.cmw.ErrorBound(), hhCountMin.Candidates)
		}
	}

	for _, h := range []interface{ Check() error }{c.f.cms, c.f.cmw} {
		switch err := h.Check(); {
		case err == nil:
			r.CheckClean++
		case errors.Is(err, sketch.ErrTornAdd):
			r.CheckTorn++
		default:
			r.CheckOther++
			r.problem(fmt.Sprintf("Check: %v", err))
		}
	}
	r.Passes++
}

// topKillRows are the part's rows: the kills, each promise per structure,
// Check, and the controls.
func topKillRows(r hhResult) []row {
	var backends []string
	var sum hhCheckerResult
	for _, c := range r.checkers {
		backends = append(backends, c.Backend)
		sum.Passes += c.Passes
		for st := range hhStructs {
			sum.Listed[st] += c.Listed[st]
			sum.Low[st] += c.Low[st]
			sum.Unknown[st] += c.Unknown[st]
			sum.Loud[st] += c.Loud[st]
			sum.Unlisted[st] += c.Unlisted[st]
		}
		sum.Uncovered += c.Uncovered
		sum.CheckClean += c.CheckClean
		sum.CheckTorn += c.CheckTorn
		sum.CheckOther += c.CheckOther
		sum.TopErrs += c.TopErrs
		if sum.FirstProblem == "" {
			sum.FirstProblem = c.FirstProblem
		}
	}
	perSec := float64(r.kills) / r.elapsed.Seconds()
	rows := []row{{
		test: fmt.Sprintf("heavy hitters: %d workers (%s) add a skewed stream (weights of every residue mod 8, an odd first then even) to a Count-Min sketch and window with Candidates %d, a SIGKILL after each %s-%s pause",
			r.cfg.workers, joinOr(backends, "+"), hhCountMin.Candidates, r.cfg.gap/2, r.cfg.gap*3/2),
		runs:       fmt.Sprintf("%d kills", r.kills),
		violations: r.failures,
		figure:     fmt.Sprintf("%d calls returned in %s (%.0f kills/s), %d rotations%s", r.calls, r.elapsed.Round(time.Second), perSec, r.rotations, note(r.firstFailure)),
	}}
	for st := range hhStructs {
		extra := ""
		if st == hhWin {
			extra = fmt.Sprintf(" (over the periods covered; %d passes with none certainly covered)", sum.Uncovered)
		}
		rows = append(rows, row{
			test:       hhNames[st] + " Top: no listed estimate below its key's returned adds, no key listed that nobody added",
			runs:       fmt.Sprintf("%d passes", sum.Passes),
			violations: sum.Low[st] + sum.Unknown[st] + sum.TopErrs,
			figure:     fmt.Sprintf("%d listings judged%s, both backends; %d below, %d unknown, %d Top errors%s", sum.Listed[st], extra, sum.Low[st], sum.Unknown[st], sum.TopErrs, noteIf(sum.Low[st]+sum.Unknown[st]+sum.TopErrs, sum.FirstProblem)),
		})
		rows = append(rows, row{
			test:       hhNames[st] + " Top: every loud key listed (final pass: > 2 total/width + error bound, among the K loudest by 2x)",
			runs:       fmt.Sprintf("%d checkers", len(r.checkers)),
			violations: sum.Unlisted[st],
			figure:     fmt.Sprintf("%d loud keys judged, %d left out%s", sum.Loud[st], sum.Unlisted[st], noteIf(sum.Unlisted[st], sum.FirstProblem)),
		})
	}
	rows = append(rows, row{
		test:       "heavy hitters Check: torn adds only (candidate tables whole)",
		runs:       fmt.Sprintf("%d checks", sum.CheckClean+sum.CheckTorn+sum.CheckOther),
		violations: sum.CheckOther,
		figure:     fmt.Sprintf("%d clean, %d ErrTornAdd%s", sum.CheckClean, sum.CheckTorn, noteIf(sum.CheckOther, sum.FirstProblem)),
	})
	missed := 0
	var caught []string
	for _, c := range r.checkers {
		for st := range hhStructs {
			if c.CaughtLowFinal[st] == 0 || c.CaughtGhost[st] == 0 {
				missed++
			}
		}
		caught = append(caught, fmt.Sprintf("%s %d/%d/%d/%d", c.Backend, c.CaughtLow[hhSketch], c.CaughtGhost[hhSketch], c.CaughtLow[hhWin], c.CaughtGhost[hhWin]))
	}
	rows = append(rows, row{
		test:       "heavy hitters negative control: an inflated record and a ghost loud key caught by every checker",
		runs:       fmt.Sprintf("%d checkers x %d structures", len(r.checkers), hhStructs),
		violations: missed,
		figure:     "caught (sketch low/ghost, window low/ghost): " + joinOr(caught, ", "),
	})
	return rows
}

// noteIf is the first problem's note on a row with violations: the
// checkers keep one first problem of any kind.
func noteIf(violations int, first string) string {
	if violations == 0 {
		return ""
	}
	return note(first)
}

func joinOr(s []string, sep string) string {
	if len(s) == 0 {
		return "none"
	}
	out := s[0]
	for _, x := range s[1:] {
		out += sep + x
	}
	return out
}
