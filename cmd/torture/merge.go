package main

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/shmsketch/sketch"
)

// Merges in the storm: a worker adds a batch to a structure of its own, in
// memory, with the storm structure's shape and seed (the storm's files draw
// a random seed when created; the side takes it from Seed), and merges it
// into the storm structure, which then answers for the batch's keys at
// least as if they had been added there. The worker records the batch's
// adds once Merge returns, as if it had added them itself (counting Bloom
// adds it may remove later).
//
// A counting Bloom merge holds the storm filter's write lock while it adds
// a whole filter's counters, so it is rare: a worker lives a few hundred
// calls, and a merge takes long enough that kills often land inside it.
// Count-Min and Bloom merges take no lock (atomic adds, atomic ORs of every
// word), so a kill leaves a prefix of the side merged: Count-Min rows that
// disagree, which Check must call a torn add. The windows have no Merge.

// mergeOneIn is the chance, per call, that a worker merges into the
// counting Bloom filter; Count-Min and Bloom merges come a quarter as often.
// A worker's first merge of a kind makes its side structure, which costs
// tens of milliseconds of a life of a few tenths of a second (hundreds on
// a loaded machine), so merges stay rare.
const mergeOneIn = 2000

// A merger is a worker's side structures, by storm file, each made at its
// first merge: most workers are killed before they merge at all.
type merger struct {
	sides map[string]any
}

// A stormMerge is how a worker merges into one storm structure: the
// chance of a merge, in 4*mergeOneIn calls, and the merge itself.
type stormMerge struct {
	odds  int
	field int  // the structure's field of the records
	marks bool // the record marks a key once (a set holds a key once)
	// merge adds the batch to the side structure *side (made at the first
	// merge) and merges it into the storm's.
	merge func(side *any, s *stormFiles, batch [][]byte) error
}

// maybeMerge merges a side structure of one kind into the storm's, now and
// then (the odds of the kinds' storm parts), and records the batch's adds.
func (m *merger) maybeMerge(rng *rand.Rand, s *stormFiles, rec *record, batch [][]byte, idx []int) ([][]byte, []int, error) {
	file, sm := pickMerge(rng.IntN(4 * mergeOneIn))
	if sm == nil {
		return batch, idx, nil
	}
	if m.sides == nil {
		m.sides = map[string]any{}
	}
	side := m.sides[file]
	batch, idx = pickBatch(rng, batch, idx)
	err := sm.merge(&side, s, batch)
	m.sides[file] = side
	if err != nil {
		return batch, idx, err
	}
	for _, k := range idx {
		if sm.marks {
			rec.mark(sm.field, k)
		} else {
			rec.raise(sm.field, k, 1)
		}
	}
	rec.merged(sm.field)
	return batch, idx, nil
}

// pickMerge is the storm part whose odds the roll falls in, with its file;
// nil past them all.
func pickMerge(roll int) (string, *stormMerge) {
	for _, k := range structKinds {
		for _, p := range k.storm {
			if p.merge == nil {
				continue
			}
			if roll < p.merge.odds {
				return p.file, p.merge
			}
			roll -= p.merge.odds
		}
	}
	return "", nil
}

// mergeInto is the stormMerge of a structure of type S: into is the storm
// structure in stormFiles, seeded its config of the storm with seed, and
// what names the kind in errors.
func mergeInto[C any, S interface {
	comparable
	handle
	Reset() error
	Merge(others ...S) error
}](odds, field int, marks bool, into func(s *stormFiles) S, open func(sketch.Place, C, ...sketch.Option) (S, error), seeded func(seed uint64) C, what string) *stormMerge {
	return &stormMerge{odds: odds, field: field, marks: marks, merge: func(side *any, s *stormFiles, batch [][]byte) error {
		var cur S
		if *side != nil {
			cur = (*side).(S)
		}
		err := mergeSide(&cur, into(s), open, seeded(into(s).Seed()), what, batch)
		var none S
		if cur != none {
			*side = cur
		}
		return err
	}}
}

// mergeSide empties the side structure (made in memory at the first
// merge with cfg, into's shape and seed), adds the batch to it (each
// occurrence of a key counts) and merges it into the storm structure into.
// what names the kind in errors.
func mergeSide[C any, S interface {
	comparable
	handle
	Reset() error
	Merge(others ...S) error
}](side *S, into S, open func(sketch.Place, C, ...sketch.Option) (S, error), cfg C, what string, batch [][]byte) error {
	var none S
	if *side == none {
		s, err := open(sketch.Memory(), cfg)
		if err != nil {
			return fmt.Errorf("%s side structure: %w", what, err)
		}
		*side = s
	} else if err := (*side).Reset(); err != nil {
		return fmt.Errorf("%s side reset: %w", what, err)
	}
	if err := addsOf(*side).addBatch(batch); err != nil {
		return fmt.Errorf("%s side batch: %w", what, err)
	}
	if err := into.Merge(*side); err != nil {
		return fmt.Errorf("%s merge: %w", what, err)
	}
	return nil
}

// merged counts one merge into the field's structure that returned.
func (r *record) merged(field int) { atomic.AddUint64(&r.words[wordMerges+field], 1) }

// merges is how many merges into the field's structure the record counts.
func (r *record) merges(field int) uint64 {
	return atomic.LoadUint64(&r.words[wordMerges+field])
}
