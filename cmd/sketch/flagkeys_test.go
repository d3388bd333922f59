//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestKeys_LookLikeFlags: add, del, allow and query take every argument
// after FILE as a key, even one that reads as their own flag: a client's
// key "--limit=1000000" cannot raise its limit, "-n 5" counts the keys
// "-n" and "5", "--" is a key. A key that reads as a flag gets a note on
// standard error, and the command goes on.
func TestKeys_LookLikeFlags(t *testing.T) {
	rate := create(t, "rate.cmw", "--kind", "countminwindow", "--keep", "2", "--rows", "4", "--width", "4096")
	r := sk(t, "allow", "--limit", "2", rate, "alice", "alice", "--limit=1000000", "alice")
	want := []string{"alice\tallowed\t1 ", "alice\tallowed\t2 ", "--limit=1000000\tallowed\t1 ", "alice\trefused (not counted)\t2 "}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != exitRefused || len(lines) != len(want) {
		t.Fatalf("allow --limit 2 %s alice alice --limit=1000000 alice: exit %d, %q; want exit 4 and alice refused the third time", rate, r.code, r.stdout)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q, want %q...", i+1, lines[i], w)
		}
	}
	if !strings.Contains(r.stderr, `note: "--limit=1000000" after FILE is a key, not a flag`) {
		t.Errorf("stderr %q, want a note that the flag-like argument is a key", r.stderr)
	}

	cms := create(t, "c.cms", "--rows", "4", "--width", "4096")
	sk(t, "add", cms, "-n", "5", "k", "--", "--json").ok(t, "add")
	for _, k := range []string{"-n", "5", "k", "--", "--json"} {
		if out := sk(t, "query", cms, k).ok(t, "query "+k); !strings.HasPrefix(out, k+"\t1\t") {
			t.Errorf("query %s %s = %q, want the key counted once", cms, k, out)
		}
	}
	if out := sk(t, "query", cms, "--top", "1").ok(t, "query --top 1 after FILE"); !strings.HasPrefix(out, "--top\t0\t") || !strings.Contains(out, "\n1\t0\t") {
		t.Errorf("query %s --top 1 = %q, want the keys --top and 1 answered", cms, out)
	}

	cbf := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "1000")
	sk(t, "add", "--if-absent", cbf, "--json").ok(t, "add --if-absent")
	if out := sk(t, "del", cbf, "--json").ok(t, "del"); out != "--json\tremoved\t0\n" {
		t.Errorf("del %s --json = %q, want the key --json removed", cbf, out)
	}

	// Before FILE, flags are flags; "--" there ends them.
	if out := sk(t, "add", "-n", "3", "--", cms, "-x").ok(t, "add -n 3 -- FILE -x"); !strings.HasPrefix(out, "-x\t3\t") {
		t.Errorf("add -n 3 -- %s -x = %q, want -x counted 3 times", cms, out)
	}

	// --owner after FILE is a key too: it cannot make a file of another
	// user trusted.
	t.Run("owner", func(t *testing.T) {
		dir := sharedDir(t)
		nobodys := filepath.Join(dir, "nobodys.cms")
		asNobody(t, "create", nobodys, "--rows", "2", "--width", "64", "--mode", "0644").ok(t, "create as nobody")
		if r := sk(t, "add", nobodys, "k", "--owner=65534"); r.code != exitFailure || !strings.Contains(r.stderr, "give --owner 65534") {
			t.Errorf("add %s k --owner=65534: exit %d, stderr %q; want 1, the file refused", nobodys, r.code, r.stderr)
		}
		if out := sk(t, "query", nobodys, "--owner=65534").ok(t, "query"); !strings.HasPrefix(out, "--owner=65534\t0\t") {
			t.Errorf("query %s --owner=65534 = %q, want the key answered, never counted", nobodys, out)
		}
	})
}

// TestKeys_Quoted: a key holding escape sequences or bytes that are not
// UTF-8, from standard input or the arguments, is echoed quoted by query,
// add, del, allow and add --if-absent, never raw: no byte of it reaches
// the terminal as it is. --json escapes it.
func TestKeys_Quoted(t *testing.T) {
	const esc, bad = "evil\x1b[2J\x1b]0;pwned\x07", "\xff\xfe"
	qesc, qbad := `"evil\x1b[2J\x1b]0;pwned\a"`, `"\xff\xfe"`
	cms := create(t, "c.cms", "--rows", "4", "--width", "4096")
	rate := create(t, "rate.cmw", "--kind", "countminwindow", "--keep", "2", "--rows", "4", "--width", "4096")
	cbf := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "1000")
	clean := func(what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\x07") || !utf8.ValidString(out) {
			t.Errorf("%s printed a key raw: %q", what, out)
		}
	}
	for _, c := range []struct {
		what  string
		stdin string
		args  []string
		want  []string // lines' prefixes
	}{
		{"query from standard input", esc + "\n" + bad + "\nplain\n", []string{"query", cms}, []string{qesc + "\t0\t", qbad + "\t0\t", "plain\t0\t"}},
		{"query --top", esc + "\n", []string{"query", "--top", "1", cms}, []string{qesc + "\t0\t"}},
		{"query", "", []string{"query", cms, esc, bad}, []string{qesc + "\t0\t", qbad + "\t0\t"}},
		{"add", "", []string{"add", cms, esc, bad}, []string{qesc + "\t1\t", qbad + "\t1\t"}},
		{"allow", "", []string{"allow", "--limit", "5", rate, esc, bad}, []string{qesc + "\tallowed\t1 ", qbad + "\tallowed\t1 "}},
		{"add --if-absent", "", []string{"add", "--if-absent", cbf, esc, bad}, []string{qesc + "\tadded", qbad + "\tadded"}},
		{"del", "", []string{"del", cbf, esc, bad, "\x1b"}, []string{qesc + "\tremoved\t0", qbad + "\tremoved\t0", `"\x1b"` + "\tabsent"}},
	} {
		out := skIn(t, strings.NewReader(c.stdin), c.args...).ok(t, c.what)
		clean(c.what, out)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != len(c.want) {
			t.Errorf("%s: %q, want %d lines", c.what, out, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%s, line %d: %q, want %q...", c.what, i+1, lines[i], w)
			}
		}
	}
	out := skIn(t, strings.NewReader(esc+"\n"+bad+"\n"), "query", "--json", cms).ok(t, "query --json")
	clean("query --json", out)
	if as := decodeLines[cmsAnswerJSON](t, out); len(as) != 2 || as[0].Key != esc || as[0].Base64 != nil || as[1].Key != "\ufffd\ufffd" || string(as[1].Base64) != bad {
		t.Errorf("query --json: %q, want the keys JSON-escaped", out)
	}
}
