//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// TestCreate_SeedOwner: create takes a seed with --seed-from or
// --seed-file only from a file owned by a user it trusts (the caller,
// root, --owner) that not every user may write: nobody's sketch file and
// nobody's seed file, planted in a shared directory, are refused (exit 1,
// naming --owner, nothing made), and taken with --owner 65534. A source
// every user may read is taken with a warning that the new file's seed is
// known to every user.
func TestCreate_SeedOwner(t *testing.T) {
	dir := sharedDir(t)
	nobodys := filepath.Join(dir, "nobodys.cms")
	asNobody(t, "create", nobodys, "--rows", "2", "--width", "64", "--mode", "0640").ok(t, "create as nobody")
	seedPath := filepath.Join(dir, "seed")
	runAsNobody(t, "sh", "-c", "umask 077; echo 4242 > "+seedPath)

	for _, args := range [][]string{{"--seed-from", nobodys}, {"--seed-file", seedPath}} {
		path := filepath.Join(t.TempDir(), "new.cms")
		r := sk(t, append([]string{"create", path, "--rows", "2", "--width", "64"}, args...)...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "uid 65534 owns it") || !strings.Contains(r.stderr, "give --owner 65534") {
			t.Errorf("create %s: exit %d, stderr %q; want 1, naming --owner 65534", strings.Join(args, " "), r.code, r.stderr)
		}
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("a refused create %s made %s", strings.Join(args, " "), path)
		}
		sk(t, append([]string{"create", path, "--rows", "2", "--width", "64", "--owner", "65534"}, args...)...).ok(t, "create --owner 65534")
	}
	from, err := sketch.Inspect(nobodys)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		seed uint64
	}{{[]string{"--seed-from", nobodys}, from.Seed}, {[]string{"--seed-file", seedPath}, 4242}} {
		path := filepath.Join(t.TempDir(), "trusted.cms")
		sk(t, append([]string{"create", "--owner", "65534", path}, c.args...)...).ok(t, "create")
		if fi, err := sketch.Inspect(path); err != nil || fi.Seed != c.seed {
			t.Errorf("create --owner 65534 %s: not the source's seed (%v)", strings.Join(c.args, " "), err)
		}
	}

	// Files of root that every user may write: refused.
	loose := create(t, "loose.cms", "--rows", "2", "--width", "64")
	looseSeed := seedFile(t, "4242")
	for _, f := range []string{loose, looseSeed} {
		if err := os.Chmod(f, 0o602); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"--seed-from", loose}, {"--seed-file", looseSeed}} {
		path := filepath.Join(t.TempDir(), "new.cms")
		if r := sk(t, append([]string{"create", path}, args...)...); r.code != exitFailure || !strings.Contains(r.stderr, "every user may write it") {
			t.Errorf("create %s: exit %d, stderr %q; want 1: every user may write it", strings.Join(args, " "), r.code, r.stderr)
		}
	}

	// A source every user may read: taken, with a warning.
	open := create(t, "open.cms", "--rows", "2", "--width", "64", "--mode", "0644")
	r := sk(t, "create", filepath.Join(t.TempDir(), "new.cms"), "--seed-from", open)
	r.ok(t, "create --seed-from a file every user may read")
	if !strings.Contains(r.stderr, "warning: --seed-from "+open+": every user may read it") {
		t.Errorf("create --seed-from %s: stderr %q, want a warning", open, r.stderr)
	}
}

// TestCreate_WarnReadable: create warns on standard error when every user
// may read the file it made, or the arena of a structure it made, since
// they read its secret seed with it (nobody prints it with inspect
// --show-seed); it recommends a group (0640), which nobody cannot read.
// A file only its owner or group may read, and a distinct count hashed as
// Redis does (no secret), get no warning.
func TestCreate_WarnReadable(t *testing.T) {
	dir := usersDir(t, "sketch-cli-modes-", 0o755)
	const warning = "warning: every user may read "
	for _, c := range []struct {
		name string
		args []string
		warn bool
	}{
		{"a.cms", []string{"--mode", "0644"}, true},
		{"b.cms", []string{"--mode", "0640"}, false},
		{"c.cms", nil, false},
		{"d.hll", []string{"--kind", "distinct", "--mode", "0604"}, true},
		{"e.hll", []string{"--kind", "distinct", "--redis", "--mode", "0644"}, false},
		{"f.arena", []string{"--kind", "arena", "--size", "1M", "--mode", "0644"}, true},
		{"f.arena:clients", []string{"--rows", "2", "--width", "64"}, true},
		{"f.arena:redis", []string{"--kind", "distinct", "--redis"}, false},
		{"g.arena", []string{"--kind", "arena", "--size", "1M", "--mode", "0640"}, false},
		{"g.arena:clients", []string{"--rows", "2", "--width", "64"}, false},
	} {
		path := filepath.Join(dir, c.name)
		r := sk(t, append([]string{"create", path}, c.args...)...)
		r.ok(t, "create "+c.name)
		file, _, _ := strings.Cut(path, ":")
		if got := strings.Contains(r.stderr, warning+file+" ("); got != c.warn {
			t.Errorf("create %s %s: stderr %q; want a warning: %v", c.name, strings.Join(c.args, " "), r.stderr, c.warn)
		}
		if c.warn && !strings.Contains(r.stderr, "chmod 0640") {
			t.Errorf("create %s: the warning %q names no group mode", c.name, r.stderr)
		}
	}

	// What the warning is about: nobody reads the seed of the 0644 file,
	// not that of the 0640 one.
	t.Run("nobody", func(t *testing.T) {
		fi, err := sketch.Inspect(filepath.Join(dir, "a.cms"))
		if err != nil {
			t.Fatal(err)
		}
		r := asNobody(t, "inspect", "--show-seed", filepath.Join(dir, "a.cms"))
		if out := r.ok(t, "inspect --show-seed as nobody"); !strings.Contains(out, fmt.Sprintf("0x%016x", fi.Seed)) {
			t.Errorf("as nobody, inspect --show-seed of a file every user may read: %q, want its seed", out)
		}
		if r := asNobody(t, "inspect", "--show-seed", filepath.Join(dir, "b.cms")); r.code != exitFailure {
			t.Errorf("as nobody, inspect of a 0640 file: exit %d, want 1", r.code)
		}
	})
}
