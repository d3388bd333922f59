package sketch

import (
	"path/filepath"
	"testing"
)

// TestCountMinConservative_ArenaClosedFirst: a handle of a conservative
// sketch in an arena keeps its lane after the arena's handle closes; a
// handle of another arena handle on the same file must not be given the
// same lane while the first still raises it.
func TestCountMinConservative_ArenaClosedFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arena")
	cfg := CountMinConfig{Rows: 2, Width: 64, Lanes: 1, ConservativeUpdate: true}
	a := mustOpenArena(t, path, 1<<20)
	c, err := OpenCountMin(a.Place("cm"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c2, err := OpenCountMin(a.Place("cm"), CountMinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if s1, s2 := c.Stats(), c2.Stats(); !s1.LaneOwned || s2.LaneOwned {
		t.Fatalf("two handles of one arena: owned %v and %v, want the first only (one lane)", s1.LaneOwned, s2.LaneOwned)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := mustOpenArena(t, path, 1<<20)
	defer b.Close()
	d, err := OpenCountMin(b.Place("cm"), CountMinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Stats().LaneOwned {
		t.Fatalf("a handle of a second arena handle owns lane %d, which the first arena's handle still owns", d.Stats().Lane)
	}
	for range 10 {
		if _, err := c.Add([]byte("k")); err != nil {
			t.Fatal(err)
		}
	}
	if v := d.Estimate([]byte("k")); v < 10 {
		t.Errorf("Estimate(%q) = %d, want >= 10", "k", v)
	}
}

// TestCountMinConservative_ArenaTwoHandlesNeverLow: two handles of one
// conservative sketch in one arena, raising one key from a goroutine each:
// the estimate is never below the adds made.
func TestCountMinConservative_ArenaTwoHandlesNeverLow(t *testing.T) {
	a := mustOpenArena(t, filepath.Join(t.TempDir(), "arena"), 1<<20)
	defer a.Close()
	cfg := CountMinConfig{Rows: 2, Width: 64, Lanes: 1, ConservativeUpdate: true}
	hs := make([]*CountMin, 2)
	for i := range hs {
		c, err := OpenCountMin(a.Place("cm"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hs[i] = c
	}
	const n = 200000
	done := make(chan error, len(hs))
	for _, c := range hs {
		go func() {
			for range n {
				if _, err := c.Add([]byte("k")); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range hs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if v := hs[0].Estimate([]byte("k")); v < 2*n {
		t.Errorf("Estimate(%q) = %d, want >= %d", "k", v, 2*n)
	}
}
