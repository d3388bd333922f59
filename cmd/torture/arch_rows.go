package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// killRows turns the kill run into its rows: the counts after the kills,
// the lock's recovery, and the liveness tokens the arm64 process recorded.
func killRows(tests []string, plan archPlanFile, results []archCheckResult, failures map[string]error,
	timings []killTiming, tokens []tokenFinding, takenForDead, samples int) []row {
	v, fig := checkFigure(results)
	var steps []string
	var total uint64
	for _, p := range plan.Procs {
		steps = append(steps, fmt.Sprint(p.Steps))
		total += p.Steps
	}
	var names []string
	for name := range failures {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := failures[name]; err != nil {
			v++
			fig += fmt.Sprintf("; %s: %v", name, err)
		}
	}
	counts := row{test: tests[0], runs: fmt.Sprintf("%d kills", len(timings)), violations: v,
		figure: fmt.Sprintf("%s; steps arm64/cgo/purego %s (%d in flight at kills)", fig, strings.Join(steps, "/"), len(plan.Procs[0].InFlight))}

	var times []time.Duration
	slow, inClear, held, pidMode := 0, 0, 0, 0
	for _, k := range timings {
		times = append(times, k.took)
		if k.took > slowRecovery {
			slow++
		}
		if k.inClear {
			inClear++
		}
		if k.held {
			held++
		}
		if k.pidMode {
			pidMode++
		}
	}
	lock := row{test: tests[1], runs: fmt.Sprintf("%d kills", len(timings)), violations: slow + takenForDead,
		figure: fmt.Sprintf("kill to next writer in: %s; %d kills inside Reset (write lock held at %d), %d in PID mode; live holder taken for dead in %d of %d Inspect samples",
			distributionOf(times), inClear, held, pidMode, takenForDead, samples)}

	records, pidMode, right, faked, wrongPID, missing := 0, 0, 0, 0, 0, 0
	example := ""
	for _, t := range tokens {
		if t.records == 0 {
			missing++
		}
		records += t.records
		pidMode += t.pidMode
		right += t.startRight
		wrongPID += t.wrongPID
		if t.self != t.real {
			faked++
			if example == "" {
				example = fmt.Sprintf(" (%d instead of %d clock ticks since boot)", t.self, t.real)
			}
		}
	}
	tok := row{test: tests[2], runs: fmt.Sprintf("%d starts", len(tokens)), violations: wrongPID + missing,
		figure: fmt.Sprintf("%d records (%d in PID mode, asked by PID and START), START = the start time in /proc/PID/task/PID/stat in %d; /proc/self/stat under qemu said another start time in %d of %d starts%s",
			records, pidMode, right, faked, len(tokens), example)}
	return []row{counts, lock, tok}
}
