package main

import (
	"fmt"
	"math/rand/v2"
)

// runWorker adds to the storm's structures until it is killed, raising its
// record after every call returns: single and weighted adds, and batches
// (which the cgo build serves from the C core). A call that fails ends the
// worker with an error, which the supervisor counts.
func runWorker(dir string, slot int, seed uint64) error {
	rec, err := openRecord(recordPath(dir, slot))
	if err != nil {
		return err
	}
	s, err := openStorm(dir)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(slot)))
	batch := make([][]byte, 0, 64)
	idx := make([]int, 0, 64)
	for {
		key := rng.IntN(realKeys)
		switch op := rng.IntN(7); op {
		case 0:
			if _, err := s.cms.Add(keyTable[key]); err != nil {
				return fmt.Errorf("count-min add: %w", err)
			}
			rec.raise(fieldCountMin, key, 1)
		case 1:
			w := 1 + rng.Uint64N(9)
			if _, err := s.cms.AddN(keyTable[key], w); err != nil {
				return fmt.Errorf("count-min add %d: %w", w, err)
			}
			rec.raise(fieldCountMin, key, w)
		case 2:
			batch, idx = pickBatch(rng, batch, idx)
			if err := s.cms.AddBatch(batch, nil); err != nil {
				return fmt.Errorf("count-min batch: %w", err)
			}
			for _, k := range idx {
				rec.raise(fieldCountMin, k, 1)
			}
		case 3:
			if _, err := s.bf.Add(keyTable[key]); err != nil {
				return fmt.Errorf("bloom add: %w", err)
			}
			rec.mark(fieldBloom, key)
		case 4:
			batch, idx = pickBatch(rng, batch, idx)
			if err := s.bf.AddBatch(batch, nil); err != nil {
				return fmt.Errorf("bloom batch: %w", err)
			}
			for _, k := range idx {
				rec.mark(fieldBloom, k)
			}
		case 5:
			if _, err := s.cbf.Add(keyTable[key]); err != nil {
				return fmt.Errorf("counting bloom add: %w", err)
			}
			rec.mark(fieldCountingBloom, key)
		case 6:
			batch, idx = pickBatch(rng, batch, idx)
			if _, err := s.cbf.AddMany(batch); err != nil {
				return fmt.Errorf("counting bloom add many: %w", err)
			}
			for _, k := range idx {
				rec.mark(fieldCountingBloom, k)
			}
		}
		rec.returned()
	}
}

// pickBatch fills batch with 8 to 64 random real keys (repeats allowed: a
// Count-Min batch counts each occurrence) and idx with their indexes.
func pickBatch(rng *rand.Rand, batch [][]byte, idx []int) ([][]byte, []int) {
	batch, idx = batch[:0], idx[:0]
	for n := 8 + rng.IntN(57); n > 0; n-- {
		k := rng.IntN(realKeys)
		batch = append(batch, keyTable[k])
		idx = append(idx, k)
	}
	return batch, idx
}

// writeControl is the negative control: a record of adds that never
// happened, for keys nobody adds, with the weights a worker would record.
// Every checker must find them missing.
func writeControl(dir string, seed uint64) error {
	rec, err := openRecord(recordPath(dir, -1))
	if err != nil {
		return err
	}
	defer rec.close()
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	for k := realKeys; k < allKeys; k++ {
		rec.raise(fieldCountMin, k, 1+rng.Uint64N(9))
		rec.mark(fieldBloom, k)
		rec.mark(fieldCountingBloom, k)
		rec.returned()
	}
	return nil
}
