package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// A lockCase is one kind of lock holder killed, with or without other
// processes adding (taking the read lock) at the same time.
type lockCase struct {
	name   string
	mode   string // "write": inside Reset; "read": inside AddBatch
	adders bool
}

var lockCases = []lockCase{
	{"dead writer (Reset), alone", "write", false},
	{"dead writer (Reset), adders running", "write", true},
	{"dead reader (AddBatch), alone", "read", false},
	{"dead reader (AddBatch), adders running", "read", true},
}

// slowRecovery is the longest a next writer may wait for a dead holder's
// lock before it counts as a violation: the promise is about 10 ms, and the
// defect this guards against stalled writers for seconds.
const slowRecovery = time.Second

// stuckRecovery ends the run: a writer still out after it is a lock that
// does not recover.
const stuckRecovery = 30 * time.Second

type lockResult struct {
	c         lockCase
	kills     int
	confirmed int // kills for which Inspect showed the lock held just before
	slow      int
	times     []time.Duration
}

// holdBatch is the keys a read holder adds under one acquisition: enough to
// stay inside AddBatch for milliseconds.
const holdBatch = 20000

// runLockHolder keeps the big filter's lock held, for writing (Reset) or
// reading (AddBatch), with its PID in the phase word while inside the call,
// until it is killed.
func runLockHolder(dir, mode string) error {
	_, phase, err := openWords(phasePath(dir), 1)
	if err != nil {
		return err
	}
	_, big, err := openLockArena(dir, "big", lockBig)
	if err != nil {
		return err
	}
	keys := make([][]byte, holdBatch)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "hold-%d-%d", os.Getpid(), i)
	}
	pid := uint64(os.Getpid())
	for {
		atomic.StoreUint64(&phase[0], pid)
		if mode == "write" {
			err = big.Reset()
		} else {
			err = big.AddBatch(keys, nil)
		}
		atomic.StoreUint64(&phase[0], 0)
		if err != nil {
			return err
		}
	}
}

// runLockAdder adds small batches to the big filter (read lock) until killed.
func runLockAdder(dir string) error {
	_, big, err := openLockArena(dir, "big", lockBig)
	if err != nil {
		return err
	}
	keys := make([][]byte, 64)
	for i := 0; ; i++ {
		for j := range keys {
			keys[j] = fmt.Appendf(keys[j][:0], "add-%d-%d", os.Getpid(), i*len(keys)+j)
		}
		if err := big.AddBatch(keys, nil); err != nil {
			return err
		}
	}
}

// runLockRecovery kills holders of each case kills times, alternating the
// builds, and times each kill to the supervisor's next Clear of the small
// filter returning: the next writer in.
func runLockRecovery(dir string, builds []build, kills int) ([]lockResult, error) {
	_, probe, err := openLockArena(dir, "probe", lockProbe)
	if err != nil {
		return nil, err
	}
	defer probe.Close()
	if _, big, err := openLockArena(dir, "big", lockBig); err != nil {
		return nil, err
	} else {
		big.Close()
	}
	_, phase, err := openWords(phasePath(dir), 1)
	if err != nil {
		return nil, err
	}
	var results []lockResult
	for _, lc := range lockCases {
		r := lockResult{c: lc}
		var adders []*child
		if lc.adders {
			for _, b := range builds {
				c, err := startChild(b, nil, nil, "lockadder", "-dir", dir)
				if err != nil {
					return nil, err
				}
				adders = append(adders, c)
			}
		}
		for i := 0; i < kills; i++ {
			d, held, err := killHolder(dir, builds[i%len(builds)], lc.mode, phase, probe)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", lc.name, err)
			}
			r.kills++
			r.times = append(r.times, d)
			if held {
				r.confirmed++
			}
			if d > slowRecovery {
				r.slow++
			}
		}
		for _, c := range adders {
			if err := c.kill(); err != nil {
				return nil, fmt.Errorf("%s: adder: %w", lc.name, err)
			}
		}
		results = append(results, r)
	}
	return results, nil
}

// killHolder starts a holder, waits until it is inside its call, kills it
// and times the next writer in. held reports whether Inspect saw the lock
// taken (for writing, or by some reader) just before the kill.
func killHolder(dir string, b build, mode string, phase []uint64, probe *sketch.CountingBloom) (time.Duration, bool, error) {
	atomic.StoreUint64(&phase[0], 0)
	h, err := startChild(b, nil, nil, "lockholder", "-dir", dir, "-mode", mode)
	if err != nil {
		return 0, false, err
	}
	pid := uint64(h.cmd.Process.Pid)
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadUint64(&phase[0]) != pid {
		if exited, err := h.exited(); exited {
			return 0, false, fmt.Errorf("holder (%s) ended: %v", b.backend, err)
		}
		if time.Now().After(deadline) {
			h.kill()
			return 0, false, fmt.Errorf("holder (%s) never got inside its call", b.backend)
		}
		time.Sleep(50 * time.Microsecond)
	}
	time.Sleep(rand.N(500 * time.Microsecond))
	// Inside the call is not yet inside the lock (a writer may still be
	// waiting for readers), so look until Inspect shows it taken, for a
	// while: a kill that was not of a holder still counts, and the table
	// says how many were.
	held := false
	for try := 0; try < 100 && !held; try++ {
		fi, err := sketch.Inspect(lockArenaPath(dir))
		held = err == nil && atomic.LoadUint64(&phase[0]) == pid &&
			(mode == "write" && fi.Lock.Writer && fi.Lock.WriterAlive || mode == "read" && fi.Lock.Readers > 0)
	}

	killed := time.Now()
	if err := h.cmd.Process.Kill(); err != nil {
		return 0, false, err
	}
	in := make(chan error, 1)
	go func() { in <- probe.Reset() }()
	select {
	case err := <-in:
		d := time.Since(killed)
		if err != nil {
			return 0, false, fmt.Errorf("next writer: %w", err)
		}
		h.wait()
		return d, held, nil
	case <-time.After(stuckRecovery):
		return 0, false, fmt.Errorf("next writer still waiting %s after killing a %s holder (%s)", stuckRecovery, mode, b.backend)
	}
}
