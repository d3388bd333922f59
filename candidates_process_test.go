//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The candidate table across processes: children of both backends feed
// one table, and children killed in the middle of admissions leave
// nothing to repair.

// candidatesProcessConfig is the sketch the children share.
var candidatesProcessConfig = CountMinConfig{Rows: 4, Width: 1 << 16, Candidates: 40} // 2 MiB: past L2, so the cgo build batches in C

var _ = role("topadd", childTopAdd)

// childTopAdd adds its share (every 4th key from its index on) of the
// Zipf stream that envOps names, half of it one key at a time and half in
// batches.
func childTopAdd() error {
	keys, _ := zipfStream(1.1, 50_000, envInt(envOps), 11)
	if err := childBarrier(); err != nil {
		return err
	}
	c, err := OpenCountMin(Path(os.Getenv(envPath)), candidatesProcessConfig)
	if err != nil {
		return err
	}
	defer c.Close()
	var batch [][]byte
	for i := envInt(envChild); i < len(keys); i += 4 {
		if i%8 < 4 {
			if _, err := c.Add(keys[i]); err != nil {
				return err
			}
			continue
		}
		if batch = append(batch, keys[i]); len(batch) == 64 {
			if err := c.AddBatch(batch, nil); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return c.AddBatch(batch, nil)
}

// envTopPrefix is the prefix of a toploop child's keys.
const envTopPrefix = "SKETCH_TEST_TOP_PREFIX"

var _ = role("toploop", childTopLoop)

// childTopLoop adds keys of a Zipf stream with many admissions (a small
// table, a flat stream) until it is killed.
func childTopLoop() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), CountMinConfig{})
	if err != nil {
		return err
	}
	seed := uint64(os.Getpid())
	z := rand.NewZipf(rand.New(rand.NewPCG(seed, seed)), 1.01, 1, 200_000)
	prefix := []byte(os.Getenv(envTopPrefix))
	var buf []byte
	for {
		buf = strconv.AppendUint(append(append(buf[:0], prefix...), 'k'), z.Uint64(), 16)
		if _, err := c.Add(buf); err != nil {
			return err
		}
	}
}

// TestCandidates_FourProcesses: two cgo and two pure-Go processes add one
// stream to one table; it lists what one process adding the whole stream
// lists, with estimates never below the truth.
func TestCandidates_FourProcesses(t *testing.T) {
	requireReexec(t)
	exe := bothBackends(t)
	const n = 200_000
	path := tempPath(t, "top")
	ctx := childContext(t)
	var specs []childSpec
	for i := range 4 {
		specs = append(specs, childSpec{exe: exe(i), name: fmt.Sprintf("child %d", i), role: "topadd",
			env: envs(envPath, path, envChild, i, envOps, n)})
	}
	hs := startGroup(t, ctx, specs)
	keys, truth := zipfStream(1.1, 50_000, n, 11)
	for _, h := range hs {
		h.wait(t)
	}
	if t.Failed() {
		t.FailNow()
	}
	c := mustOpen(t, path, CountMinConfig{})
	shared, err := c.Top(20)
	if err != nil {
		t.Fatal(err)
	}
	cfg := candidatesProcessConfig
	cfg.Seed = c.Seed()
	one := mustIn(t, OpenCountMin, Memory(), cfg)
	for _, k := range keys {
		one.Add(k)
	}
	alone, _ := one.Top(20)
	bound := c.ErrorBound()
	for i := range alone {
		// The same keys in the same order, unless two estimates are
		// within the error bound of each other.
		if shared[i].Key != alone[i].Key && diff(shared[i].Estimate, alone[i].Estimate) > bound {
			t.Errorf("rank %d: %s (%d) in the shared table, %s (%d) alone", i, shared[i].Key, shared[i].Estimate, alone[i].Key, alone[i].Estimate)
		}
	}
	for _, h := range shared {
		if h.Estimate < truth[h.Key] {
			t.Errorf("%s: estimate %d below its count %d", h.Key, h.Estimate, truth[h.Key])
		}
	}
	if r := recallOf(topKeys(shared), exactTop(truth, 10)); r != 1 {
		t.Errorf("recall of the top 10: %v", r)
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

func diff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestCandidates_KillAdders kills adders again and again while they
// admit keys: every table they leave checks whole (a way being written
// reads as empty), lists only keys whose estimates are their own, and
// takes new keys (the lock a killed admission held is recovered).
func TestCandidates_KillAdders(t *testing.T) {
	requireReexec(t)
	path := tempPath(t, "topkill")
	c0 := mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 16})
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		ctx := childContext(t)
		var hs []*helper
		for i := range 2 {
			// Each round's keys are new: they must be admitted, over the
			// louder keys of the rounds before, while the kills come.
			hs = append(hs, startHelper(t, ctx, "", fmt.Sprintf("toploop %d.%d", round, i), "toploop", envs(envPath, path, envTopPrefix, fmt.Sprint("r", round))))
		}
		// Kill once the children have added a while.
		for want := c0.Stats().Total + 20_000 + uint64(round)*30_000; c0.Stats().Total < want; {
			time.Sleep(time.Millisecond)
		}
		for _, h := range hs {
			if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range hs {
			<-h.done
			var ee *exec.ExitError
			if !errors.As(h.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("%s: %v, want killed by SIGKILL", h.name, h.err)
			}
		}
		c := mustOpen(t, path, CountMinConfig{})
		if err := c.top.check(); err != nil {
			t.Errorf("round %d: the table: %v", round, err)
		}
		if err := c.Check(); err != nil && !errors.Is(err, ErrTornAdd) {
			t.Errorf("round %d: Check: %v, want nil or ErrTornAdd", round, err)
		}
		listed, err := c.Top(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range listed {
			if got := c.EstimateString(h.Key); got != h.Estimate && got < h.Estimate {
				t.Errorf("round %d: %s listed at %d, estimated %d", round, h.Key, h.Estimate, got)
			}
		}
		// A key louder than any goes in: ways left empty are taken, and
		// the lock is free or recovered.
		loud := fmt.Sprintf("loud-%d", round)
		for range int(c.Stats().Total/4) + 1000 {
			c.AddString(loud)
		}
		top, _ := c.Top(1)
		if len(top) != 1 || top[0].Key != loud {
			t.Errorf("round %d: Top(1) = %+v, want %s", round, top, loud)
		}
		st := c.Stats().Candidates
		t.Logf("round %d: %d admissions so far, %d ways held, total %d", round, st.Admissions, st.Held, c.Stats().Total)
		c.Close()
	}
	if st := c0.Stats().Candidates; st.Admissions < 50 {
		t.Errorf("only %d admissions: the kills did not meet admissions", st.Admissions)
	}
}

// TestCandidates_InheritedDescriptor: a sketch with a table opened from a
// descriptor this process was handed feeds and lists the table the
// path's handle sees (it joins the file's lock for its admissions).
func TestCandidates_InheritedDescriptor(t *testing.T) {
	path := tempPath(t, "fd")
	c := mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 8})
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := OpenCountMin(Inherited(f.Fd()), CountMinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for range 20 {
		d.AddString("via-fd")
	}
	hs, err := c.Top(0)
	if err != nil || len(hs) != 1 || hs[0].Key != "via-fd" || hs[0].Estimate != 20 {
		t.Errorf("Top through the path's handle = %+v, %v", hs, err)
	}
}
