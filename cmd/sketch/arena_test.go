//go:build linux

package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch"
)

type bloomAnswerJSON struct {
	Key     string `json:"key"`
	Present bool   `json:"present"`
	Already *bool  `json:"already"`
}

type createdOut[S any] struct {
	File        string `json:"file"`
	Kind        string `json:"kind"`
	Description string `json:"description"`
	Bytes       uint64 `json:"bytes"`
	Stats       S      `json:"stats"`
}

// arenaStatsOut is stats --json of an arena: each structure's stats stay
// raw until its kind says what they are.
type arenaStatsOut struct {
	File       string             `json:"file"`
	Arena      *sketch.ArenaStats `json:"arena"`
	Structures []struct {
		Name        string          `json:"name"`
		Kind        string          `json:"kind"`
		Description string          `json:"description"`
		Stats       json.RawMessage `json:"stats"`
	} `json:"structures"`
}

type watchOut struct {
	Time       string           `json:"time"`
	File       string           `json:"file"`
	Kind       string           `json:"kind"`
	PerSecond  float64          `json:"per_second"`
	Total      uint64           `json:"total"`
	Adds       *uint64          `json:"adds"`
	ErrorBound *uint64          `json:"error_bound"`
	Fill       *float64         `json:"fill"`
	Count      *float64         `json:"count"`
	Current    *uint64          `json:"current"`
	Oldest     *uint64          `json:"oldest"`
	Start      *time.Time       `json:"start"`
	Frozen     bool             `json:"frozen"`
	Lock       *sketch.LockInfo `json:"lock"`
}

// makeArena creates an arena with one structure of each kind, through
// the command, and checks what create --json says of each.
func makeArena(t *testing.T, dir string, seed string) string {
	t.Helper()
	path := filepath.Join(dir, "web.arena")
	var a createdOut[sketch.ArenaStats]
	decode(t, sk(t, "create", path, "--kind", "arena", "--size", "4M", "--seed-file", seedFile(t, seed), "--json").ok(t, "create arena"), &a)
	if a.File != path || a.Kind != "arena" || a.Bytes != 4<<20 || a.Stats.Bytes != 4<<20 || a.Stats.Entries != 0 || a.Stats.Free == 0 {
		t.Fatalf("create --kind arena --json = %+v", a)
	}
	var c createdOut[sketch.CountMinStats]
	decode(t, sk(t, "create", path+":clients", "--rows", "4", "--width", "65536", "--json").ok(t, "create countmin"), &c)
	if c.File != path+":clients" || c.Kind != "countmin" || c.Stats.Rows != 4 || c.Stats.Width != 65536 || c.Bytes == 0 || c.Bytes >= 4<<20 {
		t.Errorf("create FILE:NAME --json = %+v, want a 4 x 65536 Count-Min and its region's bytes", c)
	}
	var b createdOut[sketch.BloomStats]
	decode(t, sk(t, "create", path+":seen", "--kind", "bloom", "--capacity", "20000", "--fp-rate", "0.01", "--json").ok(t, "create bloom"), &b)
	if b.Kind != "bloom" || b.Stats.Capacity != 20000 || b.Stats.FPRate != 0.01 || b.Stats.Bits == 0 || b.Stats.Hashes == 0 {
		t.Errorf("create --kind bloom --json = %+v", b)
	}
	var cb createdOut[sketch.CountingBloomStats]
	decode(t, sk(t, "create", path+":banned", "--kind", "countingbloom", "--capacity", "1000", "--json").ok(t, "create countingbloom"), &cb)
	if cb.Kind != "countingbloom" || cb.Stats.Capacity != 1000 {
		t.Errorf("create --kind countingbloom --json = %+v", cb)
	}
	var w createdOut[sketch.CountMinWindowStats]
	decode(t, sk(t, "create", path+":recent", "--kind", "countminwindow", "--keep", "2", "--rows", "3", "--width", "1024", "--json").ok(t, "create countminwindow"), &w)
	if w.Kind != "countminwindow" || w.Stats.Keep != 2 || w.Stats.Period != 0 || w.Stats.Rows != 3 || w.Stats.Width != 1024 || len(w.Stats.Slots) != 3 {
		t.Errorf("create --kind countminwindow --json = %+v", w)
	}
	return path
}

// TestArena: create an arena and structures in it, add to each and query
// against exact counts, stats of the arena a row a structure, inspect and
// check of the whole file.
func TestArena(t *testing.T) {
	path := makeArena(t, t.TempDir(), "77")
	names := []string{"clients", "seen", "banned", "recent"}

	// Count-Min: a stream from a pipe, every estimate against the truth.
	lines, truth := stream(200_000, 3000, 5)
	skIn(t, strings.NewReader(strings.Join(lines, "\n")), "add", path+":clients").ok(t, "add to FILE:NAME")
	var st arenaStatsOut
	decode(t, sk(t, "stats", "--json", path).ok(t, "stats --json of an arena"), &st)
	if st.File != path || st.Arena == nil || st.Arena.Entries != 4 || !st.Arena.ReadOnly || len(st.Structures) != 4 {
		t.Fatalf("stats --json of an arena: %+v", st)
	}
	for i, s := range st.Structures {
		if s.Name != names[i] || s.Description == "" {
			t.Errorf("stats --json structure %d: %+v, want %s", i, s, names[i])
		}
	}
	var cms sketch.CountMinStats
	decode(t, string(st.Structures[0].Stats), &cms)
	if cms.Total != 200_000 || cms.Rows != 4 {
		t.Errorf("stats of clients: %+v, want total 200000", cms)
	}
	checkEstimates(t, path+":clients", truth, cms.ErrorBound)

	// The other kinds' stats decode as theirs.
	var bs sketch.BloomStats
	decode(t, string(st.Structures[1].Stats), &bs)
	var cbs sketch.CountingBloomStats
	decode(t, string(st.Structures[2].Stats), &cbs)
	var ws sketch.CountMinWindowStats
	decode(t, string(st.Structures[3].Stats), &ws)
	if bs.Capacity != 20000 || cbs.Capacity != 1000 || ws.Keep != 2 {
		t.Errorf("stats --json: %+v, %+v, %+v", bs, cbs, ws)
	}

	sk(t, "add", path+":banned", "eve", "eve").ok(t, "add to a counting Bloom filter in an arena")
	if out := sk(t, "query", path+":banned", "eve", "bob").ok(t, "query"); out != "eve\tprobably present, count 2\nbob\tdefinitely absent\n" {
		t.Errorf("query of the counting Bloom filter: %q", out)
	}
	sk(t, "add", "-n", "6", path+":recent", "k").ok(t, "add to a window in an arena")
	sk(t, "add", path+":seen", "req-1").ok(t, "add to a Bloom filter in an arena")

	// stats FILE: the arena's table, then one row a structure.
	out := sk(t, "stats", path).ok(t, "stats of an arena")
	for _, want := range []string{"structures  4 of ", "frozen      no\n", "NAME     KIND", "clients  countmin        ", "total 200000, error bound ", "seen     bloom", "banned   countingbloom", "recent   countminwindow", "periods 0-0 (turned by rotate, no clock times): total 6"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats of an arena: no %q in\n%s", want, out)
		}
	}
	if out := sk(t, "stats", path+":recent").ok(t, "stats FILE:NAME"); !strings.HasPrefix(out, path+":recent: Count-Min window") || !strings.Contains(out, "total            6 ") {
		t.Errorf("stats of a window in an arena:\n%s", out)
	}

	// inspect: the directory with names.
	var fi sketch.FileInfo
	decode(t, sk(t, "inspect", "--json", path).ok(t, "inspect --json"), &fi)
	var got []string
	for _, e := range fi.Entries {
		got = append(got, e.Name+"="+string(e.Kind))
	}
	if want := []string{"clients=countmin", "seen=bloom", "banned=countingbloom", "recent=countminwindow"}; !fi.Arena || !cmp.Equal(want, got) {
		t.Errorf("inspect --json: arena %v, entries %v, want %v", fi.Arena, got, want)
	}
	out = sk(t, "inspect", path).ok(t, "inspect")
	for _, want := range []string{"arena           yes", "4 of ", "clients", "keep=2 period=0s rows=3 width=1024", "bits="} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect of an arena: no %q in\n%s", want, out)
		}
	}
	var c checkOut
	decode(t, sk(t, "check", "--json", path).ok(t, "check of an arena"), &c)
	if c.Status != "ok" || len(c.Findings) != 0 {
		t.Errorf("check --json of an arena: %+v", c)
	}

	// A torn add in one structure: check names it and exits 3.
	tearAddAt(t, path, 0)
	r := sk(t, "check", path)
	if r.code != 3 || !strings.Contains(r.stdout, "clients: a torn add") {
		t.Errorf("check of an arena with a torn add: exit %d, %q", r.code, r.stdout)
	}

	// The whole arena is not a structure; a name it lacks is a failure
	// naming what it has; a name on a file that is no arena is a usage
	// error.
	for _, args := range [][]string{{"add", path, "k"}, {"query", path, "k"}, {"reset", path}, {"merge", path, path}, {"rotate", path}} {
		if r := sk(t, args...); r.code != 2 || !strings.Contains(r.stderr, "clients, seen, banned, recent") {
			t.Errorf("sketch %s: exit %d, %q; want 2 and the names", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := sk(t, "query", path+":nope", "k"); r.code != 1 || !strings.Contains(r.stderr, "no structure named nope (it has clients, seen, banned, recent)") {
		t.Errorf("query of a missing name: exit %d, %q", r.code, r.stderr)
	}
	if r := sk(t, "create", path+":seen", "--kind", "bloom", "--capacity", "5"); r.code != 1 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("create of a name the arena has: exit %d, %q", r.code, r.stderr)
	}
	missing := filepath.Join(t.TempDir(), "none.arena")
	if r := sk(t, "create", missing+":x"); r.code != 1 || !strings.Contains(r.stderr, "--kind arena") {
		t.Errorf("create in a missing arena: exit %d, %q", r.code, r.stderr)
	}
	alone := create(t, "alone.cms")
	if r := sk(t, "create", alone+":x"); r.code != 1 || !strings.Contains(r.stderr, alone) {
		t.Errorf("create FILE:NAME in a standalone file: exit %d, %q", r.code, r.stderr)
	}

	// freeze FILE:NAME seals the whole arena; rm removes it.
	if out := sk(t, "freeze", path+":seen").ok(t, "freeze FILE:NAME"); !strings.Contains(out, "the whole arena") {
		t.Errorf("freeze FILE:NAME: %q", out)
	}
	if out := sk(t, "freeze", path).ok(t, "freeze FILE"); !strings.Contains(out, "frozen already") {
		t.Errorf("freeze of a frozen arena: %q", out)
	}
	if r := sk(t, "add", path+":clients", "k"); r.code != 1 || !strings.Contains(r.stderr, "frozen") {
		t.Errorf("add to a frozen arena: exit %d, %q", r.code, r.stderr)
	}
	decode(t, sk(t, "stats", "--json", path).ok(t, "stats of a frozen arena"), &st)
	if !st.Arena.Frozen {
		t.Errorf("stats --json of a frozen arena: %+v", st.Arena)
	}
	if out := sk(t, "rm", path).ok(t, "rm of an arena"); !strings.HasPrefix(out, "removed "+path+" (arena") {
		t.Errorf("rm: %q", out)
	}
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("rm left %s", path)
	}
}

// tearAddAt adds one to the first counter of the first row of the
// Count-Min sketch that is entry i, as a writer killed after its first row
// leaves it.
func tearAddAt(t *testing.T, path string, i int) {
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
	off := int64(fi.Entries[i].Offset) + 4096 // past the add-count stripes
	var b [8]byte
	f.ReadAt(b[:], off)
	binary.NativeEndian.PutUint64(b[:], binary.NativeEndian.Uint64(b[:])+1)
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// TestBloom_Answers: every added key is present, never absent; absent
// keys are definitely absent but for about the false-positive rate; add
// says whether a key was there before.
func TestBloom_Answers(t *testing.T) {
	path := create(t, "seen.bloom", "--kind", "bloom", "--capacity", "10000", "--fp-rate", "0.01", "--seed-file", seedFile(t, "21"))
	r := sk(t, "add", "--json", path, "a", "b", "a")
	no, yes := false, true
	want := []bloomAnswerJSON{{"a", true, &no}, {"b", true, &no}, {"a", true, &yes}}
	if diff := cmp.Diff(want, decodeLines[bloomAnswerJSON](t, r.ok(t, "add --json"))); diff != "" {
		t.Errorf("add --json (-want +got):\n%s", diff)
	}
	if out := sk(t, "add", path, "c", "c").ok(t, "add"); out != "c\tadded\nc\tprobably present before\n" {
		t.Errorf("add c c: %q", out)
	}
	var keys []string
	for i := 0; i < 9000; i++ {
		keys = append(keys, "key-"+strconv.Itoa(i))
	}
	skIn(t, strings.NewReader(strings.Join(keys, "\n")), "add", path).ok(t, "add from a pipe")
	answers := decodeLines[bloomAnswerJSON](t, skIn(t, strings.NewReader(strings.Join(keys, "\n")), "query", "--json", path).ok(t, "query --json"))
	for i, a := range answers {
		if a.Key != keys[i] || !a.Present || a.Already != nil {
			t.Fatalf("query %q: %+v, want present", keys[i], a)
		}
	}
	var absent []string
	for i := 0; i < 10000; i++ {
		absent = append(absent, "absent-"+strconv.Itoa(i))
	}
	fp := 0
	for _, a := range decodeLines[bloomAnswerJSON](t, skIn(t, strings.NewReader(strings.Join(absent, "\n")), "query", "--json", path).ok(t, "query absent keys")) {
		if a.Present {
			fp++
		}
	}
	// 9003 keys in a filter for 10000 at 1%: about 0.7% expected; a fixed
	// seed makes the count fixed.
	if fp > 200 {
		t.Errorf("%d of %d absent keys are present, want about 1%%", fp, len(absent))
	}
	t.Logf("false positives: %d of %d", fp, len(absent))
	if out := sk(t, "query", path, "a", absent[0]).ok(t, "query"); out != "a\tprobably present\n"+absent[0]+"\tdefinitely absent\n" {
		t.Errorf("query of a present and an absent key: %q", out)
	}

	var s statsOut[sketch.BloomStats]
	decode(t, sk(t, "stats", "--json", path).ok(t, "stats"), &s)
	if st := s.Structures[0].Stats; st.Adds != 9005 || st.AddsPresent < 2 || st.Capacity != 10000 || st.Fill <= 0 {
		t.Errorf("stats --json: %+v, want 9005 adds, at least 2 seen", st)
	}
	w := decodeLines[watchOut](t, sk(t, "watch", "--json", "--count", "1", "--interval", "10ms", path).ok(t, "watch --json"))[0]
	if w.Kind != "bloom" || w.Total != 9005 || w.Fill == nil || w.Count == nil || w.ErrorBound != nil || w.Current != nil {
		t.Errorf("watch --json of a Bloom filter: %+v", w)
	}

	// Reset forgets; merge is the union.
	other := create(t, "other.bloom", "--kind", "bloom", "--capacity", "10000", "--fp-rate", "0.01", "--seed-file", seedFile(t, "21"))
	sk(t, "add", other, "only-in-other").ok(t, "add")
	sk(t, "merge", path, other).ok(t, "merge of Bloom filters")
	if out := sk(t, "query", path, "only-in-other").ok(t, "query"); out != "only-in-other\tprobably present\n" {
		t.Errorf("query after merge: %q", out)
	}
	sk(t, "reset", other).ok(t, "reset")
	if out := sk(t, "query", other, "only-in-other").ok(t, "query"); out != "only-in-other\tdefinitely absent\n" {
		t.Errorf("query after reset: %q", out)
	}
}

// TestWindow_Rotate: a window turned by rotate covers the last Keep
// periods, exactly.
func TestWindow_Rotate(t *testing.T) {
	path := create(t, "w.cmw", "--kind", "countminwindow", "--keep", "2", "--rows", "4", "--width", "4096")
	query := func(key string) string {
		t.Helper()
		return sk(t, "query", path, key).ok(t, "query")
	}
	sk(t, "add", "-n", "5", path, "x").ok(t, "add")
	if out := sk(t, "rotate", path).ok(t, "rotate"); !strings.Contains(out, "covers periods 0 to 1") {
		t.Errorf("rotate: %q", out)
	}
	if out := sk(t, "add", "-n", "2", path, "x").ok(t, "add"); out != "x\t7\tbetween 6 and 7\n" {
		t.Errorf("add over the window: %q", out)
	}
	if out := query("x"); out != "x\t7\tbetween 6 and 7\n" {
		t.Errorf("query over periods 0 and 1: %q", out)
	}
	sk(t, "rotate", path).ok(t, "rotate")
	if out := query("x"); out != "x\t2\tbetween 1 and 2\n" {
		t.Errorf("query after period 0 left the window: %q", out)
	}
	var s statsOut[sketch.CountMinWindowStats]
	decode(t, sk(t, "stats", "--json", path).ok(t, "stats --json"), &s)
	st := s.Structures[0].Stats
	if st.Rotations != 2 || st.Current != 2 || st.Oldest != 1 || st.Total != 2 || st.Keep != 2 || len(st.Slots) != 3 {
		t.Errorf("stats --json after two rotations: %+v", st)
	}
	w := decodeLines[watchOut](t, sk(t, "watch", "--json", "--count", "1", "--interval", "10ms", path).ok(t, "watch --json"))[0]
	if w.Kind != "countminwindow" || w.Total != 2 || w.ErrorBound == nil || w.Current == nil || *w.Current != 2 || w.Oldest == nil || *w.Oldest != 1 {
		t.Errorf("watch --json of a window: %+v", w)
	}
	out := sk(t, "stats", path).ok(t, "stats")
	// Turns and adds since made count every period, the left one too.
	for _, want := range []string{"periods          1 to 2 (current 2)", "rotations        2\n", "turns            2 (", "adds since made  7 (", "window   period 1, total 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats: no %q in\n%s", want, out)
		}
	}
	sk(t, "rotate", path).ok(t, "rotate")
	if out := query("x"); out != "x\t0\tbetween 0 and 0\n" {
		t.Errorf("query after both periods left: %q", out)
	}
	for _, args := range [][]string{{"reset", path}, {"merge", path, path}} {
		if r := sk(t, args...); r.code != 1 || !strings.Contains(r.stderr, path) {
			t.Errorf("%s of a window: exit %d, %q; want 1 naming the file", args[0], r.code, r.stderr)
		}
	}
	cms := create(t, "c.cms")
	if r := sk(t, "rotate", cms); r.code != 1 || !strings.Contains(r.stderr, "no periods") {
		t.Errorf("rotate of a Count-Min sketch: exit %d, %q", r.code, r.stderr)
	}
	// A clocked window: create says its period.
	if out := sk(t, "create", path+"2", "--kind", "countminwindow", "--period", "1m", "--keep", "5").ok(t, "create"); !strings.Contains(out, "the last 5 periods of 1m0s") {
		t.Errorf("create --period 1m --keep 5: %q", out)
	}
}

// TestMerge_CountMinSum: Count-Min sketches of one seed merge into the
// sketch one fed every stream would be: every estimate equal, the total
// the sum. A structure in an arena of that seed merges with them.
func TestMerge_CountMinSum(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--rows", "4", "--width", "2048", "--seed-file", seedFile(t, "99")}
	dst := create(t, "dst.cms", args...)
	all := create(t, "all.cms", args...)
	arena := filepath.Join(dir, "a.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "1M", "--seed-file", seedFile(t, "99")).ok(t, "create arena")
	sk(t, "create", arena+":part", "--rows", "4", "--width", "2048").ok(t, "create in arena")
	srcs := []string{create(t, "s1.cms", args...), create(t, "s2.cms", args...), arena + ":part"}
	truth := map[string]uint64{}
	var sum uint64
	for i, src := range append([]string{dst}, srcs...) {
		lines, tr := stream(30_000, 2000, uint64(10+i))
		in := strings.Join(lines, "\n")
		skIn(t, strings.NewReader(in), "add", src).ok(t, "add")
		skIn(t, strings.NewReader(in), "add", all).ok(t, "add")
		for k, n := range tr {
			truth[k] += n
		}
		sum += 30_000
	}
	sk(t, "freeze", srcs[1]).ok(t, "freeze") // a frozen source merges
	if out := sk(t, append([]string{"merge", dst}, srcs...)...).ok(t, "merge"); !strings.HasPrefix(out, "merged 3 into "+dst) {
		t.Errorf("merge: %q", out)
	}
	if st := cmsStats(t, dst); st.Total != sum || st.Adds != sum {
		t.Errorf("merged stats: total %d, adds %d; want %d", st.Total, st.Adds, sum)
	}
	var keys []string
	for k := range truth {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	keys = append(keys, "never-added")
	in := strings.Join(keys, "\n")
	merged := decodeLines[cmsAnswerJSON](t, skIn(t, strings.NewReader(in), "query", "--json", dst).ok(t, "query"))
	fed := decodeLines[cmsAnswerJSON](t, skIn(t, strings.NewReader(in), "query", "--json", all).ok(t, "query"))
	if diff := cmp.Diff(fed, merged); diff != "" {
		t.Errorf("merged answers differ from one sketch fed every stream (-fed +merged):\n%s", diff)
	}
	for _, a := range merged {
		if a.Estimate < truth[a.Key] {
			t.Errorf("Estimate(%q) = %d, want >= %d", a.Key, a.Estimate, truth[a.Key])
		}
	}
	// A sketch of another shape is refused, and nothing changes.
	odd := create(t, "odd.cms", "--rows", "4", "--width", "1024", "--seed-file", seedFile(t, "99"))
	if r := sk(t, "merge", dst, odd); r.code != 1 || !strings.Contains(r.stderr, odd) {
		t.Errorf("merge of another shape: exit %d, %q", r.code, r.stderr)
	}
	if st := cmsStats(t, dst); st.Total != sum {
		t.Errorf("a refused merge changed the total to %d", st.Total)
	}
}

// TestReadOnly_ArenaAsNobody: the commands that only read work on a 0444
// arena owned by root, for a user who may not write it.
func TestReadOnly_ArenaAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the command as another user")
	}
	path := makeArena(t, usersDir(t, "sketch-cli-readonly-", 0o755), "5")
	for _, name := range []string{"clients", "seen", "banned", "recent"} {
		sk(t, "add", path+":"+name, "alpha").ok(t, "add")
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"stats", path}, {"stats", "--json", path}, {"inspect", path}, {"check", path},
		{"query", path + ":clients", "alpha"}, {"query", path + ":seen", "alpha"}, {"query", path + ":banned", "alpha"},
		{"query", path + ":recent", "alpha"}, {"stats", path + ":recent"},
		{"watch", path + ":seen", "--count", "1", "--interval", "10ms"},
	} {
		r := asNobody(t, args...)
		if r.code != 0 {
			t.Errorf("as nobody, sketch %s: exit %d, %q", strings.Join(args, " "), r.code, r.stderr)
			continue
		}
		if args[0] == "query" && !strings.HasPrefix(r.stdout, "alpha\t1") && !strings.HasPrefix(r.stdout, "alpha\tprobably present") {
			t.Errorf("as nobody, sketch %s: %q", strings.Join(args, " "), r.stdout)
		}
	}
	for _, args := range [][]string{{"add", path + ":clients", "alpha"}, {"create", path + ":new"}, {"rotate", path + ":recent"}} {
		if r := asNobody(t, args...); r.code != 1 || !strings.Contains(r.stderr, "permission denied") {
			t.Errorf("as nobody, sketch %s: exit %d, %q; want 1, permission denied", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
