//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// TestDistinct_PostgreSQLCommands: create --postgresql, its refusals,
// stats, and export --format postgresql of a count and of a window,
// checked against the library on the same files.
func TestDistinct_PostgreSQLCommands(t *testing.T) {
	dir := t.TempDir()
	c, w := filepath.Join(dir, "c.hll"), filepath.Join(dir, "w.hll")
	out := sk(t, "create", c, "--kind", "distinct", "--postgresql", "--precision", "10", "--mode", "0644").ok(t, "create --postgresql")
	if !strings.Contains(out, "1024 registers") || !strings.Contains(out, "PostgreSQL's hll hash") {
		t.Errorf("create --postgresql says %q: want the registers and the public hash's warning", out)
	}
	for _, args := range [][]string{
		{"--postgresql", "--redis"},
		{"--postgresql", "--precision", "18"},
	} {
		if r := sk(t, append([]string{"create", filepath.Join(dir, "bad.hll"), "--kind", "distinct"}, args...)...); r.code != 2 {
			t.Errorf("create %v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
	sk(t, "create", w, "--kind", "distinctwindow", "--keep", "2", "--postgresql", "--precision", "12").ok(t, "create window")
	_, in := keyList("k", 5000)
	for _, f := range []string{c, w} {
		skIn(t, strings.NewReader(in), "add", f).ok(t, "add "+f)
	}
	var stats struct {
		File       string `json:"file"`
		Structures []struct {
			Name        string `json:"name"`
			Kind        string `json:"kind"`
			Description string `json:"description"`
			Stats       sketch.DistinctStats
		} `json:"structures"`
	}
	decode(t, sk(t, "stats", "--json", c).ok(t, "stats --json"), &stats)
	if len(stats.Structures) != 1 || !stats.Structures[0].Stats.PostgreSQL || stats.Structures[0].Stats.Redis {
		t.Errorf("stats --json = %+v: want one structure, postgresql true, redis false", stats)
	}
	if text := sk(t, "stats", c).ok(t, "stats"); !strings.Contains(text, "hll_hash_bytea") {
		t.Errorf("stats does not name the hash:\n%s", text)
	}

	d, err := sketch.OpenDistinct(sketch.Path(c), sketch.DistinctConfig{}, sketch.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	want, err := d.ExportPostgreSQL()
	if err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(dir, "c.pghll")
	sk(t, "export", "--format", "postgresql", c, "-o", exp).ok(t, "export -o")
	if got, err := os.ReadFile(exp); err != nil || !bytes.Equal(got, want) {
		t.Errorf("export --format postgresql -o wrote %d bytes (%v), the library's export %d", len(got), err, len(want))
	}
	if got := sk(t, "export", "--format", "postgresql", c).ok(t, "export"); got != string(want) {
		t.Errorf("export --format postgresql printed %d bytes, the library's export %d", len(got), len(want))
	}

	wl, err := sketch.OpenDistinctWindow(sketch.Path(w), sketch.DistinctWindowConfig{}, sketch.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Close()
	wwant, err := wl.ExportPostgreSQL()
	if err != nil {
		t.Fatal(err)
	}
	if got := sk(t, "export", "--format", "postgresql", w).ok(t, "export window"); got != string(wwant) {
		t.Errorf("export --format postgresql of the window printed %d bytes, the library's export %d", len(got), len(wwant))
	}
	if r := sk(t, "export", "--format", "mysql", c); r.code != 2 {
		t.Errorf("export --format mysql: exit %d, want 2", r.code)
	}
}
