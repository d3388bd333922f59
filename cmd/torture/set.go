package main

import (
	"math/rand/v2"

	"github.com/shmsketch/sketch"
)

// Exact sets in the harness. In the generic parts (faults, mutate,
// metrics, arena, byte order) a set and a set window answer presence, as
// the filters do, but exactly: a key added is present (a window's while
// its period is covered) and one never added is absent, so the parts'
// presence checks hold them to both. Their configs leave room for every
// key a part adds: a full set refuses an add (sketch.ErrFull), which the
// parts would count as a failure.

// exactSet is what a set and a set window do alike.
type exactSet interface {
	handle
	Add(key []byte) (added bool, err error)
	AddString(key string) (added bool, err error)
	Remove(key []byte) (removed bool, err error)
	Contains(key []byte) bool
	ContainsString(key string) bool
	Keys() ([][]byte, error)
	Len() uint64
}

var (
	_ exactSet = (*sketch.Set)(nil)
	_ exactSet = (*sketch.SetWindow)(nil)
	_ windowed = (*sketch.SetWindow)(nil)
)

// setAdds are the generic adds on s: each key is added unless s holds it,
// the batch a key at a time (a set has no batch call).
func setAdds(s exactSet) adds {
	return adds{
		add:       func(key []byte) error { _, err := s.Add(key); return err },
		addString: func(key string) error { _, err := s.AddString(key); return err },
		addBatch: func(keys [][]byte) error {
			for _, k := range keys {
				if _, err := s.Add(k); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// setAnswer is 1 when s holds key, else 0: exact both ways.
func setAnswer(s exactSet, key []byte) uint64 {
	if s.Contains(key) {
		return 1
	}
	return 0
}

const (
	// setFaultKeyBytes is the longest key of the faults' sets: their keys
	// are "prefix-N".
	setFaultKeyBytes = 32
	// setFaultLeast is the least capacity of a fault's set, above every
	// key the faults add to one structure.
	setFaultLeast = 512
	// setArenaKeyBytes is the arena phases' key length: the default,
	// given, so that a spec's config is the one stored.
	setArenaKeyBytes = 64
)

// setFor is a set of about size bytes, and of room for every key a fault
// adds.
func setFor(size uint64) sketch.SetConfig {
	c := capacityFor(size, func(c uint64) (uint64, error) {
		return sketch.SetConfig{Capacity: c, KeyBytes: setFaultKeyBytes}.Bytes()
	})
	return sketch.SetConfig{Capacity: max(c, setFaultLeast), KeyBytes: setFaultKeyBytes}
}

func setOf(s structSpec) sketch.SetConfig {
	return sketch.SetConfig{Capacity: s.Capacity, KeyBytes: setArenaKeyBytes}
}

var (
	boExactSet       = sketch.SetConfig{Capacity: 4 * boKeys, KeyBytes: setFaultKeyBytes}
	boExactSetWindow = sketch.SetWindowConfig{Window: boWindow, Set: boExactSet}

	setShape = arenaShape{
		config: func(s structSpec) any { return setOf(s) },
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.SetConfig)
			return structSpec{Capacity: c.Capacity}, sketch.Window{}, ok
		},
		bytes: func(s structSpec) (uint64, error) { return setOf(s).Bytes() },
	}
	setWindowShape = arenaShape{
		config: func(s structSpec) any { return sketch.SetWindowConfig{Window: windowOf(s), Set: setOf(s)} },
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.SetWindowConfig)
			return structSpec{Capacity: c.Set.Capacity}, c.Window, ok
		},
		bytes: func(s structSpec) (uint64, error) {
			return sketch.SetWindowConfig{Window: windowOf(s), Set: setOf(s)}.Bytes()
		},
	}

	// setArena and setWindowArena are the kinds' parts in the arena
	// phases: every capacity is above the keys a name gets (keysPerName).
	setArena = &arenaKind{
		small: func(rng *rand.Rand) structSpec { return structSpec{Capacity: 16 + rng.Uint64N(48)} },
		fill:  func(rng *rand.Rand) structSpec { return structSpec{Capacity: 128 << rng.IntN(3)} },
		large: structSpec{Capacity: 1 << 14}, // about 2.6 MiB
		grow:  growCapacity,
		shape: setShape,
	}
	setWindowArena = &arenaKind{
		small: func(rng *rand.Rand) structSpec {
			return structSpec{Capacity: 16 + rng.Uint64N(48), Keep: 2 + rng.IntN(2)}
		},
		fill:  func(rng *rand.Rand) structSpec { return structSpec{Capacity: 128 << rng.IntN(3), Keep: 2} },
		large: structSpec{Capacity: 1 << 14, Keep: 2},
		grow:  growCapacity,
		shape: setWindowShape,
	}
)
