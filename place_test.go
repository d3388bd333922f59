package sketch

import (
	"errors"
	"path/filepath"
	"testing"
)

// openEvery opens one structure of every kind at p (testKinds, with its
// small config), and closes it: the errors by kind.
func openEvery(p Place, opts ...Option) map[string]error {
	errs := map[string]error{}
	for _, k := range testKinds {
		s, err := k.open(p, 0, opts...)
		errs[k.name] = err
		if err == nil {
			s.Close()
		}
	}
	return errs
}

// TestPlace_Nowhere: the zero Place and an arena place of no arena are
// refused by every constructor, with ErrInvalidArgument and no panic.
func TestPlace_Nowhere(t *testing.T) {
	var nilArena *Arena
	for name, p := range map[string]Place{"zero Place": {}, "nil arena's Place": nilArena.Place("x")} {
		for kind, err := range openEvery(p) {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s: Open%s = %v, want ErrInvalidArgument", name, kind, err)
			}
		}
		if _, err := OpenArena(p, ArenaConfig{Size: 1 << 20}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: OpenArena = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// TestPlace_ArenasDoNotNest: an arena's place holds structures, not
// another arena.
func TestPlace_ArenasDoNotNest(t *testing.T) {
	a, err := OpenArena(Memory(), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := OpenArena(a.Place("inner"), ArenaConfig{Size: 1 << 20}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("OpenArena(arena.Place) = %v, want ErrInvalidArgument", err)
	}
	if got := len(a.List()); got != 0 {
		t.Errorf("the refused arena left %d entries", got)
	}
}

// TestPlace_EveryKindEveryPlace: every kind opens at every place, and a
// second open of a path, a descriptor and an arena name sees the first's
// adds.
func TestPlace_EveryKindEveryPlace(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenArena(Path(filepath.Join(dir, "arena")), ArenaConfig{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for name, p := range map[string]func(kind string) Place{
		"Path":   func(kind string) Place { return Path(filepath.Join(dir, kind)) },
		"Memfd":  func(kind string) Place { return Memfd(kind) },
		"Memory": func(string) Place { return Memory() },
		"Arena":  func(kind string) Place { return a.Place(kind) },
	} {
		c, err := OpenCountMin(p("cms"), CountMinConfig{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c.AddString("k")
		// The same structure again: by the place, or by its descriptor.
		again := p("cms")
		if name == "Memfd" || name == "Memory" {
			f, err := c.File()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			again = Inherited(f.Fd())
		}
		c2, err := OpenCountMin(again, CountMinConfig{})
		if err != nil {
			t.Fatalf("%s: second open: %v", name, err)
		}
		if got := c2.EstimateString("k"); got != 1 {
			t.Errorf("%s: the second handle estimates %d, want 1", name, got)
		}
		if err := c2.Check(); err != nil {
			t.Errorf("%s: Check = %v", name, err)
		}
		c.Close()
		c2.Close()
		for kind, err := range openEvery(p(name + "-every")) {
			// A path or an arena name holds one kind: the first to ask
			// creates it, the others are ErrIncompatible.
			if err != nil && !errors.Is(err, ErrIncompatible) {
				t.Errorf("%s: Open%s = %v", name, kind, err)
			}
		}
	}
}

// TestPlace_CreateOnly: a memfd or memory always creates, so a config that
// only attaches is ErrInvalidConfig there, and so is WithReadOnly.
func TestPlace_CreateOnly(t *testing.T) {
	for _, p := range []Place{Memfd("x"), Memory()} {
		if _, err := OpenBloom(p, BloomConfig{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("OpenBloom(%v, zero config) = %v, want ErrInvalidConfig", p.how, err)
		}
		if _, err := OpenCountMinWindow(p, CountMinWindowConfig{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("OpenCountMinWindow(%v, zero Window) = %v, want ErrInvalidConfig", p.how, err)
		}
		if _, err := OpenCountMin(p, CountMinConfig{}, WithReadOnly()); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("OpenCountMin(%v, WithReadOnly) = %v, want ErrInvalidConfig", p.how, err)
		}
		if _, err := OpenArena(p, ArenaConfig{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("OpenArena(%v, ArenaConfig{}) = %v, want ErrInvalidConfig", p.how, err)
		}
	}
}

// TestPlace_ArenaOptions: in an arena, a config's Seed must be the arena's
// seed and WithReadOnly needs a read-only arena.
func TestPlace_ArenaOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arena")
	a, err := OpenArena(Path(path), ArenaConfig{Size: 1 << 20, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := OpenCountMin(a.Place("c"), CountMinConfig{Seed: 8}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("another seed in an arena = %v, want ErrIncompatible", err)
	}
	c, err := OpenCountMin(a.Place("c"), CountMinConfig{Seed: 7})
	if err != nil {
		t.Fatalf("the arena's seed: %v", err)
	}
	c.AddString("k")
	c.Close()
	if _, err := OpenCountMin(a.Place("c"), CountMinConfig{}, WithReadOnly()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("WithReadOnly in a read-write arena = %v, want ErrInvalidConfig", err)
	}
	ro, err := OpenArena(Path(path), ArenaConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	rc, err := OpenCountMin(ro.Place("c"), CountMinConfig{}, WithReadOnly())
	if err != nil {
		t.Fatalf("WithReadOnly in a read-only arena: %v", err)
	}
	defer rc.Close()
	if !rc.ReadOnly() || rc.EstimateString("k") != 1 {
		t.Errorf("read-only arena's sketch: ReadOnly %v, estimate %d, want true, 1", rc.ReadOnly(), rc.EstimateString("k"))
	}
}

// TestHandle_Shared: the methods every kind shares through Handle: Check on
// a sound file, Check and Freeze after Close, String without the seed.
func TestHandle_Shared(t *testing.T) {
	type shared interface {
		Check() error
		Freeze() error
		String() string
		StatsVar() StatsVar
	}
	hs := map[string]shared{}
	closers := map[string]func() error{}
	for _, k := range testKinds {
		s, err := k.open(Memory(), 0x5eed5eed)
		if err != nil {
			t.Fatalf("%s: %v", k.name, err)
		}
		hs[k.name], closers[k.name] = s, s.Close
	}
	a, err := OpenArena(Memory(), ArenaConfig{Size: 1 << 20, Seed: 0x5eed5eed})
	if err != nil {
		t.Fatal(err)
	}
	hs["Arena"], closers["Arena"] = a, a.Close
	for kind, h := range hs {
		if err := h.Check(); err != nil {
			t.Errorf("%s: Check = %v", kind, err)
		}
		s := h.String()
		if want := "sketch." + kind + "("; len(s) < len(want) || s[:len(want)] != want {
			t.Errorf("%s: String = %q, want it to start %q", kind, s, want)
		}
		for _, seed := range []string{"5eed5eed", "1592614637"} {
			if contains(s, seed) || contains(h.StatsVar().String(), seed) {
				t.Errorf("%s: String or StatsVar shows the seed: %s", kind, s)
			}
		}
		closers[kind]()
		if err := h.Check(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Check after Close = %v, want ErrClosed", kind, err)
		}
		if err := h.Freeze(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Freeze after Close = %v, want ErrClosed", kind, err)
		}
	}
	var zero CountMin
	if err := zero.Check(); !errors.Is(err, ErrClosed) {
		t.Errorf("zero CountMin: Check = %v, want ErrClosed", err)
	}
	if err := zero.Freeze(); !errors.Is(err, ErrClosed) {
		t.Errorf("zero CountMin: Freeze = %v, want ErrClosed", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestCountingBloom_Verbs: AddBatch answers as Add does, ContainsBatch
// refuses a length mismatch, Merge takes any number of others.
func TestCountingBloom_Verbs(t *testing.T) {
	cfg := CountingBloomConfig{Capacity: 1000, Seed: 3}
	x, _ := OpenCountingBloom(Memory(), cfg)
	y, _ := OpenCountingBloom(Memory(), cfg)
	z, _ := OpenCountingBloom(Memory(), cfg)
	defer x.Close()
	defer y.Close()
	defer z.Close()
	keys := [][]byte{[]byte("a"), []byte("b"), []byte("a")}
	already := make([]bool, 3)
	if err := x.AddBatch(keys, already); err != nil || already[0] || already[1] || !already[2] {
		t.Errorf("AddBatch answers %v, %v, want [false false true]", already, err)
	}
	if err := x.AddBatch(keys, make([]bool, 2)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("AddBatch with 2 answers for 3 keys = %v, want ErrInvalidArgument", err)
	}
	if got := x.EstimateString("a"); got != 2 {
		t.Errorf("a refused AddBatch added: Estimate(a) = %d, want 2", got)
	}
	if err := x.ContainsBatch(keys, make([]bool, 1)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ContainsBatch with 1 answer for 3 keys = %v, want ErrInvalidArgument", err)
	}
	y.AddString("y")
	z.AddString("z")
	z.AddString("a")
	if err := x.Merge(y, z); err != nil {
		t.Fatal(err)
	}
	out := make([]bool, 4)
	if err := x.ContainsBatch([][]byte{[]byte("a"), []byte("y"), []byte("z"), []byte("never")}, out); err != nil {
		t.Fatal(err)
	}
	if !out[0] || !out[1] || !out[2] {
		t.Errorf("after Merge(y, z): ContainsBatch = %v, want a, y and z present", out)
	}
	if got := x.EstimateString("a"); got != 3 {
		t.Errorf("after Merge: Estimate(a) = %d, want 3", got)
	}
	other, _ := OpenCountingBloom(Memory(), CountingBloomConfig{Capacity: 1000, Seed: 4})
	defer other.Close()
	if err := x.Merge(y, other); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Merge with a filter of another seed = %v, want ErrIncompatible", err)
	}
	if got := x.EstimateString("y"); got != 1 {
		t.Errorf("a refused Merge merged: Estimate(y) = %d, want 1", got)
	}
}
