//go:build linux

package sketch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envCrossDir is the directory a crossuser child races in.
const envCrossDir = "SKETCH_TEST_CROSSDIR"

// crossUID is the user the crossuser child runs as: nobody.
const crossUID = 65534

// crossCfg is the shape both sides of the cross-user race open with. It is
// wide enough that the two keys of a round share a counter in every row
// with a chance of 1 in 2^40, so each must estimate exactly 1.
var crossCfg = CountMinConfig{Rows: 4, Width: 1024}

// crossMode is the mode both sides create with: the two users share the
// file through its group, which the directory hands down (setgid).
const crossMode os.FileMode = 0o660

// crossPath is the path of round n in dir: a new one every round.
func crossPath(dir string, n int) string {
	return filepath.Join(dir, "cms-"+strconv.Itoa(n))
}

// TestOpen_CrossUserRace has root (this process) and nobody (a child) open
// one new path at the same moment, 100 times, each on a fresh path in a
// directory both may write: every open must succeed on both sides, on one
// shared file of mode 0660 (the directory gives every file nobody's group),
// whoever created it.
func TestOpen_CrossUserRace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user")
	}
	requireReexec(t)
	const rounds = 100
	dir := crossDir(t)
	ctx := childContext(t)
	h, in, out := startCrossUser(t, ctx, dir)

	var rootOK, nobodyOK, byRoot, byNobody int
	lines := bufio.NewScanner(out)
	for n := range rounds {
		path := crossPath(dir, n)
		if _, err := fmt.Fprintf(in, "%d\n", n); err != nil {
			t.Fatalf("round %d: telling the child to open: %v", n, err)
		}
		rootErr := crossOpen(path, "root", WithMode(crossMode), WithOwner(crossUID))
		if rootErr != nil {
			t.Errorf("round %d: root: %v", n, rootErr)
		} else {
			rootOK++
		}
		if !lines.Scan() {
			err := lines.Err()
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			t.Fatalf("round %d: no answer from the child: %v", n, err)
		}
		line := lines.Text()
		h.stdout.WriteString(line + "\n") // logged if the test fails
		switch {
		case line == fmt.Sprintf("ok %d", n):
			nobodyOK++
		case strings.HasPrefix(line, fmt.Sprintf("err %d ", n)):
			t.Errorf("round %d: nobody: %s", n, strings.TrimPrefix(line, fmt.Sprintf("err %d ", n)))
		default:
			t.Fatalf("round %d: the child answered %q, want \"ok %d\" or \"err %d ...\"", n, line, n, n)
		}
		if rootErr != nil || line != fmt.Sprintf("ok %d", n) {
			continue
		}
		switch crossCheck(t, n, path) {
		case 0:
			byRoot++
		case crossUID:
			byNobody++
		}
	}
	in.Close() // the child exits at the end of its input
	h.wait(t)
	if rootOK != rounds {
		t.Errorf("root opened the new path in %d of %d rounds, want all", rootOK, rounds)
	}
	if nobodyOK != rounds {
		t.Errorf("nobody opened the new path in %d of %d rounds, want all", nobodyOK, rounds)
	}
	// Nothing but the race's files: no temporary name left behind.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names, want []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	for n := range rounds {
		want = append(want, filepath.Base(crossPath(dir, n)))
	}
	want = append(want, crossExe)
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("directory holds %q, want the test binary and %d sketch files", names, rounds)
	}
	t.Logf("%d rounds: root created the file in %d, nobody in %d", rounds, byRoot, byNobody)
}

// crossOpen is one side's turn in a round: open path, add the key who
// (naming the side) once, close.
func crossOpen(path, who string, opts ...Option) error {
	c, err := OpenCountMin(Path(path), crossCfg, opts...)
	if err != nil {
		return fmt.Errorf("OpenCountMin(%s) = %v", path, err)
	}
	_, err = c.AddString(who)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("AddString(%q) on %s = %v", who, path, err)
	}
	return nil
}

// crossCheck reopens the file of round n after both sides added to it and
// checks that both keys are in it once, and its mode. It returns the uid
// of the file's owner, which created it (-1 if there is no file).
func crossCheck(t *testing.T, n int, path string) int64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("round %d: %v", n, err)
		return -1
	}
	uid := fi.Sys().(*syscall.Stat_t).Uid
	if fi.Mode() != crossMode {
		t.Errorf("round %d: mode of the file uid %d created = %v, want %v", n, uid, fi.Mode(), crossMode)
	}
	if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != crossUID {
		t.Errorf("round %d: the file's group is %d, want %d (the directory's)", n, gid, crossUID)
	}
	if uid != 0 && uid != crossUID {
		t.Errorf("round %d: the file is owned by uid %d, want 0 or %d", n, uid, crossUID)
	}
	c, err := OpenCountMin(Path(path), crossCfg, WithoutCreate(), WithOwner(crossUID))
	if err != nil {
		t.Errorf("round %d: reopening: OpenCountMin(%s) = %v", n, path, err)
		return int64(uid)
	}
	defer c.Close()
	for _, k := range []string{"root", "nobody"} {
		if got := c.EstimateString(k); got != 1 {
			t.Errorf("round %d: Estimate(%q) = %d, want 1 (one shared file)", n, k, got)
		}
	}
	if st := c.Stats(); st.Total != 2 || st.Adds != 2 {
		t.Errorf("round %d: Stats() Total, Adds = %d, %d, want 2, 2", n, st.Total, st.Adds)
	}
	return int64(uid)
}

// crossExe is the name of the test binary's copy in the race directory.
const crossExe = "sketch.test"

// crossDir makes a directory that nobody can traverse and write, whose
// files get nobody's group (setgid), and puts a copy of this test binary
// in it: the binary go test built sits in a directory only its builder can
// enter.
func crossDir(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot re-run the test binary: %v", err)
	}
	dir, err := os.MkdirTemp("", "sketch-crossuser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, 0, crossUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(dir, crossExe), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst.Name(), 0o755) // the umask must not apply
	}
	if err != nil {
		t.Fatalf("copying the test binary to %s: %v", dir, err)
	}
	return dir
}

// startCrossUser starts the copy of the test binary in dir as nobody, in
// role crossuser: it opens round n's path each time it reads n from in,
// and answers on out with "ok n" or "err n <error>". The child is killed
// when ctx ends, and reads from out fail then too.
func startCrossUser(t *testing.T, ctx context.Context, dir string) (h *helper, in, out *os.File) {
	return startAsNobody(t, ctx, dir, "crossuser")
}

// startAsNobody starts the copy of the test binary in dir as nobody, in
// the given role with the extra environment, talking through pipes.
func startAsNobody(t *testing.T, ctx context.Context, dir, role string, env ...string) (h *helper, in, out *os.File) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inW.Close(); outR.Close() })
	if dl, ok := ctx.Deadline(); ok {
		outR.SetReadDeadline(dl)
	}
	h = &helper{name: "nobody child (" + role + ")", done: make(chan struct{})}
	h.cmd = exec.CommandContext(ctx, filepath.Join(dir, crossExe), "-test.run=^TestHelperProcess$")
	h.cmd.Dir = dir
	h.cmd.Env = append(os.Environ(), envRole+"="+role, envCrossDir+"="+dir,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	h.cmd.Env = append(h.cmd.Env, env...)
	// Files, not buffers: the child reads and writes the pipes itself, and
	// Wait does not close our ends under us.
	h.cmd.Stdin, h.cmd.Stdout, h.cmd.Stderr = inR, outW, &h.stderr
	h.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: crossUID, Gid: crossUID, Groups: []uint32{}},
	}
	h.cmd.WaitDelay = 5 * time.Second
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", h.name, err)
	}
	// Only the child holds these ends now: its exit ends our reads.
	inR.Close()
	outW.Close()
	go func() {
		h.err = h.cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			h.cmd.Process.Kill()
			<-h.done
		}
		if t.Failed() {
			t.Logf("%s (pid %d) exited with %v\n--- stdout:\n%s--- stderr:\n%s", h.name, h.cmd.Process.Pid, h.err, h.stdout.String(), h.stderr.String())
		}
	})
	return h, inW, outR
}
