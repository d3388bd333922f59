package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/shmsketch/sketch"
)

// A structSpec is one structure's kind and config, as every process of the
// arena part asks for it. Shapes are given explicitly (rows and a power-of-two
// width, capacity and rate, Keep), so that the config an arena lists for an
// entry equals the spec it was created from. Windows turn only on Rotate,
// which nobody calls, so every add stays in the period every answer covers.
type structSpec struct {
	Kind     sketch.Kind `json:"kind"`
	Rows     int         `json:"rows,omitempty"`
	Width    int         `json:"width,omitempty"`
	Capacity uint64      `json:"capacity,omitempty"`
	FPRate   float64     `json:"fp_rate,omitempty"`
	Keep     int         `json:"keep,omitempty"`
}

// An arenaName is a name every worker asks for with the same spec, and, for
// some names, a conflicting spec a worker asks for once its own open with
// the right one returned: that must be ErrIncompatible.
type arenaName struct {
	Name     string      `json:"name"`
	Want     structSpec  `json:"want"`
	Conflict *structSpec `json:"conflict,omitempty"`
}

// An arenaPlan is what the workers and checkers of one phase share: the
// arenas, each with its size and its set of names.
type arenaPlan struct {
	Sets   [][]arenaName `json:"sets"`
	Arenas []arenaFile   `json:"arenas"`
}

type arenaFile struct {
	Size int64 `json:"size"`
	Set  int   `json:"set"`
}

// maxNames is the most names of any set: the stride of a record.
func (p *arenaPlan) maxNames() int {
	n := 0
	for _, s := range p.Sets {
		n = max(n, len(s))
	}
	return n
}

func (p *arenaPlan) names(arena int) []arenaName { return p.Sets[p.Arenas[arena].Set] }

func arenaFilePath(dir, phase string, arena int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.%03d.arena", phase, arena))
}

func planPath(dir, phase string) string { return filepath.Join(dir, phase+".plan") }

func writePlan(path string, p *arenaPlan) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func readPlan(path string) (*arenaPlan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := &arenaPlan{}
	return p, json.Unmarshal(b, p)
}

// specKinds are the kinds of the arena phases, in the order names cycle
// through them: the rows of structKinds with an arena part.
var specKinds = kindsWith(func(k *structKind) bool { return k.arena != nil })

// An arenaKind is what the arena phases ask of one kind: the shapes they
// draw for it (specs without their Kind, which the caller sets), another
// shape of it for a conflict, and how its specs become configs.
type arenaKind struct {
	// counts is set for a kind whose records add weights (Count-Min, its
	// window); the filters' records mark a key once.
	counts bool
	small  func(rng *rand.Rand) structSpec // a few KiB to a few tens of KiB
	fill   func(rng *rand.Rand) structSpec // 16 to 128 KiB, for the arena-full phase
	large  structSpec                      // megabytes, for the racing arenas
	// grow changes s into a shape that must not attach to s's: a filter
	// of another capacity but the same bits and hashes is the same shape,
	// so what the shape is made of changes.
	grow  func(s *structSpec)
	shape arenaShape
}

// An arenaShape is how a spec reads as a config of the kind's type and
// back, and what it takes in an arena.
type arenaShape struct {
	config func(s structSpec) any
	// read is the spec of a config with its window (zero for a kind
	// without one); false when cfg is not of the kind's type.
	read  func(cfg any) (structSpec, sketch.Window, bool)
	bytes func(s structSpec) (uint64, error) // an upper bound
}

func countMinOf(s structSpec) sketch.CountMinConfig {
	return sketch.CountMinConfig{Rows: s.Rows, Width: s.Width}
}

func bloomOf(s structSpec) sketch.BloomConfig {
	return sketch.BloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}
}

func windowOf(s structSpec) sketch.Window { return sketch.Window{Period: 0, Keep: s.Keep} }

// windowBytes is a window's Bytes counted as Keep+1 of its structure.
func windowBytes(s structSpec, b uint64, err error) (uint64, error) {
	return b * uint64(s.Keep+1), err
}

var (
	countMinShape = arenaShape{
		config: func(s structSpec) any { return countMinOf(s) },
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.CountMinConfig)
			return structSpec{Rows: c.Rows, Width: c.Width}, sketch.Window{}, ok
		},
		bytes: func(s structSpec) (uint64, error) { return countMinOf(s).Bytes() },
	}
	bloomShape = arenaShape{
		config: func(s structSpec) any { return bloomOf(s) },
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.BloomConfig)
			return structSpec{Capacity: c.Capacity, FPRate: c.FPRate}, sketch.Window{}, ok
		},
		bytes: func(s structSpec) (uint64, error) { return bloomOf(s).Bytes() },
	}
	countingBloomShape = arenaShape{
		config: func(s structSpec) any {
			return sketch.CountingBloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}
		},
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.CountingBloomConfig)
			return structSpec{Capacity: c.Capacity, FPRate: c.FPRate}, sketch.Window{}, ok
		},
		bytes: func(s structSpec) (uint64, error) {
			return sketch.CountingBloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}.Bytes()
		},
	}
	countMinWindowShape = arenaShape{
		config: func(s structSpec) any {
			return sketch.CountMinWindowConfig{Window: windowOf(s), CountMin: countMinOf(s)}
		},
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.CountMinWindowConfig)
			return structSpec{Rows: c.CountMin.Rows, Width: c.CountMin.Width}, c.Window, ok
		},
		bytes: func(s structSpec) (uint64, error) {
			b, err := countMinOf(s).Bytes()
			return windowBytes(s, b, err)
		},
	}
	bloomWindowShape = arenaShape{
		config: func(s structSpec) any {
			return sketch.BloomWindowConfig{Window: windowOf(s), Bloom: bloomOf(s)}
		},
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.BloomWindowConfig)
			return structSpec{Capacity: c.Bloom.Capacity, FPRate: c.Bloom.FPRate}, c.Window, ok
		},
		bytes: func(s structSpec) (uint64, error) {
			b, err := bloomOf(s).Bytes()
			return windowBytes(s, b, err)
		},
	}
)

// growCapacity is a filter's other shape: more bits (or counters).
func growCapacity(s *structSpec) { s.Capacity *= 4 }

// arenaPart is kind k's arena part; nil for a kind the arena phases leave
// out.
func arenaPart(k sketch.Kind) *arenaKind {
	if row := structKindOf(k); row != nil {
		return row.arena
	}
	return nil
}

// mustArenaPart is kind k's arena part, for a spec the phases made.
func mustArenaPart(k sketch.Kind) *arenaKind {
	a := arenaPart(k)
	if a == nil {
		panic(fmt.Sprintf("torture: %s takes no part in the arena phases", k))
	}
	return a
}

func kindIndex(k sketch.Kind) int {
	for i, s := range specKinds {
		if s == k {
			return i
		}
	}
	return -1
}

// smallSpec draws a structure of kind k of a few KiB to a few tens of KiB.
func smallSpec(rng *rand.Rand, k sketch.Kind) structSpec {
	s := mustArenaPart(k).small(rng)
	s.Kind = k
	return s
}

// largeSpecs are the large structures of the racing arenas: megabytes each,
// so that some of the arena's file is far from its directory.
var largeSpecs = func() []structSpec {
	var ls []structSpec
	for _, k := range specKinds {
		s := mustArenaPart(k).large
		s.Kind = k
		ls = append(ls, s)
	}
	return ls
}()

// conflictOf is a spec that must not open the structure s: another kind
// (every other conflict), or the same kind with another shape.
func conflictOf(s structSpec, otherKind bool) structSpec {
	if otherKind {
		k := specKinds[(kindIndex(s.Kind)+1)%len(specKinds)]
		return structSpec{Kind: k, Rows: 2, Width: 256, Capacity: 100, FPRate: 0.01, Keep: 2}.only()
	}
	c := s
	mustArenaPart(s.Kind).grow(&c)
	return c
}

// only keeps the fields of s that its kind has, so that the spec equals
// the one read back from the arena's listing: s read back from its own
// config.
func (s structSpec) only() structSpec {
	o, w, _ := mustArenaPart(s.Kind).shape.read(s.config())
	o.Kind, o.Keep = s.Kind, w.Keep
	return o
}

// racePlan is the racing-creates phase: arenas of the same names, of every
// kind, a few of them large, every seventh with a conflicting spec too. Each
// arena is sized for all of them with room to spare, so that ErrArenaFull
// there is a violation.
func racePlan(seed uint64, names, large, arenas int) (*arenaPlan, error) {
	rng := rand.New(rand.NewPCG(seed, 11))
	set := make([]arenaName, names)
	for i := range set {
		k := specKinds[i%len(specKinds)]
		s := smallSpec(rng, k)
		if i < large {
			s = largeSpecs[i%len(largeSpecs)]
		}
		set[i] = arenaName{Name: fmt.Sprintf("race-%03d", i), Want: s}
		if i%7 == 3 {
			c := conflictOf(s, i%14 == 3)
			set[i].Conflict = &c
		}
	}
	size, err := arenaSizeFor(set)
	if err != nil {
		return nil, err
	}
	p := &arenaPlan{Sets: [][]arenaName{set}}
	for range arenas {
		p.Arenas = append(p.Arenas, arenaFile{Size: size, Set: 0})
	}
	return p, nil
}

// arenaSizeFor is an arena size that holds every name of set: the sum of
// the structures' Bytes plus 1 MiB, which the library promises always fits
// (a window's Bytes counted as Keep+1 of its structure), and a page. It
// proves it by creating them all in an arena of that size in memory.
func arenaSizeFor(set []arenaName) (int64, error) {
	total := uint64(1<<20 + 4096)
	for _, n := range set {
		b, err := n.Want.bytes()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", n.Name, err)
		}
		total += b
	}
	a, err := sketch.OpenArena(sketch.Memory(), sketch.ArenaConfig{Size: int64(total)})
	if err != nil {
		return 0, err
	}
	defer a.Close()
	for _, n := range set {
		s, err := n.Want.open(a, n.Name)
		if err != nil {
			return 0, fmt.Errorf("an arena of %d bytes does not hold every name: %w", total, err)
		}
		s.close()
	}
	return int64(total), nil
}

// bytes is an upper bound of what the structure takes in an arena.
func (s structSpec) bytes() (uint64, error) {
	a := arenaPart(s.Kind)
	if a == nil {
		return 0, fmt.Errorf("unknown kind %q", s.Kind)
	}
	return a.shape.bytes(s)
}

// fillPlan is the arena-full phase: small arenas that cannot hold every
// name, alternately by space (structures of 16 to 128 KiB in a 1 MiB
// arena) and by directory (tiny structures, more names than the 16
// directory entries of a 64 KiB arena).
func fillPlan(seed uint64, arenas int) *arenaPlan {
	rng := rand.New(rand.NewPCG(seed, 12))
	space := make([]arenaName, 40)
	for i := range space {
		k := specKinds[i%len(specKinds)]
		s := mustArenaPart(k).fill(rng)
		s.Kind = k
		space[i] = arenaName{Name: fmt.Sprintf("fill-%02d", i), Want: s}
	}
	dirs := make([]arenaName, 40)
	for i := range dirs {
		k := specKinds[i%len(specKinds)]
		s := structSpec{Kind: k, Rows: 1, Width: 64, Capacity: 16, FPRate: 0.01, Keep: 1}.only()
		dirs[i] = arenaName{Name: fmt.Sprintf("tiny-%02d", i), Want: s}
	}
	p := &arenaPlan{Sets: [][]arenaName{space, dirs}}
	for i := range arenas {
		if i%2 == 0 {
			p.Arenas = append(p.Arenas, arenaFile{Size: 1 << 20, Set: 0})
		} else {
			p.Arenas = append(p.Arenas, arenaFile{Size: 64 << 10, Set: 1})
		}
	}
	return p
}

// config is the config an arena lists for an entry created from s.
func (s structSpec) config() any { return mustArenaPart(s.Kind).shape.config(s) }

// specOfEntry is the spec of a listed entry, from its kind and config; false
// when the kind takes no part in the arena phases, the config is not of the
// kind's type or its window turns by the clock.
func specOfEntry(e sketch.ArenaEntry) (structSpec, bool) {
	a := arenaPart(e.Kind)
	if a == nil {
		return structSpec{Kind: e.Kind}, false
	}
	s, w, ok := a.shape.read(e.Config)
	s.Kind, s.Keep = e.Kind, w.Keep
	if !ok || w.Period != time.Duration(0) {
		return s, false
	}
	return s, reflect.DeepEqual(s.config(), e.Config) // a counters config holds a slice
}
