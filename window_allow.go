package sketch

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// Decision is a rate limiter's answer for one request (CountMinWindow.Allow).
type Decision struct {
	// Allowed says whether the request is within the limit.
	Allowed bool `json:"allowed"`
	// Counted says whether the request was counted in the window: always
	// when Allow counts refused requests; otherwise when it was allowed,
	// and when it raced other processes past the limit (see Allow).
	Counted bool `json:"counted"`
	// Estimate is the key's count over the window, this request included
	// when it was counted: never below the true count.
	Estimate uint64 `json:"estimate"`
	// Low is Estimate less the window's ErrorBound (at least 0): with the
	// sketch's confidence the true count is at least Low.
	Low uint64 `json:"low"`
	// Turns, for a refused request, is how many turns of the period it
	// takes until the periods still in the window hold at most limit-1
	// for this key, so that one more request would be allowed unless more
	// arrive meanwhile; 0 when allowed.
	Turns int `json:"turns"`
	// RetryAfter is when that is, on a window that follows the clock: the
	// time until the Turns-th turn (never early: a Rotate can only bring
	// a turn sooner). 0 when allowed, and on a window turned by Rotate
	// alone.
	RetryAfter time.Duration `json:"retry_after"`
	// Periods are the periods the answer covered.
	Periods Periods `json:"periods"`
}

// Allow counts a request for key and decides it against limit, the most
// requests the key may make in the periods the window covers: allowed when
// the key's estimate over the window, this request included, is at most
// limit. With countRefused, every request counts, allowed or not (a client
// that keeps knocking stays refused); without it, a request that would
// pass the limit is refused without counting it, read first and counted
// only when it fits.
//
// What holds across processes: estimates are never below the truth, so a
// key is never allowed past its limit: the limit+1-th request counted in
// the covered periods, in any process, is refused, and with countRefused
// so is every later one. A key is refused before its limit only when its
// estimate exceeds its count, by at most ErrorBound with the sketch's
// confidence (Low shows how far), or when requests of other processes
// were being counted at the same moment: at most one each, among the
// last before the limit. Without countRefused, two processes
// whose requests both fit when read may both count them; the one that
// then finds itself past the limit is refused and stays counted
// (Counted), so the limit still holds.
//
// An allowed request's estimate is read again after its add, which
// costs an Estimate more: an Add's own answer is not enough to hold the
// limit when processes add at once.
//
// A refused decision says when to retry: Turns and RetryAfter, from the
// key's count in each covered period. limit must be at least 1
// (ErrInvalidArgument). Allow costs an Add (and, without countRefused, an
// Estimate first) and a cached ErrorBound; a refusal also reads the clock
// (a handle's period moves by a timer, which a loaded machine runs late:
// a refusal is never made in a period the clock has left) and the key's
// count per period.
func (w *CountMinWindow) Allow(key []byte, limit uint64, countRefused bool) (Decision, error) {
	if limit == 0 {
		return Decision{}, fmt.Errorf("sketch: allow %s: %w: a limit of 0 allows nothing", w.name(), ErrInvalidArgument)
	}
	if !w.open.Load() || w.ro || atomic.LoadUint32(w.sealed) != 0 {
		return Decision{}, w.refuse("allow")
	}
	lo, hi := hashKey(key, w.slots[0].seed)
	var d Decision
	var winP uint64
	full := false // without countRefused: the key is at its limit already
	if !countRefused {
		est, p := w.estimateOne(lo, hi)
		if full = est >= limit; full {
			d.Estimate, winP = est, p
		}
	}
	if !full {
		est, addP, p, err := w.addOne(lo, hi, 1)
		if err != nil {
			return Decision{}, err
		}
		if w.top != nil {
			w.feed(lo, hi, unsafe.String(unsafe.SliceData(key), len(key)), est, addP)
		}
		if est <= limit {
			// An add's estimate is the least of its own rows' new values,
			// and adds racing in other processes reach the rows in other
			// orders, so two of them can both see limit. Read again, now
			// that this add is in every row: of the adds allowed, the last
			// to finish its rows sees all of them, so no more than limit
			// are allowed.
			est, p = w.estimateOne(lo, hi)
		}
		d.Counted, d.Estimate, winP = true, est, p
	}
	d.Allowed = !full && d.Estimate <= limit
	if !d.Allowed && w.ctl.clk != nil {
		was := w.ctl.current()
		w.ctl.refresh()
		if w.ctl.current() != was {
			// The handle's clock was late: decide in the period the clock
			// is in. A counted request stays counted, in its period.
			est, p := w.estimateOne(lo, hi)
			if !d.Counted && est < limit {
				return w.Allow(key, limit, countRefused)
			}
			d.Estimate, winP = est, p
			d.Allowed = d.Counted && est <= limit
		}
	}
	d.Periods = w.covered(winP)
	if bound := w.ErrorBound(); bound < d.Estimate {
		d.Low = d.Estimate - bound
	}
	if !d.Allowed {
		d.Turns, d.RetryAfter = w.retry(lo, hi, limit)
	}
	if !w.open.Load() {
		return Decision{}, w.closedErr("allow")
	}
	return d, nil
}

// retry returns how many turns it takes until the periods still in the
// window hold at most limit-1 for the key, and when that is on a clock.
func (w *CountMinWindow) retry(lo, hi, limit uint64) (int, time.Duration) {
	c := &w.ctl
	keep := int(c.keep)
	per := make([]uint64, keep) // per[i]: period p-i
	p := c.readStable(func(p uint64) bool {
		clear(per)
		return c.readWindow(p, false, func(s uint64) bool {
			q := decodeSlotWord(atomic.LoadUint64(c.word(s))).period
			if p-q < uint64(keep) {
				per[p-q] = w.slots[s].estimateHashed(lo, hi)
			}
			return false
		})
	})
	// After k turns the periods p-keep+1+k .. p are left: per[0 .. keep-1-k].
	turns := keep
	for k := 1; k < keep; k++ {
		var sum uint64
		for _, v := range per[:keep-k] {
			sum = satAdd(sum, v)
		}
		if sum < limit {
			turns = k
			break
		}
	}
	if c.period <= 0 {
		return turns, 0
	}
	wait := time.Duration(turns) * time.Duration(c.period)
	if wp := w.periods(); !wp.start.IsZero() && wp.current == p {
		// The turn that ends period p+turns-1 comes at the start of period
		// p+turns, by the clock.
		if next := int64(p) + int64(turns); next <= math.MaxInt64/c.period {
			wait = time.Until(time.Unix(0, next*c.period))
		}
	}
	return turns, max(wait, 0)
}
