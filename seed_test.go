//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// The seed tests: structures created apart with one seed (the config's
// Seed, on every route that creates a file) merge exactly; with random
// seeds they refuse to (ErrIncompatible); another seed than an existing
// file's is ErrIncompatible.

const fleetSeed = 0x5eed_f1ee_7000_0001

// seeded is what every structure and the arena share for these tests.
type seeded interface {
	Seed() uint64
	Close() error
}

// seedKind creates one kind of mergeable structure by every route, and
// adds, merges and counts on it.
type seedKind[S seeded] struct {
	open   func(path string, seed uint64) (S, error)
	memfd  func(seed uint64) (S, error)
	memory func(seed uint64) (S, error)
	arena  func(a *Arena) (S, error)
	add    func(s S, key string) error
	merge  func(dst, src S) error
	// count is what s says of key: an estimate, a count, or 1 for a
	// Bloom filter's member and 0 for a non-member.
	count func(s S, key string) uint64
	// set is true for a Bloom filter, which holds a key or not: however
	// often a key was added, it counts 1.
	set bool
}

// seedRoutes are the ways a file is created, each given its seed by its
// config: at a path, as a memfd, in memory, and as an arena's structure
// (the arena's config).
var seedRoutes = []string{"open", "memfd", "memory", "arena"}

// make creates a structure by route, with the seed if it is not zero and
// a random one otherwise.
func (k seedKind[S]) make(t *testing.T, route string, seed uint64) S {
	t.Helper()
	var s S
	var err error
	switch route {
	case "open":
		s, err = k.open(tempPath(t, "s"), seed)
	case "memfd":
		s, err = k.memfd(seed)
	case "memory":
		s, err = k.memory(seed)
	case "arena":
		var a *Arena
		if a, err = OpenArena(Path(tempPath(t, "a.arena")), ArenaConfig{Size: 4 << 20, Seed: seed}); err == nil {
			t.Cleanup(func() { a.Close() })
			s, err = k.arena(a)
		}
	}
	if err != nil {
		t.Fatalf("%s with seed %#x: %v", route, seed, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testSeedMerge: on every route, two structures created apart with one
// seed have that seed and merge to exact counts; two with random seeds
// have different ones and refuse to merge.
func testSeedMerge[S seeded](t *testing.T, k seedKind[S]) {
	for _, route := range seedRoutes {
		t.Run(route, func(t *testing.T) {
			a, b := k.make(t, route, fleetSeed), k.make(t, route, fleetSeed)
			for _, s := range []S{a, b} {
				if got := s.Seed(); got != fleetSeed {
					t.Fatalf("Seed() = %#x, want %#x", got, uint64(fleetSeed))
				}
			}
			want := map[string]uint64{}
			for i := range 200 {
				key, s := fmt.Sprintf("a-%d", i), a
				if i%2 == 1 {
					key, s = fmt.Sprintf("b-%d", i), b
				}
				for range i%3 + 1 {
					if err := k.add(s, key); err != nil {
						t.Fatal(err)
					}
					want[key]++
				}
			}
			if err := k.merge(a, b); err != nil {
				t.Fatalf("Merge of two structures with one seed: %v", err)
			}
			for key, n := range want {
				if k.set {
					n = 1
				}
				if got := k.count(a, key); got != n {
					t.Errorf("after the merge, count(%q) = %d, want %d", key, got, n)
				}
			}

			x, y := k.make(t, route, 0), k.make(t, route, 0)
			if x.Seed() == 0 || x.Seed() == y.Seed() {
				t.Errorf("random seeds: Seed() = %#x and %#x, want two nonzero seeds", x.Seed(), y.Seed())
			}
			if err := k.merge(x, y); !errors.Is(err, ErrIncompatible) {
				t.Errorf("Merge of two structures with random seeds = %v, want ErrIncompatible", err)
			}
		})
	}
}

func TestSeed_MergeCountMin(t *testing.T) {
	cfg := func(seed uint64) CountMinConfig { return CountMinConfig{Rows: 4, Width: 1 << 12, Seed: seed} }
	testSeedMerge(t, seedKind[*CountMin]{
		open:   func(p string, seed uint64) (*CountMin, error) { return OpenCountMin(Path(p), cfg(seed)) },
		memfd:  func(seed uint64) (*CountMin, error) { return OpenCountMin(Memfd("cms"), cfg(seed)) },
		memory: func(seed uint64) (*CountMin, error) { return OpenCountMin(Memory(), cfg(seed)) },
		arena:  func(a *Arena) (*CountMin, error) { return OpenCountMin(a.Place("cms"), cfg(0)) },
		add:    func(c *CountMin, key string) error { _, err := c.AddString(key); return err },
		merge:  func(dst, src *CountMin) error { return dst.Merge(src) },
		count:  func(c *CountMin, key string) uint64 { return c.EstimateString(key) },
	})
}

func TestSeed_MergeBloom(t *testing.T) {
	cfg := func(seed uint64) BloomConfig { return BloomConfig{Capacity: 1000, FPRate: 0.001, Seed: seed} }
	testSeedMerge(t, seedKind[*Bloom]{
		open:   func(p string, seed uint64) (*Bloom, error) { return OpenBloom(Path(p), cfg(seed)) },
		memfd:  func(seed uint64) (*Bloom, error) { return OpenBloom(Memfd("bloom"), cfg(seed)) },
		memory: func(seed uint64) (*Bloom, error) { return OpenBloom(Memory(), cfg(seed)) },
		arena:  func(a *Arena) (*Bloom, error) { return OpenBloom(a.Place("bloom"), cfg(0)) },
		add:    func(b *Bloom, key string) error { _, err := b.AddString(key); return err },
		merge:  func(dst, src *Bloom) error { return dst.Merge(src) },
		count: func(b *Bloom, key string) uint64 {
			if b.ContainsString(key) {
				return 1
			}
			return 0
		},
		set: true,
	})
}

func TestSeed_MergeCountingBloom(t *testing.T) {
	cfg := func(seed uint64) CountingBloomConfig {
		return CountingBloomConfig{Capacity: 1000, FPRate: 0.001, Seed: seed}
	}
	testSeedMerge(t, seedKind[*CountingBloom]{
		open:   func(p string, seed uint64) (*CountingBloom, error) { return OpenCountingBloom(Path(p), cfg(seed)) },
		memfd:  func(seed uint64) (*CountingBloom, error) { return OpenCountingBloom(Memfd("cbf"), cfg(seed)) },
		memory: func(seed uint64) (*CountingBloom, error) { return OpenCountingBloom(Memory(), cfg(seed)) },
		arena:  func(a *Arena) (*CountingBloom, error) { return OpenCountingBloom(a.Place("cbf"), cfg(0)) },
		add:    func(b *CountingBloom, key string) error { _, err := b.AddString(key); return err },
		merge:  func(dst, src *CountingBloom) error { return dst.Merge(src) },
		count:  func(b *CountingBloom, key string) uint64 { return uint64(b.EstimateString(key)) },
	})
}

// TestSeed_Windows: windows, which do not merge, have the seed their
// config gave on every route, and so does their arena.
func TestSeed_Windows(t *testing.T) {
	arena, err := OpenArena(Memory(), ArenaConfig{Size: 1 << 20, Seed: fleetSeed})
	if err != nil {
		t.Fatal(err)
	}
	defer arena.Close()
	type seedCase struct {
		name string
		make func() (seeded, error)
	}
	var cases []seedCase
	for _, k := range testKinds {
		if !k.window {
			continue
		}
		cases = append(cases,
			seedCase{k.name + "/Path", func() (seeded, error) { return k.open(Path(tempPath(t, "w")), fleetSeed) }},
			seedCase{k.name + "/Memfd", func() (seeded, error) { return k.open(Memfd("w"), fleetSeed) }},
			seedCase{k.name + "/Memory", func() (seeded, error) { return k.open(Memory(), fleetSeed) }},
			seedCase{k.name + "/Arena", func() (seeded, error) { return k.open(arena.Place(k.name), 0) }})
	}
	cases = append(cases, seedCase{"Arena", func() (seeded, error) { return arena, nil }})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			if s != seeded(arena) {
				defer s.Close()
			}
			if got := s.Seed(); got != fleetSeed {
				t.Errorf("Seed() = %#x, want %#x", got, uint64(fleetSeed))
			}
		})
	}
}

// TestSeed_Config: a config's Seed is the seed of the file every
// constructor creates, at every place; attaching with another seed than
// the file's is ErrIncompatible.
func TestSeed_Config(t *testing.T) {
	type maker struct {
		name string
		make func(seed uint64) (seeded, error)
	}
	var makers []maker
	for _, k := range testKinds {
		makers = append(makers,
			maker{k.name + "/Path", func(seed uint64) (seeded, error) { return k.open(Path(tempPath(t, "f")), seed) }},
			maker{k.name + "/Memfd", func(seed uint64) (seeded, error) { return k.open(Memfd("f"), seed) }},
			maker{k.name + "/Memory", func(seed uint64) (seeded, error) { return k.open(Memory(), seed) }})
	}
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			s, err := m.make(3)
			if err != nil {
				t.Fatalf("Seed 3 in the config: %v", err)
			}
			defer s.Close()
			if got := s.Seed(); got != 3 {
				t.Errorf("Seed() = %d, want 3", got)
			}
		})
	}
}

// TestSeed_Attach: opening or attaching to an existing file with a
// config of another seed is ErrIncompatible; with its own seed, or none,
// it attaches. So for an arena and its ArenaConfig.
func TestSeed_Attach(t *testing.T) {
	path := tempPath(t, "f")
	cfg := CountMinConfig{Rows: 2, Width: 64, Seed: 7}
	other := cfg
	other.Seed = 8
	c := mustOpen(t, path, cfg)
	if _, err := OpenCountMin(Path(path), other); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountMin of a file with seed 7, Seed 8 = %v, want ErrIncompatible", err)
	}
	mustOpen(t, path, cfg)
	mustOpen(t, path, CountMinConfig{})
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := OpenCountMin(Inherited(f.Fd()), other); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountMin of a file with seed 7, Seed 8 = %v, want ErrIncompatible", err)
	}
	a, err := OpenCountMin(Inherited(f.Fd()), cfg)
	if err != nil {
		t.Fatalf("OpenCountMin with the file's seed: %v", err)
	}
	a.Close()

	apath := tempPath(t, "a.arena")
	mustIn(t, OpenArena, Path(apath), ArenaConfig{Size: 1 << 20, Seed: 7})
	if _, err := OpenArena(Path(apath), ArenaConfig{Seed: 8}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenArena of an arena with seed 7, Seed 8 = %v, want ErrIncompatible", err)
	}
	mustIn(t, OpenArena, Path(apath), ArenaConfig{Seed: 7})
	if _, err := os.Stat(apath); err != nil {
		t.Fatal(err)
	}
}
