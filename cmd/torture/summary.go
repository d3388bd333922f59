package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// A row of the summary table. Violations must be zero for the run to pass.
type row struct {
	test       string
	runs       string
	violations int
	figure     string
}

// stormRows turns a storm's result into rows: the storm itself, one per
// promise the checkers assert, and the negative control, whose violation is
// a checker that did not catch it.
func stormRows(r stormResult) []row {
	var backends []string
	passes := 0
	for _, c := range r.checkers {
		backends = append(backends, c.Backend)
		passes += c.Passes
	}
	perSec := float64(r.kills) / r.elapsed.Seconds()
	rows := []row{{
		test:       fmt.Sprintf("kill storm: %d workers (%s), a SIGKILL after each %s-%s pause", r.cfg.workers, strings.Join(backends, "+"), r.cfg.gap/2, r.cfg.gap*3/2),
		runs:       fmt.Sprintf("%d kills", r.kills),
		violations: r.failures,
		figure:     fmt.Sprintf("%d calls returned in %s (%.0f kills/s)%s", r.calls, r.elapsed.Round(time.Second), perSec, note(r.firstFailure)),
	}}
	for f := 0; f < fields; f++ {
		rows = append(rows, promiseRow(r, f, passes))
	}
	rows = append(rows, checkRow(r, passes), controlRow(r))
	rows = append(rows, gcraRows(r.gcra)...)
	return append(rows, countersRows(r.counters)...)
}

// promiseRow is the row of the promise of field f: no answer below the
// records.
func promiseRow(r stormResult, f, passes int) row {
	promise := [fields]string{
		"Count-Min: no estimate below returned adds",
		"Bloom: no false negative",
		"counting Bloom: no false negative for adds (and merges) not removed",
		"distinct count: every returned add's register at its rank or above (adds and merges)",
		"Count-Min window (Rotate only): no estimate below returned adds of the periods covered",
		"Bloom window (Rotate only): no false negative for an add in a period covered",
		fmt.Sprintf("Count-Min window (clock, %s): no estimate below returned adds of the periods covered", stormClockWindow.Period),
		fmt.Sprintf("Bloom window (clock, %s): no false negative for an add in a period covered", stormClockWindow.Period),
	}
	low, asked, uncovered, backed, first := 0, 0, 0, 0, ""
	for _, c := range r.checkers {
		low += c.Low[f]
		asked += c.Asked[f]
		uncovered += c.Uncovered[f]
		backed += c.Backed[f]
		if first == "" && c.Low[f] > 0 {
			first = c.FirstProblem
		}
	}
	var extra string
	switch {
	case f == fieldCountingBloom:
		extra = fmt.Sprintf(" (%d removes of the workers' own adds, %d merges)", r.removes, r.merges[f])
	case f < plainFields:
		extra = fmt.Sprintf(" (%d merges)", r.merges[f])
	case f < fieldCountMinClock:
		extra = fmt.Sprintf(" (%d of real keys with an add in a period covered, %d with no period certainly covered), %d rotations", backed, uncovered, r.rotations[f-plainFields])
	default:
		extra = fmt.Sprintf(" (%d of real keys with an add in a period covered, %d with no period certainly covered), %d periods turned", backed, uncovered, r.clockTurns[f-fieldCountMinClock])
	}
	return row{
		test:       promise[f],
		runs:       fmt.Sprintf("%d passes", passes),
		violations: low,
		figure:     fmt.Sprintf("%d answers checked%s, both backends%s", asked, extra, note(first)),
	}
}

// checkRow is the row of the checkers' Count-Min Check and Inspect calls.
func checkRow(r stormResult, passes int) row {
	clean, torn, other, inspectErrs, first := 0, 0, 0, 0, ""
	for _, c := range r.checkers {
		clean += c.CheckClean
		torn += c.CheckTorn
		other += c.CheckOther
		inspectErrs += c.InspectErrs
		if first == "" && (c.CheckOther > 0 || c.InspectErrs > 0) {
			first = c.FirstProblem
		}
	}
	return row{
		test:       "Count-Min Check: torn adds only; Inspect: no corruption",
		runs:       fmt.Sprintf("%d checks", clean+torn+other),
		violations: other + inspectErrs,
		figure:     fmt.Sprintf("%d clean, %d ErrTornAdd, %d Inspect calls%s", clean, torn, passes*len(stormFileNames()), note(first)),
	}
}

// controlRow is the negative control's row: a checker that did not catch
// it is a violation.
func controlRow(r stormResult) row {
	missed := 0
	var caught []string
	for _, c := range r.checkers {
		var per []string
		for f := 0; f < fields; f++ {
			if c.Caught[f] == 0 || c.CaughtFinal[f] == 0 {
				missed++
			}
			per = append(per, fmt.Sprint(c.CaughtFinal[f]))
		}
		caught = append(caught, c.Backend+" "+strings.Join(per, "/"))
	}
	return row{
		test:       "negative control: every checker catches fake adds",
		runs:       fmt.Sprintf("%d checkers x %d kinds", len(r.checkers), fields),
		violations: missed,
		figure:     fmt.Sprintf("final pass caught (CM/Bloom/CBF/HLL/CMW/BW/CMW clock/BW clock) of %d keys: %s", controlKeys, strings.Join(caught, ", ")),
	}
}

func note(s string) string {
	if s == "" {
		return ""
	}
	return "; first: " + s
}

// lockRows is one row per lock case: the violations are recoveries slower
// than slowRecovery.
func lockRows(rs []lockResult) []row {
	var rows []row
	for _, r := range rs {
		rows = append(rows, row{
			test:       "lock recovery: " + r.c.name,
			runs:       fmt.Sprintf("%d kills", r.kills),
			violations: r.slow,
			figure:     fmt.Sprintf("kill to next writer in: %s (held at kill: %d)", distributionOf(r.times), r.confirmed),
		})
	}
	return rows
}

// printSummary writes the table and returns the total of violations.
func printSummary(w io.Writer, rows []row) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "test\truns/kills\tviolations\tfigure")
	total := 0
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.test, r.runs, r.violations, r.figure)
		total += r.violations
	}
	tw.Flush()
	return total
}

// countsOf lists counts by name, the largest first: "EROFS 40,
// ErrReadOnly 12" ("none" for none). Every part tallies outcomes this way.
func countsOf(m map[string]int) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
