package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// stormConfig is the shape of one kill storm.
type stormConfig struct {
	workers  int           // worker slots, alternating between the builds
	duration time.Duration // how long workers are killed
	gap      time.Duration // kills come every gap/2 to 3*gap/2
	seed     uint64
}

// stormResult is what the supervisor and the checkers saw.
type stormResult struct {
	cfg          stormConfig
	kills        int
	failures     int // workers that ended by themselves (a call failed)
	firstFailure string
	calls        uint64              // calls that returned, over every worker's record
	removes      uint64              // counting Bloom removes among them (and those killed in flight)
	merges       [plainFields]uint64 // merges among them, per plain field
	checkers     []checkerResult
	elapsed      time.Duration
	rotations    [2]uint64 // the Rotate windows' periods at the end (Count-Min, Bloom): their turns
	clockTurns   [2]uint64 // the clock windows' periods turned from the start to the end
	gcra         gcraResult
	counters     countersResult
}

// runStorm starts cfg.workers workers of both builds on the storm's files and
// a checker of each build, kills a random worker every few tens of
// milliseconds and restarts it in its slot, then stops the workers and
// collects the checkers' final passes.
func runStorm(dir string, builds []build, cfg stormConfig) (stormResult, error) {
	res := stormResult{cfg: cfg}
	for slot := 0; slot < cfg.workers; slot++ {
		r, err := openRecord(recordPath(dir, slot))
		if err != nil {
			return res, err
		}
		r.close()
	}
	s, err := openStorm(dir) // created here, so workers and checkers attach
	if err != nil {
		return res, err
	}
	defer s.close()
	if err := writeControl(dir, s, cfg.seed); err != nil {
		return res, err
	}
	control, err := openRecord(recordPath(dir, -1))
	if err != nil {
		return res, err
	}
	defer control.close()
	clockFrom := [2]uint64{s.cmc.Current(), s.bwc.Current()}
	stopClaims, claimsDone := make(chan struct{}), make(chan struct{})
	go func() {
		claimClock(control, s, stopClaims)
		close(claimsDone)
	}()
	defer func() { // the checkers' final passes need the claims too
		close(stopClaims)
		<-claimsDone
	}()

	rng := rand.New(rand.NewPCG(cfg.seed, 2))
	workers, err := startPool(builds, cfg.workers, func(slot int) []string {
		return []string{"worker", "-dir", dir, "-slot", strconv.Itoa(slot), "-seed", strconv.FormatUint(rng.Uint64(), 10)}
	})
	if err != nil {
		return res, err
	}
	checkers, err := startStormCheckers(dir, builds, cfg.workers)
	if err != nil {
		return res, err
	}
	began := time.Now()
	if err := killStorm(workers, cfg, rng, began, &res); err != nil {
		return res, err
	}
	workers.stop()
	res.failures, res.firstFailure = workers.failures, workers.firstFailure
	res.elapsed = time.Since(began)

	if res.checkers, err = finishStormCheckers(checkers); err != nil {
		return res, err
	}
	if err := sumStormRecords(dir, &res); err != nil {
		return res, err
	}
	res.gcra = checkGCRA(dir, s.gl, cfg.workers)
	res.counters = checkCounters(dir, s.ctr, cfg.workers)
	res.rotations = [2]uint64{s.cmw.Current(), s.bw.Current()}
	res.clockTurns = [2]uint64{s.cmc.Current() - clockFrom[0], s.bwc.Current() - clockFrom[1]}
	return res, nil
}

// A stormChecker is a checker child of the storm: it checks until its
// standard input closes, then prints its result.
type stormChecker struct {
	c     *child
	stdin io.WriteCloser
	out   bytes.Buffer
}

// startStormCheckers starts a checker of each build on the storm's files.
func startStormCheckers(dir string, builds []build, workers int) ([]*stormChecker, error) {
	checkers := make([]*stormChecker, len(builds))
	for i, b := range builds {
		r := &stormChecker{}
		pr, pw := io.Pipe()
		r.stdin = pw
		c, err := startChild(b, pr, &r.out, "checker", "-dir", dir, "-slots", strconv.Itoa(workers))
		if err != nil {
			return nil, err
		}
		r.c = c
		checkers[i] = r
	}
	return checkers, nil
}

// killStorm kills a random worker every gap/2 to 3*gap/2 and restarts it
// in its slot, until cfg.duration after began.
func killStorm(workers *workerPool, cfg stormConfig, rng *rand.Rand, began time.Time, res *stormResult) error {
	for time.Since(began) < cfg.duration {
		time.Sleep(cfg.gap/2 + rand.N(cfg.gap))
		if err := workers.restartExited(); err != nil {
			return err
		}
		slot := rng.IntN(len(workers.workers))
		workers.kill(slot)
		res.kills++
		if err := workers.start(slot); err != nil {
			return err
		}
	}
	return nil
}

// finishStormCheckers closes the checkers' standard input, which has them
// make their final pass, and reads their results.
func finishStormCheckers(checkers []*stormChecker) ([]checkerResult, error) {
	var out []checkerResult
	for _, r := range checkers {
		r.stdin.Close()
		if err := r.c.wait(); err != nil {
			return out, fmt.Errorf("checker: %w", err)
		}
		var cr checkerResult
		if err := json.Unmarshal(r.out.Bytes(), &cr); err != nil {
			return out, fmt.Errorf("checker result %q: %w", r.out.String(), err)
		}
		out = append(out, cr)
	}
	return out, nil
}

// sumStormRecords adds up the workers' records: the calls that returned,
// the removes and the merges.
func sumStormRecords(dir string, res *stormResult) error {
	for slot := 0; slot < res.cfg.workers; slot++ {
		r, err := openRecord(recordPath(dir, slot))
		if err != nil {
			return err
		}
		res.calls += r.calls()
		res.removes += r.removes()
		for f := range res.merges {
			res.merges[f] += r.merges(f)
		}
		r.close()
	}
	return nil
}
