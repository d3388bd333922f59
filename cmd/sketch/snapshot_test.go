//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshot_CountMin: a snapshot of a sketch answers as the sketch
// does, is frozen, and is a new file: a DST that exists is refused and
// left as it was.
func TestSnapshot_CountMin(t *testing.T) {
	src := create(t, "c.cms", "--rows", "4", "--width", "1024")
	skIn(t, strings.NewReader("a\nb\na\nc\na\n"), "add", src).ok(t, "add")
	dst := filepath.Join(t.TempDir(), "copy.cms")
	out := sk(t, "snapshot", src, dst).ok(t, "snapshot")
	if !strings.Contains(out, "snapshot of "+src+" in "+dst+": Count-Min sketch, 4 x 1024 counters") {
		t.Errorf("snapshot printed %q", out)
	}
	want := sk(t, "query", src, "a", "b", "c", "d").ok(t, "query the source")
	if got := sk(t, "query", dst, "a", "b", "c", "d").ok(t, "query the snapshot"); got != want {
		t.Errorf("the snapshot answers\n%s\nthe source\n%s", got, want)
	}
	if s := cmsStats(t, dst); !s.Frozen || s.Total != 5 {
		t.Errorf("the snapshot's stats: frozen %v, total %d; want true, 5", s.Frozen, s.Total)
	}
	if r := sk(t, "add", dst, "x"); r.code != 1 || !strings.Contains(r.stderr, "frozen") {
		t.Errorf("add to the snapshot: exit %d, %q; want 1, frozen", r.code, r.stderr)
	}
	before, _ := os.ReadFile(dst)
	if r := sk(t, "snapshot", src, dst); r.code != 1 || !strings.Contains(r.stderr, dst+" exists") {
		t.Errorf("snapshot onto an existing file: exit %d, %q; want 1, exists", r.code, r.stderr)
	}
	if after, _ := os.ReadFile(dst); string(after) != string(before) {
		t.Error("a refused snapshot changed the file at DST")
	}
	if r := sk(t, "snapshot", src); r.code != 2 {
		t.Errorf("snapshot without DST: exit %d, want 2", r.code)
	}
}

// TestSnapshot_WindowInArena: a window in an arena, named FILE:NAME,
// becomes one plain sketch of its periods, and an arena named whole
// becomes an arena; two hosts' snapshots merge.
func TestSnapshot_WindowInArena(t *testing.T) {
	arena := create(t, "h1.arena", "--kind", "arena", "--size", "8M")
	sk(t, "create", arena+":clients", "--kind", "countminwindow", "--keep", "3", "--rows", "4", "--width", "1024").ok(t, "create the window")
	skIn(t, strings.NewReader("a\nb\na\n"), "add", arena+":clients").ok(t, "add")
	sk(t, "rotate", arena+":clients").ok(t, "rotate")
	skIn(t, strings.NewReader("a\nc\n"), "add", arena+":clients").ok(t, "add")

	dir := t.TempDir()
	one := filepath.Join(dir, "h1.cms")
	var js struct {
		File, Source, Kind, Description string
		Bytes                           uint64
		Seconds                         float64
		Oldest, Current                 uint64
	}
	decode(t, sk(t, "snapshot", "--json", arena+":clients", one).ok(t, "snapshot of the window"), &js)
	if js.Kind != "countmin" || js.Oldest != 0 || js.Current != 1 || js.File != one || js.Source != arena+":clients" {
		t.Errorf("snapshot --json: %+v; want a countmin of periods 0-1", js)
	}
	if got := sk(t, "query", one, "a", "b", "c").ok(t, "query"); !strings.HasPrefix(got, "a\t3\t") || !strings.Contains(got, "\nb\t1\t") || !strings.Contains(got, "\nc\t1\t") {
		t.Errorf("the window's snapshot answers\n%s, want a 3, b 1, c 1", got)
	}

	whole := filepath.Join(dir, "copy.arena")
	sk(t, "snapshot", arena, whole).ok(t, "snapshot of the arena")
	if got, want := sk(t, "query", whole+":clients", "a").ok(t, "query"), sk(t, "query", arena+":clients", "a").ok(t, "query"); got != want {
		t.Errorf("the arena's snapshot answers %q, the arena %q", got, want)
	}

	// A second host of the same seed; a collector merges the two.
	host2 := filepath.Join(dir, "h2.cms")
	sk(t, "create", host2, "--seed-from", one, "--rows", "4", "--width", "1024").ok(t, "create host 2")
	skIn(t, strings.NewReader("a\nd\n"), "add", host2).ok(t, "add")
	two := filepath.Join(dir, "h2.snap.cms")
	sk(t, "snapshot", host2, two).ok(t, "snapshot of host 2")
	total := filepath.Join(dir, "total.cms")
	sk(t, "create", total, "--seed-from", one, "--rows", "4", "--width", "1024").ok(t, "create the total")
	sk(t, "merge", total, one, two).ok(t, "merge the snapshots")
	if got := sk(t, "query", total, "a", "d").ok(t, "query"); !strings.HasPrefix(got, "a\t4\t") || !strings.Contains(got, "\nd\t1\t") {
		t.Errorf("the merged snapshots answer\n%s, want a 4, d 1", got)
	}
}
