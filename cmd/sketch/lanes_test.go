//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCreate_CountMinLanes: create --lanes makes a Count-Min sketch of
// lanes, which create and stats show, and whose answers are one grid's;
// --lanes sizes no other kind, and a count the library refuses is a
// usage error.
func TestCreate_CountMinLanes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes.cms")
	if out := sk(t, "create", path, "--rows", "2", "--width", "64", "--lanes", "4").ok(t, "create --lanes"); !strings.Contains(out, "4 lanes") {
		t.Errorf("create --lanes:\n%s", out)
	}
	sk(t, "add", path, "a", "a", "b").ok(t, "add")
	if st := sk(t, "stats", path).ok(t, "stats"); !strings.Contains(st, "lanes") || !strings.Contains(st, "total") {
		t.Errorf("stats does not show the lanes:\n%s", st)
	}
	if out := sk(t, "query", path, "a").ok(t, "query"); !strings.Contains(out, "2") {
		t.Errorf("query after two adds of a:\n%s", out)
	}
	if r := sk(t, "create", filepath.Join(t.TempDir(), "x"), "--lanes", "65"); r.code != 2 {
		t.Errorf("--lanes 65: exit %d, want 2", r.code)
	}
	if r := sk(t, "create", filepath.Join(t.TempDir(), "y"), "--kind", "bloom", "--capacity", "10", "--lanes", "2"); r.code != 2 {
		t.Errorf("--lanes on a Bloom filter: exit %d, want 2", r.code)
	}
}

// TestCreate_CountMinConservative: create --conservative makes a
// Count-Min sketch with conservative update, which create and stats show;
// its answers count every add; --conservative fits no other kind.
func TestCreate_CountMinConservative(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cu.cms")
	if out := sk(t, "create", path, "--rows", "2", "--width", "64", "--lanes", "2", "--conservative").ok(t, "create --conservative"); !strings.Contains(out, "conservative update in 2 lanes") {
		t.Errorf("create --conservative:\n%s", out)
	}
	sk(t, "add", path, "a", "a", "b").ok(t, "add")
	if st := sk(t, "stats", path).ok(t, "stats"); !strings.Contains(st, "conservative update") {
		t.Errorf("stats does not show conservative update:\n%s", st)
	}
	if out := sk(t, "query", path, "a").ok(t, "query"); !strings.Contains(out, "2") {
		t.Errorf("query after two adds of a:\n%s", out)
	}
	if r := sk(t, "create", filepath.Join(t.TempDir(), "y"), "--kind", "bloom", "--capacity", "10", "--conservative"); r.code != 2 {
		t.Errorf("--conservative on a Bloom filter: exit %d, want 2", r.code)
	}
	if r := sk(t, "create", filepath.Join(t.TempDir(), "w"), "--kind", "countminwindow", "--keep", "2", "--conservative"); r.code != 2 {
		t.Errorf("--conservative on a window: exit %d, want 2", r.code)
	}
}

// TestCreate_CountMinWindowLanes: create --kind countminwindow --lanes
// makes a window of lanes, which create and stats show, and whose
// answers count every add.
func TestCreate_CountMinWindowLanes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lanes.cmw")
	if out := sk(t, "create", path, "--kind", "countminwindow", "--keep", "2", "--rows", "2", "--width", "64", "--lanes", "3").ok(t, "create --lanes"); !strings.Contains(out, "3 lanes") {
		t.Errorf("create --kind countminwindow --lanes:\n%s", out)
	}
	sk(t, "add", path, "a", "a", "b").ok(t, "add")
	if st := sk(t, "stats", path).ok(t, "stats"); !strings.Contains(st, "3 in every slot") {
		t.Errorf("stats does not show the lanes:\n%s", st)
	}
	if out := sk(t, "query", path, "a").ok(t, "query"); !strings.Contains(out, "2") {
		t.Errorf("query after two adds of a:\n%s", out)
	}
	if r := sk(t, "create", filepath.Join(t.TempDir(), "x"), "--kind", "countminwindow", "--keep", "2", "--lanes", "65"); r.code != 2 {
		t.Errorf("--lanes 65: exit %d, want 2", r.code)
	}
}
