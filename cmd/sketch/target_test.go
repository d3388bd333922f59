//go:build linux

package main

import (
	"bytes"
	"fmt"
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

// TestTarget_PlantedColonFile: nobody plants sketch files named
// x.arena:banned and x.arena:rate beside root's arena x.arena, which has
// structures of those names. The planted files are nobody's and the arena
// root's, so every command given x.arena:NAME addresses root's structure
// (allow, add --if-absent, del, query, top, stats), and the planted files
// are left as they were. The other way round, root's file y.cms:z beside
// an arena y.cms that nobody planted is root's file. When the command
// trusts both owners (--owner 65534, or two files of root), it refuses,
// naming both readings.
func TestTarget_PlantedColonFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to plant a file as another user")
	}
	dir := sharedDir(t)
	arena := filepath.Join(dir, "x.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "1M").ok(t, "create arena")
	sk(t, "create", arena+":banned", "--kind", "countingbloom", "--capacity", "1000").ok(t, "create banned")
	sk(t, "create", arena+":rate", "--kind", "countminwindow", "--keep", "2", "--rows", "4", "--width", "1024", "--candidates", "8").ok(t, "create rate")
	sk(t, "add", arena+":banned", "mallory").ok(t, "add")

	// The plants: valid Count-Min files anyone may read, moved into place
	// by nobody.
	banned, rate := arena+":banned", arena+":rate"
	planted := map[string][]byte{}
	for i, spoof := range []string{banned, rate} {
		plant := filepath.Join(dir, fmt.Sprintf("plant%d.cms", i))
		asNobody(t, "create", plant, "--rows", "2", "--width", "64", "--mode", "0644").ok(t, "create as nobody")
		runAsNobody(t, "mv", plant, spoof)
		if st, err := os.Lstat(spoof); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
			t.Fatalf("the planted file: %v, want it owned by nobody", err)
		}
		b, err := os.ReadFile(spoof)
		if err != nil {
			t.Fatal(err)
		}
		planted[spoof] = b
	}

	for _, c := range []struct {
		args []string
		want string // a prefix of the output
	}{
		{[]string{"query", banned, "mallory"}, "mallory\tprobably present, count 1\n"},
		{[]string{"add", "--if-absent", banned, "eve"}, "eve\tadded\n"},
		{[]string{"del", banned, "eve"}, "eve\tremoved\t0\n"},
		{[]string{"allow", "--limit", "5", rate, "k"}, "k\tallowed\t1 "},
		{[]string{"top", rate}, "1\tk\t1\t"},
	} {
		out := sk(t, c.args...).ok(t, strings.Join(c.args, " "))
		if !strings.HasPrefix(out, c.want) {
			t.Errorf("sketch %s = %q, want %q... (the arena's structure)", strings.Join(c.args, " "), out, c.want)
		}
	}
	if out := sk(t, "stats", banned).ok(t, "stats"); !strings.Contains(out, "counting Bloom filter") {
		t.Errorf("stats %s = %q, want the arena's counting Bloom filter", banned, out)
	}
	for spoof, b := range planted {
		if got, err := os.ReadFile(spoof); err != nil || !bytes.Equal(got, b) {
			t.Errorf("the planted %s changed (%v)", spoof, err)
		}
	}

	// Trusting nobody too, both readings are trusted: refused.
	r := sk(t, "query", "--owner", "65534", banned, "mallory")
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "ambiguous") ||
		!strings.Contains(r.stderr, "the file "+banned) || !strings.Contains(r.stderr, "the structure banned in the file "+arena) {
		t.Errorf("query --owner 65534 %s: exit %d, stdout %q, stderr %q; want 1, nothing answered, and both readings named", banned, r.code, r.stdout, r.stderr)
	}

	// Two files of root: refused by every command.
	own := filepath.Join(dir, "own.arena")
	sk(t, "create", own, "--kind", "arena", "--size", "1M").ok(t, "create arena")
	sk(t, "create", own+":s", "--kind", "countingbloom", "--capacity", "1000").ok(t, "create s")
	mine := create(t, "mine.cms", "--rows", "2", "--width", "64")
	if err := os.Rename(mine, own+":s"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"query", own + ":s", "k"}, {"stats", own + ":s"}, {"add", own + ":s", "k"}, {"reset", own + ":s"}, {"rm", own + ":s"},
	} {
		r := sk(t, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "ambiguous") || !strings.Contains(r.stderr, "both are owned by users this command trusts") {
			t.Errorf("sketch %s: exit %d, stdout %q, stderr %q; want 1 and refused as ambiguous", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}

	// Root's file y.cms:z beside an arena y.cms that nobody made: root's
	// file, a Count-Min sketch, answers.
	y := filepath.Join(dir, "y.cms")
	asNobody(t, "create", y, "--kind", "arena", "--size", "1M", "--mode", "0644").ok(t, "create arena as nobody")
	asNobody(t, "create", y+":z", "--kind", "countingbloom", "--capacity", "1000").ok(t, "create z as nobody")
	rootz := create(t, "rootz.cms", "--rows", "2", "--width", "64")
	if err := os.Rename(rootz, y+":z"); err != nil {
		t.Fatal(err)
	}
	if out := sk(t, "add", y+":z", "k").ok(t, "add"); !strings.HasPrefix(out, "k\t1\tbetween ") {
		t.Errorf("add %s:z k = %q, want root's Count-Min file counting it", y, out)
	}

	// With the plant gone, the name is the arena's structure again.
	if err := os.Remove(banned); err != nil {
		t.Fatal(err)
	}
	if out := sk(t, "query", banned, "mallory").ok(t, "query without the plant"); !strings.HasPrefix(out, "mallory\tprobably present, count 1") {
		t.Errorf("query %s mallory = %q, want the arena's count 1", banned, out)
	}
}
