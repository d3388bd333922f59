//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCreate_CountMinFleet: create --fleet makes a Count-Min sketch with a
// fleet part, which create and stats show; --fleet sizes only the
// Count-Min kinds.
func TestCreate_CountMinFleet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.cms")
	if out := sk(t, "create", path, "--rows", "2", "--width", "64", "--fleet").ok(t, "create --fleet"); !strings.Contains(out, "a fleet part") {
		t.Errorf("create --fleet:\n%s", out)
	}
	if st := sk(t, "stats", path).ok(t, "stats"); !strings.Contains(st, "fleet part") || !strings.Contains(st, "total 0 (the rest of the fleet's counts") {
		t.Errorf("stats does not show the fleet part:\n%s", st)
	}
	if st := sk(t, "stats", "--json", path).ok(t, "stats --json"); !strings.Contains(st, `"fleet":true`) {
		t.Errorf("stats --json does not show the fleet part:\n%s", st)
	}
	plain := create(t, "p.cms", "--rows", "2", "--width", "64")
	if st := sk(t, "stats", plain).ok(t, "stats"); strings.Contains(st, "fleet") {
		t.Errorf("stats of a sketch without a fleet part:\n%s", st)
	}
	if r := sk(t, "create", filepath.Join(t.TempDir(), "x.bloom"), "--kind", "bloom", "--capacity", "10", "--fleet"); r.code != 2 {
		t.Errorf("--fleet on a Bloom filter: exit %d, want 2", r.code)
	}
}

// TestCreate_CountMinWindowFleet: create --fleet makes a Count-Min window
// with a fleet part, which create and stats show.
func TestCreate_CountMinWindowFleet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.cmw")
	if out := sk(t, "create", path, "--kind", "countminwindow", "--keep", "2", "--rows", "2", "--width", "64", "--fleet").ok(t, "create --fleet"); !strings.Contains(out, "a fleet part") {
		t.Errorf("create --fleet:\n%s", out)
	}
	if st := sk(t, "stats", path).ok(t, "stats"); !strings.Contains(st, "fleet part") {
		t.Errorf("stats does not show the fleet part:\n%s", st)
	}
	if st := sk(t, "stats", "--json", path).ok(t, "stats --json"); !strings.Contains(st, `"fleet":true`) {
		t.Errorf("stats --json does not show the fleet part:\n%s", st)
	}
	plain := create(t, "p.cmw", "--kind", "countminwindow", "--keep", "2")
	if st := sk(t, "stats", plain).ok(t, "stats"); strings.Contains(st, "fleet") {
		t.Errorf("stats of a window without a fleet part:\n%s", st)
	}
}

// TestCreate_CountingBloomFleet: create --fleet makes a counting Bloom
// filter with a fleet part, which create and stats show.
func TestCreate_CountingBloomFleet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bans.cbf")
	if out := sk(t, "create", path, "--kind", "countingbloom", "--capacity", "100", "--fleet").ok(t, "create --fleet"); !strings.Contains(out, "a fleet part") {
		t.Errorf("create --fleet:\n%s", out)
	}
	if st := sk(t, "stats", path).ok(t, "stats"); !strings.Contains(st, "fleet part") {
		t.Errorf("stats does not show the fleet part:\n%s", st)
	}
	if st := sk(t, "stats", "--json", path).ok(t, "stats --json"); !strings.Contains(st, `"fleet":true`) {
		t.Errorf("stats --json does not show the fleet part:\n%s", st)
	}
	plain := create(t, "p.cbf", "--kind", "countingbloom", "--capacity", "100")
	if st := sk(t, "stats", plain).ok(t, "stats"); strings.Contains(st, "fleet") {
		t.Errorf("stats of a filter without a fleet part:\n%s", st)
	}
}
