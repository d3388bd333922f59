//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuery_CountingBloomPresence: query on a counting Bloom filter says
// present or absent as a Bloom filter's does, with the count (15 or more
// where the counters stick); --json keeps {"key", "count", "present"};
// add still prints the count.
func TestQuery_CountingBloomPresence(t *testing.T) {
	cbf := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "1000")
	if out := sk(t, "add", cbf, "one").ok(t, "add"); out != "one\t1\n" {
		t.Errorf("add %s one = %q, want the count", cbf, out)
	}
	sk(t, "add", "-n", "20", cbf, "loud").ok(t, "add -n 20")
	out := sk(t, "query", cbf, "one", "loud", "never").ok(t, "query")
	if want := "one\tprobably present, count 1\nloud\tprobably present, count 15 or more\nnever\tdefinitely absent\n"; out != want {
		t.Errorf("query = %q, want %q", out, want)
	}
	as := decodeLines[cbfAnswerJSON](t, sk(t, "query", "--json", cbf, "loud", "never").ok(t, "query --json"))
	if len(as) != 2 || as[0] != (cbfAnswerJSON{Key: "loud", Count: 15, Present: true}) || as[1] != (cbfAnswerJSON{Key: "never"}) {
		t.Errorf("query --json = %+v", as)
	}
}

// TestQuery_NoKeys: query with no KEY reads standard input; when that
// holds no key (empty, or empty lines only) it says so with the usage,
// exit 2, with or without --top, as del and allow do with no KEY. A
// distinct count needs no key.
func TestQuery_NoKeys(t *testing.T) {
	cms := create(t, "c.cms", "--rows", "2", "--width", "64")
	for _, in := range []string{"", "\n\n\r\n"} {
		for _, args := range [][]string{{"query", cms}, {"query", cms, "-"}, {"query", "--top", "3", cms}} {
			r := skIn(t, strings.NewReader(in), args...)
			if r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "no KEY") || !strings.Contains(r.stderr, "usage: sketch query") {
				t.Errorf("sketch %s < %q: exit %d, stdout %q, stderr %q; want 2 saying there was no key", strings.Join(args, " "), in, r.code, r.stdout, r.stderr)
			}
		}
	}
	if out := skIn(t, strings.NewReader("\nk\n"), "query", cms).ok(t, "query from standard input"); out != "k\t0\tbetween 0 and 0\n" {
		t.Errorf("query from standard input = %q", out)
	}
	d := create(t, "d.hll", "--kind", "distinct")
	skIn(t, strings.NewReader(""), "query", d).ok(t, "query of a distinct count")
}

// TestCreate_BadConfig: a sizing or mode the library refuses is a bad
// argument: exit 2 with the usage, naming the file and the flag (not the
// library's field), and nothing made; in an arena too.
func TestCreate_BadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.cms")
	arena := create(t, "a.arena", "--kind", "arena", "--size", "1M")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", path, "--error", "2"}, "error rate 2"},
		{[]string{"create", path, "--confidence", "1.5"}, "confidence 1.5"},
		{[]string{"create", path, "--kind", "countminwindow", "--keep", "300"}, "--keep 300"},
		{[]string{"create", path, "--kind", "bloomwindow", "--capacity", "10", "--keep", "300"}, "--keep 300"},
		{[]string{"create", path, "--candidates", "-1"}, "--candidates -1"},
		{[]string{"create", path, "--candidates", "8", "--candidate-key-bytes", "100000"}, "--candidate-key-bytes 100000"},
		{[]string{"create", path, "--kind", "bloom", "--capacity", "10", "--fp-rate", "2"}, "false-positive rate 2"},
		{[]string{"create", path, "--kind", "distinct", "--precision", "30"}, "precision 30"},
		{[]string{"create", path, "--mode", "0666"}, "mode 0666"},
		{[]string{"create", arena + ":x", "--error", "2"}, "error rate 2"},
	} {
		r := sk(t, c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "usage: sketch create") ||
			strings.Contains(r.stderr, "Candidate") || !strings.Contains(r.stderr, c.args[1]) {
			t.Errorf("sketch %s: exit %d, stderr %q; want 2, the usage, and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("a refused create made %s", path)
	}
	if out := sk(t, "stats", arena).ok(t, "stats"); !strings.Contains(out, "structures  0 of ") {
		t.Errorf("a refused create made a structure: %q", out)
	}
}
