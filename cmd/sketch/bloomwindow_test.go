//go:build linux

package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch"
)

// keyList is n keys with a prefix, and the same as standard input.
func keyList(prefix string, n int) ([]string, string) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	return keys, strings.Join(keys, "\n")
}

// present queries keys through the command (--json, from standard input)
// and returns how many are present.
func present(t *testing.T, target string, keys []string) int {
	t.Helper()
	answers := decodeLines[bloomAnswerJSON](t, skIn(t, strings.NewReader(strings.Join(keys, "\n")), "query", "--json", target).ok(t, "query --json"))
	if len(answers) != len(keys) {
		t.Fatalf("query --json: %d answers for %d keys", len(answers), len(keys))
	}
	n := 0
	for i, a := range answers {
		if a.Key != keys[i] || a.Already != nil {
			t.Fatalf("query --json answer %d: %+v, want %q's", i, a, keys[i])
		}
		if a.Present {
			n++
		}
	}
	return n
}

// coveredAdds sums the adds of the slots a window's stats say it covers.
func coveredAdds(st sketch.BloomWindowStats) uint64 {
	var n uint64
	for _, sl := range st.Slots {
		if sl.State == "current" || sl.State == "window" {
			n += sl.Adds
		}
	}
	return n
}

// TestBloomWindow_Rotate: a Bloom window turned by rotate finds every key
// added in the periods it covers, and none once Keep rotations have
// passed; add says whether the window had a key before; stats, watch and
// inspect show what the window is.
func TestBloomWindow_Rotate(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/w.bw"
	var c createdOut[sketch.BloomWindowStats]
	decode(t, sk(t, "create", path, "--kind", "bloomwindow", "--keep", "2", "--capacity", "10000", "--fp-rate", "0.01", "--seed-file", seedFile(t, "21"), "--json").ok(t, "create bloomwindow"), &c)
	if c.Kind != "bloomwindow" || c.Stats.Keep != 2 || c.Stats.Period != 0 || c.Stats.Capacity != 10000 || c.Stats.FPRate != 0.01 ||
		c.Stats.Bits == 0 || c.Stats.Hashes == 0 || len(c.Stats.Slots) != 3 || c.Bytes != c.Stats.Bytes {
		t.Fatalf("create --kind bloomwindow --json = %+v", c)
	}

	r := sk(t, "add", "--json", path, "a", "b", "a")
	no, yes := false, true
	want := []bloomAnswerJSON{{"a", true, &no}, {"b", true, &no}, {"a", true, &yes}}
	if diff := cmp.Diff(want, decodeLines[bloomAnswerJSON](t, r.ok(t, "add --json"))); diff != "" {
		t.Errorf("add --json (-want +got):\n%s", diff)
	}
	keys0, in0 := keyList("p0-", 2000)
	skIn(t, strings.NewReader(in0), "add", path).ok(t, "add from a pipe")
	if out := sk(t, "rotate", path).ok(t, "rotate"); !strings.Contains(out, "Bloom window") || !strings.Contains(out, "covers periods 0 to 1") {
		t.Errorf("rotate: %q", out)
	}
	// The window still has period 0's keys: an add of one is not its first.
	if out := sk(t, "add", path, "a", "c", "c").ok(t, "add"); out != "a\tprobably present before\nc\tadded\nc\tprobably present before\n" {
		t.Errorf("add over the window: %q", out)
	}
	keys1, in1 := keyList("p1-", 2000)
	skIn(t, strings.NewReader(in1), "add", path).ok(t, "add from a pipe")

	// No false negative: every key of periods 0 and 1 is present.
	if n := present(t, path, append(append([]string{"a", "b", "c"}, keys0...), keys1...)); n != 4003 {
		t.Errorf("%d of 4003 keys added in the window are present", n)
	}
	absent, _ := keyList("absent-", 5000)
	fp := present(t, path, absent)
	// Two filters of 10000 at 1%, each at a fifth of capacity: a handful
	// at most; the fixed seed makes the count fixed.
	if fp > 25 {
		t.Errorf("%d of %d keys never added are present", fp, len(absent))
	}
	t.Logf("false positives over two periods: %d of %d", fp, len(absent))
	if out := sk(t, "query", path, "a", absent[0]).ok(t, "query"); !strings.HasPrefix(out, "a\tprobably present\n"+absent[0]+"\t") {
		t.Errorf("query: %q", out)
	}

	var s statsOut[sketch.BloomWindowStats]
	decode(t, sk(t, "stats", "--json", path).ok(t, "stats --json"), &s)
	st := s.Structures[0].Stats
	// 3 + 2000 adds in period 0, 3 + 2000 in period 1.
	if s.Structures[0].Kind != "bloomwindow" || st.Rotations != 1 || st.Current != 1 || st.Oldest != 0 || st.Keep != 2 ||
		len(st.Slots) != 3 || coveredAdds(st) != 4006 || st.FPRateNow <= 0 || st.FPRateNow >= 0.01 {
		t.Errorf("stats --json after one rotation: %+v", st)
	}
	w := decodeLines[watchOut](t, sk(t, "watch", "--json", "--count", "1", "--interval", "10ms", path).ok(t, "watch --json"))[0]
	if w.Kind != "bloomwindow" || w.Total != 4006 || w.ErrorBound != nil || w.Current == nil || *w.Current != 1 || w.Oldest == nil || *w.Oldest != 0 ||
		w.Fill == nil || *w.Fill <= 0 || w.Count == nil || *w.Count < 1900 || *w.Count > 2100 {
		t.Errorf("watch --json of a Bloom window: %+v", w)
	}
	out := sk(t, "stats", path).ok(t, "stats")
	for _, want := range []string{path + ": Bloom window, the last 2 periods, turned by rotate", "0 to 1 (current 1)", "capacity         10000 keys a period", "window   period 0, fill ", "current  period 1, fill "} {
		if !strings.Contains(out, want) {
			t.Errorf("stats: no %q in\n%s", want, out)
		}
	}

	// Period 0 leaves: its keys are gone but for false positives of period
	// 1's filter (the spare slot is empty); period 1's stay.
	sk(t, "rotate", path).ok(t, "rotate")
	if n := present(t, path, keys1); n != len(keys1) {
		t.Errorf("after period 0 left: %d of period 1's %d keys present", n, len(keys1))
	}
	if n := present(t, path, keys0); n > 25 {
		t.Errorf("after period 0 left: %d of its %d keys still present", n, len(keys0))
	}
	// Keep rotations after period 1: every slot the window covers is
	// empty, so every key is definitely absent.
	sk(t, "rotate", path).ok(t, "rotate")
	if n := present(t, path, append(append([]string{"a", "b", "c"}, keys0...), keys1...)); n != 0 {
		t.Errorf("after both periods left: %d keys present, want none", n)
	}
	if out := sk(t, "query", path, "a").ok(t, "query"); out != "a\tdefinitely absent\n" {
		t.Errorf("query after both periods left: %q", out)
	}

	for _, args := range [][]string{{"reset", path}, {"merge", path, path}} {
		if r := sk(t, args...); r.code != 1 || !strings.Contains(r.stderr, path) || !strings.Contains(r.stderr, "Bloom window has no") {
			t.Errorf("%s of a Bloom window: exit %d, %q; want 1 naming the file", args[0], r.code, r.stderr)
		}
	}

	// inspect: the parameters decoded.
	var fi sketch.FileInfo
	decode(t, sk(t, "inspect", "--json", path).ok(t, "inspect --json"), &fi)
	wantParams := map[string]float64{"capacity": 10000, "fp_rate": 0.01, "bits": float64(c.Stats.Bits), "hashes": float64(c.Stats.Hashes), "period_ns": 0, "keep": 2}
	if len(fi.Entries) != 1 || fi.Entries[0].Kind != "bloomwindow" || !cmp.Equal(wantParams, fi.Entries[0].Params) {
		t.Errorf("inspect --json: %+v, want params %v", fi.Entries, wantParams)
	}
	out = sk(t, "inspect", path).ok(t, "inspect")
	for _, want := range []string{"bloomwindow", "capacity=10000", "fp_rate=0.01", "keep=2", "bits=" + strconv.FormatUint(c.Stats.Bits, 10)} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect: no %q in\n%s", want, out)
		}
	}
	if out := sk(t, "check", path).ok(t, "check"); !strings.Contains(out, "ok") {
		t.Errorf("check: %q", out)
	}

	// A clocked window: create says its period, inspect has it in ns.
	if out := sk(t, "create", path+"2", "--kind", "bloomwindow", "--period", "1m", "--keep", "5", "--capacity", "100").ok(t, "create"); !strings.Contains(out, "Bloom window, the last 5 periods of 1m0s") {
		t.Errorf("create --period 1m --keep 5: %q", out)
	}
	decode(t, sk(t, "inspect", "--json", path+"2").ok(t, "inspect --json"), &fi)
	if p := fi.Entries[0].Params; p["period_ns"] != 60e9 || p["keep"] != 5 || p["capacity"] != 100 || p["fp_rate"] != sketch.DefaultFPRate {
		t.Errorf("inspect --json of a clocked window: %v", p)
	}
}

// TestBloomWindow_Arena: a Bloom window in an arena, as FILE:NAME: create
// with its region's bytes, add, query, rotate, the arena's stats row and
// inspect's directory.
func TestBloomWindow_Arena(t *testing.T) {
	path := t.TempDir() + "/web.arena"
	sk(t, "create", path, "--kind", "arena", "--size", "1M", "--seed-file", seedFile(t, "5")).ok(t, "create arena")
	name := path + ":recent"
	var c createdOut[sketch.BloomWindowStats]
	decode(t, sk(t, "create", name, "--kind", "bloomwindow", "--capacity", "1000", "--keep", "3", "--json").ok(t, "create FILE:NAME"), &c)
	if c.File != name || c.Kind != "bloomwindow" || c.Stats.Keep != 3 || len(c.Stats.Slots) != 4 || c.Bytes == 0 || c.Bytes >= 1<<20 {
		t.Fatalf("create FILE:NAME --kind bloomwindow --json = %+v", c)
	}
	if r := sk(t, "create", name, "--kind", "bloomwindow", "--capacity", "1000", "--keep", "3"); r.code != 1 {
		t.Errorf("create of a name the arena has: exit %d, %q", r.code, r.stderr)
	}
	keys, in := keyList("req-", 500)
	skIn(t, strings.NewReader(in), "add", name).ok(t, "add to FILE:NAME")
	for i := 0; i < 2; i++ {
		sk(t, "rotate", name).ok(t, "rotate FILE:NAME")
		if n := present(t, name, keys); n != len(keys) {
			t.Errorf("after %d rotations of a window of 3: %d of %d keys present", i+1, n, len(keys))
		}
	}
	out := sk(t, "stats", path).ok(t, "stats of the arena")
	for _, want := range []string{"recent  bloomwindow", "periods 0-2 (turned by rotate, no clock times): 500 adds"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats of an arena: no %q in\n%s", want, out)
		}
	}
	if out := sk(t, "rotate", name).ok(t, "rotate"); !strings.Contains(out, "covers periods 1 to 3") {
		t.Errorf("rotate: %q", out)
	}
	if n := present(t, name, keys); n != 0 {
		t.Errorf("after 3 rotations of a window of 3: %d keys present, want none", n)
	}
	var fi sketch.FileInfo
	decode(t, sk(t, "inspect", "--json", path).ok(t, "inspect --json"), &fi)
	if len(fi.Entries) != 1 || fi.Entries[0].Name != "recent" || fi.Entries[0].Kind != "bloomwindow" || fi.Entries[0].Bytes != c.Bytes ||
		fi.Entries[0].Params["keep"] != 3 || fi.Entries[0].Params["capacity"] != 1000 || fi.Entries[0].Params["bits"] != float64(c.Stats.Bits) {
		t.Errorf("inspect --json of the arena: %+v", fi.Entries)
	}
}
