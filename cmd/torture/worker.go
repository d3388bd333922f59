package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/shmsketch/sketch"
)

// runWorker adds to the storm's structures until it is killed, raising its
// record after every call returns: single and weighted adds, and batches
// (which the cgo build serves from the C core). Window adds, to the Rotate
// windows and the clock's, are recorded with the period they landed in,
// when it is known. Counting Bloom removes take back the worker's own adds
// (remove.go), merges bring in a side structure's (merge.go). Rate limiter
// decisions are logged, each allowed one once it returned (ratelimit.go),
// as the record cannot hold times; adds to the counters are logged before
// and after each (counters.go). Slot 0 also
// rotates the Rotate windows. A call that fails ends the worker with an
// error, which the supervisor counts.
func runWorker(dir string, slot int, seed uint64) error {
	rec, err := openRecord(recordPath(dir, slot))
	if err != nil {
		return err
	}
	clock := addsToClock(slot)
	s, err := openStormFiles(dir, clock)
	if err != nil {
		return err
	}
	rec.startRemoving()
	var control *record
	if slot == 0 {
		if control, err = openRecord(recordPath(dir, -1)); err != nil {
			return err
		}
		refreshWindowControl(control, s) // a rotator killed after a turn left it one behind
	}
	glog, err := openGCRALog(dir, slot)
	if err != nil {
		return err
	}
	clog, err := openCounterLog(dir, slot)
	if err != nil {
		return err
	}
	ctrs, err := resolveCounters(s.ctr)
	if err != nil {
		return err
	}
	var mg merger
	w := &stormWorker{s: s, rec: rec, clock: clock, rng: rand.New(rand.NewPCG(seed, uint64(slot))),
		batch: make([][]byte, 0, 64), idx: make([]int, 0, 64), glog: glog, answers: make([]sketch.RateDecision, 64),
		clog: clog, ctrs: ctrs}
	rng := w.rng
	for {
		if w.batch, w.idx, err = mg.maybeMerge(rng, s, rec, w.batch, w.idx); err != nil {
			return err
		}
		if control != nil && rng.IntN(rotateOneIn) == 0 {
			if err := rotate(s, control); err != nil {
				return err
			}
		}
		key := rng.IntN(realKeys)
		if err := w.call(rng.IntN(18), key); err != nil {
			return err
		}
		rec.returned()
	}
}

// A stormWorker is a storm worker's calls, each recorded once it
// returned.
type stormWorker struct {
	s     *stormFiles
	rec   *record
	rng   *rand.Rand
	clock bool // the worker adds to the clock windows too
	batch [][]byte
	idx   []int
	// glog logs the rate limiter's allowed decisions, answers holds a
	// batch's.
	glog    *gcraLog
	answers []sketch.RateDecision
	// clog logs the adds to the counters, before and after each; ctrs
	// are the counters resolved once, for Counter.Add.
	clog *counterLog
	ctrs []sketch.Counter
}

// call makes the call op (0 to 17) with key, or a batch of keys.
func (w *stormWorker) call(op, key int) error {
	switch {
	case op <= 2:
		return w.countMin(op, key)
	case op <= 6:
		return w.filter(op, key)
	case op <= 10: // a pair of windows: the clock's half the time, in a clock slot
		wp := w.s.windowPairs()[0]
		if w.clock && w.rng.IntN(2) == 0 {
			wp = w.s.windowPairs()[1]
		}
		var err error
		w.batch, w.idx, err = addToWindow(w.rng, w.rec, wp, op-7, key, w.batch, w.idx)
		return err
	case op == 11: // as many tries as batch adds, but only of the worker's own adds
		w.batch, w.idx = pickBatch(w.rng, w.batch, w.idx)
		for _, k := range w.idx {
			if err := removeOwn(w.s, w.rec, k); err != nil {
				return err
			}
		}
		return nil
	case op <= 13:
		return w.distinct(op, key)
	case op <= 15: // decisions of the rate limiter, logged rather than recorded
		return w.limit(op)
	default: // adds to the counters, logged before and after
		return w.count(op)
	}
}

// countMin is op 0 to 2: an Add, an AddN of 1 to 9, a batch.
func (w *stormWorker) countMin(op, key int) error {
	s, rec := w.s, w.rec
	switch op {
	case 0:
		if _, err := s.cms.Add(keyTable[key]); err != nil {
			return fmt.Errorf("count-min add: %w", err)
		}
		rec.raise(fieldCountMin, key, 1)
	case 1:
		n := 1 + w.rng.Uint64N(9)
		if _, err := s.cms.AddN(keyTable[key], n); err != nil {
			return fmt.Errorf("count-min add %d: %w", n, err)
		}
		rec.raise(fieldCountMin, key, n)
	default:
		w.batch, w.idx = pickBatch(w.rng, w.batch, w.idx)
		if err := s.cms.AddBatch(w.batch, nil); err != nil {
			return fmt.Errorf("count-min batch: %w", err)
		}
		for _, k := range w.idx {
			rec.raise(fieldCountMin, k, 1)
		}
	}
	return nil
}

// filter is op 3 to 6: a Bloom Add and batch, a counting Bloom Add and
// batch.
func (w *stormWorker) filter(op, key int) error {
	s, rec := w.s, w.rec
	switch op {
	case 3:
		if _, err := s.bf.Add(keyTable[key]); err != nil {
			return fmt.Errorf("bloom add: %w", err)
		}
		rec.mark(fieldBloom, key)
	case 4:
		w.batch, w.idx = pickBatch(w.rng, w.batch, w.idx)
		if err := s.bf.AddBatch(w.batch, nil); err != nil {
			return fmt.Errorf("bloom batch: %w", err)
		}
		for _, k := range w.idx {
			rec.mark(fieldBloom, k)
		}
	case 5:
		if _, err := s.cbf.Add(keyTable[key]); err != nil {
			return fmt.Errorf("counting bloom add: %w", err)
		}
		rec.raise(fieldCountingBloom, key, 1)
	default:
		w.batch, w.idx = pickBatch(w.rng, w.batch, w.idx)
		if err := s.cbf.AddBatch(w.batch, nil); err != nil {
			return fmt.Errorf("counting bloom add many: %w", err)
		}
		for _, k := range w.idx {
			rec.raise(fieldCountingBloom, k, 1)
		}
	}
	return nil
}

// distinct is op 12 and 13: an Add (AddString for odd keys), a batch.
func (w *stormWorker) distinct(op, key int) error {
	s, rec := w.s, w.rec
	if op == 12 {
		var err error
		if key%2 == 0 {
			err = s.hll.Add(keyTable[key])
		} else {
			err = s.hll.AddString(string(keyTable[key]))
		}
		if err != nil {
			return fmt.Errorf("distinct add: %w", err)
		}
		rec.mark(fieldDistinct, key)
		return nil
	}
	w.batch, w.idx = pickBatch(w.rng, w.batch, w.idx)
	if err := s.hll.AddBatch(w.batch); err != nil {
		return fmt.Errorf("distinct batch: %w", err)
	}
	for _, k := range w.idx {
		rec.mark(fieldDistinct, k)
	}
	return nil
}

// addsToClock reports whether worker slot adds to the clock windows: half
// the slots, one of each build among every four. Holding a clock window
// costs a worker that lives a few tenths of a second far more than holding
// a Rotate window (in runs on a loaded 2-CPU machine, workers that did not
// open the clock windows returned nearly twice the calls), while half the
// slots already back hundreds of thousands of answers in a short run.
func addsToClock(slot int) bool { return slot%4 < 2 }

// addToWindow makes one add of kind op (0 to 3: Count-Min AddN, Count-Min
// batch, Bloom Add, Bloom batch) to a pair of windows, and records it with
// its period when it landed in the one it was asked in.
func addToWindow(rng *rand.Rand, rec *record, wp windowPair, op, key int, batch [][]byte, idx []int) ([][]byte, []int, error) {
	switch op {
	case 0:
		w := 1 + rng.Uint64N(9)
		p, ok, err := landedIn(wp.cm.Current, func() error { _, err := wp.cm.AddN(keyTable[key], w); return err })
		if err != nil {
			return batch, idx, fmt.Errorf("%v add %d: %w", wp.cm, w, err)
		}
		if ok {
			rec.raiseWindow(wp.cmField, key, p, w)
		}
	case 1:
		batch, idx = pickBatch(rng, batch, idx)
		p, ok, err := landedIn(wp.cm.Current, func() error { return wp.cm.AddBatch(batch, nil) })
		if err != nil {
			return batch, idx, fmt.Errorf("%v batch: %w", wp.cm, err)
		}
		if ok {
			for _, k := range idx {
				rec.raiseWindow(wp.cmField, k, p, 1)
			}
		}
	case 2:
		p, ok, err := landedIn(wp.bw.Current, func() error { _, err := wp.bw.Add(keyTable[key]); return err })
		if err != nil {
			return batch, idx, fmt.Errorf("%v add: %w", wp.bw, err)
		}
		if ok {
			rec.raiseWindow(wp.bwField, key, p, 1)
		}
	case 3:
		batch, idx = pickBatch(rng, batch, idx)
		p, ok, err := landedIn(wp.bw.Current, func() error { return wp.bw.AddBatch(batch, nil) })
		if err != nil {
			return batch, idx, fmt.Errorf("%v batch: %w", wp.bw, err)
		}
		if ok {
			for _, k := range idx {
				rec.raiseWindow(wp.bwField, k, p, 1)
			}
		}
	}
	return batch, idx, nil
}

// rotate turns both Rotate windows, then moves the negative control's window claims
// to the new periods.
func rotate(s *stormFiles, control *record) error {
	if err := s.cmw.Rotate(); err != nil {
		return fmt.Errorf("count-min window rotate: %w", err)
	}
	if err := s.bw.Rotate(); err != nil {
		return fmt.Errorf("bloom window rotate: %w", err)
	}
	refreshWindowControl(control, s)
	return nil
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
// Every checker must find them missing. The window claims are for the
// windows' current periods, which the rotator keeps moving (window.go).
func writeControl(dir string, s *stormFiles, seed uint64) error {
	rec, err := openRecord(recordPath(dir, -1))
	if err != nil {
		return err
	}
	defer rec.close()
	refreshWindowControl(rec, s)
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	for k := realKeys; k < allKeys; k++ {
		rec.raise(fieldCountMin, k, 1+rng.Uint64N(9))
		rec.mark(fieldBloom, k)
		rec.mark(fieldDistinct, k)
		// Half the control keys claim two adds and a remove: still present,
		// so a checker that subtracted removes twice misses them.
		if k%2 == 0 {
			rec.raise(fieldCountingBloom, k, 1)
		} else {
			rec.raise(fieldCountingBloom, k, 2)
			rec.raiseRemoved(k, 1)
		}
		rec.returned()
	}
	return nil
}
