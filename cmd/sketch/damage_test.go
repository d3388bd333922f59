//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// stray writes b at offset off into the structure's region of the file at
// path, as a stray writer of the file would.
func stray(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	fi, err := sketch.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, int64(fi.Entries[0].Offset)+off); err != nil {
		t.Fatal(err)
	}
}

// TestCheck_Damaged: 4 counter bytes of a Count-Min sketch set to 0xff
// are damage, exit 5 saying so, not a torn add (3); a distinct count's
// register past the largest rank the same, and merge and export refuse
// it, naming the file.
func TestCheck_Damaged(t *testing.T) {
	path := create(t, "c.cms", "--rows", "4", "--width", "1024")
	skIn(t, strings.NewReader(strings.Repeat("alpha\nbeta\ngamma\n", 100)), "add", path).ok(t, "add")
	sk(t, "check", path).ok(t, "check before the damage")
	// Counter 9 of row 0: after the 64 add-count stripes of 64 bytes.
	stray(t, path, 64*64+9*8, []byte{0xff, 0xff, 0xff, 0xff})
	r := sk(t, "check", path)
	if r.code != 5 || !strings.Contains(r.stdout, "damaged") || strings.Contains(r.stdout, "torn add") {
		t.Errorf("check of 4 counter bytes set to 0xff: exit %d, %q, want 5 and damage", r.code, r.stdout)
	}
	var c checkOut
	r = sk(t, "check", "--json", path)
	decode(t, r.stdout, &c)
	if r.code != 5 || c.Status != "damaged" || c.ExitCode != 5 || len(c.Findings) != 1 {
		t.Errorf("check --json of damaged counters: exit %d, %+v", r.code, c)
	}

	dir := t.TempDir()
	bad, good := filepath.Join(dir, "bad.hll"), filepath.Join(dir, "good.hll")
	for _, p := range []string{bad, good} {
		sk(t, "create", p, "--kind", "distinct", "--redis").ok(t, "create "+p)
		skIn(t, strings.NewReader("a\nb\nc\n"), "add", p).ok(t, "add "+p)
	}
	stray(t, bad, 64+100, []byte{64}) // register 100: past 51, the largest rank of precision 14
	if r := sk(t, "check", bad); r.code != 5 || !strings.Contains(r.stdout, "register 100") {
		t.Errorf("check of a register past the largest rank: exit %d, %q", r.code, r.stdout)
	}
	before := sk(t, "query", good).ok(t, "query")
	if r := sk(t, "merge", good, bad); r.code != 1 || !strings.Contains(r.stderr, bad) || !strings.Contains(r.stderr, "damaged") {
		t.Errorf("merge of a damaged count: exit %d, %q, want 1 naming %s", r.code, r.stderr, bad)
	}
	if after := sk(t, "query", good).ok(t, "query"); after != before {
		t.Errorf("the refused merge changed the count: %q, then %q", before, after)
	}
	if r := sk(t, "export", "--format", "redis", bad); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, bad) {
		t.Errorf("export of a damaged count: exit %d, %d bytes out, %q", r.code, len(r.stdout), r.stderr)
	}
}
