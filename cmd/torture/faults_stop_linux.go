package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/shmsketch/sketch"
)

// A stopped holder is alive: its descriptors, and with them the OFD lock
// on its token byte, stay open, so a waiter that asks the kernel whether
// the holder lives hears yes. The waiter sleeps on the lock word for
// lockPatience (10 ms), asks, and sleeps again, for as long as it takes:
// the write lock has no timeout (ErrTimeout is only for files being
// created, and a window's clear), so it must neither take the lock nor
// give up.

// stopHold is how long a holder stays stopped with a waiter at the lock.
func stopHold(short bool) time.Duration {
	if short {
		return 200 * time.Millisecond
	}
	return 1500 * time.Millisecond
}

func stopRounds(short bool) int {
	if short {
		return 2
	}
	return 8
}

// The words of a stop, shared by the supervisor, the holder and the
// waiter: the holder's PID while it is inside its call; that the holder
// was resumed, and when (Unix ns) its call returned after that; the
// waiter's PID once it has opened the arena; the supervisor's go; the
// waiter's PID again just before its call that needs the write lock; and
// when (Unix ns) it got in.
const (
	holdInside = iota
	holdResumed
	holdOut
	waitReady
	waitGo
	waitCalling
	waitIn
	stopWords
)

func stopPath(dir string) string { return filepath.Join(dir, "stop.words") }

// runStopFault stops lock holders of both builds, each case in turn, with
// a waiter of the other build, and times SIGCONT to the waiter in.
func runStopFault(s setting) (row, error) {
	dir := filepath.Join(s.dir, "stop")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return row{}, err
	}
	a, big, err := openLockArena(dir, "big", lockBig)
	if err != nil {
		return row{}, err
	}
	big.Close()
	a.Close()
	_, words, err := openWords(stopPath(dir), stopWords)
	if err != nil {
		return row{}, err
	}
	hold := stopHold(s.short)
	var rounds []stopRound
	for _, c := range stopCases {
		for i := 0; i < stopRounds(s.short); i++ {
			h, w := s.builds[i%len(s.builds)], s.builds[(i+1)%len(s.builds)]
			r, err := stopOnce(dir, c, h, w, hold, words)
			if err != nil {
				return row{}, fmt.Errorf("%s (%s): %w", c.name, h.backend, err)
			}
			rounds = append(rounds, r)
		}
	}
	return stopRow(rounds, hold), nil
}

// stopOnce starts a holder and a waiter, stops the holder inside the lock,
// lets the waiter call, holds the stop, and resumes the holder.
func stopOnce(dir string, c stopCase, hb, wb build, hold time.Duration, words []uint64) (stopRound, error) {
	r := stopRound{c: c, holder: hb.backend, waiter: wb.backend}
	mode := c.mode
	for i := range words {
		atomic.StoreUint64(&words[i], 0)
	}
	h, err := startChild(hb, nil, nil, "fault", "holder", "-dir", dir, "-mode", mode, fmt.Sprintf("-loop=%t", c.loop))
	if err != nil {
		return r, err
	}
	defer h.kill()
	w, err := startChild(wb, nil, nil, "fault", "waiter", "-dir", dir)
	if err != nil {
		return r, err
	}
	defer w.kill()
	hpid, wpid := uint64(h.cmd.Process.Pid), uint64(w.cmd.Process.Pid)
	if err := await(func() bool { return atomic.LoadUint64(&words[holdInside]) == hpid }, h, "holder inside its call"); err != nil {
		return r, err
	}
	if err := await(func() bool { return atomic.LoadUint64(&words[waitReady]) == wpid }, w, "waiter ready"); err != nil {
		return r, err
	}

	if err := stopInsideLock(dir, mode, h, words, &r); err != nil {
		return r, err
	}

	atomic.StoreUint64(&words[waitGo], 1)
	if err := await(func() bool { return atomic.LoadUint64(&words[waitCalling]) == wpid }, w, "waiter calling"); err != nil {
		return r, err
	}
	end := time.Now().Add(hold)
	for time.Now().Before(end) && atomic.LoadUint64(&words[waitIn]) == 0 {
		if exited, _ := w.exited(); exited {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if atomic.LoadUint64(&words[waitIn]) != 0 {
		r.inWhileStopped = true
	}
	if !lockTaken(dir, mode) {
		r.lostLock = true
	}

	atomic.StoreUint64(&words[holdResumed], 1)
	resumed := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return r, err
	}
	select {
	case w.err = <-w.done:
		w.gone = true
		if w.err != nil {
			r.waiterErr = fmt.Sprintf("waiter (%s): %v", wb.backend, w.err)
			return r, nil
		}
	case <-time.After(stuckRecovery):
		return r, fmt.Errorf("waiter (%s) still out %s after SIGCONT", wb.backend, stuckRecovery)
	}
	in := int64(atomic.LoadUint64(&words[waitIn]))
	r.resumed = max(0, time.Duration(in-resumed.UnixNano()))
	if out := int64(atomic.LoadUint64(&words[holdOut])); out != 0 {
		r.finished = max(0, time.Duration(out-resumed.UnixNano()))
	}
	return r, nil
}

// stopInsideLock stops the holder h until a stop catches it holding the
// lock: between two calls it holds nothing. It counts the stops in r.
func stopInsideLock(dir, mode string, h *child, words []uint64, r *stopRound) error {
	hpid := uint64(h.cmd.Process.Pid)
	for {
		if r.stops == 1000 {
			return fmt.Errorf("1000 stops never caught the holder inside the lock")
		}
		if err := await(func() bool { return lockTaken(dir, mode) }, h, "lock taken"); err != nil {
			return err
		}
		r.stops++
		if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		if err := await(func() bool { return stopped(h.cmd.Process.Pid) }, h, "holder stopped"); err != nil {
			return err
		}
		if atomic.LoadUint64(&words[holdInside]) == hpid && lockTaken(dir, mode) {
			return nil
		}
		h.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// lockTaken reports whether Inspect shows the lock arena's lock held the
// way a holder of mode holds it.
func lockTaken(dir, mode string) bool {
	fi, err := sketch.Inspect(lockArenaPath(dir))
	if err != nil {
		return false
	}
	if mode == "write" {
		return fi.Lock.Writer && fi.Lock.WriterAlive
	}
	return fi.Lock.Readers > 0
}

// await polls ok until it holds, failing when c ends first or after 10 s.
func await(ok func() bool, c *child, what string) error {
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if exited, err := c.exited(); exited {
			return fmt.Errorf("%s: the process ended: %v", what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within 10s", what)
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// stopped reports whether every thread of process pid is stopped: a
// thread still running could leave the lock after the check.
func stopped(pid int) bool {
	task := "/proc/" + strconv.Itoa(pid) + "/task"
	ts, err := os.ReadDir(task)
	if err != nil || len(ts) == 0 {
		return false
	}
	for _, t := range ts {
		b, err := os.ReadFile(filepath.Join(task, t.Name(), "stat"))
		if err != nil {
			return false
		}
		// The state letter follows the command name, which is in
		// parentheses and may hold anything.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' && b[i+2] != 't' {
			return false
		}
	}
	return true
}

// waiterRole is the waiter: it opens the lock arena's small filter, says
// it is ready, waits for the go, and clears the filter (the write lock),
// storing when it got in.
func waiterRole(args []string) (*faultReport, error) {
	fl := flag.NewFlagSet("waiter", flag.ExitOnError)
	dir := fl.String("dir", "", "")
	fl.Parse(args)
	_, words, err := openWords(stopPath(*dir), stopWords)
	if err != nil {
		return nil, err
	}
	a, probe, err := openLockArena(*dir, "probe", lockProbe)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	defer probe.Close()
	pid := uint64(os.Getpid())
	atomic.StoreUint64(&words[waitReady], pid)
	for atomic.LoadUint64(&words[waitGo]) == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	atomic.StoreUint64(&words[waitCalling], pid)
	err = probe.Reset()
	atomic.StoreUint64(&words[waitIn], uint64(time.Now().UnixNano()))
	if err != nil {
		return nil, err
	}
	return newFaultReport(), nil
}

// holderRole holds the lock arena's big filter's lock, for writing (Reset)
// or reading (AddBatch), with its PID in the holdInside word while inside
// the call. Once resumed it stores when its call returned and leaves,
// unless it loops on.
func holderRole(args []string) (*faultReport, error) {
	fl := flag.NewFlagSet("holder", flag.ExitOnError)
	dir := fl.String("dir", "", "")
	mode := fl.String("mode", "write", "")
	loop := fl.Bool("loop", false, "")
	fl.Parse(args)
	_, words, err := openWords(stopPath(*dir), stopWords)
	if err != nil {
		return nil, err
	}
	a, big, err := openLockArena(*dir, "big", lockBig)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	defer big.Close()
	keys := make([][]byte, holdBatch)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "hold-%d-%d", os.Getpid(), i)
	}
	pid := uint64(os.Getpid())
	for {
		atomic.StoreUint64(&words[holdInside], pid)
		if *mode == "write" {
			err = big.Reset()
		} else {
			err = big.AddBatch(keys, nil)
		}
		atomic.StoreUint64(&words[holdInside], 0)
		if err != nil {
			return nil, err
		}
		if atomic.LoadUint64(&words[holdResumed]) != 0 {
			atomic.CompareAndSwapUint64(&words[holdOut], 0, uint64(time.Now().UnixNano()))
			if !*loop {
				return newFaultReport(), nil
			}
		}
	}
}
