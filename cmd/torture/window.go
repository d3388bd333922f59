package main

import (
	"sync/atomic"

	"github.com/shmsketch/sketch"
)

// The storm's windows turn only on Rotate (Period 0), so that every process
// reads the same period from the file and can tell where an add went: an add
// during which the window's period did not change landed in that period (the
// reasoning of the package's own landedRef). Worker slot 0 also rotates both
// windows now and then, and is killed like the others.
var (
	stormWindow         = sketch.Window{Period: 0, Keep: 4}
	stormCountMinWindow = sketch.CountMinConfig{Rows: 4, Width: 1 << 16}
	stormBloomWindow    = sketch.BloomConfig{Capacity: 1 << 20, FPRate: 0.001}
)

// windowRing is how many periods a record keeps per key and window field:
// Keep+1. A checker reads the records before asking, and an answer covers no
// period older than Keep-1 before the latest one turned to by then, so a
// period it covers is never overwritten in the ring before it is read.
const windowRing = 5

func init() {
	if windowRing != stormWindow.Keep+1 {
		panic("torture: windowRing must be stormWindow.Keep+1")
	}
}

// rotateOneIn is the chance, per call of worker slot 0, that it rotates
// both windows: a turn every few tens of milliseconds.
const rotateOneIn = 400

// A window word of a record holds a period plus one above periodShift (0:
// nothing recorded yet) and the weight of the adds that landed in it below,
// in one word, so a checker's atomic load sees both from the same store.
const periodShift = 40

func windowWord(p, n uint64) uint64 { return (p+1)<<periodShift | n }

func splitWindowWord(w uint64) (p, n uint64, ok bool) {
	if w>>periodShift == 0 {
		return 0, 0, false
	}
	return w>>periodShift - 1, w & (1<<periodShift - 1), true
}

// raiseWindow adds n to what landed in period p for the key, starting afresh
// when the ring word still holds an older period. Call it only after the add
// returned and only for an add known to have landed in p. One process
// raises a record at a time, so a load and a store suffice.
func (r *record) raiseWindow(field, key int, p, n uint64) {
	w := &r.words[r.windex(field, key, p)]
	q, c, ok := splitWindowWord(atomic.LoadUint64(w))
	switch {
	case ok && q == p:
		atomic.StoreUint64(w, windowWord(p, c+n))
	case !ok || q < p:
		atomic.StoreUint64(w, windowWord(p, n))
	}
}

// landedIn runs add and reports the period it landed in: ok only when the
// window's period was p before the call and still p after it returned.
func landedIn(current func() uint64, add func() error) (p uint64, ok bool, err error) {
	p = current()
	if err = add(); err != nil {
		return p, false, err
	}
	return p, current() == p, nil
}

// covered is the periods every answer asked between two reads of the
// window's period, c0 before and c1 after, covers: lo to hi, empty when
// lo > hi (the period turned Keep times or more meanwhile).
func covered(c0, c1 uint64) (lo, hi uint64) {
	keep := uint64(stormWindow.Keep)
	if c1+1 >= keep {
		lo = c1 + 1 - keep
	}
	return lo, c0
}

// controlWeight is the weight the negative control claims for a control key
// in the Count-Min window.
func controlWeight(k int) uint64 { return 1 + uint64(k%9) }

// refreshWindowControl makes the negative control claim, for every control
// key, adds in each window's current period: the rotator calls it after
// every rotation (and when it starts, in case it was killed between), so the
// claims stay inside the windows the checkers ask.
func refreshWindowControl(rec *record, s *stormFiles) {
	pc, pb := s.cmw.Current(), s.bw.Current()
	for k := realKeys; k < allKeys; k++ {
		rec.raiseWindow(fieldCountMinWindow, k, pc, controlWeight(k))
		rec.raiseWindow(fieldBloomWindow, k, pb, 1)
	}
}

// A windowSnap is the window words of every record, read before a question.
type windowSnap [][]uint64

func (ws *windowSnap) read(recs []*record) {
	if *ws == nil {
		*ws = make(windowSnap, len(recs))
	}
	for i, r := range recs {
		if (*ws)[i] == nil {
			(*ws)[i] = make([]uint64, removedStart-windowStart)
		}
		for j := range (*ws)[i] {
			(*ws)[i][j] = atomic.LoadUint64(&r.words[windowStart+j])
		}
	}
}

// landed sums what the records say landed for the key in periods lo to hi.
func (ws windowSnap) landed(field, key int, lo, hi uint64) uint64 {
	var sum uint64
	base := ((field-plainFields)*allKeys + key) * windowRing
	for _, words := range ws {
		for _, w := range words[base : base+windowRing] {
			if p, n, ok := splitWindowWord(w); ok && p >= lo && p <= hi {
				sum += n
			}
		}
	}
	return sum
}
