package main

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/shmsketch/sketch"
)

// Counting Bloom merges in the storm: a worker adds a batch to a filter of
// its own, in memory, with the storm filter's geometry and seed, and merges
// it into the storm filter, which raises each of a key's counters by at
// least the key's adds to the side filter. The worker records those adds
// once Merge returns, as if it had added them itself, and may remove them
// later. Merge holds the storm filter's write lock while it adds a whole
// filter's counters, so it is rare: a worker lives a few hundred calls,
// and a merge takes long enough that kills often land inside it.

// mergeOneIn is the chance, per call, that a worker merges.
const mergeOneIn = 2000

// A merger is a worker's side filter, made at its first merge: most
// workers are killed before they merge at all.
type merger struct {
	side *sketch.CountingBloom
}

// merge empties the side filter, adds a random batch to it, merges it into
// the storm filter and records the batch's adds.
func (m *merger) merge(rng *rand.Rand, s *stormFiles, rec *record, batch [][]byte, idx []int) ([][]byte, []int, error) {
	if m.side == nil {
		side, err := sketch.NewCountingBloom(stormCountingBloom, sketch.WithSeed(s.cbf.Seed()))
		if err != nil {
			return batch, idx, fmt.Errorf("counting bloom side filter: %w", err)
		}
		m.side = side
	} else if err := m.side.Clear(); err != nil {
		return batch, idx, fmt.Errorf("counting bloom side clear: %w", err)
	}
	batch, idx = pickBatch(rng, batch, idx)
	if _, err := m.side.AddMany(batch); err != nil {
		return batch, idx, fmt.Errorf("counting bloom side add many: %w", err)
	}
	if err := s.cbf.Merge(m.side); err != nil {
		return batch, idx, fmt.Errorf("counting bloom merge: %w", err)
	}
	for _, k := range idx {
		rec.raise(fieldCountingBloom, k, 1)
	}
	atomic.AddUint64(&rec.words[wordMerges], 1)
	return batch, idx, nil
}

// merges is how many merges the record counts.
func (r *record) merges() uint64 { return atomic.LoadUint64(&r.words[wordMerges]) }
