//go:build linux

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rateJSON is allow --json's and query --json's line for a rate limiter.
type rateJSON struct {
	Key        string `json:"key"`
	Allowed    bool   `json:"allowed"`
	Cost       uint64 `json:"cost"`
	Remaining  uint64 `json:"remaining"`
	RetryAfter int64  `json:"retry_after"`
	ResetAfter int64  `json:"reset_after"`
}

// createGCRA makes a rate limiter of 1/h with burst 2: an idle key is
// allowed 3 at once, and the clock moves nothing while a test runs.
func createGCRA(t *testing.T, args ...string) string {
	t.Helper()
	return create(t, "rate.gcra", append([]string{"--kind", "gcra", "--rate", "1/h", "--burst", "2"}, args...)...)
}

// TestGCRA_Allow: a key is allowed burst+1 requests at once, remaining
// 2, 1, 0, then refused with exit 4; the keys of one allow are decided at
// one moment, so the durations are whole hours.
func TestGCRA_Allow(t *testing.T) {
	rate := createGCRA(t, "--keys", "64")
	r := sk(t, "allow", rate, "client", "client", "client", "client")
	want := "client\tallowed\tremaining 2\tretry after 0s\treset after 1h0m0s\n" +
		"client\tallowed\tremaining 1\tretry after 0s\treset after 2h0m0s\n" +
		"client\tallowed\tremaining 0\tretry after 0s\treset after 3h0m0s\n" +
		"client\trefused\tremaining 0\tretry after 1h0m0s\treset after 3h0m0s\n"
	if r.code != exitRefused || r.stdout != want || r.stderr != "" {
		t.Fatalf("allow 4 of burst 2: exit %d, stdout %q, stderr %q; want exit 4 and\n%s", r.code, r.stdout, r.stderr, want)
	}
	// Another key is decided apart, and an all-allowed run exits 0.
	if out := sk(t, "allow", rate, "other").ok(t, "allow other"); out != "other\tallowed\tremaining 2\tretry after 0s\treset after 1h0m0s\n" {
		t.Fatalf("allow other: %q", out)
	}
	// query peeks: what a request of cost 1 would get now, counting nothing.
	out := sk(t, "query", rate, "fresh", "fresh").ok(t, "query")
	if want := "fresh\twould be allowed\tremaining 3\tretry after 0s\treset after 0s\n"; out != want+want {
		t.Fatalf("query of an idle key twice: %q, want %q twice", out, want)
	}
	out = sk(t, "query", rate, "client").ok(t, "query")
	if !strings.HasPrefix(out, "client\twould be refused\tremaining 0\tretry after ") {
		t.Fatalf("query of the refused key: %q, want would be refused", out)
	}
	if out := sk(t, "query", "--top", "1", rate, "other", "fresh", "client").ok(t, "query --top"); !strings.HasPrefix(out, "client\t") {
		t.Fatalf("query --top 1: %q, want the busiest key, client", out)
	}
	st := sk(t, "stats", rate).ok(t, "stats")
	for _, w := range []string{"allowed  4 (costing 4)\n", "refused  1\n"} {
		if !strings.Contains(st, w) {
			t.Errorf("stats after 4 allowed and 1 refused:\n%s\nwant %q", st, w)
		}
	}
}

// TestGCRA_AllowJSON: --json's lines parse, with the durations in
// nanoseconds, and --cost takes that much of the burst at once.
func TestGCRA_AllowJSON(t *testing.T) {
	rate := createGCRA(t)
	r := sk(t, "allow", "--json", "--cost", "2", rate, "a", "a", "b")
	got := decodeLines[rateJSON](t, r.stdout)
	want := []rateJSON{
		{Key: "a", Allowed: true, Cost: 2, Remaining: 1, ResetAfter: int64(2 * time.Hour)},
		{Key: "a", Cost: 2, Remaining: 1, RetryAfter: int64(time.Hour), ResetAfter: int64(2 * time.Hour)},
		{Key: "b", Allowed: true, Cost: 2, Remaining: 1, ResetAfter: int64(2 * time.Hour)},
	}
	if r.code != exitRefused || len(got) != len(want) {
		t.Fatalf("allow --json --cost 2: exit %d, %q; want exit 4 and %d lines", r.code, r.stdout, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// A peek's JSON: cost 0, a separate run, so its times are bounded,
	// not exact.
	p := decodeLines[rateJSON](t, sk(t, "query", "--json", rate, "a").ok(t, "query --json"))
	if len(p) != 1 || p[0].Cost != 0 || p[0].Allowed != true || p[0].Remaining != 1 ||
		p[0].ResetAfter <= int64(time.Hour) || p[0].ResetAfter > int64(2*time.Hour) {
		t.Fatalf("query --json a: %+v, want would be allowed, remaining 1, reset after in (1h, 2h]", p)
	}
}

// TestGCRA_BadInput: what a rate limiter refuses, with the exit code and
// a message that says why, and nothing counted.
func TestGCRA_BadInput(t *testing.T) {
	rate := createGCRA(t)
	dir := t.TempDir()
	cmw := create(t, "rate.cmw", "--kind", "countminwindow", "--keep", "2")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"create", filepath.Join(dir, "n.gcra"), "--kind", "gcra"}, exitUsage, "needs --rate"},
		{[]string{"create", filepath.Join(dir, "n.gcra"), "--kind", "gcra", "--burst", "5"}, exitUsage, "needs --rate"},
		{[]string{"create", filepath.Join(dir, "n.gcra"), "--kind", "gcra", "--rate", "10"}, exitUsage, `--rate: invalid argument: rate "10"`},
		{[]string{"create", filepath.Join(dir, "n.gcra"), "--kind", "gcra", "--rate", "0/s"}, exitUsage, "at least 1"},
		{[]string{"create", filepath.Join(dir, "n.gcra"), "--kind", "gcra", "--rate", "10/fortnight"}, exitUsage, "not s, m, h or a positive duration"},
		{[]string{"create", filepath.Join(dir, "n.gcra"), "--kind", "gcra", "--rate", "10/s", "--keys", "8", "--rows", "2", "--width", "64"}, exitUsage, "give either --keys or --rows and --width"},
		{[]string{"create", filepath.Join(dir, "n.gcra"), "--kind", "gcra", "--rate", "10/s", "--rows", "17", "--width", "64"}, exitUsage, "rows 17"},
		{[]string{"create", filepath.Join(dir, "n.cms"), "--rate", "10/s"}, exitUsage, "--rate does not size a countmin"},
		{[]string{"allow", "--cost", "4", rate, "k"}, exitUsage, "a cost of 4 is more than the burst allows at once (3)"},
		{[]string{"allow", "--cost", "0", rate, "k"}, exitUsage, "--cost must be at least 1"},
		{[]string{"allow", "--limit", "5", rate, "k"}, exitUsage, "--limit and --count-refused are a Count-Min window's"},
		{[]string{"allow", "--cost", "2", "--limit", "5", cmw, "k"}, exitUsage, "--cost is a rate limiter's"},
		{[]string{"allow", rate}, exitUsage, "at least one KEY"},
		{[]string{"add", rate, "k"}, exitFailure, "rate.gcra: a rate limiter has no add: sketch allow"},
		{[]string{"add", rate}, exitFailure, "a rate limiter has no add"},
		{[]string{"del", rate, "k"}, exitFailure, "has no del"},
		{[]string{"rotate", rate}, exitFailure, "no periods to rotate"},
		{[]string{"top", rate}, exitFailure, "has no candidate table"},
		{[]string{"merge", rate, cmw}, exitFailure, "cannot merge a Count-Min window"},
	} {
		r := sk(t, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d naming %q", strings.Join(c.args, " "), r.code, r.stdout, r.stderr, c.code, c.msg)
		}
	}
	if out := sk(t, "query", rate, "k").ok(t, "query"); !strings.HasPrefix(out, "k\twould be allowed\tremaining 3\t") {
		t.Errorf("a refused command counted: %q", out)
	}
}

// TestGCRA_KeysAfterFile: a key that reads as allow's flag is a key,
// decided as that key (with a note), and changes neither the cost nor the
// limiter.
func TestGCRA_KeysAfterFile(t *testing.T) {
	rate := createGCRA(t)
	r := sk(t, "allow", rate, "--cost=3", "--json")
	want := "--cost=3\tallowed\tremaining 2\tretry after 0s\treset after 1h0m0s\n" +
		"--json\tallowed\tremaining 2\tretry after 0s\treset after 1h0m0s\n"
	if r.code != exitOK || r.stdout != want || !strings.Contains(r.stderr, "is a key, not a flag") {
		t.Fatalf("allow FILE --cost=3 --json: exit %d, stdout %q, stderr %q; want two keys of cost 1 and a note", r.code, r.stdout, r.stderr)
	}
}

// TestGCRA_Arena: a rate limiter is made in an arena as FILE:NAME with
// the arena's seed, decides there, and stats and inspect show its rate
// and burst.
func TestGCRA_Arena(t *testing.T) {
	arena := filepath.Join(t.TempDir(), "gw.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "4M").ok(t, "create arena")
	rl := arena + ":per-client"
	out := sk(t, "create", rl, "--kind", "gcra", "--rate", "10r/s", "--burst", "20", "--rows", "2", "--width", "1000").ok(t, "create in the arena")
	if want := "created " + rl + ": rate limiter (GCRA), 10/s burst 20, 2 x 1024 times, "; !strings.HasPrefix(out, want) {
		t.Fatalf("create: %q, want %q...", out, want)
	}
	if r := sk(t, "create", rl, "--kind", "gcra", "--rate", "10/s", "--seed-file", "-"); r.code != exitUsage || !strings.Contains(r.stderr, "whose file has its mode and seed") {
		t.Errorf("create in an arena with --seed-file: exit %d, %q", r.code, r.stderr)
	}
	if out := sk(t, "allow", rl, "192.0.2.7").ok(t, "allow"); !strings.HasPrefix(out, "192.0.2.7\tallowed\tremaining 20\t") {
		t.Fatalf("allow in the arena: %q", out)
	}
	st := sk(t, "stats", rl).ok(t, "stats")
	for _, w := range []string{"rate     10/s (a request every 100ms in the long run)\n", "burst    20 (an idle key is allowed 21 at once)\n", "shape    2 x 1024 times\n", "allowed  1 (costing 1)\n"} {
		if !strings.Contains(st, w) {
			t.Errorf("stats:\n%s\nwant %q", st, w)
		}
	}
	var sj struct {
		File       string `json:"file"`
		Structures []struct {
			Name  string `json:"name"`
			Kind  string `json:"kind"`
			Stats struct {
				Rate  struct{ Count, Per int64 } `json:"rate"`
				Burst uint64                     `json:"burst"`
			} `json:"stats"`
		} `json:"structures"`
	}
	if err := json.Unmarshal([]byte(sk(t, "stats", "--json", rl).ok(t, "stats --json")), &sj); err != nil {
		t.Fatal(err)
	}
	if s := sj.Structures; len(s) != 1 || s[0].Kind != "gcra" || s[0].Stats.Rate.Count != 10 || s[0].Stats.Rate.Per != int64(time.Second) || s[0].Stats.Burst != 20 {
		t.Errorf("stats --json: %+v, want a gcra of 10 per second, burst 20", sj)
	}
	if out := sk(t, "stats", arena).ok(t, "arena stats"); !strings.Contains(out, "per-client  gcra ") || !strings.Contains(out, "10/s burst 20: 1 allowed, 0 refused") {
		t.Errorf("arena stats:\n%s\nwant a gcra row", out)
	}
	if out := sk(t, "inspect", arena).ok(t, "inspect"); !strings.Contains(out, "burst=20 rate_count=10 rate_per_seconds=1 rows=2 width=1024") {
		t.Errorf("inspect:\n%s\nwant the rate and burst among the parameters", out)
	}
}

// TestGCRA_ReadOnly: a frozen rate limiter, or one the user may only
// read, decides nothing: allow refuses with exit 1, naming the file, and
// nothing is counted; query's peek, which counts nothing, answers.
func TestGCRA_ReadOnly(t *testing.T) {
	checkPeek := func(t *testing.T, r result, who string) {
		t.Helper()
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "k\t") {
			t.Errorf("query %s: exit %d, %q, %q; want a peek's answer", who, r.code, r.stdout, r.stderr)
		}
	}
	t.Run("frozen", func(t *testing.T) {
		rate := createGCRA(t)
		sk(t, "allow", rate, "k").ok(t, "allow")
		sk(t, "freeze", rate).ok(t, "freeze")
		r := sk(t, "allow", rate, "k")
		if r.code != exitFailure || !strings.Contains(r.stderr, rate) || !strings.Contains(r.stderr, "frozen") || r.stdout != "" {
			t.Errorf("allow on a frozen limiter: exit %d, %q, %q; want 1 naming the file, frozen", r.code, r.stdout, r.stderr)
		}
		checkPeek(t, sk(t, "query", rate, "k"), "on a frozen limiter")
		if out := sk(t, "stats", rate).ok(t, "stats"); !strings.Contains(out, "allowed  1 (costing 1)\n") || !strings.Contains(out, "frozen   yes\n") {
			t.Errorf("stats of the frozen limiter:\n%s\nwant 1 allowed, frozen", out)
		}
	})
	t.Run("reader", func(t *testing.T) {
		dir := usersDir(t, "sketch-cli-gcra-", 0o755)
		rate := filepath.Join(dir, "rate.gcra")
		sk(t, "create", rate, "--kind", "gcra", "--rate", "1/h", "--burst", "2", "--mode", "0644").ok(t, "create")
		r := asNobody(t, "allow", rate, "k")
		if r.code != exitFailure || !strings.Contains(r.stderr, rate) || r.stdout != "" {
			t.Errorf("allow as a reader: exit %d, %q, %q; want 1 naming the file", r.code, r.stdout, r.stderr)
		}
		checkPeek(t, asNobody(t, "query", rate, "k"), "as a reader")
		if out := sk(t, "stats", rate).ok(t, "stats"); !strings.Contains(out, "allowed  0 (costing 0)\n") {
			t.Errorf("a reader decided a request:\n%s", out)
		}
	})
}

// TestGCRA_Lifecycle: snapshot, merge, reset, check, freeze and watch
// work on a rate limiter as on the other kinds.
func TestGCRA_Lifecycle(t *testing.T) {
	rate := createGCRA(t, "--keys", "64")
	sk(t, "allow", rate, "a", "a", "a").ok(t, "allow")
	snap := filepath.Join(t.TempDir(), "snap.gcra")
	if out := sk(t, "snapshot", rate, snap).ok(t, "snapshot"); !strings.Contains(out, "rate limiter (GCRA), 1/h burst 2") || !strings.Contains(out, "frozen") {
		t.Fatalf("snapshot: %q", out)
	}
	if out := sk(t, "check", snap).ok(t, "check the snapshot"); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("check: %q", out)
	}
	// A limiter with the seed of the first merges the snapshot: a is as
	// busy in it.
	other := filepath.Join(t.TempDir(), "other.gcra")
	sk(t, "create", other, "--kind", "gcra", "--rate", "1/h", "--burst", "2", "--keys", "64", "--seed-from", rate).ok(t, "create other")
	sk(t, "merge", other, snap).ok(t, "merge")
	if r := sk(t, "allow", other, "a"); r.code != exitRefused || !strings.HasPrefix(r.stdout, "a\trefused\tremaining 0\t") {
		t.Fatalf("allow after the merge: exit %d, %q; want refused", r.code, r.stdout)
	}
	// Another rate does not merge.
	slow := filepath.Join(t.TempDir(), "slow.gcra")
	sk(t, "create", slow, "--kind", "gcra", "--rate", "1/m", "--burst", "2", "--keys", "64", "--seed-from", rate).ok(t, "create slow")
	if r := sk(t, "merge", slow, snap); r.code != exitFailure || !strings.Contains(r.stderr, "incompatible") {
		t.Errorf("merge of another rate: exit %d, %q; want 1, incompatible", r.code, r.stderr)
	}
	if out := sk(t, "reset", rate).ok(t, "reset"); !strings.HasPrefix(out, "reset "+rate+" (rate limiter") {
		t.Fatalf("reset: %q", out)
	}
	if out := sk(t, "allow", rate, "a").ok(t, "allow after the reset"); !strings.HasPrefix(out, "a\tallowed\tremaining 2\t") {
		t.Fatalf("allow after the reset: %q, want the whole burst back", out)
	}
	w := decodeLines[struct {
		watchLine
		Refused *uint64  `json:"refused"`
		Busy    *float64 `json:"busy_rate"`
	}](t, sk(t, "watch", "--json", "--count", "1", "--interval", "1ms", rate).ok(t, "watch"))
	if len(w) != 1 || w[0].Kind != "gcra" || w[0].Total != 1 || w[0].Refused == nil || *w[0].Refused != 0 || w[0].Busy == nil {
		t.Errorf("watch --json: %+v, want a gcra with 1 decision, 0 refused and its busy cells", w)
	}
	if out := sk(t, "freeze", rate).ok(t, "freeze"); !strings.HasPrefix(out, "froze "+rate) {
		t.Fatalf("freeze: %q", out)
	}
	if out := sk(t, "check", rate).ok(t, "check"); !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("check of the frozen limiter: %q", out)
	}
}
