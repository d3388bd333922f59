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

// TestSet_AddListDel: add tells each key new or present, exactly; query,
// list and del agree with what was added and removed.
func TestSet_AddListDel(t *testing.T) {
	s := create(t, "ids.set", "--kind", "set", "--capacity", "100", "--key-bytes", "16")
	if out := sk(t, "add", s, "b", "a", "b", "c").ok(t, "add"); out != "b\tnew\na\tnew\nb\tpresent\nc\tnew\n" {
		t.Fatalf("add b a b c: %q, want new, new, present, new", out)
	}
	if out := sk(t, "query", s, "a", "z").ok(t, "query"); out != "a\tpresent\nz\tabsent\n" {
		t.Errorf("query a z: %q", out)
	}
	if out := sk(t, "list", s).ok(t, "list"); out != "a\nb\nc\n" {
		t.Errorf("list: %q, want a, b, c in byte order", out)
	}
	if out := sk(t, "del", s, "b", "b", "z").ok(t, "del"); out != "b\tremoved\nb\tabsent\nz\tabsent\n" {
		t.Errorf("del b b z: %q", out)
	}
	if out := sk(t, "list", s).ok(t, "list after del"); out != "a\nc\n" {
		t.Errorf("list after del: %q, want a, c", out)
	}
	if out := skIn(t, strings.NewReader("a\nd\nd\ne\n"), "add", s).ok(t, "add from standard input"); !strings.HasPrefix(out, "added 2 of 4 keys to "+s) {
		t.Errorf("add from standard input: %q, want 2 of 4 added", out)
	}
	added := decodeLines[setAnswer](t, sk(t, "add", "--json", s, "f", "a").ok(t, "add --json"))
	if len(added) != 2 || added[0].New == nil || !*added[0].New || added[1].New == nil || *added[1].New || !added[1].Present {
		t.Errorf("add --json f a: %+v, want f new and a present", added)
	}
	if r := sk(t, "add", s, strings.Repeat("x", 17)); r.code != exitFailure || !strings.Contains(r.stderr, "longer than the set's 16") {
		t.Errorf("add of a 17-byte key: exit %d, %q", r.code, r.stderr)
	}
	if out := sk(t, "list", s).ok(t, "list at the end"); out != "a\nc\nd\ne\nf\n" {
		t.Errorf("list at the end: %q", out)
	}
}

// TestSet_Full: a new key past the capacity is refused, exit 1 naming
// the file and saying the set is full; the keys before it stay added,
// and a key it holds is still answered present.
func TestSet_Full(t *testing.T) {
	s := create(t, "full.set", "--kind", "set", "--capacity", "2")
	r := sk(t, "add", s, "a", "b", "c")
	if r.code != exitFailure || !strings.Contains(r.stderr, s) || !strings.Contains(r.stderr, "set is full") || r.stdout != "a\tnew\nb\tnew\n" {
		t.Fatalf("add a b c to a set of 2: exit %d, stdout %q, stderr %q; want 1, the file named, full", r.code, r.stdout, r.stderr)
	}
	if out := sk(t, "add", s, "a").ok(t, "add of a key held"); out != "a\tpresent\n" {
		t.Errorf("add a to the full set: %q, want present", out)
	}
	if r := skIn(t, strings.NewReader("b\nc\n"), "add", s); r.code != exitFailure || !strings.Contains(r.stderr, "set is full") {
		t.Errorf("add from standard input to the full set: exit %d, %q", r.code, r.stderr)
	}
	if out := sk(t, "list", s).ok(t, "list"); out != "a\nb\n" {
		t.Errorf("list: %q, want a, b", out)
	}
}

// TestSet_ListHostileKey: a key with an escape sequence, a newline or
// bytes that are not UTF-8 is listed quoted, one a line, and --json
// carries its exact bytes.
func TestSet_ListHostileKey(t *testing.T) {
	s := create(t, "h.set", "--kind", "set", "--capacity", "10")
	hostile := []string{"\x1b[2J\nroot", "\xff\xfe", "plain"}
	sk(t, "add", s, hostile[0], hostile[1], hostile[2]).ok(t, "add")
	out := sk(t, "list", s).ok(t, "list")
	if want := "\"\\x1b[2J\\nroot\"\nplain\n\"\\xff\\xfe\"\n"; out != want {
		t.Errorf("list: %q, want %q", out, want)
	}
	var got []string
	for _, k := range decodeLines[jsonKey](t, sk(t, "list", "--json", s).ok(t, "list --json")) {
		if k.Base64 != nil {
			got = append(got, string(k.Base64))
		} else {
			got = append(got, k.Key)
		}
	}
	if diff := cmp.Diff([]string{hostile[0], hostile[2], hostile[1]}, got); diff != "" {
		t.Errorf("list --json keys (-want +got):\n%s", diff)
	}
}

// TestSet_Reader: a user who may only read the file lists and queries
// it, and may not add.
func TestSet_Reader(t *testing.T) {
	dir := usersDir(t, "sketch-cli-set-", 0o755)
	s := filepath.Join(dir, "ids.set")
	sk(t, "create", s, "--kind", "set", "--capacity", "10", "--mode", "0644").ok(t, "create")
	sk(t, "add", s, "k1", "k2").ok(t, "add")
	if r := asNobody(t, "list", s); r.code != exitOK || r.stdout != "k1\nk2\n" {
		t.Errorf("list as a reader: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	if r := asNobody(t, "query", s, "k1", "k3"); r.code != exitOK || r.stdout != "k1\tpresent\nk3\tabsent\n" {
		t.Errorf("query as a reader: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"add", s, "k3"}, {"del", s, "k1"}} {
		if r := asNobody(t, args...); r.code != exitFailure || !strings.Contains(r.stderr, s) || r.stdout != "" {
			t.Errorf("%s as a reader: exit %d, %q, %q; want 1 naming the file", args[0], r.code, r.stdout, r.stderr)
		}
	}
}

// TestSet_Arena: a set and a set window in an arena are made, added to,
// listed and queried as FILE:NAME; the arena's stats show them and check
// passes.
func TestSet_Arena(t *testing.T) {
	arena := filepath.Join(t.TempDir(), "web.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "1M").ok(t, "create arena")
	s, w := arena+":banned", arena+":nonces"
	if out := sk(t, "create", s, "--kind", "set", "--capacity", "50", "--key-bytes", "8").ok(t, "create set"); !strings.HasPrefix(out, "created "+s+": set of up to 50 keys of up to 8 bytes, ") {
		t.Fatalf("create: %q", out)
	}
	sk(t, "create", w, "--kind", "setwindow", "--capacity", "50", "--period", "1h", "--keep", "2").ok(t, "create set window")
	sk(t, "add", s, "k1", "k2").ok(t, "add")
	sk(t, "add", w, "n1").ok(t, "add to the window")
	if out := sk(t, "list", s).ok(t, "list"); out != "k1\nk2\n" {
		t.Errorf("list %s: %q", s, out)
	}
	if out := sk(t, "query", w, "n1").ok(t, "query"); out != "n1\tpresent\n" {
		t.Errorf("query %s: %q", w, out)
	}
	st := sk(t, "stats", arena).ok(t, "arena stats")
	for _, want := range []string{"banned  set ", "2 keys of 50", "nonces  setwindow ", "1 key of 50"} {
		if !strings.Contains(st, want) {
			t.Errorf("arena stats:\n%s\nwant %q", st, want)
		}
	}
	if out := sk(t, "watch", "--count", "1", "--interval", "1ms", arena).ok(t, "watch the arena"); !strings.Contains(out, "banned") || !strings.Contains(out, "nonces") {
		t.Errorf("watch of the arena:\n%s", out)
	}
	sk(t, "check", arena).ok(t, "check")
}

// TestSetWindow_Rotate: a window turned only by rotate lists and answers
// a key while its period is covered, and not once it has left.
func TestSetWindow_Rotate(t *testing.T) {
	w := create(t, "n.setw", "--kind", "setwindow", "--capacity", "10", "--keep", "2")
	sk(t, "add", w, "old").ok(t, "add old")
	sk(t, "rotate", w).ok(t, "rotate")
	if out := sk(t, "add", w, "new", "old").ok(t, "add"); out != "new\tnew\nold\tpresent\n" {
		t.Errorf("add new old after one rotate: %q, want old still present", out)
	}
	if out := sk(t, "list", w).ok(t, "list"); out != "new\nold\n" {
		t.Errorf("list after one rotate: %q", out)
	}
	sk(t, "rotate", w).ok(t, "rotate again")
	if out := sk(t, "list", w).ok(t, "list"); out != "new\n" {
		t.Errorf("list after two rotates: %q, want old gone with its period", out)
	}
	if out := sk(t, "query", w, "old", "new").ok(t, "query"); out != "old\tabsent\nnew\tpresent\n" {
		t.Errorf("query after two rotates: %q", out)
	}
	if out := sk(t, "add", w, "old").ok(t, "add old again"); out != "old\tnew\n" {
		t.Errorf("add old after it left: %q, want new", out)
	}
}

// TestSet_Lifecycle: snapshot, check, watch, stats, inspect, reset and
// freeze work on a set and a set window; merge unites two sets.
func TestSet_Lifecycle(t *testing.T) {
	s := create(t, "a.set", "--kind", "set", "--capacity", "10")
	w := create(t, "a.setw", "--kind", "setwindow", "--capacity", "10", "--period", "1h", "--keep", "3")
	sk(t, "add", s, "x", "y").ok(t, "add")
	sk(t, "add", w, "x").ok(t, "add to the window")
	dir := t.TempDir()
	for _, src := range []string{s, w} {
		snap := filepath.Join(dir, filepath.Base(src)+".snap")
		if out := sk(t, "snapshot", src, snap).ok(t, "snapshot"); !strings.Contains(out, "frozen") {
			t.Errorf("snapshot of %s: %q", src, out)
		}
		if out := sk(t, "check", snap).ok(t, "check the snapshot"); !strings.HasSuffix(out, "ok\n") {
			t.Errorf("check of %s: %q", snap, out)
		}
		if out := sk(t, "list", snap).ok(t, "list the snapshot"); !strings.HasPrefix(out, "x\n") {
			t.Errorf("list of %s: %q", snap, out)
		}
		w := decodeLines[watchLine](t, sk(t, "watch", "--json", "--count", "1", "--interval", "1ms", src).ok(t, "watch"))
		if len(w) != 1 || w[0].Total == 0 || w[0].Fill == nil {
			t.Errorf("watch --json %s: %+v, want its keys and fill", src, w)
		}
		sk(t, "inspect", src).ok(t, "inspect")
	}
	var sj struct {
		Structures []struct {
			Stats sketch.SetStats `json:"stats"`
		} `json:"structures"`
	}
	if err := json.Unmarshal([]byte(sk(t, "stats", "--json", s).ok(t, "stats --json")), &sj); err != nil {
		t.Fatal(err)
	}
	if len(sj.Structures) != 1 || sj.Structures[0].Stats.Live != 2 || sj.Structures[0].Stats.Capacity != 10 {
		t.Errorf("stats --json: %+v, want 2 keys of 10", sj)
	}
	other := create(t, "b.set", "--kind", "set", "--capacity", "10", "--seed-from", s)
	sk(t, "add", other, "z").ok(t, "add to the other")
	sk(t, "merge", s, other).ok(t, "merge")
	if out := sk(t, "list", s).ok(t, "list after merge"); out != "x\ny\nz\n" {
		t.Errorf("list after merge: %q", out)
	}
	sk(t, "reset", s).ok(t, "reset")
	if out := sk(t, "list", s).ok(t, "list after reset"); out != "" {
		t.Errorf("list after reset: %q, want nothing", out)
	}
	sk(t, "freeze", s).ok(t, "freeze")
	if r := sk(t, "add", s, "q"); r.code != exitFailure || !strings.Contains(r.stderr, "frozen") {
		t.Errorf("add to a frozen set: exit %d, %q", r.code, r.stderr)
	}
}

// TestSet_NotApplicable: the commands a set or set window does not have
// refuse, saying why; list refuses the kinds that hold no keys.
func TestSet_NotApplicable(t *testing.T) {
	s := create(t, "s.set", "--kind", "set", "--capacity", "10")
	w := create(t, "w.setw", "--kind", "setwindow", "--capacity", "10", "--keep", "2")
	cms := create(t, "c.cms", "--rows", "1", "--width", "64")
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"create", filepath.Join(dir, "n.set"), "--kind", "set"}, exitUsage, "needs --capacity"},
		{[]string{"create", filepath.Join(dir, "n.setw"), "--kind", "setwindow", "--capacity", "5"}, exitUsage, "needs --capacity and --keep"},
		{[]string{"create", filepath.Join(dir, "n.set"), "--kind", "set", "--capacity", "5", "--fp-rate", "0.1"}, exitUsage, "--fp-rate does not size a set"},
		{[]string{"create", filepath.Join(dir, "n.set"), "--kind", "set", "--capacity", "5", "--keep", "2"}, exitUsage, "--keep does not size a set"},
		{[]string{"create", filepath.Join(dir, "n.cms"), "--key-bytes", "8"}, exitUsage, "--key-bytes does not size a countmin"},
		{[]string{"top", s}, exitFailure, "has no candidate table"},
		{[]string{"allow", s, "k"}, exitFailure, "has no rate-limit decision"},
		{[]string{"rotate", s}, exitFailure, "no periods to rotate"},
		{[]string{"reset", w}, exitFailure, "has no reset"},
		{[]string{"merge", w, w}, exitFailure, "has no merge"},
		{[]string{"merge", s, cms}, exitFailure, "cannot merge a Count-Min sketch"},
		{[]string{"export", "--format", "redis", s}, exitFailure, "only a distinct count or window exports"},
		{[]string{"list", cms}, exitFailure, "only a set or setwindow holds its keys"},
		{[]string{"list", s, "extra"}, exitUsage, "want one FILE[:NAME]"},
		{[]string{"add", "--weighted", s}, exitUsage, "holds a key once"},
	} {
		r := sk(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || r.stdout != "" || strings.Contains(r.stderr, "panic") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d naming %q", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.code, tc.msg)
		}
	}
}
