//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// TestCheck_KillAdd kills a real sketch add with SIGKILL while it pipes
// keys in, and verifies the file with check: sound (0) or a torn add (3),
// never damage; and nothing counted before the kill is lost.
func TestCheck_KillAdd(t *testing.T) {
	torn := 0
	for iter, threshold := range []uint64{10_000, 300_000, 2_000_000} {
		path := create(t, "c.cms", "--rows", "4", "--width", "4096")
		cmd := exec.Command(bin, "add", path)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Feed keys until killed.
		go func() {
			lines := []byte(strings.Repeat("a\nbb\nccc\ndddd\n", 1024))
			for {
				if _, err := in.Write(lines); err != nil {
					return
				}
			}
		}()
		c, err := sketch.OpenCountMin(sketch.Path(path), sketch.CountMinConfig{}, sketch.WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.Now().Add(time.Minute)
		for c.Total() < threshold {
			select {
			case err := <-exited:
				t.Fatalf("iteration %d: add exited before it was killed: %v", iter, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("iteration %d: the total did not reach %d in a minute", iter, threshold)
			}
			time.Sleep(time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err = <-exited
		in.Close()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("iteration %d: add ended with %v, want killed by SIGKILL", iter, err)
		}
		r := sk(t, "check", path)
		switch {
		case r.code == 3 && strings.Contains(r.stdout, "torn add"):
			torn++
		case r.code != 0:
			t.Errorf("iteration %d: check after a kill: exit %d\n%s%s", iter, r.code, r.stdout, r.stderr)
		}
		// Every batch that returned is in every row: no key reads below
		// its share of what the add count holds (keys come in equal turns).
		adds := c.Total()
		for _, k := range []string{"a", "bb", "ccc", "dddd"} {
			if est := c.EstimateString(k); est < adds/4-256 {
				t.Errorf("iteration %d: Estimate(%q) = %d, want >= %d", iter, k, est, adds/4-256)
			}
		}
		c.Close()
		t.Logf("iteration %d: killed after %d adds; check exit %d", iter, adds, r.code)
	}
	t.Logf("%d of 3 kills tore an add", torn)
}

// TestAdd_Interrupt: an interrupt stops add between batches: it exits 1
// saying how many keys it counted, and they are all counted, whole.
func TestAdd_Interrupt(t *testing.T) {
	path := create(t, "c.cms", "--rows", "4", "--width", "4096")
	cmd := exec.Command(bin, "add", path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lines := []byte(strings.Repeat("k\n", 4096))
	c, err := sketch.OpenCountMin(sketch.Path(path), sketch.CountMinConfig{}, sketch.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	signalled := false
	for done := false; !done; {
		select {
		case err = <-exited:
			done = true
		default:
			in.Write(lines) // fails once add has stopped reading
			if !signalled && c.Total() > 100_000 {
				cmd.Process.Signal(syscall.SIGINT)
				signalled = true
			}
		}
	}
	in.Close()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "interrupted after ") {
		t.Fatalf("add after an interrupt: %v, %q; want exit 1 saying it was interrupted", err, stderr.String())
	}
	var n uint64
	fmt.Sscanf(stderr.String()[strings.Index(stderr.String(), "interrupted after "):], "interrupted after %d keys", &n)
	if st := c.Stats(); st.Total != n || st.Adds != n || c.EstimateString("k") != n {
		t.Errorf("after an interrupt at %d keys: total %d, adds %d, estimate %d", n, st.Total, st.Adds, c.EstimateString("k"))
	}
	sk(t, "check", path).ok(t, "check after an interrupted add")
}
