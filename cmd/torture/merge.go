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

// A merger is a worker's side structures, each made at its first merge:
// most workers are killed before they merge at all.
type merger struct {
	cbf *sketch.CountingBloom
	cms *sketch.CountMin
	bf  *sketch.Bloom
	hll *sketch.Distinct
}

// maybeMerge merges a side structure of one kind into the storm's, now and
// then, and records the batch's adds.
func (m *merger) maybeMerge(rng *rand.Rand, s *stormFiles, rec *record, batch [][]byte, idx []int) ([][]byte, []int, error) {
	var field int
	var merge func(batch [][]byte) error
	switch rng.IntN(4 * mergeOneIn) {
	case 0, 1, 2, 3:
		field, merge = fieldCountingBloom, func(b [][]byte) error {
			cfg := stormCountingBloom
			cfg.Seed = s.cbf.Seed()
			return mergeSide(&m.cbf, s.cbf, sketch.OpenCountingBloom, cfg, "counting bloom", b)
		}
	case 4:
		field, merge = fieldCountMin, func(b [][]byte) error {
			cfg := stormCountMin
			cfg.Seed = s.cms.Seed()
			return mergeSide(&m.cms, s.cms, sketch.OpenCountMin, cfg, "count-min", b)
		}
	case 5:
		field, merge = fieldBloom, func(b [][]byte) error {
			cfg := stormBloom
			cfg.Seed = s.bf.Seed()
			return mergeSide(&m.bf, s.bf, sketch.OpenBloom, cfg, "bloom", b)
		}
	case 6:
		field, merge = fieldDistinct, func(b [][]byte) error {
			cfg := stormDistinct
			cfg.Seed = s.hll.Seed()
			return mergeSide(&m.hll, s.hll, sketch.OpenDistinct, cfg, "distinct", b)
		}
	default:
		return batch, idx, nil
	}
	batch, idx = pickBatch(rng, batch, idx)
	if err := merge(batch); err != nil {
		return batch, idx, err
	}
	for _, k := range idx {
		if field == fieldBloom || field == fieldDistinct {
			rec.mark(field, k) // a set holds a key once
		} else {
			rec.raise(field, k, 1)
		}
	}
	rec.merged(field)
	return batch, idx, nil
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
