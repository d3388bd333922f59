package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// Process identities of the shared runs (a plan's who).
const (
	whoArm64 = iota
	whoCgo
	whoPurego
	whoArm
)

// runArchShared runs the shared arena twice: every process to its end,
// then with the arm64 process killed and restarted.
func runArchShared(s setting) ([]row, error) {
	tests := []string{
		"shared arena: arm64 (qemu), cgo and purego add at once; counts exact, no false negative",
		"32-bit arm (qemu) shares the arena with the 64-bit processes",
		"shared arena: arm64 (qemu) killed with SIGKILL and restarted; nothing that returned lost",
		"lock of a killed arm64 (qemu) process: next native writer in",
		"liveness token of an arm64 (qemu) process: its real start time",
	}
	arm64, why := findCross(s.cross, "arm64")
	if why != "" {
		var rows []row
		for _, t := range tests {
			rows = append(rows, cannotRun(t, why))
		}
		return rows, nil
	}
	arm, whyArm := findCross(s.cross, "arm")
	natives := map[int]runner{whoCgo: nativeRunner(s.builds[1]), whoPurego: nativeRunner(s.builds[0])}

	together := archDuration(s.short, 3*time.Second, 15*time.Second)
	rows, err := runTogether(filepath.Join(s.dir, "shared"), tests[:2], together, arm64, arm, whyArm, natives)
	if err != nil {
		return nil, err
	}
	kills := 4
	if !s.short {
		kills = 12
	}
	killRows, err := runArchKills(filepath.Join(s.dir, "kills"), tests[2:], kills, s.seed, arm64, natives)
	if err != nil {
		return nil, err
	}
	return append(rows, killRows...), nil
}

// runTogether starts every process on a new arena for d, turns the
// windows three times meanwhile, and has each architecture check the
// result.
func runTogether(dir string, tests []string, d time.Duration, arm64, arm runner, whyArm string, natives map[int]runner) ([]row, error) {
	procs := map[int]runner{whoArm64: arm64, whoCgo: natives[whoCgo], whoPurego: natives[whoPurego]}
	if whyArm == "" {
		procs[whoArm] = arm
	}
	var whos []int
	for who := range procs {
		whos = append(whos, who)
	}
	f, err := createShared(dir, whos)
	if err != nil {
		return nil, err
	}
	defer f.close()
	children := map[int]*child{}
	for who, r := range procs {
		c, err := r.start(nil, nil, "arch", "adder", "-dir", dir, "-who", strconv.Itoa(who), "-for", d.String())
		if err != nil {
			return nil, err
		}
		children[who] = c
	}
	for i := 0; i < 3; i++ {
		time.Sleep(d / 4)
		if err := f.cmw.Rotate(); err != nil {
			return nil, err
		}
		if err := f.bw.Rotate(); err != nil {
			return nil, err
		}
	}
	failed := map[int]string{}
	var plan archPlanFile
	for _, who := range []int{whoArm64, whoCgo, whoPurego, whoArm} {
		c, ok := children[who]
		if !ok {
			continue
		}
		if err := c.wait(); err != nil {
			failed[who] = fmt.Sprintf("%s adder: %v", procs[who].name, err)
		}
		mem, w, err := readRecord(dir, who)
		if err != nil {
			return nil, err
		}
		plan.Procs = append(plan.Procs, archProcess{Who: who, Steps: atomic.LoadUint64(&w[arSteps])})
		unmap(mem)
	}
	if err := writePlan(dir, plan); err != nil {
		return nil, err
	}
	checkers := []runner{arm64, natives[whoCgo], natives[whoPurego]}
	if whyArm == "" {
		checkers = append(checkers, arm)
	}
	results, err := runCheckers(dir, checkers)
	if err != nil {
		return nil, err
	}

	var steps []string
	var total uint64
	for _, p := range plan.Procs {
		steps = append(steps, fmt.Sprintf("%s %d", procs[p.Who].name, p.Steps))
		total += p.Steps
	}
	wide, armOwn := results, []archCheckResult(nil)
	if whyArm == "" {
		wide, armOwn = results[:3], results[3:]
	}
	v, fig := checkFigure(wide)
	main := row{test: tests[0], runs: fmt.Sprintf("%d steps", total), violations: v,
		figure: fmt.Sprintf("%s; steps %s", fig, strings.Join(steps, ", "))}
	for who, msg := range failed {
		if who != whoArm {
			main.violations++
			main.figure += "; " + msg
		}
	}
	rows := []row{main}
	if whyArm != "" {
		return append(rows, cannotRun(tests[1], whyArm)), nil
	}
	v, fig = checkFigure(armOwn)
	armRow := row{test: tests[1], runs: fmt.Sprintf("%d steps", plan.Procs[len(plan.Procs)-1].Steps), violations: v,
		figure: "its adds are in the counts above; " + fig}
	if msg, ok := failed[whoArm]; ok {
		armRow.violations++
		armRow.figure += "; " + msg
	}
	return append(rows, armRow), nil
}

// killTiming is one kill of the arm64 process: how long the next writer
// took, and where the process was.
type killTiming struct {
	took    time.Duration
	inClear bool // killed while its phase word said it was inside a Clear
	held    bool // Inspect showed the write lock taken just before the kill
	pidMode bool // its token was asked by PID (the OFD bytes were blocked)
}

// tokenFinding is what one start of the arm64 process recorded of itself.
type tokenFinding struct {
	found      bool // a claimed record with its PID
	ofd        bool
	startRight bool   // the record's START is the process's real start time
	self       uint64 // the start time /proc/self/stat gave the process itself
	real       uint64 // its real start time, read natively
}

// runArchKills runs the natives for the whole run and the arm64 process in
// instances, each killed with SIGKILL: alternately anywhere (a random time
// into it) and inside a Clear of hold, and alternately with its token in
// OFD mode and in PID mode (the supervisor read-locks the token bytes
// before it opens). After each kill the supervisor times its own Clear of
// probe; a last instance runs to its end before the checkers.
func runArchKills(dir string, tests []string, kills int, seed uint64, arm64 runner, natives map[int]runner) ([]row, error) {
	rng := rand.New(rand.NewPCG(seed, 3))
	f, err := createShared(dir, []int{whoArm64, whoCgo, whoPurego})
	if err != nil {
		return nil, err
	}
	defer f.close()
	recMem, rec, err := readRecord(dir, whoArm64)
	if err != nil {
		return nil, err
	}
	defer unmap(recMem)

	perKill := 700 * time.Millisecond // qemu's start, some steps, the kill
	d := time.Duration(kills)*perKill + time.Second
	end := time.Now().Add(d)
	nat := map[int]*child{}
	for _, who := range []int{whoCgo, whoPurego} {
		c, err := natives[who].start(nil, nil, "arch", "adder", "-dir", dir, "-who", strconv.Itoa(who), "-for", d.String())
		if err != nil {
			return nil, err
		}
		nat[who] = c
	}
	startArm := func() (*child, error) {
		left := max(time.Until(end), time.Second)
		atomic.StoreUint64(&rec[arPID], 0)
		return arm64.start(nil, nil, "arch", "adder", "-dir", dir, "-who", "0", "-for", left.String(), "-hold", "24", "-rotate")
	}

	var timings []killTiming
	var tokens []tokenFinding
	var inFlight []uint64
	takenForDead, samples := 0, 0
	for i := 0; i < kills; i++ {
		k := killTiming{pidMode: i%2 == 1, inClear: i/2%2 == 1}
		var unblock func()
		if k.pidMode {
			if unblock, err = blockTokenBytes(sharedArenaPath(dir)); err != nil {
				return nil, err
			}
		}
		c, err := startArm()
		if err != nil {
			return nil, err
		}
		pid := c.cmd.Process.Pid
		err = waitFor(20*time.Second, c, func() bool { return atomic.LoadUint64(&rec[arPID]) == uint64(pid) })
		if unblock != nil {
			unblock()
		}
		if err != nil {
			return nil, fmt.Errorf("arm64 adder did not open the arena: %w", err)
		}
		tokens = append(tokens, findToken(dir, pid, rec))
		if k.inClear {
			if err := waitFor(20*time.Second, c, func() bool { return atomic.LoadUint64(&rec[arPhase]) == uint64(pid) }); err != nil {
				return nil, fmt.Errorf("arm64 adder never inside Clear: %w", err)
			}
			// Inside the call is not yet inside the lock: look until
			// Inspect shows it taken, and whether it calls the live
			// holder alive.
			for try, seen := 0, 0; try < 200 && seen < 10; try++ {
				fi, err := sketch.Inspect(sharedArenaPath(dir))
				if err != nil || atomic.LoadUint64(&rec[arPhase]) != uint64(pid) || !fi.Lock.Writer {
					continue
				}
				k.held = true
				seen++
				samples++
				if !fi.Lock.WriterAlive {
					takenForDead++
				}
			}
		} else {
			time.Sleep(100*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond))))
		}
		if exited, err := c.exited(); exited {
			return nil, fmt.Errorf("arm64 adder ended before its kill: %v", err)
		}
		killed := time.Now()
		if err := c.cmd.Process.Kill(); err != nil {
			return nil, err
		}
		in := make(chan error, 1)
		go func() { in <- f.probe.Clear() }()
		select {
		case err := <-in:
			k.took = time.Since(killed)
			if err != nil {
				return nil, fmt.Errorf("next writer: %w", err)
			}
		case <-time.After(stuckRecovery):
			return nil, fmt.Errorf("next writer still waiting %s after killing the arm64 process", stuckRecovery)
		}
		c.wait()
		inFlight = append(inFlight, atomic.LoadUint64(&rec[arSteps]))
		timings = append(timings, k)
	}
	last, err := startArm()
	if err != nil {
		return nil, err
	}
	failures := map[string]error{"arm64 (last, not killed)": last.wait()}
	for who, c := range nat {
		failures[natives[who].name] = c.wait()
	}

	plan := archPlanFile{Killed: true}
	plan.Procs = append(plan.Procs, archProcess{Who: whoArm64, Steps: atomic.LoadUint64(&rec[arSteps]), InFlight: inFlight})
	for _, who := range []int{whoCgo, whoPurego} {
		mem, w, err := readRecord(dir, who)
		if err != nil {
			return nil, err
		}
		plan.Procs = append(plan.Procs, archProcess{Who: who, Steps: atomic.LoadUint64(&w[arSteps])})
		unmap(mem)
	}
	if err := writePlan(dir, plan); err != nil {
		return nil, err
	}
	results, err := runCheckers(dir, []runner{arm64, natives[whoCgo], natives[whoPurego]})
	if err != nil {
		return nil, err
	}
	return killRows(tests, plan, results, failures, timings, tokens, takenForDead, samples), nil
}

// waitFor polls cond until it holds, the child ends, or d passes.
func waitFor(d time.Duration, c *child, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if exited, err := c.exited(); exited {
			return fmt.Errorf("ended: %v", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", d)
		}
		time.Sleep(200 * time.Microsecond)
	}
	return nil
}

// findToken looks for the record the arm64 process with pid claimed, and
// compares its START with the process's start time read natively from
// /proc, and with what the process itself read.
func findToken(dir string, pid int, rec []uint64) tokenFinding {
	t := tokenFinding{real: procStart(taskStatPath(pid)), self: atomic.LoadUint64(&rec[arSelfStart])}
	recs, err := readTokens(sharedArenaPath(dir))
	if err != nil {
		return t
	}
	for _, r := range recs {
		if r.pid == pid {
			t.found, t.ofd = true, r.ofd
			t.startRight = r.genMet && r.start == t.real && t.real != 0
		}
	}
	return t
}
