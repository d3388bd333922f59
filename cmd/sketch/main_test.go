//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// The tests run the command as users do: TestMain builds it once, with the
// backend and race detector of the test binary, into a directory anyone
// may enter (the read-only tests run it as another user).
var bin string

// patience bounds a wait for something a busy machine may be slow to do.
const patience = 2 * time.Minute

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sketch-cli-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "sketch")
	if err := build(bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func build(out string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	args := []string{"build", "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	if sketch.Backend == "purego" {
		args = append(args, "-tags", "purego")
	}
	cmd := exec.Command(goTool, append(args, ".")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the command: %v\n%s", err, b)
	}
	return nil
}

// result is what one run of the command did.
type result struct {
	stdout, stderr string
	code           int
}

// sk runs the command with args and no standard input.
func sk(t *testing.T, args ...string) result {
	t.Helper()
	return skIn(t, nil, args...)
}

// skIn runs the command with args, reading stdin.
func skIn(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	return skCmd(t, exec.Command(bin, args...), stdin)
}

func skCmd(t *testing.T, cmd *exec.Cmd, stdin io.Reader) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return r
}

// ok fails the test unless the run exited 0, and returns its output.
func (r result) ok(t *testing.T, what string) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// decode decodes JSON output into v, failing the test if it does not
// decode or has fields v lacks.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
}

// decodeLines decodes JSON Lines output, one value a line.
func decodeLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var vs []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v T
		decode(t, line, &v)
		vs = append(vs, v)
	}
	return vs
}

// create makes a sketch file in a new directory with the command.
func create(t *testing.T, name string, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	sk(t, append([]string{"create", path}, args...)...).ok(t, "create "+path)
	return path
}

func TestUsage_BadArguments(t *testing.T) {
	path := create(t, "c.cms")
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"add"},
		{"add", "-n", "0", path, "k"},
		{"add", "--weighted", path, "k"},
		{"add", "--no-such-flag", path},
		{"query"},
		{"query", "--top", "-1", path},
		{"stats"},
		{"stats", path, path},
		{"inspect"},
		{"check"},
		{"check", path, path},
		{"create"},
		{"create", path + "2", "--kind", "nonsense"},
		{"create", path + "2", "--capacity", "10"}, // a counting Bloom sizing for a Count-Min
		{"create", path + "2", "--kind", "countingbloom"},
		{"create", path + "2", "--mode", "rw"},
		{"create", path + "2", "--kind", "bloom"},                          // no --capacity
		{"create", path + "2", "--kind", "countminwindow"},                 // no --keep
		{"create", path + "2", "--kind", "arena"},                          // no --size
		{"create", path + "2", "--kind", "arena", "--size", "12X"},         // not a size
		{"create", path + "2", "--kind", "bloom", "--rows", "3"},           // a Count-Min sizing for a Bloom filter
		{"create", path + "2", "--period", "1s"},                           // a window's flag for a Count-Min
		{"create", path + "2:name", "--kind", "bloom", "--seed-file", "-"}, // a structure in an arena has the arena's seed
		{"create", path + "2", "--seed", "1"},                              // a seed on the command line

		// A Bloom window: no --capacity, no --keep, a Count-Min sizing.
		{"create", path + "2", "--kind", "bloomwindow", "--keep", "2"},
		{"create", path + "2", "--kind", "bloomwindow", "--capacity", "10"},
		{"create", path + "2", "--kind", "bloomwindow", "--capacity", "10", "--keep", "2", "--width", "64"},

		{"rotate"},
		{"watch", path, "--interval", "0s"},
		{"merge", path},
		{"freeze"},
		{"reset"},
		{"rm"},
		{"version", "extra"},
		{"help", "nonsense"},
		{"query", path + ":name", "k"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := sk(t, args...)
			if r.code != 2 || !strings.Contains(r.stderr, "usage: sketch") {
				t.Errorf("sketch %s: exit %d, stderr %q; want 2 and the usage", strings.Join(args, " "), r.code, r.stderr)
			}
		})
	}
	if _, err := os.Stat(path + "2"); err == nil {
		t.Errorf("a refused create made %s", path+"2")
	}
}

// TestUsage_Help: "help CMD", "CMD -h" and "CMD --help" print that
// command's usage with an example, on standard output, and exit 0.
func TestUsage_Help(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "--help"}} {
			r := sk(t, args...)
			out := r.ok(t, strings.Join(args, " "))
			if !strings.HasPrefix(out, "usage: sketch "+c.name) || !strings.Contains(out, "example:\n  sketch ") {
				t.Errorf("sketch %s printed %q, want %s's usage with an example", strings.Join(args, " "), out, c.name)
			}
		}
	}
	// check -h is help, never a file named -h.
	if r := sk(t, "check", "-h"); r.code != 0 || strings.Contains(r.stderr, "-h") {
		t.Errorf("sketch check -h: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		if out := sk(t, args...).ok(t, strings.Join(args, " ")); !strings.Contains(out, "query") || !strings.Contains(out, "inspect") {
			t.Errorf("sketch %s: %q, want the list of commands", strings.Join(args, " "), out)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		out := sk(t, args...).ok(t, strings.Join(args, " "))
		if !strings.Contains(out, "backend  "+sketch.Backend) || !strings.Contains(out, fmt.Sprintf("format   %d", sketch.FormatVersion)) {
			t.Errorf("sketch %s: %q, want the backend %s and format %d", strings.Join(args, " "), out, sketch.Backend, sketch.FormatVersion)
		}
	}
	var v struct {
		Version       string `json:"version"`
		Backend       string `json:"backend"`
		Go            string `json:"go"`
		FormatVersion uint32 `json:"format_version"`
	}
	decode(t, sk(t, "version", "--json").ok(t, "version --json"), &v)
	if v.Backend != sketch.Backend || v.FormatVersion != sketch.FormatVersion || !strings.HasPrefix(v.Go, "go") || v.Version == "" {
		t.Errorf("version --json = %+v", v)
	}
}

// TestMissingAndCorrupt: every command that opens a file exits 1 with a
// message naming it when it is missing or corrupt, and creates nothing.
func TestMissingAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.cms")
	corrupt := create(t, "corrupt.cms")
	f, err := os.OpenFile(corrupt, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 30) // the seed: the header checksum fails
	f.Close()
	notSketch := filepath.Join(dir, "text")
	os.WriteFile(notSketch, []byte("hello, this is not a sketch file at all, but it is long enough to have a header of 128 bytes in it, to be sure, to be sure."), 0o600)
	for _, path := range []string{missing, corrupt, notSketch} {
		for _, args := range [][]string{
			{"add", path, "k"}, {"query", path, "k"}, {"stats", path}, {"inspect", path},
			{"check", path}, {"watch", path, "--count", "1"}, {"freeze", path}, {"reset", path},
			{"merge", path, path}, {"rm", path},
		} {
			r := sk(t, args...)
			if r.code != 1 || !strings.Contains(r.stderr, path) {
				t.Errorf("sketch %s: exit %d, stderr %q; want 1 and a message naming the file", strings.Join(args, " "), r.code, r.stderr)
			}
		}
	}
	if _, err := os.Lstat(missing); err == nil {
		t.Errorf("a command created %s", missing)
	}
	for _, path := range []string{corrupt, notSketch} {
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("rm removed %s, which is not a valid sketch file", path)
		}
	}
	if r := sk(t, "check", corrupt); !strings.Contains(r.stderr, "checksum") {
		t.Errorf("check of a corrupt header: %q, want it to say checksum", r.stderr)
	}
}

// usersDir is a new directory of mode perm on a path every user may walk
// (not the test's own TempDir, which only its owner may), removed when the
// test ends.
func usersDir(t *testing.T, prefix string, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// asNobody runs the command as uid 65534, or skips when that cannot be.
func asNobody(t *testing.T, args ...string) result {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the command as another user")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	return skCmd(t, cmd, nil)
}
