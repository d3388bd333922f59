package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// The tests run the command as a real process: the test binary re-executes
// itself with SKETCH_CLI_MAIN set and runs main instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("SKETCH_CLI_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// run runs the command with args and returns its combined output and exit code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command(exe, "-test.run=^$").Run() != nil {
		t.Skip("cannot re-execute the test binary here (emulated?)")
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "SKETCH_CLI_MAIN=1")
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sketch %s: %v", strings.Join(args, " "), err)
	}
	return string(out), code
}

func newSketch(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.cms")
	c, err := sketch.OpenCountMin(path, sketch.CountMinConfig{Rows: 4, Width: 1024})
	if err != nil {
		t.Fatal(err)
	}
	c.AddN([]byte("alpha"), 41)
	c.Close()
	return path
}

func TestCheck(t *testing.T) {
	path := newSketch(t)
	out, code := run(t, "check", path)
	if code != 0 || !strings.Contains(out, "ok") || !strings.Contains(out, "total       41 (add count 41)") {
		t.Fatalf("sketch check on a good file: exit %d, output:\n%s", code, out)
	}

	// Break the header's checksummed part: check must fail and say why.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 30)
	f.Close()
	out, code = run(t, "check", path)
	if code != 1 || !strings.Contains(out, path) || !strings.Contains(out, "checksum") {
		t.Fatalf("sketch check on a corrupt file: exit %d, output:\n%s", code, out)
	}
}

func TestCheck_MissingFileIsNotCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.cms")
	out, code := run(t, "check", path)
	if code != 1 || !strings.Contains(out, "no such file") {
		t.Fatalf("sketch check on a missing file: exit %d, output:\n%s", code, out)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("sketch check created %s", path)
	}
}

func TestAddAndEstimate(t *testing.T) {
	path := newSketch(t)
	if out, code := run(t, "add", path, "alpha"); code != 0 || strings.TrimSpace(out) != "42" {
		t.Fatalf("sketch add: exit %d, output %q, want 42", code, out)
	}
	if out, code := run(t, "add", path, "beta", "7"); code != 0 || strings.TrimSpace(out) != "7" {
		t.Fatalf("sketch add N: exit %d, output %q, want 7", code, out)
	}
	out, code := run(t, "estimate", path, "alpha", "beta", "gamma")
	if code != 0 || !strings.Contains(out, "alpha\t42") || !strings.Contains(out, "beta\t7") || !strings.Contains(out, "gamma\t0") {
		t.Fatalf("sketch estimate: exit %d, output:\n%s", code, out)
	}
	if _, code := run(t, "add", path, "x", "-1"); code != 1 {
		t.Errorf("sketch add with a negative count: exit %d, want 1", code)
	}
}

func TestVersionAndUsage(t *testing.T) {
	if out, code := run(t, "version"); code != 0 || !strings.Contains(out, sketch.Backend) {
		t.Errorf("sketch version: exit %d, output %q, want the backend %q", code, out, sketch.Backend)
	}
	if _, code := run(t, "frobnicate"); code != 2 {
		t.Errorf("sketch frobnicate: exit %d, want 2", code)
	}
}

// TestDemo runs the main job small: worker processes, the live view, the
// final comparison with exact counts and the check.
func TestDemo(t *testing.T) {
	out, code := run(t, "demo", "-procs", "3", "-adds", "30000")
	if code != 0 || !strings.Contains(out, "estimates below the truth: 0 of") || !strings.Contains(out, "check: ok") ||
		!strings.Contains(out, "total 90000 (exact 90000), 90000 adds") {
		t.Fatalf("sketch demo: exit %d, output:\n%s", code, out)
	}
}
