//go:build linux

package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMessages_FlagNames: messages name the command's flags, not the
// library's Go names, nor the library's internal operations.
func TestMessages_FlagNames(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.cms")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", path, "--error", "0.01", "--rows", "3"}, "give either --error/--confidence or --rows/--width, not both"},
		{[]string{"create", path, "--rows", "3"}, "--width is missing (give --rows and --width together, or size by --error)"},
		{[]string{"create", path, "--width", "64"}, "--rows is missing (give --rows and --width together, or size by --error)"},
		{[]string{"create", path, "--kind", "countminwindow", "--keep", "2", "--period", "-1s"}, "--period -1s is negative"},
		{[]string{"create", path, "--kind", "bloomwindow", "--capacity", "10", "--keep", "2", "--period", "1us"}, "--period 1µs is shorter than"},
		{[]string{"stats", filepath.Join(dir, "missing")}, "sketch stats: " + filepath.Join(dir, "missing") + ": no such file"},
		{[]string{"check", filepath.Join(dir, "missing")}, "sketch check: " + filepath.Join(dir, "missing") + ": no such file"},
		{[]string{"inspect", filepath.Join(dir, "missing")}, "sketch inspect: " + filepath.Join(dir, "missing") + ": no such file"},
	} {
		r := sk(t, tc.args...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("sketch %s: exit %d, stderr %q; want %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
		for _, goName := range []string{"ErrorRate", "Rows/", "Width", "window Keep", "window Period", ": inspect "} {
			if strings.Contains(r.stderr, goName) {
				t.Errorf("sketch %s: stderr %q names %q", strings.Join(tc.args, " "), r.stderr, goName)
			}
		}
	}
}

// TestMessages_Plurals: one of a thing is said in the singular: a window
// of one period covers "the current period", not "the last 1 periods";
// one key, hash, item, candidate or structure is "1 key".
func TestMessages_Plurals(t *testing.T) {
	dir := t.TempDir()
	plural1 := regexp.MustCompile(`\b1 (periods|keys|items|hashes|structures|candidates|turns|read locks|adds)\b`)
	arena := filepath.Join(dir, "a.arena")
	cbf := filepath.Join(dir, "c.cbf")
	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"create", filepath.Join(dir, "w.cmw"), "--kind", "countminwindow", "--keep", "1", "--period", "1s", "--candidates", "1"}, "",
			"Count-Min window, the current period of 1s, 5 x 4096 counters a period, 1 candidate"},
		{[]string{"stats", filepath.Join(dir, "w.cmw")}, "", "the current period of 1s"},
		{[]string{"create", filepath.Join(dir, "r.bw"), "--kind", "bloomwindow", "--keep", "1", "--capacity", "1", "--fp-rate", "0.5"}, "",
			"Bloom window, the current period, turned by rotate, 512 bits, 1 hash a period"},
		{[]string{"create", filepath.Join(dir, "b.bf"), "--kind", "bloom", "--capacity", "1", "--fp-rate", "0.5"}, "", "1 hash, "},
		{[]string{"add", filepath.Join(dir, "b.bf")}, "k\n", "added 1 key to "},
		{[]string{"create", cbf, "--kind", "countingbloom", "--capacity", "1"}, "", "at 1 item;"},
		{[]string{"add", "--if-absent", cbf}, "k\n", "added 1 of 1 key to "},
		{[]string{"create", filepath.Join(dir, "d.hlw"), "--kind", "distinctwindow", "--keep", "1"}, "", "the current period, turned by rotate"},
		{[]string{"create", arena, "--kind", "arena", "--size", "1M"}, "", "created"},
		{[]string{"create", arena + ":x", "--rows", "2", "--width", "64"}, "", "created"},
		{[]string{"query", arena, "k"}, "", "is an arena of 1 structure (x)"},
		{[]string{"create", arena + ":seen", "--kind", "bloom", "--capacity", "1000"}, "", "created"},
		{[]string{"create", arena + ":banned", "--kind", "countingbloom", "--capacity", "1000"}, "", "created"},
		{[]string{"create", arena + ":recent", "--kind", "bloomwindow", "--capacity", "1000", "--keep", "2"}, "", "created"},
		{[]string{"add", arena + ":seen", "k"}, "", "added"},
		{[]string{"add", arena + ":banned", "k"}, "", "k\t1"},
		{[]string{"add", arena + ":recent", "k"}, "", "added"},
		{[]string{"stats", arena}, "", "about 1 key, fill"},
		{[]string{"stats", arena}, "", "about 1 item, fill"},
		{[]string{"stats", arena}, "", "1 add, fp rate now"},
	} {
		r := skIn(t, strings.NewReader(c.stdin), c.args...)
		out := r.stdout + r.stderr
		if !strings.Contains(out, c.want) || plural1.MatchString(out) {
			t.Errorf("sketch %s: %q; want %q, and no plural of one", strings.Join(c.args, " "), out, c.want)
		}
	}
}
