package main

import (
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
		c, err := sketch.OpenCountMin(path, sketch.CountMinConfig{}, sketch.ReadOnly())
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
