package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestRun_IntervalZero: -interval 0 means the agent's default (a second),
// as it does for fleet.Config; the command runs its rounds until SIGTERM
// and exits 0, without a panic in the goroutine that logs the states.
func TestRun_IntervalZero(t *testing.T) {
	if args := os.Getenv("SKETCH_FLEET_TEST_ARGS"); args != "" {
		os.Exit(run(strings.Split(args, "\n"), os.Stderr))
	}
	rs := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "b")
	b, err := sketch.OpenBloom(sketch.Path(path), sketch.BloomConfig{Capacity: 100, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRun_IntervalZero$")
	cmd.Env = append(os.Environ(), "SKETCH_FLEET_TEST_ARGS="+strings.Join([]string{"-redis", "unix://" + rs.Sock, "-fleet", "f", "-host", "h", "-interval", "0", path}, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil || strings.Contains(stderr.String(), "panic") {
		t.Errorf("sketch-fleet -interval 0: %v\n%s", err, stderr.String())
	}
}
