package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// The phases of the arena part that kill workers; the interrupted-create
// rounds are in arenainterrupt.go.
const (
	phaseRace = "race"
	phaseFill = "fill"
)

// phaseConfig is the shape of one phase.
type phaseConfig struct {
	phase   string
	workers int
	gap     time.Duration // kills come every gap/2 to 3*gap/2
	// every is how long each arena of the racing phase is worked on; the
	// fill phase moves on once every worker asked for every name.
	every time.Duration
	seed  uint64
}

// phaseResult is what the supervisor counted and the checkers found.
type phaseResult struct {
	cfg          phaseConfig
	plan         *arenaPlan
	arenas       int // arenas the workers were sent to
	kills        int
	inOpen       int // kills that landed inside an open of a name
	inCreate     int // ... of a name the worker's List did not show just before: a create, or a racing one
	failures     int // workers that ended by themselves
	firstFailure string
	calls        uint64        // opens that returned with their adds, over every record
	opened       uint64        // opens of a name's spec that returned a structure
	incompatible uint64        // conflicting opens that returned ErrIncompatible
	conflictOpen uint64        // conflicting opens that returned a structure (violations)
	wantRefused  uint64        // opens of a name's own spec refused with ErrIncompatible (violations)
	full         uint64        // opens refused with ErrArenaFull
	slowest      time.Duration // the longest open of a name that returned
	elapsed      time.Duration
	checkers     []arenaCheckResult
}

// slowOpen is the longest an open of a name may take: one that waits for
// the lock of a creator killed holding it gets it within about 10 ms.
const slowOpen = time.Second

// runArenaPhase starts the workers of both builds on the phase's arenas,
// moves them from arena to arena, kills a worker every few tens of
// milliseconds (half of the kills aimed at a worker inside an open of a
// name it has not seen listed, when one is found within a few
// milliseconds) and restarts it, then kills them all and runs a checker of
// each build.
func runArenaPhase(dir string, builds []build, cfg phaseConfig, plan *arenaPlan) (phaseResult, error) {
	res := phaseResult{cfg: cfg, plan: plan}
	if err := writePlan(planPath(dir, cfg.phase), plan); err != nil {
		return res, err
	}
	recs := make([]*arenaRecord, cfg.workers)
	for slot := range recs {
		r, err := openArenaRecord(arenaRecordPath(dir, cfg.phase, slot), plan)
		if err != nil {
			return res, err
		}
		defer r.close()
		recs[slot] = r
	}
	ctlMem, ctl, err := openWords(arenaCtlPath(dir, cfg.phase), ctlWords)
	if err != nil {
		return res, err
	}
	defer unmap(ctlMem)

	rng := rand.New(rand.NewPCG(cfg.seed, 13))
	workers, err := startPool(builds, cfg.workers, func(slot int) []string {
		return []string{"arena", "worker", "-dir", dir,
			"-phase", cfg.phase, "-slot", strconv.Itoa(slot), "-seed", strconv.FormatUint(rng.Uint64(), 10)}
	})
	if err != nil {
		return res, err
	}

	checkers, err := startArenaCheckers(dir, cfg.phase, builds, cfg.workers)
	if err != nil {
		return res, err
	}
	p := &phaseRun{res: &res, recs: recs, ctl: ctl}
	began := time.Now()
	p.arenaBegan = began
	atomic.StoreUint64(&ctl[ctlArena], 1)
	res.arenas = 1
	for p.advance() {
		time.Sleep(cfg.gap/2 + rand.N(cfg.gap))
		if err := p.killOne(workers, rng); err != nil {
			return res, err
		}
		if err := checkers.send(p.quiet()); err != nil {
			return res, err
		}
		if err := checkers.collect(false); err != nil {
			return res, err
		}
	}
	workers.stop()
	res.failures, res.firstFailure = workers.failures, workers.firstFailure
	res.elapsed = time.Since(began)
	p.sumRecords()
	res.checkers, err = checkers.finish(res.arenas)
	return res, err
}

// A phaseRun is a phase while the supervisor runs it.
type phaseRun struct {
	res        *phaseResult
	recs       []*arenaRecord
	ctl        []uint64  // the control words: ctlArena is the workers' current arena, from 1
	arenaBegan time.Time // when the workers were sent to the current arena
}

// quiet is the first arena some worker may still be on: every one below
// it is left for good (a restarted worker goes to the current one), so its
// records are final and it can be checked.
func (p *phaseRun) quiet() int {
	q := p.res.arenas - 1
	for _, r := range p.recs {
		if a := int(r.head(awArena)) - 1; a >= 0 {
			q = min(q, a)
		}
	}
	return q
}

// advance moves the workers to the next arena when this one is done, and
// reports false after the last.
func (p *phaseRun) advance() bool {
	res, cfg := p.res, p.res.cfg
	k := res.arenas - 1
	done := time.Since(p.arenaBegan) >= cfg.every
	if cfg.phase == phaseFill { // every is then a bound, for a stuck fill
		all := true
		for _, r := range p.recs {
			all = all && r.head(awDone) == uint64(k+1)
		}
		done = done || all
	}
	if !done {
		return true
	}
	if res.arenas == len(res.plan.Arenas) {
		return false
	}
	res.arenas++
	p.arenaBegan = time.Now()
	atomic.StoreUint64(&p.ctl[ctlArena], uint64(res.arenas))
	return true
}

// killOne restarts the workers that exited, kills one (half the time one
// found inside a create), counts where the kill landed and restarts it.
func (p *phaseRun) killOne(workers *workerPool, rng *rand.Rand) error {
	if err := workers.restartExited(); err != nil {
		return err
	}
	slot := rng.IntN(len(workers.workers))
	if rng.IntN(2) == 0 {
		slot = aimAtCreate(p.recs, slot, 5*time.Millisecond)
	}
	workers.kill(slot)
	p.res.kills++
	if v := p.recs[slot].head(awInflight); v&inflightPresent != 0 {
		p.res.inOpen++
		if v&inflightCreate != 0 {
			p.res.inCreate++
		}
	}
	return workers.start(slot)
}

// sumRecords adds up the workers' records into the result.
func (p *phaseRun) sumRecords() {
	res, plan := p.res, p.res.plan
	for _, r := range p.recs {
		res.calls += r.head(awCalls)
		res.slowest = max(res.slowest, time.Duration(r.head(awSlowest)))
		for k := range plan.Arenas {
			for i := range plan.names(k) {
				res.opened += r.load(k, i, anOpened)
				res.incompatible += r.load(k, i, anIncompatible)
				res.conflictOpen += r.load(k, i, anConflictOpen)
				res.wantRefused += r.load(k, i, anWantRefused)
				res.full += r.load(k, i, anFull)
			}
		}
	}
}

// aimAtCreate looks, for at most patience, for a worker inside an open of
// a name it has not seen listed, and returns it; else fallback.
func aimAtCreate(recs []*arenaRecord, fallback int, patience time.Duration) int {
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		for slot, r := range recs {
			if r.head(awInflight)&inflightCreate != 0 {
				return slot
			}
		}
		time.Sleep(20 * time.Microsecond)
	}
	return fallback
}

// arenaCheckers are a checker of each build, checking the phase's arenas
// as the workers leave them; an arena both have checked is removed, so that
// the phase holds only a few arena files at a time.
type arenaCheckers struct {
	dir, phase string
	builds     []build
	procs      []*child
	in         []*os.File
	replies    chan arenaReply
	pending    map[int]int // arena: checkers still to answer
	sent       int         // arenas 0..sent-1 have been sent
	results    []arenaCheckResult
	err        error
}

type arenaReply struct {
	checker, arena int
	res            arenaCheckResult
	err            error
}

func startArenaCheckers(dir, phase string, builds []build, slots int) (*arenaCheckers, error) {
	cs := &arenaCheckers{dir: dir, phase: phase, builds: builds, replies: make(chan arenaReply, 64),
		pending: map[int]int{}, results: make([]arenaCheckResult, len(builds))}
	for i, b := range builds {
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		c, err := startChild(b, inR, outW, "arena", "check", "-dir", dir, "-phase", phase, "-slots", strconv.Itoa(slots))
		inR.Close()
		outW.Close()
		if err != nil {
			return nil, err
		}
		cs.procs, cs.in = append(cs.procs, c), append(cs.in, inW)
		cs.results[i].Backend = b.backend
		go func() {
			defer outR.Close()
			sc := bufio.NewScanner(outR)
			for sc.Scan() {
				var r arenaCheckResult
				err := json.Unmarshal(sc.Bytes(), &r)
				cs.replies <- arenaReply{checker: i, res: r, err: err}
			}
			cs.replies <- arenaReply{checker: i, arena: -1}
		}()
	}
	return cs, nil
}

// send asks both checkers to check every arena below upTo not yet sent.
// Each checker answers in order, so the oldest pending arena is the one
// an answer is for.
func (cs *arenaCheckers) send(upTo int) error {
	for ; cs.sent < upTo; cs.sent++ {
		for _, in := range cs.in {
			if _, err := fmt.Fprintln(in, cs.sent); err != nil {
				return err
			}
		}
		cs.pending[cs.sent] = len(cs.in)
	}
	return nil
}

// collect takes the answers that have come, and removes the arenas both
// checkers are done with; wait blocks until every checker has ended.
func (cs *arenaCheckers) collect(wait bool) error {
	next := make([]int, len(cs.in)) // per checker, the next arena it answers
	for i := range next {
		next[i] = cs.answered(i)
	}
	ended := 0
	for {
		var r arenaReply
		if wait {
			if ended == len(cs.in) {
				return cs.err
			}
			r = <-cs.replies
		} else {
			select {
			case r = <-cs.replies:
			default:
				return cs.err
			}
		}
		if r.arena < 0 {
			ended++
			continue
		}
		if r.err != nil && cs.err == nil {
			cs.err = fmt.Errorf("%s checker (%s): %w", cs.phase, cs.builds[r.checker].backend, r.err)
		}
		cs.results[r.checker].add(r.res)
		cs.results[r.checker].answered++
		k := next[r.checker]
		next[r.checker]++
		if cs.pending[k]--; cs.pending[k] == 0 {
			delete(cs.pending, k)
			os.Remove(arenaFilePath(cs.dir, cs.phase, k))
		}
	}
}

func (cs *arenaCheckers) answered(i int) int { return cs.results[i].answered }

// finish sends the remaining arenas, waits for every answer and for the
// checkers to end.
func (cs *arenaCheckers) finish(arenas int) ([]arenaCheckResult, error) {
	err := cs.send(arenas)
	for _, in := range cs.in {
		in.Close()
	}
	if cerr := cs.collect(true); err == nil {
		err = cerr
	}
	for i, c := range cs.procs {
		if werr := c.wait(); err == nil && werr != nil {
			err = fmt.Errorf("%s checker (%s): %w", cs.phase, cs.builds[i].backend, werr)
		}
	}
	return cs.results, err
}
