package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
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

// specKinds are the kinds in the order names cycle through them.
var specKinds = []sketch.Kind{sketch.KindCountMin, sketch.KindBloom, sketch.KindCountingBloom, sketch.KindCountMinWindow, sketch.KindBloomWindow}

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
	switch k {
	case sketch.KindCountMin:
		return structSpec{Kind: k, Rows: 2 + rng.IntN(3), Width: 256 << rng.IntN(4)}
	case sketch.KindBloom:
		return structSpec{Kind: k, Capacity: 200 + rng.Uint64N(1800), FPRate: 0.01}
	case sketch.KindCountingBloom:
		return structSpec{Kind: k, Capacity: 100 + rng.Uint64N(900), FPRate: 0.01}
	case sketch.KindCountMinWindow:
		return structSpec{Kind: k, Rows: 2 + rng.IntN(2), Width: 256 << rng.IntN(2), Keep: 2 + rng.IntN(3)}
	default:
		return structSpec{Kind: k, Capacity: 100 + rng.Uint64N(400), FPRate: 0.01, Keep: 2 + rng.IntN(2)}
	}
}

// largeSpecs are the large structures of the racing arenas: megabytes each,
// so that some of the arena's file is far from its directory.
var largeSpecs = []structSpec{
	{Kind: sketch.KindCountMin, Rows: 4, Width: 1 << 17},                     // 4 MiB
	{Kind: sketch.KindBloom, Capacity: 1 << 21, FPRate: 0.01},                // about 2.4 MiB
	{Kind: sketch.KindCountMinWindow, Rows: 2, Width: 1 << 16, Keep: 2},      // 3 MiB
	{Kind: sketch.KindCountingBloom, Capacity: 1 << 20, FPRate: 0.01},        // about 4 MiB
	{Kind: sketch.KindBloomWindow, Capacity: 1 << 19, FPRate: 0.01, Keep: 2}, // about 1.8 MiB
}

// conflictOf is a spec that must not open the structure s: another kind
// (every other conflict), or the same kind with another shape.
func conflictOf(s structSpec, otherKind bool) structSpec {
	if otherKind {
		k := specKinds[(kindIndex(s.Kind)+1)%len(specKinds)]
		return structSpec{Kind: k, Rows: 2, Width: 256, Capacity: 100, FPRate: 0.01, Keep: 2}.only()
	}
	// A filter of another capacity but the same bits and hashes is the
	// same shape, which attaches: change what the shape is made of.
	c := s
	switch s.Kind {
	case sketch.KindCountMin:
		c.Width *= 2
	case sketch.KindCountMinWindow:
		c.Keep++
	default:
		c.Capacity *= 4 // more bits (or counters)
	}
	return c
}

// only keeps the fields of s that its kind has, so that the spec equals
// the one read back from the arena's listing.
func (s structSpec) only() structSpec {
	o := structSpec{Kind: s.Kind}
	switch s.Kind {
	case sketch.KindCountMin, sketch.KindCountMinWindow:
		o.Rows, o.Width = s.Rows, s.Width
	default:
		o.Capacity, o.FPRate = s.Capacity, s.FPRate
	}
	if s.Kind == sketch.KindCountMinWindow || s.Kind == sketch.KindBloomWindow {
		o.Keep = s.Keep
	}
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
	switch s.Kind {
	case sketch.KindCountMin:
		return sketch.CountMinConfig{Rows: s.Rows, Width: s.Width}.Bytes()
	case sketch.KindBloom:
		return sketch.BloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}.Bytes()
	case sketch.KindCountingBloom:
		return sketch.CountingBloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}.Bytes()
	case sketch.KindCountMinWindow:
		b, err := sketch.CountMinConfig{Rows: s.Rows, Width: s.Width}.Bytes()
		return b * uint64(s.Keep+1), err
	default:
		b, err := sketch.BloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}.Bytes()
		return b * uint64(s.Keep+1), err
	}
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
		var s structSpec
		switch k {
		case sketch.KindCountMin:
			s = structSpec{Kind: k, Rows: 2, Width: 1024 << rng.IntN(4)}
		case sketch.KindBloom:
			s = structSpec{Kind: k, Capacity: 10000 + rng.Uint64N(50000), FPRate: 0.01}
		case sketch.KindCountingBloom:
			s = structSpec{Kind: k, Capacity: 5000 + rng.Uint64N(20000), FPRate: 0.01}
		case sketch.KindCountMinWindow:
			s = structSpec{Kind: k, Rows: 2, Width: 1024 << rng.IntN(2), Keep: 2}
		default:
			s = structSpec{Kind: k, Capacity: 5000 + rng.Uint64N(10000), FPRate: 0.01, Keep: 2}
		}
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
func (s structSpec) config() any {
	cm := sketch.CountMinConfig{Rows: s.Rows, Width: s.Width}
	bf := sketch.BloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}
	w := sketch.Window{Period: 0, Keep: s.Keep}
	switch s.Kind {
	case sketch.KindCountMin:
		return cm
	case sketch.KindBloom:
		return bf
	case sketch.KindCountingBloom:
		return sketch.CountingBloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}
	case sketch.KindCountMinWindow:
		return sketch.CountMinWindowConfig{Window: w, CountMin: cm}
	default:
		return sketch.BloomWindowConfig{Window: w, Bloom: bf}
	}
}

// specOfEntry is the spec of a listed entry, from its kind and config; false
// when the config is not of the kind's type or its window turns by the clock.
func specOfEntry(e sketch.ArenaEntry) (structSpec, bool) {
	s := structSpec{Kind: e.Kind}
	var w sketch.Window
	switch c := e.Config.(type) {
	case sketch.CountMinConfig:
		s.Rows, s.Width = c.Rows, c.Width
	case sketch.BloomConfig:
		s.Capacity, s.FPRate = c.Capacity, c.FPRate
	case sketch.CountingBloomConfig:
		s.Capacity, s.FPRate = c.Capacity, c.FPRate
	case sketch.CountMinWindowConfig:
		s.Rows, s.Width, w = c.CountMin.Rows, c.CountMin.Width, c.Window
	case sketch.BloomWindowConfig:
		s.Capacity, s.FPRate, w = c.Bloom.Capacity, c.Bloom.FPRate, c.Window
	default:
		return s, false
	}
	s.Keep = w.Keep
	if w.Period != time.Duration(0) {
		return s, false
	}
	return s, s.config() == e.Config
}
