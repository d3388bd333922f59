//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sharedDir is a new directory every user may write, sticky as /dev/shm
// is.
func sharedDir(t *testing.T) string { return usersDir(t, "sketch-cli-shared-", 0o1777) }

// runAsNobody runs a program as uid 65534 and fails the test if it fails.
func runAsNobody(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody, %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestTarget_PlantedColonFile: nobody plants a sketch file named
// x.arena:banned beside root's arena x.arena, which has a structure
// banned. Every command given x.arena:banned refuses, naming both
// readings, and answers from neither.
func TestTarget_PlantedColonFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to plant a file as another user")
	}
	dir := sharedDir(t)
	arena := filepath.Join(dir, "x.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "1M").ok(t, "create arena")
	sk(t, "create", arena+":banned", "--kind", "countingbloom", "--capacity", "1000").ok(t, "create banned")
	sk(t, "add", arena+":banned", "mallory").ok(t, "add")

	// The plant: a valid Count-Min file anyone may read, moved into place
	// by nobody.
	plant := filepath.Join(dir, "plant.cms")
	asNobody(t, "create", plant, "--rows", "2", "--width", "64", "--mode", "0644").ok(t, "create as nobody")
	spoof := arena + ":banned"
	runAsNobody(t, "mv", plant, spoof)
	if st, err := os.Lstat(spoof); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Fatalf("the planted file: %v, want it owned by nobody", err)
	}

	for _, args := range [][]string{
		{"query", spoof, "mallory"}, {"stats", spoof}, {"watch", spoof, "--count", "1", "--interval", "10ms"},
		{"add", spoof, "mallory"}, {"reset", spoof}, {"inspect", spoof}, {"check", spoof}, {"rm", spoof},
	} {
		r := sk(t, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "ambiguous") ||
			!strings.Contains(r.stderr, "the file "+spoof) || !strings.Contains(r.stderr, "the structure banned in the file "+arena) {
			t.Errorf("sketch %s: exit %d, stdout %q, stderr %q; want 1, nothing answered, and both readings named",
				strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if _, err := os.Lstat(spoof); err != nil {
		t.Errorf("the planted file is gone: %v", err)
	}

	// With the plant gone, the name is the arena's structure again.
	if err := os.Remove(spoof); err != nil {
		t.Fatal(err)
	}
	if out := sk(t, "query", spoof, "mallory").ok(t, "query without the plant"); !strings.HasPrefix(out, "mallory\t1") {
		t.Errorf("query %s mallory = %q, want the arena's count 1", spoof, out)
	}
}
