//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// seedFile writes seed to a new file only its owner may read, and
// returns its path, for create --seed-file.
func seedFile(t *testing.T, seed string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seed")
	if err := os.WriteFile(path, []byte(seed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCreate_SeedFile: create takes the secret seed from a file or from
// standard input, in decimal or hex, and never from the command line; a
// seed file every user may read, an empty one, a zero and a number that
// does not parse are refused without creating anything or echoing what
// the file holds.
func TestCreate_SeedFile(t *testing.T) {
	const seed = 0x1234_5678_9abc_def0
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		args  func(path string) []string
		stdin string
	}{
		{"decimal file", func(path string) []string { return []string{"--seed-file", seedFile(t, "1311768467463790320")} }, ""},
		{"hex file", func(path string) []string { return []string{"--seed-file", seedFile(t, "  0x123456789ABCDEF0 ")} }, ""},
		{"stdin", func(path string) []string { return []string{"--seed-file", "-"} }, "0x123456789abcdef0\n"},
		{"arena from stdin", func(path string) []string { return []string{"--kind", "arena", "--size", "1M", "--seed-file", "-"} }, "1311768467463790320"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			skIn(t, strings.NewReader(tc.stdin), append([]string{"create", path}, tc.args(path)...)...).ok(t, "create")
			fi, err := sketch.Inspect(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Seed != seed {
				t.Errorf("create %s: seed %#x, want %#x", tc.name, fi.Seed, uint64(seed))
			}
		})
	}

	loose := seedFile(t, "1311768467463790320")
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  string
	}{
		{"on the command line", []string{"--seed", "1311768467463790320"}, "", 2, "give --seed-file FILE"},
		{"world-readable file", []string{"--seed-file", loose}, "", 1, "every user may read it"},
		{"missing file", []string{"--seed-file", filepath.Join(dir, "nosuch")}, "", 1, "no such file"},
		{"empty stdin", []string{"--seed-file", "-"}, "", 2, "does not hold one seed"},
		{"zero", []string{"--seed-file", "-"}, "0\n", 2, "random seed"},
		{"not a number", []string{"--seed-file", "-"}, "hunter2 secret\n", 2, "does not hold one seed"},
		{"two numbers", []string{"--seed-file", "-"}, "1 2\n", 2, "does not hold one seed"},
		{"too large", []string{"--seed-file", "-"}, "18446744073709551616\n", 2, "does not hold one seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "refused")
			r := skIn(t, strings.NewReader(tc.stdin), append([]string{"create", path}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("create %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.code, tc.want)
			}
			if strings.Contains(r.stderr, "hunter2") || strings.Contains(r.stderr, "1311768467463790320") && tc.name != "on the command line" {
				t.Errorf("create %s: the message shows what the seed file holds: %q", strings.Join(tc.args, " "), r.stderr)
			}
			if _, err := os.Lstat(path); err == nil {
				t.Fatalf("create %s made %s", strings.Join(tc.args, " "), path)
			}
		})
	}
}
