//go:build linux

package sketch

// Counting Bloom filters shared by real processes, of both backends: adds
// from many processes, writers killed with SIGKILL while they hold the
// lock, and processes racing to create one file.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	envCBFFirst = "SKETCH_TEST_CBF_FIRST" // cbfadd: the child's first key
	envCBFCount = "SKETCH_TEST_CBF_COUNT" // cbfadd: how many keys it adds
	envCBFLoop  = "SKETCH_TEST_CBF_LOOP"  // cbfloop: "addmany" or "clear"
)

var cbfProcCfg = CountingBloomConfig{Capacity: 200_000, FPRate: 0.01}

// otherBackendExe returns the test binary built with the other backend,
// or "" (children then run this binary) where it cannot be built.
func otherBackendExe(t *testing.T) string {
	t.Helper()
	other := "purego"
	if Backend == "purego" {
		other = "cgo"
	}
	if !canBuildBackend(other) {
		t.Logf("cannot build the %s test binary here: every child runs this backend", other)
		return ""
	}
	return backendBinary(t, other)
}

// bothBackends gives child i of a group the test binary it runs: this one
// for even i, the other backend's (where it can be built) for odd i.
func bothBackends(t *testing.T) func(i int) string {
	t.Helper()
	other := otherBackendExe(t)
	return func(i int) string {
		if i%2 == 1 {
			return other
		}
		return ""
	}
}

// waitAll waits for every child and stops the test when one failed.
func waitAll(t *testing.T, hs []*helper) {
	t.Helper()
	for _, h := range hs {
		h.wait(t)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// runAdders starts n children of role as one group, of both backends
// (bothBackends), child i named "adder i" with the environment env(i),
// and waits for them all; the test stops when one failed.
func runAdders(t *testing.T, n int, role string, env func(i int) []string) {
	t.Helper()
	exe := bothBackends(t)
	specs := make([]childSpec, n)
	for i := range specs {
		specs[i] = childSpec{exe: exe(i), name: fmt.Sprintf("adder %d", i), role: role, env: env(i)}
	}
	waitAll(t, startGroup(t, childContext(t), specs))
}

var _ = role("cbfadd", childCBFAdd)

// childCBFAdd adds its disjoint range of keys (half one by one, half in
// one AddMany) and "shared" three times.
func childCBFAdd() error {
	b, err := OpenCountingBloom(Path(os.Getenv(envPath)), cbfProcCfg)
	if err != nil {
		return err
	}
	if err := childBarrier(); err != nil {
		return err
	}
	if err := bloomAddRange(b, envInt(envCBFFirst), envInt(envCBFCount)); err != nil {
		return err
	}
	for range 3 {
		if _, err := b.AddString("shared"); err != nil {
			return err
		}
	}
	return b.Close()
}

// TestCountingBloom_FourProcesses: four processes, two per backend where
// both can be built, add disjoint sets: none is missing; "shared", added
// three times by each, counts 12; removing all twelve copies makes it
// absent.
func TestCountingBloom_FourProcesses(t *testing.T) {
	requireReexec(t)
	path := filepath.Join(t.TempDir(), "cbf")
	const per = 25_000
	runAdders(t, 4, "cbfadd", func(i int) []string { return envs(envPath, path, envCBFFirst, i*per, envCBFCount, per) })
	b, err := OpenCountingBloom(Path(path), cbfProcCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	missing := 0
	for i := range 4 * per {
		if !b.Contains(cbfKey("p", i)) {
			missing++
		}
	}
	if missing != 0 {
		t.Errorf("%d of %d added keys are missing", missing, 4*per)
	}
	if got := b.EstimateString("shared"); got != 12 {
		t.Errorf("CountOf(shared) = %d, want 12", got)
	}
	for range 12 {
		if removed, err := b.RemoveString("shared"); !removed || err != nil {
			t.Fatalf("Remove(shared) = %v, %v", removed, err)
		}
	}
	if b.ContainsString("shared") {
		t.Error("shared is still present after removing its twelve copies")
	}
}

var _ = role("cbfloop", childCBFLoop)

// childCBFLoop says "started" and then holds the lock again and again: a
// long AddMany (read lock) or Clear (write lock), until it is killed.
func childCBFLoop() error {
	b, err := OpenCountingBloom(Path(os.Getenv(envPath)), cbfProcCfg)
	if err != nil {
		return err
	}
	keys := make([][]byte, 200_000)
	for i := range keys {
		keys[i] = cbfKey("loop", i)
	}
	fmt.Println("started")
	for {
		switch os.Getenv(envCBFLoop) {
		case "addmany":
			err = b.AddBatch(keys, nil)
		default:
			err = b.Reset()
		}
		if err != nil {
			return err
		}
	}
}

// TestCountingBloom_KillLockHolder: a process killed while it holds the
// lock in a long AddMany (read) or a Clear (write) is recovered from: the
// next Add, Remove or Clear from another process succeeds, whether it was
// already waiting when the holder died or came after.
func TestCountingBloom_KillLockHolder(t *testing.T) {
	requireReexec(t)
	for _, loop := range []string{"addmany", "clear"} {
		for _, parked := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/parked=%v", loop, parked), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "cbf")
				b, err := OpenCountingBloom(Path(path), cbfProcCfg)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				child := startLockChild(t, childContext(t), "cbfloop", path, envs(envCBFLoop, loop))
				child.expect(t, "started")
				time.Sleep(20 * time.Millisecond) // let it get deep into its loop
				// Clear needs the write lock: it waits for the child
				// in either of its loops.
				done := make(chan error, 1)
				if parked {
					go func() { done <- b.Reset() }()
				}
				killed := time.Now()
				child.cmd.Process.Signal(syscall.SIGKILL)
				<-child.done
				if !parked {
					go func() { done <- b.Reset() }()
				}
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("Clear after the holder died: %v", err)
					}
				case <-time.After(patience):
					t.Fatalf("Clear did not get the lock within %v of the holder's death", patience)
				}
				t.Logf("recovered %v after the SIGKILL", time.Since(killed))
				if _, err := b.AddString("after"); err != nil || !b.ContainsString("after") {
					t.Errorf("Add after recovery: %v", err)
				}
				if removed, err := b.RemoveString("after"); !removed || err != nil {
					t.Errorf("Remove after recovery: %v, %v", removed, err)
				}
			})
		}
	}
}

var _ = role("cbfrace", childCBFRace)

// childCBFRace opens round n's path for each n it reads, adds its own key,
// and answers "ok n" or "err n <error>".
func childCBFRace() error {
	dir, me := os.Getenv(envPath), os.Getenv(envChild)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		n := in.Text()
		err := func() error {
			b, err := OpenCountingBloom(Path(filepath.Join(dir, "cbf-"+n)), CountingBloomConfig{Capacity: 1000})
			if err != nil {
				return err
			}
			defer b.Close()
			_, err = b.AddString("child-" + me)
			return err
		}()
		if err != nil {
			fmt.Printf("err %s %v\n", n, err)
		} else {
			fmt.Printf("ok %s\n", n)
		}
	}
	return nil
}

// TestCountingBloom_RaceToCreate: eight processes, of both backends, race
// twenty times to create-or-attach one new path: every open succeeds and
// all share one filter.
func TestCountingBloom_RaceToCreate(t *testing.T) {
	requireReexec(t)
	dir := t.TempDir()
	other := otherBackendExe(t)
	ctx := childContext(t)
	const children, rounds = 8, 20
	type racer struct {
		h   *helper
		in  io.WriteCloser
		out *bufio.Reader
	}
	var rs []racer
	for i := range children {
		exe := selfExe(t)
		if i%2 == 1 && other != "" {
			exe = other
		}
		h := &helper{name: fmt.Sprintf("racer %d", i), done: make(chan struct{})}
		h.cmd = exec.CommandContext(ctx, exe, "-test.run=^TestHelperProcess$")
		h.cmd.Env = append(os.Environ(), envRole+"=cbfrace", envPath+"="+dir, envChild+"="+strconv.Itoa(i), "GORACE=atexit_sleep_ms=0")
		h.cmd.Stderr = &h.stderr
		in, _ := h.cmd.StdinPipe()
		out, _ := h.cmd.StdoutPipe()
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { h.err = h.cmd.Wait(); close(h.done) }()
		t.Cleanup(func() {
			in.Close()
			<-h.done
			if t.Failed() {
				t.Logf("%s: %v\n%s", h.name, h.err, h.stderr.String())
			}
		})
		rs = append(rs, racer{h, in, bufio.NewReader(out)})
	}
	for n := range rounds {
		for _, r := range rs {
			fmt.Fprintln(r.in, n)
		}
		for _, r := range rs {
			line, err := r.out.ReadString('\n')
			if strings.TrimSpace(line) != fmt.Sprintf("ok %d", n) {
				t.Fatalf("round %d: %s said %q (%v)", n, r.h.name, line, err)
			}
		}
		b, err := OpenCountingBloom(Path(filepath.Join(dir, fmt.Sprintf("cbf-%d", n))), CountingBloomConfig{}, WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		for i := range children {
			if !b.ContainsString(fmt.Sprintf("child-%d", i)) {
				t.Errorf("round %d: child %d's key is not in the filter", n, i)
			}
		}
		b.Close()
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != rounds {
		t.Errorf("directory holds %d entries, want %d filters and nothing else", len(entries), rounds)
	}
}
