//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type allowJSON struct {
	Key        string `json:"key"`
	Allowed    bool   `json:"allowed"`
	Counted    bool   `json:"counted"`
	Estimate   uint64 `json:"estimate"`
	Low        uint64 `json:"low"`
	Turns      int    `json:"turns"`
	RetryAfter int64  `json:"retry_after"`
	Period     uint64 `json:"period"`
}

// TestAllow: a key's requests are allowed up to the limit and refused
// after it with exit 4, counted or not as asked; a refusal names the turns
// until one more fits, and after them the key is allowed again.
func TestAllow(t *testing.T) {
	rate := create(t, "rate.cmw", "--kind", "countminwindow", "--keep", "2", "--rows", "4", "--width", "65536")
	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf("client\tallowed\t%d (at least ", i)
		if out := sk(t, "allow", "--limit", "3", rate, "client").ok(t, "allow"); !strings.HasPrefix(out, want) {
			t.Fatalf("request %d: %q, want %q...", i, out, want)
		}
	}
	r := sk(t, "allow", "--limit", "3", rate, "client")
	if want := "client\trefused (not counted)\t3 (at least "; r.code != exitRefused || !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "\tretry in 2 turns\n") || r.stderr != "" {
		t.Fatalf("request 4 of 3: exit %d, %q, stderr %q; want exit 4, %q... retry in 2 turns", r.code, r.stdout, r.stderr, want)
	}
	// --count-refused counts the refusal; another key is decided apart.
	r = sk(t, "allow", "--json", "--count-refused", "--limit", "3", rate, "client", "other")
	ds := decodeLines[allowJSON](t, r.stdout)
	want := []allowJSON{
		{Key: "client", Counted: true, Estimate: 4, Turns: 2},
		{Key: "other", Allowed: true, Counted: true, Estimate: 1},
	}
	if r.code != exitRefused || len(ds) != 2 {
		t.Fatalf("--json: exit %d, %q", r.code, r.stdout)
	}
	for i := range ds {
		ds[i].Low = 0
		if ds[i] != want[i] {
			t.Errorf("--json line %d: %+v, want %+v", i, ds[i], want[i])
		}
	}
	if out := sk(t, "query", rate, "client").ok(t, "query"); !strings.HasPrefix(out, "client\t4") {
		t.Fatalf("query after the counted refusal: %q, want 4", out)
	}
	sk(t, "rotate", rate).ok(t, "rotate")
	if r := sk(t, "allow", "--limit", "3", rate, "client"); r.code != exitRefused || !strings.HasSuffix(r.stdout, "\tretry in 1 turn\n") {
		t.Fatalf("after one turn: exit %d, %q, want refused for 1 more turn", r.code, r.stdout)
	}
	sk(t, "rotate", rate).ok(t, "rotate")
	if out := sk(t, "allow", "--limit", "3", rate, "client").ok(t, "allow after the turns"); !strings.HasPrefix(out, "client\tallowed\t1 ") {
		t.Fatalf("after the turns named: %q, want allowed with 1", out)
	}
}

// TestAllow_BadInput: no limit, no key, a structure that is not a
// Count-Min window, a missing file: exit 2 or 1 with a message naming the
// file, and nothing counted.
func TestAllow_BadInput(t *testing.T) {
	rate := create(t, "rate.cmw", "--kind", "countminwindow", "--keep", "2")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"allow", rate, "k"}, exitUsage, "--limit must be given"},
		{[]string{"allow", "--limit", "0", rate, "k"}, exitUsage, "--limit must be given"},
		{[]string{"allow", "--limit", "5", rate}, exitUsage, "at least one KEY"},
		{[]string{"allow", "--limit", "5", create(t, "c.cms"), "k"}, exitFailure, "c.cms: a Count-Min sketch"},
		{[]string{"allow", "--limit", "5", create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "100"), "k"}, exitFailure, "has no rate-limit decision"},
		{[]string{"allow", "--limit", "5", filepath.Join(t.TempDir(), "missing.cmw"), "k"}, exitFailure, "missing.cmw"},
	} {
		r := sk(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d naming %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.code, c.msg)
		}
	}
	if out := sk(t, "query", rate, "k").ok(t, "query"); !strings.HasPrefix(out, "k\t0") {
		t.Errorf("a refused command counted: %q", out)
	}
}

// TestAllow_ReadOnlyUser: a user who may only read the window cannot
// count requests in it: exit 1, naming the file, and nothing counted.
func TestAllow_ReadOnlyUser(t *testing.T) {
	dir := usersDir(t, "sketch-cli-allow-", 0o755)
	rate := filepath.Join(dir, "rate.cmw")
	sk(t, "create", rate, "--kind", "countminwindow", "--keep", "2", "--mode", "0644").ok(t, "create")
	r := asNobody(t, "allow", "--limit", "5", rate, "k")
	if r.code != exitFailure || !strings.Contains(r.stderr, rate) {
		t.Fatalf("allow as a reader: exit %d, %q, %q; want 1 naming the file", r.code, r.stdout, r.stderr)
	}
	if out := sk(t, "query", rate, "k").ok(t, "query"); !strings.HasPrefix(out, "k\t0") {
		t.Errorf("a reader counted a request: %q", out)
	}
}

// TestAllow_Processes: four processes decide requests for one key against
// one limit at once. None is allowed past the limit; at most one request
// of each other process is refused early (the races the library names),
// and the window holds every request counted.
func TestAllow_Processes(t *testing.T) {
	rate := create(t, "rate.cmw", "--kind", "countminwindow", "--keep", "2", "--rows", "4", "--width", "65536")
	const procs, each, limit = 4, 15, 40
	keys := make([]string, each)
	for i := range keys {
		keys[i] = "client"
	}
	outs := make([]result, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			outs[p] = skCmd(t, exec.Command(bin, append([]string{"allow", "--json", "--limit", fmt.Sprint(limit), rate}, keys...)...), nil)
		})
	}
	wg.Wait()
	allowed, counted := 0, 0
	for p, r := range outs {
		if r.code != exitOK && r.code != exitRefused {
			t.Fatalf("process %d: exit %d, %s", p, r.code, r.stderr)
		}
		for _, d := range decodeLines[allowJSON](t, r.stdout) {
			if d.Allowed {
				allowed++
			}
			if d.Counted {
				counted++
			}
		}
	}
	if allowed > limit || allowed < limit-(procs-1) {
		t.Fatalf("%d of %d requests allowed against a limit of %d, want %d to %d", allowed, procs*each, limit, limit-(procs-1), limit)
	}
	if out := sk(t, "query", rate, "client").ok(t, "query"); !strings.HasPrefix(out, fmt.Sprintf("client\t%d\t", counted)) && out != fmt.Sprintf("client\t%d\n", counted) {
		t.Fatalf("query: %q, want the %d requests counted", out, counted)
	}
	t.Logf("%d of %d requests allowed against a limit of %d; %d counted", allowed, procs*each, limit, counted)
}

// TestAddIfAbsent_Processes: eight processes ban one key at once with add
// --if-absent: exactly one adds it, and one del unbans it.
func TestAddIfAbsent_Processes(t *testing.T) {
	arena := filepath.Join(t.TempDir(), "gw.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "1M").ok(t, "create arena")
	banned := arena + ":banned"
	sk(t, "create", banned, "--kind", "countingbloom", "--capacity", "1000").ok(t, "create banned")
	const procs = 8
	outs := make([]result, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() { outs[p] = skCmd(t, exec.Command(bin, "add", "--if-absent", banned, "mallory"), nil) })
	}
	wg.Wait()
	added := 0
	for p, r := range outs {
		switch out := r.ok(t, fmt.Sprintf("process %d", p)); out {
		case "mallory\tadded\n":
			added++
		case "mallory\tpresent\n":
		default:
			t.Fatalf("process %d: %q", p, out)
		}
	}
	if added != 1 {
		t.Fatalf("%d of %d processes added the key, want exactly 1", added, procs)
	}
	if out := sk(t, "query", banned, "mallory").ok(t, "query"); out != "mallory\tprobably present, count 1\n" {
		t.Fatalf("query after the bans: %q, want a count of 1", out)
	}
	if out := sk(t, "del", banned, "mallory", "mallory").ok(t, "del"); out != "mallory\tremoved\t0\nmallory\tabsent\n" {
		t.Fatalf("del twice: %q, want removed then absent", out)
	}
	// From standard input: each key once, however often it comes.
	out := skIn(t, strings.NewReader("a\nb\na\nb\nc\n"), "add", "--if-absent", "--json", banned).ok(t, "add --if-absent from stdin")
	var sum struct {
		File  string `json:"file"`
		Keys  uint64 `json:"keys"`
		Added uint64 `json:"added"`
	}
	decode(t, out, &sum)
	if sum.Keys != 5 || sum.Added != 3 || sum.File != banned {
		t.Fatalf("add --if-absent from stdin: %+v, want 3 of 5 added to %s", sum, banned)
	}
	if out := sk(t, "query", banned, "a", "b", "c").ok(t, "query"); out != "a\tprobably present, count 1\nb\tprobably present, count 1\nc\tprobably present, count 1\n" {
		t.Fatalf("query: %q, want 1 each", out)
	}
}

// TestAddIfAbsent_BadInput: --if-absent and del refuse what is not a
// counting Bloom filter, and --if-absent refuses -n and --weighted.
func TestAddIfAbsent_BadInput(t *testing.T) {
	cbf := create(t, "b.cbf", "--kind", "countingbloom", "--capacity", "100")
	bloom := create(t, "b.bloom", "--kind", "bloom", "--capacity", "100")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"add", "--if-absent", "-n", "2", cbf, "k"}, exitUsage, "not with -n or --weighted"},
		{[]string{"add", "--if-absent", "--weighted", cbf}, exitUsage, "not with -n or --weighted"},
		{[]string{"add", "--if-absent", bloom, "k"}, exitFailure, "b.bloom: a Bloom filter"},
		{[]string{"del", bloom, "k"}, exitFailure, "has no del"},
		{[]string{"del", cbf}, exitUsage, "at least one KEY"},
		{[]string{"del", filepath.Join(t.TempDir(), "missing.cbf"), "k"}, exitFailure, "missing.cbf"},
	} {
		r := sk(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d naming %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.code, c.msg)
		}
	}
	if _, err := os.Stat(bloom); err != nil {
		t.Fatal(err)
	}
	if out := sk(t, "query", bloom, "k").ok(t, "query"); out != "k\tdefinitely absent\n" {
		t.Errorf("a refused --if-absent added to the Bloom filter: %q", out)
	}
}
