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

	together := 15 * time.Second
	if s.short {
		together = 2 * time.Second
	}
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
	plan, failed, err := addTogether(dir, procs, d, f)
	if err != nil {
		return nil, err
	}
	if err := writeArchPlan(dir, plan); err != nil {
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
	return togetherRows(tests, procs, plan, results, failed, whyArm), nil
}

// addTogether starts an adder of every process for d, turns the windows
// three times meanwhile, and returns the plan of what each recorded, with
// the adders that failed.
func addTogether(dir string, procs map[int]runner, d time.Duration, f *sharedFiles) (archPlanFile, map[int]string, error) {
	var plan archPlanFile
	children := map[int]*child{}
	for who, r := range procs {
		c, err := r.start(nil, nil, "arch", "adder", "-dir", dir, "-who", strconv.Itoa(who), "-for", d.String())
		if err != nil {
			return plan, nil, err
		}
		children[who] = c
	}
	for i := 0; i < 3; i++ {
		time.Sleep(d / 4)
		if err := f.cmw.Rotate(); err != nil {
			return plan, nil, err
		}
		if err := f.bw.Rotate(); err != nil {
			return plan, nil, err
		}
	}
	failed := map[int]string{}
	for _, who := range []int{whoArm64, whoCgo, whoPurego, whoArm} {
		c, ok := children[who]
		if !ok {
			continue
		}
		if err := c.wait(); err != nil {
			failed[who] = fmt.Sprintf("%s adder: %v", procs[who].name, err)
		}
		steps, err := recordedSteps(dir, who)
		if err != nil {
			return plan, nil, err
		}
		plan.Procs = append(plan.Procs, archProcess{Who: who, Steps: steps})
	}
	return plan, failed, nil
}

// togetherRows are the rows of a run together: the 64-bit processes'
// checks, and the 32-bit arm process's own (or why it could not run).
func togetherRows(tests []string, procs map[int]runner, plan archPlanFile, results []archCheckResult, failed map[int]string, whyArm string) []row {
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
		return append(rows, cannotRun(tests[1], whyArm))
	}
	v, fig = checkFigure(armOwn)
	armRow := row{test: tests[1], runs: fmt.Sprintf("%d steps", plan.Procs[len(plan.Procs)-1].Steps), violations: v,
		figure: "its adds are in the counts above; " + fig}
	if msg, ok := failed[whoArm]; ok {
		armRow.violations++
		armRow.figure += "; " + msg
	}
	return append(rows, armRow)
}

// killTiming is one kill of the arm64 process: how long the next writer
// took, and where the process was.
type killTiming struct {
	took    time.Duration
	inClear bool // killed while its phase word said it was inside a Clear
	held    bool // Inspect showed the write lock taken just before the kill
	pidMode bool // its token was asked by PID (its OFD byte was blocked)
}

// tokenFinding is what the token records of one arm64 instance showed
// once it had opened the arena: its handle's record, and any a recovery
// of its held meanwhile (holdDead claims a dead holder's record).
type tokenFinding struct {
	records    int    // claimed records with its PID
	pidMode    int    // of them, without the OFD byte: asked by PID and START
	startRight int    // of them, with the real start time as START
	wrongPID   int    // PID-mode records of this claim with a wrong START: a live holder taken for dead
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
	kl := &armKiller{dir: dir, f: f, rec: rec, arm64: arm64, end: end, rng: rng, failures: map[string]error{}}
	for i := 0; i < kills; i++ {
		if err := kl.killOne(killTiming{pidMode: i%2 == 1, inClear: i/2%2 == 1}); err != nil {
			return nil, err
		}
	}
	last, err := kl.start()
	if err != nil {
		return nil, err
	}
	kl.failures["arm64 (last, not killed)"] = last.wait()
	for who, c := range nat {
		kl.failures[natives[who].name] = c.wait()
	}

	plan := archPlanFile{Killed: true}
	plan.Procs = append(plan.Procs, archProcess{Who: whoArm64, Steps: atomic.LoadUint64(&rec[arSteps]), InFlight: kl.inFlight})
	for _, who := range []int{whoCgo, whoPurego} {
		steps, err := recordedSteps(dir, who)
		if err != nil {
			return nil, err
		}
		plan.Procs = append(plan.Procs, archProcess{Who: who, Steps: steps})
	}
	if err := writeArchPlan(dir, plan); err != nil {
		return nil, err
	}
	results, err := runCheckers(dir, []runner{arm64, natives[whoCgo], natives[whoPurego]})
	if err != nil {
		return nil, err
	}
	return killRows(tests, plan, results, kl.failures, kl.timings, kl.tokens, kl.takenForDead, kl.samples), nil
}

// armKiller starts, watches and kills the arm64 instances of a kill run,
// and keeps what it saw.
type armKiller struct {
	dir   string
	f     *sharedFiles // the supervisor's: its probe times the next writer in
	rec   []uint64     // the arm64 process's record
	arm64 runner
	end   time.Time // the instances' common deadline
	rng   *rand.Rand

	timings      []killTiming
	tokens       []tokenFinding
	inFlight     []uint64         // the step each killed instance was at
	failures     map[string]error // instances that ended by themselves
	takenForDead int              // Inspect samples that called the live holder dead
	samples      int
}

// start starts an instance that walks the plan until the run's end (at
// least a second), clearing hold every 24 steps, after turning the windows.
func (kl *armKiller) start() (*child, error) {
	left := max(time.Until(kl.end), time.Second)
	atomic.StoreUint64(&kl.rec[arPID], 0)
	return kl.arm64.start(nil, nil, "arch", "adder", "-dir", kl.dir, "-who", strconv.Itoa(whoArm64),
		"-for", left.String(), "-hold", "24", "-rotate")
}

// killOne starts an instance (in PID mode: with the free token bytes
// read-locked until it has opened the arena), kills it (inside a Clear, or
// a random time into its adds) and times the supervisor's Clear of probe
// from the kill. An instance that ends by itself is a failure of the run.
func (kl *armKiller) killOne(k killTiming) error {
	var unblock func()
	var err error
	if k.pidMode {
		if unblock, err = blockTokenBytes(sharedArenaPath(kl.dir)); err != nil {
			return err
		}
	}
	c, err := kl.start()
	if err != nil {
		if unblock != nil {
			unblock()
		}
		return err
	}
	pid := uint64(c.cmd.Process.Pid)
	failed := func(what string, err error) error {
		c.kill()
		if exited, _ := c.exited(); exited && c.err != nil && !killedBySignal(c.err) {
			kl.failures[fmt.Sprintf("arm64 instance %d (%s)", len(kl.timings)+1, what)] = c.err
			return nil
		}
		return fmt.Errorf("arm64 instance %s: %w", what, err)
	}
	err = waitFor(20*time.Second, c, func() bool { return atomic.LoadUint64(&kl.rec[arPID]) == pid })
	if unblock != nil {
		unblock()
	}
	if err != nil {
		return failed("opening the arena", err)
	}
	t := findToken(kl.dir, int(pid), kl.rec)
	kl.tokens = append(kl.tokens, t)
	// A recovery running elsewhere may hold a free byte while the bytes
	// are blocked, and the instance may get that one: say what it got.
	k.pidMode = t.pidMode > 0
	if k.inClear {
		if err := waitFor(20*time.Second, c, func() bool { return atomic.LoadUint64(&kl.rec[arPhase]) == pid }); err != nil {
			return failed("waiting for a Clear", err)
		}
		// Inside the call is not yet inside the lock: look until Inspect
		// shows it taken, and ask it whether the live holder is alive.
		for try, seen := 0, 0; try < 200 && seen < 10; try++ {
			fi, err := sketch.Inspect(sharedArenaPath(kl.dir))
			if err != nil || atomic.LoadUint64(&kl.rec[arPhase]) != pid || !fi.Lock.Writer {
				continue
			}
			k.held = true
			seen++
			kl.samples++
			if !fi.Lock.WriterAlive {
				kl.takenForDead++
			}
		}
	} else {
		time.Sleep(100*time.Millisecond + time.Duration(kl.rng.Int64N(int64(300*time.Millisecond))))
	}
	if exited, _ := c.exited(); exited {
		return failed("before its kill", fmt.Errorf("ended: %v", c.err))
	}
	killed := time.Now()
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	in := make(chan error, 1)
	go func() { in <- kl.f.probe.Reset() }()
	select {
	case err := <-in:
		k.took = time.Since(killed)
		if err != nil {
			return fmt.Errorf("next writer: %w", err)
		}
	case <-time.After(stuckRecovery):
		return fmt.Errorf("next writer still waiting %s after killing the arm64 process", stuckRecovery)
	}
	c.wait()
	kl.inFlight = append(kl.inFlight, atomic.LoadUint64(&kl.rec[arSteps]))
	kl.timings = append(kl.timings, k)
	return nil
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

// findToken looks for the records the arm64 process with pid claimed, and
// compares their START with the process's start time read natively from
// /proc, and with what the process itself read.
func findToken(dir string, pid int, rec []uint64) tokenFinding {
	t := tokenFinding{real: procStart(taskStatPath(pid)), self: atomic.LoadUint64(&rec[arSelfStart])}
	recs, err := readTokens(sharedArenaPath(dir))
	if err != nil {
		return t
	}
	for _, r := range recs {
		if r.pid != pid {
			continue
		}
		t.records++
		right := r.genMet && r.start == t.real && t.real != 0
		if right {
			t.startRight++
		}
		if !r.ofd {
			t.pidMode++
			if r.genMet && !right {
				t.wrongPID++
			}
		}
	}
	return t
}
