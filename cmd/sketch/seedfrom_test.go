//go:build linux

package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

// TestCreate_SeedFrom: a file created with --seed-from another has its
// seed, without printing it, and the two merge to exact counts; so does a
// structure in an arena created with --seed-from; a file with its own
// random seed does not merge.
func TestCreate_SeedFrom(t *testing.T) {
	dir := t.TempDir()
	shape := []string{"--rows", "4", "--width", "4096"}
	host1 := create(t, "host1.cms", shape...)
	info, err := sketch.Inspect(host1)
	if err != nil {
		t.Fatal(err)
	}
	seed := strconv.FormatUint(info.Seed, 10)

	host2 := filepath.Join(dir, "host2.cms")
	r := sk(t, append([]string{"create", host2, "--seed-from", host1}, shape...)...)
	r.ok(t, "create --seed-from")
	if strings.Contains(r.stdout+r.stderr, seed) {
		t.Errorf("create --seed-from printed the seed:\n%s%s", r.stdout, r.stderr)
	}
	arena := filepath.Join(dir, "host3.arena")
	sk(t, "create", arena, "--kind", "arena", "--size", "1M", "--seed-from", host1+":any").ok(t, "create arena --seed-from FILE:NAME")
	sk(t, append([]string{"create", arena + ":clients"}, shape...)...).ok(t, "create in arena")
	for _, p := range []string{host2, arena} {
		if got, err := sketch.Inspect(p); err != nil || got.Seed != info.Seed {
			t.Errorf("%s: another seed than the file it took it from (%v)", p, err)
		}
	}

	want := map[string]uint64{}
	for i, dst := range []string{host1, host2, arena + ":clients"} {
		keys := []string{"all", "host-" + strconv.Itoa(i)}
		for _, k := range keys {
			want[k] += uint64(i + 1)
		}
		sk(t, "add", "-n", strconv.Itoa(i+1), dst, keys[0], keys[1]).ok(t, "add")
	}
	sk(t, "freeze", host2).ok(t, "freeze")
	sk(t, "merge", host1, host2, arena+":clients").ok(t, "merge of files made with --seed-from")
	for k, n := range want {
		var a cmsAnswerJSON
		decode(t, sk(t, "query", "--json", host1, k).ok(t, "query"), &a)
		if a.Estimate != n {
			t.Errorf("after the merge, Estimate(%q) = %d, want %d", k, a.Estimate, n)
		}
	}

	other := create(t, "other.cms", shape...)
	if r := sk(t, "merge", host1, other); r.code != 1 || !strings.Contains(r.stderr, "seed") {
		t.Errorf("merge of a file with its own random seed: exit %d, %q; want 1 and a word about the seed", r.code, r.stderr)
	}
	for _, args := range [][]string{
		{"create", filepath.Join(dir, "x.cms"), "--seed-from", host1, "--seed-file", seedFile(t, "7")},
		{"create", arena + ":more", "--seed-from", host1},
	} {
		if r := sk(t, args...); r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (%q)", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := sk(t, "create", filepath.Join(dir, "y.cms"), "--seed-from", filepath.Join(dir, "missing")); r.code != 1 || !strings.Contains(r.stderr, "missing") {
		t.Errorf("create --seed-from a missing file: exit %d, %q", r.code, r.stderr)
	}
}
