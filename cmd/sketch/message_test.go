//go:build linux

package main

import (
	"path/filepath"
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
