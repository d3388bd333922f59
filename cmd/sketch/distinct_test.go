//go:build linux

package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// TestDistinct_Commands: create, add, query, stats, merge and export of a
// distinct count, checked against the library opened on the same files.
func TestDistinct_Commands(t *testing.T) {
	dir := t.TempDir()
	a, b, m := filepath.Join(dir, "a.hll"), filepath.Join(dir, "b.hll"), filepath.Join(dir, "m.hll")
	out := sk(t, "create", a, "--kind", "distinct", "--redis").ok(t, "create --redis")
	if !strings.Contains(out, "16384 registers") || !strings.Contains(out, "crafted keys") {
		t.Errorf("create --redis says %q: want the registers and the public hash's warning", out)
	}
	sk(t, "create", b, "--kind", "distinct", "--redis").ok(t, "create b")
	sk(t, "create", m, "--kind", "distinct", "--redis").ok(t, "create m")
	if r := sk(t, "create", filepath.Join(dir, "c.hll"), "--kind", "distinct", "--redis", "--precision", "12"); r.code != 2 {
		t.Errorf("create --redis --precision 12: exit %d, want 2, a bad argument (Redis has 16384 registers)\n%s", r.code, r.stderr)
	}
	if r := sk(t, "create", filepath.Join(dir, "c.hll"), "--kind", "distinct", "--capacity", "5"); r.code != 2 {
		t.Errorf("create --kind distinct --capacity: exit %d, want 2", r.code)
	}
	_, in := keyList("k", 40_000)
	skIn(t, strings.NewReader(in), "add", a).ok(t, "add a")
	_, in = keyList("k", 60_000)
	skIn(t, strings.NewReader(in), "add", b).ok(t, "add b") // k0..k39999 again, and 20,000 more
	if r := sk(t, "add", a, "one-more").ok(t, "add one key"); !strings.HasPrefix(r, "one-more\tadded; about ") {
		t.Errorf("add KEY printed %q", r)
	}

	var ans struct {
		Count    uint64  `json:"count"`
		StdError float64 `json:"std_error"`
		Low      uint64  `json:"low"`
		High     uint64  `json:"high"`
	}
	decode(t, sk(t, "query", "--json", a).ok(t, "query --json"), &ans)
	lib, err := sketch.OpenDistinct(sketch.Path(a), sketch.DistinctConfig{}, sketch.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	if ans.Count != lib.Count() || ans.StdError != lib.StdError() || ans.Low > ans.Count || ans.High < ans.Count {
		t.Errorf("query --json = %+v, the library counts %d ± %v", ans, lib.Count(), lib.StdError())
	}
	if rel := math.Abs(float64(ans.Count)-40_001) / 40_001; rel > 4*ans.StdError {
		t.Errorf("query: %d distinct keys for 40001", ans.Count)
	}
	if text := sk(t, "query", a).ok(t, "query"); !strings.HasPrefix(text, "about ") || !strings.Contains(text, "95%") {
		t.Errorf("query prints %q", text)
	}
	if r := sk(t, "query", a, "k1"); r.code != 2 {
		t.Errorf("query of a key: exit %d, want 2: a distinct count answers no key", r.code)
	}
	if st := sk(t, "stats", a).ok(t, "stats"); !strings.Contains(st, "Ertl") || !strings.Contains(st, "zero registers") {
		t.Errorf("stats prints:\n%s", st)
	}

	sk(t, "merge", m, a, b).ok(t, "merge")
	decode(t, sk(t, "query", "--json", m).ok(t, "query merged"), &ans)
	if rel := math.Abs(float64(ans.Count)-60_001) / 60_001; rel > 4*ans.StdError {
		t.Errorf("merged count %d for 60001 distinct keys", ans.Count)
	}

	exp := filepath.Join(dir, "m.redis")
	sk(t, "export", "--format", "redis", m, "-o", exp).ok(t, "export -o")
	got, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	md, err := sketch.OpenDistinct(sketch.Path(m), sketch.DistinctConfig{}, sketch.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer md.Close()
	want, err := md.ExportRedis()
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("export -o wrote %d bytes, ExportRedis %d (%v); equal: %v", len(got), len(want), err, bytes.Equal(got, want))
	}
	if stdout := sk(t, "export", "--format", "redis", m).ok(t, "export"); stdout != string(want) {
		t.Errorf("export to standard output wrote %d bytes, want ExportRedis's %d", len(stdout), len(want))
	}
	if r := sk(t, "export", m); r.code != 2 {
		t.Errorf("export without --format: exit %d, want 2", r.code)
	}
	cms := create(t, "c.cms")
	if r := sk(t, "export", "--format", "redis", cms); r.code != 1 || !strings.Contains(r.stderr, "only a distinct count") {
		t.Errorf("export of a Count-Min sketch: exit %d, %q", r.code, r.stderr)
	}
	small := filepath.Join(dir, "small.hll")
	sk(t, "create", small, "--kind", "distinct", "--precision", "10").ok(t, "create --precision 10")
	if r := sk(t, "export", "--format", "redis", small); r.code != 1 || !strings.Contains(r.stderr, "incompatible") {
		t.Errorf("export of 1024 registers: exit %d, %q", r.code, r.stderr)
	}
}

// TestDistinctWindow_Commands: create, add, rotate, query, stats,
// snapshot and export of a distinct window, checked against the library
// opened on the same file.
func TestDistinctWindow_Commands(t *testing.T) {
	dir := t.TempDir()
	w, snap, exp := filepath.Join(dir, "w.hll"), filepath.Join(dir, "s.hll"), filepath.Join(dir, "w.redis")
	if r := sk(t, "create", w, "--kind", "distinctwindow", "--redis"); r.code != 2 {
		t.Errorf("create --kind distinctwindow without --keep: exit %d, want 2\n%s", r.code, r.stderr)
	}
	out := sk(t, "create", w, "--kind", "distinctwindow", "--keep", "2", "--redis").ok(t, "create")
	if !strings.Contains(out, "distinct window, the last 2 periods") || !strings.Contains(out, "crafted keys") {
		t.Errorf("create says %q", out)
	}
	_, in := keyList("k", 30_000)
	skIn(t, strings.NewReader(in), "add", w).ok(t, "add")
	sk(t, "rotate", w).ok(t, "rotate")
	_, in = keyList("k", 50_000) // 30,000 again and 20,000 new
	skIn(t, strings.NewReader(in), "add", w).ok(t, "add after the turn")

	lib, err := sketch.OpenDistinctWindow(sketch.Path(w), sketch.DistinctWindowConfig{}, sketch.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	var ans struct {
		Count    uint64  `json:"count"`
		StdError float64 `json:"std_error"`
		Low      uint64  `json:"low"`
		High     uint64  `json:"high"`
	}
	decode(t, sk(t, "query", "--json", w).ok(t, "query --json"), &ans)
	if ans.Count != lib.Count() {
		t.Errorf("query --json counts %d, the library %d", ans.Count, lib.Count())
	}
	if rel := math.Abs(float64(ans.Count)-50_000) / 50_000; rel > 4*lib.StdError() {
		t.Errorf("query: %d distinct keys over two periods, for 50000", ans.Count)
	}
	if st := sk(t, "stats", w).ok(t, "stats"); !strings.Contains(st, "distinct window") || !strings.Contains(st, "in the periods covered") {
		t.Errorf("stats prints %q", st)
	}
	if out := sk(t, "snapshot", w, snap).ok(t, "snapshot"); !strings.Contains(out, "periods 0-1") {
		t.Errorf("snapshot says %q, want the periods 0-1", out)
	}
	decode(t, sk(t, "query", "--json", snap).ok(t, "query the snapshot"), &ans)
	if ans.Count != lib.Count() {
		t.Errorf("the snapshot counts %d, the window %d", ans.Count, lib.Count())
	}
	sk(t, "export", "--format", "redis", w, "-o", exp).ok(t, "export")
	got, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	if want, err := lib.ExportRedis(); err != nil || !bytes.Equal(got, want) {
		t.Errorf("export wrote %d bytes, not the library's export (%v)", len(got), err)
	}
	if r := sk(t, "query", w, "k1"); r.code != 2 {
		t.Errorf("query of a key: exit %d, want 2", r.code)
	}
}
