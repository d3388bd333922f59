package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// The shared arena of the arch part: processes of several architectures
// add to one Count-Min sketch, Bloom filter, counting Bloom filter and two
// windows in it, each walking its plan (arch_plan.go). The Count-Min
// sketches are wide enough that the few hundred keys collide nowhere (a
// checker finds the rare key that does and leaves it out), so estimates
// must be exact, between the adds that returned and those plus the steps
// in flight at kills. The windows turn only on Rotate, fewer than Keep
// times in a run, so every add stays covered. hold is a large counting
// Bloom filter the arm64 process clears now and then, to be killed inside
// the write lock; probe a tiny one the supervisor clears to time the next
// writer in.
var (
	sharedCountMin       = sketch.CountMinConfig{Rows: 4, Width: 1 << 16}
	sharedBloom          = sketch.BloomConfig{Capacity: 1 << 14, FPRate: 0.001}
	sharedCountingBloom  = sketch.CountingBloomConfig{Capacity: 1 << 14, FPRate: 0.01}
	sharedWindow         = sketch.Window{Keep: 16}
	sharedWindowCountMin = sketch.CountMinConfig{Rows: 4, Width: 1 << 13}
	sharedWindowBloom    = sketch.BloomConfig{Capacity: 1 << 12, FPRate: 0.001}
	sharedHold           = sketch.CountingBloomConfig{Capacity: 1 << 18, FPRate: 0.01}
	sharedProbe          = sketch.CountingBloomConfig{Capacity: 64, FPRate: 0.01}
)

const (
	sharedArenaSize = 32 << 20
	archControlKeys = 64 // keys nobody adds, which a checker asks too
)

func sharedArenaPath(dir string) string { return filepath.Join(dir, "shared.arena") }

// sharedFiles are the arena's structures open in one process.
type sharedFiles struct {
	a           *sketch.Arena
	cms         *sketch.CountMin
	bf          *sketch.Bloom
	cbf         *sketch.CountingBloom
	cmw         *sketch.CountMinWindow
	bw          *sketch.BloomWindow
	hold, probe *sketch.CountingBloom
}

// openShared opens the arena and every structure in it (closing the arena
// closes them all).
func openShared(dir string, opts ...sketch.Option) (*sharedFiles, error) {
	a, err := sketch.OpenArena(sketch.Path(sharedArenaPath(dir)), sketch.ArenaConfig{Size: sharedArenaSize}, opts...)
	if err != nil {
		return nil, err
	}
	f := &sharedFiles{a: a}
	var errs [7]error
	f.cms, errs[0] = sketch.OpenCountMin(a.Place("cm"), sharedCountMin)
	f.bf, errs[1] = sketch.OpenBloom(a.Place("bloom"), sharedBloom)
	f.cbf, errs[2] = sketch.OpenCountingBloom(a.Place("cbf"), sharedCountingBloom)
	f.cmw, errs[3] = sketch.OpenCountMinWindow(a.Place("cmw"), sketch.CountMinWindowConfig{Window: sharedWindow, CountMin: sharedWindowCountMin})
	f.bw, errs[4] = sketch.OpenBloomWindow(a.Place("bw"), sketch.BloomWindowConfig{Window: sharedWindow, Bloom: sharedWindowBloom})
	f.hold, errs[5] = sketch.OpenCountingBloom(a.Place("hold"), sharedHold)
	f.probe, errs[6] = sketch.OpenCountingBloom(a.Place("probe"), sharedProbe)
	if err := errors.Join(errs[:]...); err != nil {
		a.Close()
		return nil, err
	}
	return f, nil
}

func (f *sharedFiles) close() { f.a.Close() }

// step does step s of the plan whose keys are keys.
func (f *sharedFiles) step(keys [][]byte, s uint64) error {
	op, lo, hi := archStep(s)
	batch := keys[lo:hi]
	var err error
	switch op {
	case opCountMinBatch:
		err = f.cms.AddBatch(batch, nil)
	case opCountMinSingle:
		for u := lo; u < hi && err == nil; u++ {
			_, err = f.cms.AddN(keys[u], archWeight(u))
		}
	case opBloomBatch:
		err = f.bf.AddBatch(batch, nil)
	case opCountingBloom:
		err = f.cbf.AddBatch(batch, nil)
	case opCountMinWindow:
		err = f.cmw.AddBatch(batch, nil)
	case opBloomWindow:
		err = f.bw.AddBatch(batch, nil)
	}
	return err
}

// A process's record in the shared run: a few words, mapped shared, that
// survive its SIGKILL.
const (
	arSteps     = iota // steps that returned: the next one to do
	arPhase            // the PID while inside a Clear of hold
	arPID              // the PID, stored once the arena is open
	arSelfStart        // the start time /proc/self/stat gives
	arTaskStart        // the start time /proc/self/task/PID/stat gives
	arWords
)

func archRecordPath(dir string, who int) string {
	return filepath.Join(dir, fmt.Sprintf("arch.record.%d", who))
}

// roleArchAdder walks process -who's plan on the arena in -dir from the
// step its record names, for -for, raising the record after each step
// returns. With -hold N it clears hold after every N steps, with its PID
// in the record's phase word meanwhile; with -rotate it first turns both
// windows.
func roleArchAdder(fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "")
	who := fs.Int("who", 0, "")
	dur := fs.Duration("for", time.Second, "")
	hold := fs.Uint64("hold", 0, "")
	rotate := fs.Bool("rotate", false, "")
	fs.Parse(args)
	_, w, err := openWords(archRecordPath(*dir, *who), arWords)
	if err != nil {
		return err
	}
	f, err := openShared(*dir, sketch.WithoutCreate())
	if err != nil {
		return err
	}
	defer f.close()
	if *rotate {
		if err := errors.Join(f.cmw.Rotate(), f.bw.Rotate()); err != nil {
			return err
		}
	}
	pid := uint64(os.Getpid())
	atomic.StoreUint64(&w[arSelfStart], procStart("/proc/self/stat"))
	atomic.StoreUint64(&w[arTaskStart], procStart(taskStatPath(os.Getpid())))
	atomic.StoreUint64(&w[arPID], pid)
	keys := make([][]byte, archPlanKeys)
	for u := range keys {
		keys[u] = archKey(*who, u)
	}
	deadline := time.Now().Add(*dur)
	for s := atomic.LoadUint64(&w[arSteps]); time.Now().Before(deadline); s++ {
		if err := f.step(keys, s); err != nil {
			return fmt.Errorf("step %d: %w", s, err)
		}
		atomic.StoreUint64(&w[arSteps], s+1)
		if *hold > 0 && s%*hold == 0 {
			atomic.StoreUint64(&w[arPhase], pid)
			err := f.hold.Reset()
			atomic.StoreUint64(&w[arPhase], 0)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// archPlanFile is what the supervisor tells the checkers: every process's
// steps, and whether some were killed (then Check may find torn adds).
type archPlanFile struct {
	Procs  []archProcess
	Killed bool
}

func archPlanPath(dir string) string { return filepath.Join(dir, "arch.plan.json") }

// archCheckResult is what one checker found.
type archCheckResult struct {
	Arch, Backend string
	Keys          int
	Answers       int
	Low           int // answers below the adds that returned: lost adds
	High          int // Count-Min answers above every add begun, for keys without collisions
	Collide       int // keys left out of the high check (Count-Min, window)
	ControlAbsent int // keys nobody added that read absent (and zero) in every structure
	Periods       uint64
	Check         string // CountMin.Check's answer
	Bad           int    // findings of Check, Inspect or the windows not allowed
	First         string
}

// roleArchCheck asks every key of the plan in -dir of every structure and
// compares with the plan: no answer below what returned, no Count-Min
// answer above what began (keys that collide left out), Check clean (torn
// adds allowed after kills), Inspect clean, no lock left held.
func roleArchCheck(fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "")
	fs.Parse(args)
	b, err := os.ReadFile(archPlanPath(*dir))
	if err != nil {
		return err
	}
	var plan archPlanFile
	if err := json.Unmarshal(b, &plan); err != nil {
		return err
	}
	f, err := openShared(*dir, sketch.WithoutCreate(), sketch.WithReadOnly())
	if err != nil {
		return err
	}
	defer f.close()
	fi, err := sketch.Inspect(sharedArenaPath(*dir))
	if err != nil {
		return err
	}
	res := archCheckResult{Arch: runtime.GOARCH, Backend: sketch.Backend}
	if err := res.checkAnswers(f, plan.Procs, fi.Seed); err != nil {
		return err
	}
	res.checkControl(f)
	res.Periods = f.cmw.Current()
	if p := uint64(sharedWindow.Keep); res.Periods >= p || f.bw.Current() >= p {
		res.problem(&res.Bad, "windows in periods %d and %d: turned Keep times or more, so adds fell out", res.Periods, f.bw.Current())
	}
	switch err := f.cms.Check(); {
	case err == nil:
		res.Check = "clean"
	case plan.Killed && errors.Is(err, sketch.ErrTornAdd):
		res.Check = "ErrTornAdd (an add cut short by a kill)"
	default:
		res.Check = strings.ReplaceAll(err.Error(), *dir+string(filepath.Separator), "")
		res.problem(&res.Bad, "Count-Min Check: %s", res.Check)
	}
	if fi.Lock.Writer || fi.Lock.DeadReaderSlots > 0 {
		res.problem(&res.Bad, "lock after the run: writer %v, %d dead reader slots", fi.Lock.Writer, fi.Lock.DeadReaderSlots)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// problem counts a finding in *n and keeps the first.
func (res *archCheckResult) problem(n *int, format string, a ...any) {
	*n++
	if res.First == "" {
		res.First = fmt.Sprintf(format, a...)
	}
}

// checkAnswers asks every key of the processes' plans of every structure:
// no answer below what returned, no Count-Min answer above what began
// (keys that collide in the arena's seed left out).
func (res *archCheckResult) checkAnswers(f *sharedFiles, procs []archProcess, seed uint64) error {
	low, high := archExpect(procs)
	var keys []string
	for k := range low {
		keys = append(keys, k)
	}
	collideCM, err := collidingKeys(keys, sharedCountMin, seed)
	if err != nil {
		return err
	}
	collideW, err := collidingKeys(keys, sharedWindowCountMin, seed)
	if err != nil {
		return err
	}
	res.Collide = len(collideCM) + len(collideW)
	res.Keys = len(keys)
	between := func(what, k string, got, lo, hi uint64, collides bool) {
		switch {
		case got < lo:
			res.problem(&res.Low, "%s(%q) = %d, want >= %d", what, k, got, lo)
		case got > hi && !collides:
			res.problem(&res.High, "%s(%q) = %d, want <= %d (no collision)", what, k, got, hi)
		}
	}
	for _, k := range keys {
		kb := []byte(k)
		lo, hi := low[k], high[k]
		res.Answers += 5
		between("Count-Min Estimate", k, f.cms.Estimate(kb), lo.countMin, hi.countMin, collideCM[k])
		between("Count-Min window Estimate", k, f.cmw.Estimate(kb), lo.window, hi.window, collideW[k])
		if got, want := f.cbf.Estimate(kb), min(lo.countingBloom, 15); uint64(got) < want {
			res.problem(&res.Low, "counting Bloom Estimate(%q) = %d, want >= %d", k, got, want)
		}
		if lo.bloom && !f.bf.Contains(kb) {
			res.problem(&res.Low, "Bloom Check(%q) = false after an add returned", k)
		}
		if lo.bloomWindow && !f.bw.Contains(kb) {
			res.problem(&res.Low, "Bloom window Check(%q) = false after an add returned", k)
		}
	}
	return nil
}

// checkControl asks the keys nobody adds: they must read absent (and
// zero) nearly always, or the answers above would prove nothing.
func (res *archCheckResult) checkControl(f *sharedFiles) {
	absent := 0
	for i := 0; i < archControlKeys; i++ {
		kb := fmt.Appendf(nil, "arch-never-%03d", i)
		if f.cms.Estimate(kb) == 0 && f.cmw.Estimate(kb) == 0 && !f.bf.Contains(kb) && !f.bw.Contains(kb) && !f.cbf.Contains(kb) {
			absent++
		}
	}
	res.ControlAbsent = absent
	if absent < archControlKeys/2 {
		res.problem(&res.Bad, "only %d of %d keys nobody added read absent everywhere", absent, archControlKeys)
	}
}

// collidingKeys returns the keys whose counters, in a Count-Min sketch of
// cfg's shape and this seed, all hold some other key too: their estimates
// may exceed their own adds.
func collidingKeys(keys []string, cfg sketch.CountMinConfig, seed uint64) (map[string]bool, error) {
	cfg.Seed = seed
	c, err := sketch.OpenCountMin(sketch.Memory(), cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for _, k := range keys {
		if _, err := c.AddString(k); err != nil {
			return nil, err
		}
	}
	out := map[string]bool{}
	for _, k := range keys {
		if c.EstimateString(k) > 1 {
			out[k] = true
		}
	}
	return out, nil
}

// createShared makes the arena of a shared run in dir and a zero record
// for each process.
func createShared(dir string, whos []int) (*sharedFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, who := range whos {
		mem, _, err := openWords(archRecordPath(dir, who), arWords)
		if err != nil {
			return nil, err
		}
		unmap(mem)
	}
	return openShared(dir)
}

// readRecord maps process who's record.
func readRecord(dir string, who int) ([]byte, []uint64, error) {
	return openWords(archRecordPath(dir, who), arWords)
}

// recordedSteps is how many steps process who recorded as returned.
func recordedSteps(dir string, who int) (uint64, error) {
	mem, w, err := readRecord(dir, who)
	if err != nil {
		return 0, err
	}
	defer unmap(mem)
	return atomic.LoadUint64(&w[arSteps]), nil
}

// writeArchPlan writes the plan the checkers read.
func writeArchPlan(dir string, plan archPlanFile) error {
	b, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	return os.WriteFile(archPlanPath(dir), b, 0o644)
}

// runCheckers runs the check with every runner at once and returns what
// each found, in the runners' order.
func runCheckers(dir string, checkers []runner) ([]archCheckResult, error) {
	return outputsAtOnce(checkers, func(r runner) ([]string, func([]byte) (archCheckResult, error)) {
		return []string{"arch", "check", "-dir", dir}, func(b []byte) (archCheckResult, error) { return decodeJSON[archCheckResult](b, nil) }
	})
}

// checkFigure sums checkers' results into violations and a figure.
func checkFigure(results []archCheckResult) (violations int, figure string) {
	var names, first string
	answers, collide, keys, absent, control := 0, 0, 0, 0, 0
	var check string
	var periods uint64
	for i, r := range results {
		if i > 0 {
			names += "/"
		}
		names += r.Arch + "-" + r.Backend
		violations += r.Low + r.High + r.Bad
		answers += r.Answers
		collide, keys = r.Collide, r.Keys
		absent += r.ControlAbsent
		control += archControlKeys
		check, periods = r.Check, r.Periods
		if first == "" && r.First != "" {
			first = r.Arch + "-" + r.Backend + ": " + r.First
		}
	}
	return violations, fmt.Sprintf("checkers %s: %d answers about %d keys, Count-Min estimates exact up to steps in flight at kills (keys colliding left out of that upper bound: %d), Check %s, windows in period %d; keys nobody added absent everywhere: %d/%d%s",
		names, answers, keys, collide, check, periods, absent, control, note(first))
}
