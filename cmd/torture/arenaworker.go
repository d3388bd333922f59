package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// The control words of a phase of the arena part, which the supervisor
// writes and the workers read: the arena to work on, plus one (0: none
// yet).
const (
	ctlArena = 0
	ctlWords = 8
)

func arenaCtlPath(dir, phase string) string { return filepath.Join(dir, phase+".ctl") }

// arenaWorker asks the current arena of its phase for every name of its
// set, in an order of its own, and adds to what it got, recording each
// outcome after the call returned. In the racing phase it goes on with
// pass after pass (attaching now) until the supervisor moves to the next
// arena; in the fill phase it asks every name once per arena. An error
// other than the outcomes the record counts ends the worker, which the
// supervisor counts as a violation.
type arenaWorker struct {
	plan  *arenaPlan
	rec   *arenaRecord
	ctl   []uint64
	rng   *rand.Rand
	keys  [][][][]byte // per set, per name
	batch [][]byte
	idx   []int
}

func runArenaWorker(dir, phase string, slot int, seed uint64) error {
	p, err := readPlan(planPath(dir, phase))
	if err != nil {
		return err
	}
	rec, err := openArenaRecord(arenaRecordPath(dir, phase, slot), p)
	if err != nil {
		return err
	}
	rec.setHead(awInflight, 0) // what this slot's killed worker had in flight
	_, ctl, err := openWords(arenaCtlPath(dir, phase), ctlWords)
	if err != nil {
		return err
	}
	w := &arenaWorker{plan: p, rec: rec, ctl: ctl, rng: rand.New(rand.NewPCG(seed, uint64(slot)))}
	for _, set := range p.Sets {
		var ks [][][]byte
		for _, n := range set {
			ks = append(ks, nameKeys(n.Name))
		}
		w.keys = append(w.keys, ks)
	}
	fill := phase == phaseFill
	var a *sketch.Arena
	cur := -1
	for {
		k := w.current()
		if k < 0 || (fill && rec.head(awDone) == uint64(k+1)) {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		if k != cur {
			if a != nil {
				a.Close()
				a, cur = nil, -1
			}
			// Say which arena before opening it, then look again: the
			// supervisor hands an arena to the checkers (and removes it)
			// once no worker says it is on it, so a worker must not open
			// an arena it read as current after the supervisor moved on.
			rec.setHead(awArena, uint64(k+1))
			if w.current() != k {
				continue
			}
			if a, err = sketch.OpenArena(sketch.Path(arenaFilePath(dir, phase, k)), sketch.ArenaConfig{Size: p.Arenas[k].Size}); err != nil {
				return fmt.Errorf("arena %d: %w", k, err)
			}
			cur = k
		}
		if err := w.pass(a, k); err != nil {
			return fmt.Errorf("arena %d: %w", k, err)
		}
		if fill && w.current() == k {
			rec.setHead(awDone, uint64(k+1))
		}
	}
}

func (w *arenaWorker) current() int {
	k := int(atomic.LoadUint64(&w.ctl[ctlArena])) - 1
	if k >= len(w.plan.Arenas) {
		return -1
	}
	return k
}

// pass asks arena k for each name once, in a random order, until the
// supervisor moves on.
func (w *arenaWorker) pass(a *sketch.Arena, k int) error {
	set := w.plan.names(k)
	known := map[string]bool{}
	for _, i := range w.rng.Perm(len(set)) {
		if w.current() != k {
			return nil
		}
		n := set[i]
		if !known[n.Name] {
			for _, e := range a.List() {
				known[e.Name] = true
			}
		}
		w.rec.setHead(awInflight, inflight(k, i, !known[n.Name]))
		began := time.Now()
		s, err := n.Want.open(a, n.Name)
		if d := uint64(time.Since(began)); d > w.rec.head(awSlowest) {
			w.rec.setHead(awSlowest, d)
		}
		switch {
		case err == nil:
			w.rec.raise(k, i, anOpened, 1)
		case errors.Is(err, sketch.ErrIncompatible):
			w.rec.raise(k, i, anWantRefused, 1)
		case errors.Is(err, sketch.ErrArenaFull):
			w.rec.raise(k, i, anFull, 1)
		default:
			return fmt.Errorf("open %s: %w", n.Name, err)
		}
		w.rec.setHead(awInflight, 0)
		if s == nil {
			continue
		}
		err = w.add(s, k, i, n.Want.Kind)
		if err == nil && n.Conflict != nil {
			err = w.conflict(a, k, i, n)
		}
		s.close()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Name, err)
		}
		w.rec.setHead(awCalls, w.rec.head(awCalls)+1)
	}
	return nil
}

// add makes one to three adds, single or batched, and records them.
func (w *arenaWorker) add(s *arenaStruct, k, i int, kind sketch.Kind) error {
	keys := w.keys[w.plan.Arenas[k].Set][i]
	for range 1 + w.rng.IntN(3) {
		if w.rng.IntN(2) == 0 {
			key := w.rng.IntN(keysPerName)
			n := 1 + w.rng.Uint64N(5)
			if err := s.addN(keys[key], n); err != nil {
				return fmt.Errorf("add: %w", err)
			}
			w.record(k, i, key, kind, n)
			continue
		}
		w.batch, w.idx = w.batch[:0], w.idx[:0]
		for range 2 + w.rng.IntN(7) {
			key := w.rng.IntN(keysPerName) // repeats too
			w.batch, w.idx = append(w.batch, keys[key]), append(w.idx, key)
		}
		if err := s.addBatch(w.batch); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		for _, key := range w.idx {
			w.record(k, i, key, kind, 1)
		}
	}
	return nil
}

func (w *arenaWorker) record(k, i, key int, kind sketch.Kind, n uint64) {
	if countsKind(kind) {
		w.rec.raise(k, i, anKeys+key, n)
	} else {
		w.rec.mark(k, i, key)
	}
}

// conflict asks for the name with its conflicting spec, after this
// worker's own open with the name's spec returned: the arena holds that
// one, so the answer must be ErrIncompatible.
func (w *arenaWorker) conflict(a *sketch.Arena, k, i int, n arenaName) error {
	w.rec.setHead(awInflight, inflight(k, i, false))
	s, err := n.Conflict.open(a, n.Name)
	switch {
	case err == nil:
		s.close()
		w.rec.raise(k, i, anConflictOpen, 1)
	case errors.Is(err, sketch.ErrIncompatible):
		w.rec.raise(k, i, anIncompatible, 1)
	default:
		return fmt.Errorf("conflicting open: %w", err)
	}
	w.rec.setHead(awInflight, 0)
	return nil
}
