package main

import (
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// The storm's first pair of windows turns only on Rotate (Period 0), so
// that every process reads the same period from the file and can tell
// where an add went: an add during which the window's period did not
// change landed in that period (the reasoning of the package's own
// landedRef). Worker slot 0 also rotates both windows now and then, and is
// killed like the others. The Count-Min window turned by Rotate keeps
// three lanes in every slot, fewer than the workers, as the storm's
// Count-Min sketch does, so that kills meet a window's lanes owned,
// shared and taken over across its turns; the clock's keeps one grid.
var (
	stormWindow              = sketch.Window{Period: 0, Keep: 4}
	stormCountMinWindow      = sketch.CountMinConfig{Rows: 4, Width: 1 << 16, Candidates: 32}
	stormCountMinWindowLanes = sketch.CountMinConfig{Rows: 4, Width: 1 << 16, Candidates: 32, Lanes: 3}
	stormBloomWindow         = sketch.BloomConfig{Capacity: 1 << 20, FPRate: 0.001}
)

// The second pair turns on the clock, with the same shapes. The file holds
// the period length, so every process numbers periods alike: Unix time /
// Period, plus the Rotate calls (none here). Current on a clock window is
// not a fresh reading of the clock but the handle's view of it: a timer
// moves the handle's clock at each period's start, and Current is the
// larger of that and the file's latest word, the highest period any process
// has turned to (every handle publishes a period there at its first add in
// it). So Current trails the wall clock by the timer's latency (tens of
// milliseconds on a loaded machine), a handle whose timer is late follows
// one that added in the new period already, and one whose timer fired
// first leads the others meanwhile. The same view picks the period of every
// add and question, so the Rotate windows' bracketing holds unchanged:
//
//   - Current never goes back in one handle: the clock, the latest word
//     and the Rotate count only rise.
//   - An add lands in a period at least Current before the call and at
//     most Current after it: it starts at the handle's current period, and
//     moves only to a later one that it publishes in the latest word before
//     adding. So an add during which Current did not change landed in it.
//   - A question covers the window of a period between Current before and
//     after it: it reads the handle's current period, and reads it again
//     only after reading the clock (which Current then reflects).
//
// An add recorded before a checker read the records was published in the
// latest word before it returned, so its period is at most the checker's
// Current read after; it is not judged if it is later, so even a handle's
// lag could only hide adds, never make a false violation.
//
// Half a second, not less: a worker lives a few tenths of a second, and
// each new period's slots are pages it must fault in afresh.
var stormClockWindow = sketch.Window{Period: 500 * time.Millisecond, Keep: 4}

// windowRing is how many periods a record keeps per key and window field:
// Keep+1. A checker reads the records before asking, and an answer covers no
// period older than Keep-1 before the latest one turned to by then, so a
// period it covers is never overwritten in the ring before it is read.
const windowRing = 5

func init() {
	if windowRing != stormWindow.Keep+1 || stormClockWindow.Keep != stormWindow.Keep {
		panic("torture: windowRing must be Keep+1 of both pairs of windows")
	}
}

// A windowPair is a Count-Min window and a Bloom window that turn alike,
// and the record fields of their adds.
type windowPair struct {
	cm      *sketch.CountMinWindow
	bw      *sketch.BloomWindow
	cmField int
	bwField int
}

// windowPairs are the storm's windows: turned by Rotate, then by the clock.
func (s *stormFiles) windowPairs() [2]windowPair {
	return [2]windowPair{
		{s.cmw, s.bw, fieldCountMinWindow, fieldBloomWindow},
		{s.cmc, s.bwc, fieldCountMinClock, fieldBloomClock},
	}
}

// rotateOneIn is the chance, per call of worker slot 0, that it rotates
// both windows: a turn every few tens of milliseconds.
const rotateOneIn = 400

// A window word of a record holds a period plus one above periodShift (0:
// nothing recorded yet) and the weight of the adds that landed in it below,
// in one word, so a checker's atomic load sees both from the same store.
// A clock's period numbers are Unix time / Period, about 2^32 for half a
// second: 40 bits hold them, and 24 bits the weight of one key's adds in
// one period, which saturates there (only lowering what a checker
// requires).
const (
	periodShift = 24
	maxWeight   = 1<<periodShift - 1
)

func init() {
	if p := uint64(time.Now().Add(time.Hour).UnixNano() / int64(stormClockWindow.Period)); p+1 >= 1<<(64-periodShift) {
		panic("torture: the clock window's period numbers do not fit a record's window word")
	}
}

func windowWord(p, n uint64) uint64 { return (p+1)<<periodShift | min(n, maxWeight) }

func splitWindowWord(w uint64) (p, n uint64, ok bool) {
	if w>>periodShift == 0 {
		return 0, 0, false
	}
	return w>>periodShift - 1, w & maxWeight, true
}

// raiseWindow adds n to what landed in period p for the key, starting afresh
// when the ring word still holds an older period. Call it only after the add
// returned and only for an add known to have landed in p. One process
// raises a word at a time (the control's Rotate claims are the rotator's,
// its clock claims the supervisor's), so a load and a store suffice.
func (r *record) raiseWindow(field, key int, p, n uint64) {
	w := &r.words[r.windex(field, key, p)]
	q, c, ok := splitWindowWord(atomic.LoadUint64(w))
	switch {
	case ok && q == p:
		atomic.StoreUint64(w, windowWord(p, min(c, maxWeight)+min(n, maxWeight)))
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

// claim makes the negative control claim, for every control key, adds in
// period pc of the pair's Count-Min window and period pb of its Bloom
// window.
func (wp windowPair) claim(rec *record, pc, pb uint64) {
	for k := realKeys; k < allKeys; k++ {
		rec.raiseWindow(wp.cmField, k, pc, controlWeight(k))
		rec.raiseWindow(wp.bwField, k, pb, 1)
	}
}

// refreshWindowControl makes the negative control claim adds in the Rotate
// windows' current periods: the rotator calls it after every rotation (and
// when it starts, in case it was killed between), so the claims stay
// inside the windows the checkers ask.
func refreshWindowControl(rec *record, s *stormFiles) {
	wp := s.windowPairs()[0]
	wp.claim(rec, wp.cm.Current(), wp.bw.Current())
}

// claimClock keeps the negative control's claims in the clock windows'
// current periods until stop closes: the clock turns them whether or not
// anyone rotates. It runs in the supervisor, which is never killed, and
// looks eight times a period, claiming each period once, soon after this
// handle's clock turns to it. A checker judges an answer against the
// periods it certainly covers, the latest Keep-1 before it among them at
// least, so the control is caught only by a checker that asks the clock
// windows, reads their records and brackets with their own periods: one
// blind to them (never asking, asking the wrong window, or taking the
// Rotate windows' periods) finds nothing to catch, and the summary counts
// it as missed.
func claimClock(rec *record, s *stormFiles, stop <-chan struct{}) {
	wp := s.windowPairs()[1]
	var lastC, lastB uint64
	tick := time.NewTicker(stormClockWindow.Period / 8)
	defer tick.Stop()
	for {
		if pc, pb := wp.cm.Current(), wp.bw.Current(); pc != lastC || pb != lastB {
			wp.claim(rec, pc, pb) // a repeat in one period adds weight, harmlessly
			lastC, lastB = pc, pb
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
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
