//go:build linux

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// TestRm_ArenaEntry: rm FILE:NAME removes one structure; the name then
// takes another kind, in the removed one's room; inspect and stats count
// what is removed; check passes throughout.
func TestRm_ArenaEntry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.arena")
	sk(t, "create", path, "--kind", "arena", "--size", "4M").ok(t, "create the arena")
	sk(t, "create", path+":clients", "--kind", "countmin", "--rows", "2", "--width", "1024").ok(t, "create clients")
	sk(t, "create", path+":seen", "--kind", "bloom", "--capacity", "1000", "--fp-rate", "0.01").ok(t, "create seen")
	sk(t, "add", path+":clients", "k").ok(t, "add")
	before, err := sketch.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if out := sk(t, "rm", path+":clients").ok(t, "rm FILE:NAME"); !strings.HasPrefix(out, "removed "+path+":clients (countmin, ") {
		t.Errorf("rm FILE:NAME: %q", out)
	}
	var fi sketch.FileInfo
	if err := json.Unmarshal([]byte(sk(t, "inspect", "--json", path).ok(t, "inspect")), &fi); err != nil {
		t.Fatal(err)
	}
	if len(fi.Entries) != 1 || fi.Entries[0].Name != "seen" || fi.Removed != 1 {
		t.Errorf("inspect after rm: entries %+v, %d removed; want seen alone and 1 removed", fi.Entries, fi.Removed)
	}
	sk(t, "check", path).ok(t, "check after rm")
	if r := sk(t, "rm", path+":clients"); r.code != 1 || !strings.Contains(r.stderr, "no structure named clients (it has seen)") {
		t.Errorf("rm of a removed name: exit %d, %q", r.code, r.stderr)
	}
	if r := sk(t, "query", path+":clients", "k"); r.code != 1 {
		t.Errorf("query of a removed name: exit %d, %q", r.code, r.stdout)
	}

	// The name takes another kind, in the room.
	sk(t, "create", path+":clients", "--kind", "bloom", "--capacity", "100", "--fp-rate", "0.01").ok(t, "create clients again")
	if out := sk(t, "query", path+":clients", "k").ok(t, "query the new clients"); !strings.Contains(out, "definitely absent") {
		t.Errorf("the new clients: %q", out)
	}
	after, err := sketch.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	if after.Removed != 0 || after.Entries[0].Name != "clients" || after.Entries[0].Offset != before.Entries[0].Offset {
		t.Errorf("after the create: %+v, %d removed; want clients at %d", after.Entries, after.Removed, before.Entries[0].Offset)
	}
	sk(t, "check", path).ok(t, "check after the reuse")

	alone := filepath.Join(t.TempDir(), "alone.cms")
	sk(t, "create", alone, "--kind", "countmin", "--rows", "1", "--width", "64").ok(t, "create a standalone sketch")
	if r := sk(t, "rm", alone+":x"); r.code != 2 {
		t.Errorf("rm FILE:NAME of a standalone file: exit %d, %q", r.code, r.stderr)
	}
}
