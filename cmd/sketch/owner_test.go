//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOwner_Flag: a file nobody owns is refused for writing, with a
// message naming --owner; --owner (repeated, or a comma list) trusts it.
func TestOwner_Flag(t *testing.T) {
	dir := sharedDir(t)
	path := filepath.Join(dir, "nobodys.cms")
	arena := filepath.Join(dir, "nobodys.arena")
	asNobody(t, "create", path, "--rows", "2", "--width", "64", "--mode", "0644").ok(t, "create as nobody")
	asNobody(t, "create", arena, "--kind", "arena", "--size", "1M", "--mode", "0644").ok(t, "create arena as nobody")

	for _, args := range [][]string{{"add", path, "k"}, {"reset", path}, {"create", arena + ":mine", "--rows", "2", "--width", "64"}} {
		r := sk(t, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "give --owner 65534") || strings.Contains(r.stderr, "WithOwner") {
			t.Errorf("sketch %s: exit %d, stderr %q; want 1 and a message naming --owner 65534", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	sk(t, "add", "--owner", "65534", path, "k").ok(t, "add --owner 65534")
	sk(t, "add", "--owner", "1234", "--owner", "65534", path, "k").ok(t, "add --owner 1234 --owner 65534")
	sk(t, "add", "--owner", "1234,65534", path, "k").ok(t, "add --owner 1234,65534")
	if out := sk(t, "query", "--owner", "65534", path, "k").ok(t, "query"); !strings.HasPrefix(out, "k\t3") {
		t.Errorf("query after three adds: %q", out)
	}
	sk(t, "create", arena+":mine", "--rows", "2", "--width", "64", "--owner", "65534").ok(t, "create in the arena with --owner")
	if r := sk(t, "add", "--owner", "1234", path, "k"); r.code != 1 {
		t.Errorf("add --owner of another uid: exit %d, want 1", r.code)
	}
	if r := sk(t, "add", "--owner", "nobody", path, "k"); r.code != 2 {
		t.Errorf("add --owner nobody: exit %d, want 2 (a numeric uid)", r.code)
	}
}
