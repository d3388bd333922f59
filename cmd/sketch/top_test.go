//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

type topJSON struct {
	Rank     int    `json:"rank"`
	Key      string `json:"key"`
	Length   int    `json:"length"`
	Estimate uint64 `json:"estimate"`
	Low      uint64 `json:"low"`
}

// loudInput is keys "loud-i" i*10 times for i in 1..n, and once-seen
// keys between them.
func loudInput(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		for j := range i * 10 {
			fmt.Fprintf(&b, "loud-%02d\nonce-%d-%d\n", i, i, j)
		}
	}
	return b.String()
}

// TestTop lists a sketch's and an arena window's candidate tables,
// loudest first, as text and JSON; a sketch without a table is refused.
func TestTop(t *testing.T) {
	cms := create(t, "top.cms", "--rows", "4", "--width", "65536", "--candidates", "8")
	skIn(t, strings.NewReader(loudInput(12)), "add", cms).ok(t, "add")
	out := sk(t, "top", "-n", "3", cms).ok(t, "top")
	want := "1\tloud-12\t120\tbetween"
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], want) || !strings.HasPrefix(lines[2], "3\tloud-10\t100\t") {
		t.Errorf("top -n 3:\n%s", out)
	}
	hs := decodeLines[topJSON](t, sk(t, "top", "--json", "-n", "0", cms).ok(t, "top --json"))
	if len(hs) != 8 {
		t.Fatalf("top -n 0 listed %d, want the table's 8", len(hs))
	}
	for i, h := range hs {
		if want := fmt.Sprintf("loud-%02d", 12-i); h.Rank != i+1 || h.Key != want || h.Estimate != uint64(10*(12-i)) || h.Low > h.Estimate {
			t.Errorf("line %d: %+v, want %s", i, h, want)
		}
	}
	if st := sk(t, "stats", cms).ok(t, "stats"); !strings.Contains(st, "candidates") || !strings.Contains(st, "8 listed at most; 8 of 8 ways hold a key") {
		t.Errorf("stats does not show the table:\n%s", st)
	}

	arena := filepath.Join(t.TempDir(), "a.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "8M").ok(t, "create arena")
	sk(t, "create", arena+":clients", "--kind", "countminwindow", "--keep", "2", "--candidates", "4").ok(t, "create window")
	skIn(t, strings.NewReader(loudInput(6)), "add", arena+":clients").ok(t, "add to window")
	if out := sk(t, "top", arena+":clients").ok(t, "top of a window"); !strings.HasPrefix(out, "1\tloud-06\t60\t") || strings.Count(out, "\n") != 4 {
		t.Errorf("top of a window:\n%s", out)
	}

	plain := create(t, "plain.cms")
	if r := sk(t, "top", plain); r.code != 1 || !strings.Contains(r.stderr, "candidate table") {
		t.Errorf("top of a sketch without a table: exit %d, %q", r.code, r.stderr)
	}
	bloom := create(t, "b.bloom", "--kind", "bloom", "--capacity", "100")
	if r := sk(t, "top", bloom); r.code != 1 || !strings.Contains(r.stderr, "candidate table") {
		t.Errorf("top of a Bloom filter: exit %d, %q", r.code, r.stderr)
	}
	if r := sk(t, "create", filepath.Join(t.TempDir(), "x.bloom"), "--kind", "bloom", "--capacity", "10", "--candidates", "4"); r.code != 2 {
		t.Errorf("--candidates on a Bloom filter: exit %d, want 2", r.code)
	}
}

// TestWatch_Loudest: watch shows the loudest keys of a candidate table.
func TestWatch_Loudest(t *testing.T) {
	cms := create(t, "w.cms", "--rows", "4", "--width", "65536", "--candidates", "8")
	skIn(t, strings.NewReader(loudInput(9)), "add", cms).ok(t, "add")
	out := sk(t, "watch", "--count", "1", cms).ok(t, "watch")
	if !strings.Contains(out, "loudest_#1=loud-09:90") || !strings.Contains(out, "loudest_#5=loud-05:50") || strings.Contains(out, "loudest_#6") {
		t.Errorf("watch of a sketch with a table:\n%s", out)
	}
	arena := filepath.Join(t.TempDir(), "a.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "8M").ok(t, "create arena")
	sk(t, "create", arena+":clients", "--kind", "countminwindow", "--keep", "2", "--candidates", "4").ok(t, "create window")
	skIn(t, strings.NewReader(loudInput(3)), "add", arena+":clients").ok(t, "add")
	if out := sk(t, "watch", "--count", "1", arena).ok(t, "watch arena"); !strings.Contains(out, "loudest loud-03 (30)") {
		t.Errorf("watch of an arena:\n%s", out)
	}
}
