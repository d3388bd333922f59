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
}

// maybeMerge merges a side structure of one kind into the storm's, now and
// then, and records the batch's adds.
func (m *merger) maybeMerge(rng *rand.Rand, s *stormFiles, rec *record, batch [][]byte, idx []int) ([][]byte, []int, error) {
	var err error
	switch rng.IntN(4 * mergeOneIn) {
	case 0, 1, 2, 3:
		batch, idx = pickBatch(rng, batch, idx)
		if err = m.mergeCountingBloom(s, batch); err == nil {
			for _, k := range idx {
				rec.raise(fieldCountingBloom, k, 1)
			}
			rec.merged(fieldCountingBloom)
		}
	case 4:
		batch, idx = pickBatch(rng, batch, idx)
		if err = m.mergeCountMin(s, batch); err == nil {
			for _, k := range idx {
				rec.raise(fieldCountMin, k, 1)
			}
			rec.merged(fieldCountMin)
		}
	case 5:
		batch, idx = pickBatch(rng, batch, idx)
		if err = m.mergeBloom(s, batch); err == nil {
			for _, k := range idx {
				rec.mark(fieldBloom, k)
			}
			rec.merged(fieldBloom)
		}
	}
	return batch, idx, err
}

// mergeCountingBloom empties the side filter, adds the batch to it and
// merges it into the storm filter.
func (m *merger) mergeCountingBloom(s *stormFiles, batch [][]byte) error {
	if m.cbf == nil {
		side, err := sketch.OpenCountingBloom(sketch.Memory(), stormCountingBloom, sketch.WithSeed(s.cbf.Seed()))
		if err != nil {
			return fmt.Errorf("counting bloom side filter: %w", err)
		}
		m.cbf = side
	} else if err := m.cbf.Reset(); err != nil {
		return fmt.Errorf("counting bloom side clear: %w", err)
	}
	if err := m.cbf.AddBatch(batch, nil); err != nil {
		return fmt.Errorf("counting bloom side add many: %w", err)
	}
	if err := s.cbf.Merge(m.cbf); err != nil {
		return fmt.Errorf("counting bloom merge: %w", err)
	}
	return nil
}

// mergeCountMin empties the side sketch, adds the batch to it (each
// occurrence of a key counts) and merges it into the storm sketch.
func (m *merger) mergeCountMin(s *stormFiles, batch [][]byte) error {
	if m.cms == nil {
		side, err := sketch.OpenCountMin(sketch.Memory(), stormCountMin, sketch.WithSeed(s.cms.Seed()))
		if err != nil {
			return fmt.Errorf("count-min side sketch: %w", err)
		}
		m.cms = side
	} else if err := m.cms.Reset(); err != nil {
		return fmt.Errorf("count-min side reset: %w", err)
	}
	if err := m.cms.AddBatch(batch, nil); err != nil {
		return fmt.Errorf("count-min side batch: %w", err)
	}
	if err := s.cms.Merge(m.cms); err != nil {
		return fmt.Errorf("count-min merge: %w", err)
	}
	return nil
}

// mergeBloom empties the side filter, adds the batch to it and merges it
// into the storm filter.
func (m *merger) mergeBloom(s *stormFiles, batch [][]byte) error {
	if m.bf == nil {
		side, err := sketch.OpenBloom(sketch.Memory(), stormBloom, sketch.WithSeed(s.bf.Seed()))
		if err != nil {
			return fmt.Errorf("bloom side filter: %w", err)
		}
		m.bf = side
	} else if err := m.bf.Reset(); err != nil {
		return fmt.Errorf("bloom side reset: %w", err)
	}
	if err := m.bf.AddBatch(batch, nil); err != nil {
		return fmt.Errorf("bloom side batch: %w", err)
	}
	if err := s.bf.Merge(m.bf); err != nil {
		return fmt.Errorf("bloom merge: %w", err)
	}
	return nil
}

// merged counts one merge into the field's structure that returned.
func (r *record) merged(field int) { atomic.AddUint64(&r.words[wordMerges+field], 1) }

// merges is how many merges into the field's structure the record counts.
func (r *record) merges(field int) uint64 {
	return atomic.LoadUint64(&r.words[wordMerges+field])
}
