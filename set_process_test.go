//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Exact sets shared by processes: exactly one of many processes adding
// one new id is told it is new, and processes killed in the middle of
// their adds and removes leave no wrong answer behind.

const (
	envSetOut   = "SKETCH_TEST_SET_OUT"   // setonce: where the child writes which ids it was told were new
	envSetState = "SKETCH_TEST_SET_STATE" // setstorm: the child's log of its keys' states
)

// setOnceIDs is how many ids the processes of TestSet_EightProcessesOneNewID
// add, each of them all.
const setOnceIDs = 10_000

var setOnceCfg = SetConfig{Capacity: setOnceIDs, KeyBytes: 16}

// TestSet_EightProcessesOneNewID: eight processes of both backends add the
// same 10,000 ids in the same order at once; each id was told new to
// exactly one of them, and the set holds each once.
func TestSet_EightProcessesOneNewID(t *testing.T) {
	requireReexec(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "set")
	s := mustOpenSet(t, Path(path), setOnceCfg)
	const procs = 8
	runAdders(t, procs, "setonce", func(i int) []string {
		return envs(envPath, path, envSetOut, filepath.Join(dir, fmt.Sprint("new-", i)))
	})
	checkOnce(t, dir, procs, setOnceIDs)
	if s.Len() != setOnceIDs {
		t.Errorf("Len = %d, want %d", s.Len(), setOnceIDs)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

var setWindowOnceCfg = SetWindowConfig{Window: Window{Period: time.Hour, Keep: 2}, Set: setOnceCfg}

// TestSetWindow_EightProcessesOneNewID is TestSet_EightProcessesOneNewID
// for a window on the clock: replay detection, each id told new to
// exactly one of eight processes.
func TestSetWindow_EightProcessesOneNewID(t *testing.T) {
	requireReexec(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "setwin")
	w := mustOpenSetWindow(t, Path(path), setWindowOnceCfg)
	const procs = 8
	runAdders(t, procs, "setwinonce", func(i int) []string {
		return envs(envPath, path, envSetOut, filepath.Join(dir, fmt.Sprint("new-", i)))
	})
	checkOnce(t, dir, procs, setOnceIDs)
	if n := w.Len(); n != setOnceIDs {
		t.Errorf("Len = %d, want %d", n, setOnceIDs)
	}
	if err := w.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

var _ = role("setwinonce", func() error {
	w, err := OpenSetWindow(Path(os.Getenv(envPath)), setWindowOnceCfg)
	if err != nil {
		return err
	}
	defer w.Close()
	return childOnce(func(id []byte) (bool, error) { return w.Add(id) })
})

// checkOnce reads the procs children's answers in dir (a byte an id, 1 for
// new) and fails t for each id not told new exactly once.
func checkOnce(t *testing.T, dir string, procs, ids int) {
	t.Helper()
	told := make([]int, ids)
	for i := range procs {
		out, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("new-", i)))
		if err != nil || len(out) != ids {
			t.Fatalf("child %d's answers: %d bytes, %v", i, len(out), err)
		}
		for id, b := range out {
			told[id] += int(b)
		}
	}
	wrong := 0
	for id, n := range told {
		if n != 1 {
			if wrong++; wrong <= 5 {
				t.Errorf("id %d was told new to %d processes, want exactly 1", id, n)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d ids not told new exactly once", wrong, ids)
	}
}

func onceID(i int) []byte { return []byte(fmt.Sprintf("id-%d", i)) }

var _ = role("setonce", func() error {
	s, err := OpenSet(Path(os.Getenv(envPath)), setOnceCfg)
	if err != nil {
		return err
	}
	defer s.Close()
	return childOnce(func(id []byte) (bool, error) { return s.Add(id) })
})

// childOnce adds every id in order, after the group's barrier, and writes
// which it was told were new.
func childOnce(add func(id []byte) (bool, error)) error {
	if err := childBarrier(); err != nil {
		return err
	}
	out := make([]byte, setOnceIDs)
	for i := range setOnceIDs {
		added, err := add(onceID(i))
		if err != nil {
			return err
		}
		if added {
			out[i] = 1
		}
	}
	return os.WriteFile(os.Getenv(envSetOut), out, 0o600)
}

// The kill storm: each child owns a range of keys and logs, in a shared
// mapping that outlives it, each key's state before and after each
// operation; its log is the reference for its keys.
const (
	stormKeys  = 400 // a child's keys; the log holds a word each
	stormOps   = 500 // the log's word that counts the child's operations, in all its lives
	stormCut   = 501 // the log's word that counts the operations cut by a kill, found by the next life
	stormProcs = 4

	stormAbsent   = 0
	stormPresent  = 1
	stormAdding   = 2 // an Add in flight
	stormRemoving = 3 // a Remove in flight
)

// Room for every key, and churn enough that compactions run often.
var stormCfg = SetConfig{Capacity: stormProcs * stormKeys, KeyBytes: 16}

func stormKey(child, k int) []byte { return []byte(fmt.Sprintf("s%d-%d", child, k)) }

// TestSet_KillStorm: four processes of both backends add and remove keys
// of their own ranges, checking each answer against their logs, while
// the parent kills one with SIGKILL every few milliseconds and starts it
// again. No child ever got a wrong answer, and at the end every key's
// presence is its log's (either, for a key whose operation was in flight
// at the kill), Len counts them, and Check passes.
func TestSet_KillStorm(t *testing.T) {
	requireReexec(t)
	exe := bothBackends(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "set")
	s := mustOpenSet(t, Path(path), stormCfg)
	logs := make([][]uint64, stormProcs)
	for c := range stormProcs {
		var err error
		if logs[c], err = mapProgress(filepath.Join(dir, fmt.Sprint("log-", c)), true); err != nil {
			t.Fatal(err)
		}
	}
	ctx := childContext(t)
	start := func(c int) *helper {
		return startHelper(t, ctx, exe(c), fmt.Sprintf("storm %d", c), "setstorm",
			envs(envPath, path, envChild, c, envSetState, filepath.Join(dir, fmt.Sprint("log-", c))))
	}
	hs := make([]*helper, stormProcs)
	for c := range hs {
		hs[c] = start(c)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const kills = 40
	// Each kill lands after the child's next few hundred operations, so
	// that it is in the middle of its run, not of its start.
	for range kills {
		c := r.IntN(stormProcs)
		stormWait(t, hs[c], &logs[c][stormOps], uint64(1+r.IntN(300)))
		stormKill(t, hs[c])
		hs[c] = start(c)
	}
	for c, h := range hs {
		stormWait(t, h, &logs[c][stormOps], 100)
		stormKill(t, h)
	}
	want, inFlight, cut := uint64(0), 0, uint64(0)
	for c := range stormProcs {
		cut += logs[c][stormCut]
	}
	for c := range stormProcs {
		for k := range stormKeys {
			st, got := logs[c][k], s.Contains(stormKey(c, k))
			switch {
			case st == stormAdding || st == stormRemoving:
				inFlight++
				if got {
					want++
				}
			case got != (st == stormPresent):
				t.Errorf("Contains(%s) = %v, the child's log says %d", stormKey(c, k), got, st)
			case got:
				want++
			}
		}
	}
	t.Logf("%d kills, %d of them in an operation; at the end %d keys held, %d in flight", kills+stormProcs, cut+uint64(inFlight), want, inFlight)
	if err := s.Check(); err != nil {
		t.Errorf("Check after the storm: %v", err)
	}
	if _, err := s.AddString("after"); err != nil {
		t.Fatalf("Add after the storm: %v", err)
	}
	if got := s.Len(); got != want+1 {
		t.Errorf("Len after the next Add = %d, want %d", got, want+1)
	}
	if st := s.Stats(); st.Live != want+1 {
		t.Errorf("Stats.Live = %d, want %d", st.Live, want+1)
	}
}

// stormWait waits until the child's operation count has moved by n.
func stormWait(t *testing.T, h *helper, ops *uint64, n uint64) {
	t.Helper()
	from := atomic.LoadUint64(ops)
	deadline := time.Now().Add(patience)
	for atomic.LoadUint64(ops) < from+n {
		select {
		case <-h.done:
			t.Fatalf("%s exited (%v): %s", h.name, h.err, h.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s made %d operations in %v", h.name, atomic.LoadUint64(ops)-from, patience)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// stormKill kills a storm child, which must not have exited by itself
// (a wrong answer).
func stormKill(t *testing.T, h *helper) {
	t.Helper()
	h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done
	var ee *exec.ExitError
	if errors.As(h.err, &ee) && ee.ExitCode() != -1 || h.err == nil {
		t.Fatalf("%s exited by itself (%v): %s", h.name, h.err, h.stderr.String())
	}
}

var _ = role("setstorm", childSetStorm)

// childSetStorm resolves the keys its log has in flight (a previous life
// was killed in their operation: the set says which way it went), then
// adds and removes its keys at random, logging each before and after,
// until it is killed; it exits with an error at the first answer its log
// contradicts.
func childSetStorm() error {
	s, err := OpenSet(Path(os.Getenv(envPath)), stormCfg)
	if err != nil {
		return err
	}
	log, err := mapProgress(os.Getenv(envSetState), false)
	if err != nil {
		return err
	}
	child := envInt(envChild)
	for k := range stormKeys {
		if log[k] == stormAdding || log[k] == stormRemoving {
			log[stormCut]++
			log[k] = stormAbsent
			if s.Contains(stormKey(child, k)) {
				log[k] = stormPresent
			}
		}
	}
	r := rand.New(rand.NewPCG(uint64(child), uint64(time.Now().UnixNano())))
	for {
		k := r.IntN(stormKeys)
		key, was := stormKey(child, k), log[k] == stormPresent
		if got := s.Contains(key); got != was {
			return fmt.Errorf("Contains(%s) = %v, the log says %v", key, got, was)
		}
		if r.IntN(2) == 0 {
			log[k] = stormAdding
			added, err := s.Add(key)
			if err != nil || added == was {
				return fmt.Errorf("Add(%s) = %v, %v; the log says present %v", key, added, err, was)
			}
			log[k] = stormPresent
		} else {
			log[k] = stormRemoving
			removed, err := s.Remove(key)
			if err != nil || removed != was {
				return fmt.Errorf("Remove(%s) = %v, %v; the log says present %v", key, removed, err, was)
			}
			log[k] = stormAbsent
		}
		atomic.AddUint64(&log[stormOps], 1)
	}
}
