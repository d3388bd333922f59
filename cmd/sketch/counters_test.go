//go:build linux

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch"
)

// createCounters makes a counters structure of the counters 200, 404,
// 500 and "a,b" (a name --names cannot give).
func createCounters(t *testing.T) string {
	t.Helper()
	return create(t, "status.ctr", "--kind", "counters", "--names", "200,404,500", "--name", "a,b")
}

// queryCounters is query --json of every counter.
func queryCounters(t *testing.T, file string) []sketch.NamedValue {
	t.Helper()
	return decodeLines[sketch.NamedValue](t, sk(t, "query", "--json", file).ok(t, "query --json"))
}

// TestCounters_AddQuery: counters are exactly what several add runs
// added, from the arguments (-n, --n) and from standard input (weighted
// too); query prints them all, or those named, in text and JSON.
func TestCounters_AddQuery(t *testing.T) {
	c := createCounters(t)
	if out := sk(t, "add", c, "200", "200", "404").ok(t, "add"); out != "200\t1\n200\t2\n404\t1\n" {
		t.Fatalf("add 200 200 404: %q, want each counter's value after its add", out)
	}
	sk(t, "add", "-n", "5", c, "500").ok(t, "add -n 5")
	sk(t, "add", "--n", "7", c, "a,b", "200").ok(t, "add --n 7")
	if out := skIn(t, strings.NewReader("404\n\n200\n404\n"), "add", c).ok(t, "add from standard input"); !strings.HasPrefix(out, "added 3 keys to "+c) {
		t.Fatalf("add from standard input: %q", out)
	}
	skIn(t, strings.NewReader("500\t1000\na,b\t3\n"), "add", "--weighted", c).ok(t, "add --weighted")
	want := []sketch.NamedValue{{Name: "200", Value: 10}, {Name: "404", Value: 3}, {Name: "500", Value: 1005}, {Name: "a,b", Value: 10}}
	if diff := cmp.Diff(want, queryCounters(t, c)); diff != "" {
		t.Errorf("query --json after the adds (-want +got):\n%s", diff)
	}
	if out := sk(t, "query", c).ok(t, "query"); out != "200\t10\n404\t3\n500\t1005\na,b\t10\n" {
		t.Errorf("query: %q, want every counter in the order created", out)
	}
	if out := sk(t, "query", c, "500", "200").ok(t, "query 500 200"); out != "500\t1005\n200\t10\n" {
		t.Errorf("query 500 200: %q", out)
	}
	if out := skIn(t, strings.NewReader("404\n"), "query", c, "-").ok(t, "query -"); out != "404\t3\n" {
		t.Errorf("query - of 404: %q", out)
	}
	if out := sk(t, "query", "--top", "2", c).ok(t, "query --top 2"); out != "500\t1005\n200\t10\n" {
		t.Errorf("query --top 2: %q, want the two largest, ties in name order", out)
	}
	st := sk(t, "stats", c).ok(t, "stats")
	for _, w := range []string{"counters  4 (names fixed at create)\n", "total     1028\n", "  500     1005\n", "  \"a,b\"   10\n"} {
		if !strings.Contains(st, w) {
			t.Errorf("stats:\n%s\nwant %q", st, w)
		}
	}
	var sj struct {
		Structures []struct {
			Stats sketch.CountersStats `json:"stats"`
		} `json:"structures"`
	}
	if err := json.Unmarshal([]byte(sk(t, "stats", "--json", c).ok(t, "stats --json")), &sj); err != nil {
		t.Fatal(err)
	}
	if len(sj.Structures) != 1 {
		t.Fatalf("stats --json: %+v, want one structure", sj)
	}
	if st := sj.Structures[0].Stats; st.Names != 4 || cmp.Diff(want, st.Counters) != "" {
		t.Errorf("stats --json: %d names (-want +got):\n%s", st.Names, cmp.Diff(want, st.Counters))
	}
}

// TestCounters_BadInput: an unknown name is a bad argument (exit 2)
// naming it, and nothing is added or printed; create needs names; the
// commands a counters structure does not have refuse, saying why.
func TestCounters_BadInput(t *testing.T) {
	c := createCounters(t)
	dir := t.TempDir()
	other := create(t, "other.ctr", "--kind", "counters", "--names", "200,404")
	cms := create(t, "c.cms", "--rows", "1", "--width", "64")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"add", c, "200", "201"}, exitUsage, c + " has no counter named 201; its counters are 200, 404, 500, \"a,b\""},
		{[]string{"add", "-n", "3", c, "nope"}, exitUsage, "no counter named nope"},
		{[]string{"query", c, "200", "nope"}, exitUsage, "no counter named nope"},
		{[]string{"create", filepath.Join(dir, "n.ctr"), "--kind", "counters"}, exitUsage, "needs its names"},
		{[]string{"create", filepath.Join(dir, "n.ctr"), "--kind", "counters", "--names", "a,,b"}, exitUsage, "an empty name"},
		{[]string{"create", filepath.Join(dir, "n.ctr"), "--kind", "counters", "--names", "a,b", "--name", "a"}, exitUsage, `"a", is also name 0`},
		{[]string{"create", filepath.Join(dir, "n.ctr"), "--kind", "counters", "--name", strings.Repeat("x", 65)}, exitUsage, "more than 64"},
		{[]string{"create", filepath.Join(dir, "n.cms"), "--names", "a"}, exitUsage, "--names does not size a countmin"},
		{[]string{"top", c}, exitFailure, "has no candidate table"},
		{[]string{"allow", c, "200"}, exitFailure, "has no rate-limit decision"},
		{[]string{"del", c, "200"}, exitFailure, "has no del"},
		{[]string{"rotate", c}, exitFailure, "no periods to rotate"},
		{[]string{"export", "--format", "redis", c}, exitFailure, "only a distinct count or window exports"},
		{[]string{"add", "--if-absent", c, "200"}, exitFailure, "only a countingbloom, set or setwindow adds a key once"},
		{[]string{"merge", c, other}, exitFailure, "incompatible"},
		{[]string{"merge", c, cms}, exitFailure, "cannot merge a Count-Min sketch"},
	} {
		r := sk(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || r.stdout != "" || strings.Contains(r.stderr, "panic") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d naming %q", strings.Join(tc.args, " "), tc.code, r.stdout, r.stderr, tc.code, tc.msg)
		}
	}
	if r := skIn(t, strings.NewReader("200\nnope\n"), "add", c); r.code != exitUsage || !strings.Contains(r.stderr, `no counter named "nope"`) {
		t.Errorf("add of an unknown name from standard input: exit %d, %q", r.code, r.stderr)
	}
	want := []sketch.NamedValue{{Name: "200", Value: 0}, {Name: "404", Value: 0}, {Name: "500", Value: 0}, {Name: "a,b", Value: 0}}
	if diff := cmp.Diff(want, queryCounters(t, c)); diff != "" {
		t.Errorf("a refused command counted (-want +got):\n%s", diff)
	}
}

// TestCounters_KeysAfterFile: after FILE, what reads as a flag is a
// name, added to as that name (with a note), and changes neither -n nor
// the output.
func TestCounters_KeysAfterFile(t *testing.T) {
	c := create(t, "f.ctr", "--kind", "counters", "--name=--json", "--name=-n=5", "--names", "ok")
	r := sk(t, "add", c, "--json", "-n=5", "ok")
	if r.code != exitOK || r.stdout != "--json\t1\n-n=5\t1\nok\t1\n" || !strings.Contains(r.stderr, "is a key, not a flag") {
		t.Fatalf("add FILE --json -n=5 ok: exit %d, stdout %q, stderr %q; want three names added once and a note", r.code, r.stdout, r.stderr)
	}
}

// TestCounters_ReadOnly: a frozen counters structure, or one the user
// may only read, refuses add (exit 1, naming the file) and answers
// query.
func TestCounters_ReadOnly(t *testing.T) {
	t.Run("frozen", func(t *testing.T) {
		c := createCounters(t)
		sk(t, "add", c, "404").ok(t, "add")
		sk(t, "freeze", c).ok(t, "freeze")
		r := sk(t, "add", c, "404")
		if r.code != exitFailure || !strings.Contains(r.stderr, c) || !strings.Contains(r.stderr, "frozen") || r.stdout != "" {
			t.Errorf("add on a frozen structure: exit %d, %q, %q; want 1 naming the file, frozen", r.code, r.stdout, r.stderr)
		}
		if r := sk(t, "reset", c); r.code != exitFailure || !strings.Contains(r.stderr, "frozen") {
			t.Errorf("reset of a frozen structure: exit %d, %q", r.code, r.stderr)
		}
		if out := sk(t, "query", c, "404").ok(t, "query"); out != "404\t1\n" {
			t.Errorf("query of the frozen structure: %q, want 404 at 1", out)
		}
	})
	t.Run("reader", func(t *testing.T) {
		dir := usersDir(t, "sketch-cli-counters-", 0o755)
		c := filepath.Join(dir, "status.ctr")
		sk(t, "create", c, "--kind", "counters", "--names", "200,404", "--mode", "0644").ok(t, "create")
		sk(t, "add", c, "200").ok(t, "add")
		r := asNobody(t, "add", c, "200")
		if r.code != exitFailure || !strings.Contains(r.stderr, c) || r.stdout != "" {
			t.Errorf("add as a reader: exit %d, %q, %q; want 1 naming the file", r.code, r.stdout, r.stderr)
		}
		if r := asNobody(t, "query", c); r.code != exitOK || r.stdout != "200\t1\n404\t0\n" {
			t.Errorf("query as a reader: exit %d, %q, %q; want the values", r.code, r.stdout, r.stderr)
		}
	})
}

// TestCounters_Arena: a counters structure in an arena is made, added
// to and queried as FILE:NAME; the arena's stats and watch show it,
// inspect lists its names, and rm removes it.
func TestCounters_Arena(t *testing.T) {
	arena := filepath.Join(t.TempDir(), "web.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "1M").ok(t, "create arena")
	c := arena + ":status"
	out := sk(t, "create", c, "--kind", "counters", "--names", "200,404", "--name", "x y").ok(t, "create in the arena")
	if want := "created " + c + `: counters structure, 3 exact counters (200, 404, "x y"), `; !strings.HasPrefix(out, want) {
		t.Fatalf("create: %q, want %q...", out, want)
	}
	sk(t, "add", "-n", "4", c, "404", "x y").ok(t, "add")
	if out := sk(t, "query", c).ok(t, "query"); out != "200\t0\n404\t4\n\"x y\"\t4\n" {
		t.Errorf("query: %q", out)
	}
	if out := sk(t, "stats", arena).ok(t, "arena stats"); !strings.Contains(out, "status  counters ") || !strings.Contains(out, `3 counters, total 8: 200=0 404=4 "x y"=4`) {
		t.Errorf("arena stats:\n%s\nwant a counters row", out)
	}
	if out := sk(t, "inspect", arena).ok(t, "inspect"); !strings.Contains(out, `counters=3 names_bytes=12 names=200,404,"x y"`) {
		t.Errorf("inspect:\n%s\nwant the names among the parameters", out)
	}
	var fi sketch.FileInfo
	if err := json.Unmarshal([]byte(sk(t, "inspect", "--json", arena).ok(t, "inspect --json")), &fi); err != nil {
		t.Fatal(err)
	}
	if len(fi.Entries) != 1 || !strings.Contains(sk(t, "inspect", "--json", arena).stdout, `"names":["200","404","x y"]`) {
		t.Errorf("inspect --json: %+v, want the names in its config", fi.Entries)
	}
	w := sk(t, "watch", "--count", "2", "--interval", "1ms", arena).ok(t, "watch the arena")
	if !strings.Contains(w, `404 4 (0/s)`) {
		t.Errorf("watch of the arena:\n%s\nwant 404 at 4 with its rate", w)
	}
	sk(t, "check", arena).ok(t, "check")
	if out := sk(t, "rm", c).ok(t, "rm"); !strings.HasPrefix(out, "removed "+c+" (counters, ") {
		t.Errorf("rm: %q", out)
	}
	if r := sk(t, "query", c); r.code != exitFailure {
		t.Errorf("query of the removed structure: exit %d, %q", r.code, r.stdout)
	}
}

// TestCounters_Lifecycle: snapshot, merge (which adds), reset, watch,
// freeze and check work on a counters structure as on the other kinds.
func TestCounters_Lifecycle(t *testing.T) {
	c := createCounters(t)
	sk(t, "add", "-n", "3", c, "200", "500").ok(t, "add")
	snap := filepath.Join(t.TempDir(), "snap.ctr")
	if out := sk(t, "snapshot", c, snap).ok(t, "snapshot"); !strings.Contains(out, "counters structure, 4 exact counters") || !strings.Contains(out, "frozen") {
		t.Fatalf("snapshot: %q", out)
	}
	if out := sk(t, "check", snap).ok(t, "check the snapshot"); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("check: %q", out)
	}
	// Merging adds: the snapshot twice is twice its counts, beside the
	// structure's own (no seed needed: the counters hash nothing).
	total := create(t, "total.ctr", "--kind", "counters", "--names", "200,404,500", "--name", "a,b")
	sk(t, "add", total, "404").ok(t, "add to total")
	sk(t, "merge", total, snap, snap).ok(t, "merge")
	want := []sketch.NamedValue{{Name: "200", Value: 6}, {Name: "404", Value: 1}, {Name: "500", Value: 6}, {Name: "a,b", Value: 0}}
	if diff := cmp.Diff(want, queryCounters(t, total)); diff != "" {
		t.Errorf("after merging the snapshot twice (-want +got):\n%s", diff)
	}
	if out := sk(t, "reset", c).ok(t, "reset"); !strings.HasPrefix(out, "reset "+c+" (counters structure") {
		t.Fatalf("reset: %q", out)
	}
	sk(t, "add", c, "404").ok(t, "add after the reset")
	w := decodeLines[watchLine](t, sk(t, "watch", "--json", "--count", "1", "--interval", "1ms", c).ok(t, "watch"))
	if len(w) != 1 || w[0].Kind != "counters" || w[0].Total != 1 || len(w[0].Counters) != 4 || w[0].Counters[1].Value != 1 || w[0].Counters[1].PerSecond == nil {
		t.Errorf("watch --json: %+v, want a counters structure of total 1, 404 at 1 with its rate", w)
	}
	if out := sk(t, "watch", "--count", "1", "--interval", "1ms", c).ok(t, "watch"); !strings.Contains(out, "total_counts=1") || !strings.Contains(out, "counter_404=1") {
		t.Errorf("watch: %q, want the total and each counter", out)
	}
	if out := sk(t, "freeze", c).ok(t, "freeze"); !strings.HasPrefix(out, "froze "+c) {
		t.Fatalf("freeze: %q", out)
	}
	if out := sk(t, "check", c).ok(t, "check"); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("check of the frozen structure: %q", out)
	}
}
