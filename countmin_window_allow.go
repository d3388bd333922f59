package sketch

import (
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

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
// An add's own estimate is not enough to hold the limit when processes
// add at once: two racing adds can both see the limit. In a window of two
// periods Allow decides on the key's counters in the last row its add
// writes, which hold every add of the key that finished before it, and
// reads the window again only when those (which other keys share) pass
// the limit while the estimate does not; in other windows it reads the
// window again after every add within the limit.
//
// A refused decision says when to retry: Turns and RetryAfter, from the
// key's count in each covered period. limit must be at least 1
// (ErrInvalidArgument). In a window of two periods, Allow makes one pass
// over the key's rows that reads, adds and decides, and costs about 1.15
// Adds, with or without countRefused (BenchmarkCountMinWindowAllow: 56
// against 48.5 ns of CPU a call, on both backends); a key near its limit
// may pay an Estimate more. Other windows pay an Add and an Estimate after
// it, and without countRefused one before. Low comes from the window's
// total as Total caches it, read again once a timer says a millisecond has
// passed, without a clock read.
// A refusal also reads the clock (a handle's period moves by a timer,
// which a loaded machine runs late: a refusal is never made in a period
// the clock has left) and the key's count per period.
func (w *CountMinWindow) Allow(key []byte, limit uint64, countRefused bool) (Decision, error) {
	if limit == 0 || w.readOnlyNow() {
		return Decision{}, w.allowRefused(limit)
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	return w.allowHashed(key, lo, hi, limit, countRefused)
}

// allowHashed is Allow once the key is hashed (Limits hashes a key once
// for every limit of one seed).
func (w *CountMinWindow) allowHashed(key []byte, lo, hi, limit uint64, countRefused bool) (Decision, error) {
	// The decision is kept in registers until the end: a Decision written
	// field by field and copied out costs the copy a stall.
	est, winP, counted, allowed, ok := w.allowPair(key, lo, hi, limit, countRefused)
	if !ok || !allowed {
		return w.decide(key, lo, hi, limit, countRefused, est, winP, counted, allowed, ok)
	}
	// Allowed: the usual answer, with the bound of the cached total.
	var low uint64
	if tc := &w.totals; tc.live.Load() && tc.period.Load() == winP {
		if bound := tc.bound.Load(); bound < est {
			low = est - bound
		}
	} else {
		low = w.lowAt(est, winP)
	}
	if !w.open.Load() {
		return Decision{}, w.closedErr("allow")
	}
	return Decision{estimate: est, low: low, facts: winP<<decPeriodShift | decAllowed | decCounted}, nil
}

// allowRefused is Allow's error for a limit of 0 or a handle that cannot
// add.
// AllowString is Allow for a string key, without copying it: a request
// keyed by a client's address or token as the server already holds it.
func (w *CountMinWindow) AllowString(key string, limit uint64, countRefused bool) (Decision, error) {
	return w.Allow(unsafe.Slice(unsafe.StringData(key), len(key)), limit, countRefused)
}

func (w *CountMinWindow) allowRefused(limit uint64) error {
	if limit == 0 {
		return fmt.Errorf("sketch: allow %s: %w: a limit of 0 allows nothing", w.name(), ErrInvalidArgument)
	}
	return w.refuse("allow")
}

// lowAt is est less the window's ErrorBound for a decision over the
// window that ends at period p (at least 0): the bound of the last read of
// the total while that read is younger than totalsFresh by its timer and
// was of that window, else ErrorBound, which reads the total again.
func (w *CountMinWindow) lowAt(est, p uint64) uint64 {
	tc := &w.totals
	bound := tc.bound.Load()
	if !tc.live.Load() || tc.period.Load() != p {
		bound = w.ErrorBound()
	}
	if bound < est {
		return est - bound
	}
	return 0
}

// decide is the rest of Allow, for a request that allowPair did not serve
// (ok false: it wrote nothing) or did not allow: the long way, a late
// clock, Low and when to retry.
func (w *CountMinWindow) decide(key []byte, lo, hi, limit uint64, countRefused bool, est, winP uint64, counted, allowed, ok bool) (Decision, error) {
	if !ok {
		var err error
		if est, winP, counted, allowed, err = w.allowLong(key, lo, hi, limit, countRefused); err != nil {
			return Decision{}, err
		}
	}
	if !allowed && w.ctl.clk != nil {
		was := w.ctl.current()
		w.ctl.refresh()
		if w.ctl.current() != was {
			// The handle's clock was late: decide in the period the clock
			// is in. A counted request stays counted, in its period.
			e, p := w.estimateOne(lo, hi)
			if !counted && e < limit {
				return w.Allow(key, limit, countRefused)
			}
			est, winP = e, p
			allowed = counted && e <= limit
		}
	}
	low := w.lowAt(est, winP)
	var turns int
	var after time.Duration
	if !allowed {
		turns, after = w.retry(lo, hi, limit)
	}
	if !w.open.Load() {
		return Decision{}, w.closedErr("allow")
	}
	return newDecision(allowed, counted, est, low, turns, after, winP), nil
}

// allowPair is Allow's usual case, in a window of two periods whose slots
// this handle found ready in this period before (addOne's pair cache): one
// pass over the key's rows reads both slots, adds when the request is to
// be counted, and reads the previous period's slot again (allowCells). It
// returns the decision's estimate, the period of the window it decided
// in, whether the request was counted and whether it was allowed; ok is
// false, and nothing was written, when this case does not serve.
//
// An add's estimate is the least of its rows' new counters, and adds
// racing in other processes reach the rows in other orders, so two of
// them can both see limit: the estimate alone cannot allow. The last
// row's new counter can: every add goes from the first row to the last,
// and each of a row's fetch-adds returns a value of its own, so of the
// requests allowed, the one whose last row came last (or whose read after
// its add began last) counted every other in its last row (or in every
// row it read). A request is allowed on its last row when that counter
// and the previous period's slot, loaded after the add (an add that
// started before the period turned may still land there), are within the
// limit and the period has not turned (an adder that did not see the turn
// reads again); otherwise, when its estimate is within the limit, it reads
// the window again, as the long way does. The last row exceeds the key's
// estimate only by what other keys put in that one counter, so keys well
// under the limit never read again.
func (w *CountMinWindow) allowPair(key []byte, lo, hi, limit uint64, countRefused bool) (est, winP uint64, counted, allowed, ok bool) {
	c := &w.ctl
	p := c.current()
	v := c.pair.Load()
	if v>>slotBits != p || p > maxPeriod || !c.held(v&(1<<slotBits-1), p) {
		return 0, 0, false, false, false
	}
	if w.lanes != nil {
		// A counter of lanes is a sum: the last row's new counter is no
		// longer what every other allowed request's add returned before
		// it, so the long way decides, reading the window after the add.
		return 0, 0, false, false, false
	}
	s := v & (1<<slotBits - 1)
	t := c.prevSlot(s)
	fit := uint64(math.MaxUint64) // an estimate is at most maxCount: always add
	if !countRefused {
		fit = limit // read first, counted only when it fits
	}
	est, lastFits, added := allowCells(&w.slots[t], &w.slots[s], lo, hi, fit, limit)
	held := c.held(t, p-1) && c.held(s, p)
	if !added {
		// Refused uncounted, unless the period turned under the read:
		// then nothing was written, and the long way starts again.
		return est, p, false, false, held
	}
	winP = p
	if w.top != nil {
		w.feed(lo, hi, unsafe.String(unsafe.SliceData(key), len(key)), est, 1, p)
	}
	switch {
	case !held:
		// The period turned under the add: this read, after it, is the
		// read again.
		est, winP = w.estimate(lo, hi)
	case lastFits && c.current() == p:
		return est, p, true, true, true
	case est <= limit:
		est, winP = w.estimateOne(lo, hi)
	}
	return est, winP, true, est <= limit, true
}

// allowLong is Allow's way in every other case: the estimate first
// without countRefused, then Add's way, then the estimate again when the
// add's is within the limit. It returns what allowPair does.
func (w *CountMinWindow) allowLong(key []byte, lo, hi, limit uint64, countRefused bool) (est, winP uint64, counted, allowed bool, err error) {
	if !countRefused {
		est, p := w.estimateOne(lo, hi)
		if est >= limit {
			return est, p, false, false, nil // the key is at its limit already
		}
	}
	est, addP, p, err := w.addOne(lo, hi, 1)
	if err != nil {
		return 0, 0, false, false, err
	}
	if w.top != nil {
		w.feed(lo, hi, unsafe.String(unsafe.SliceData(key), len(key)), est, 1, addP)
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
	return est, p, true, est <= limit, nil
}

// allowCells is Allow's pass over the key's rows in a window of two
// slots. It loads the key's counters in other and cur, whose lines are on
// their way before its atomic adds, which wait for every earlier load (as
// in readThenAdd). When the key's estimate over both is below fit it adds
// 1 to cur's counters from the first row to the last, as every add does
// (added), and returns the key's estimate after the add: other's as
// loaded before it plus the least of cur's new counters. lastFits says
// whether cur's new counter in the last row, plus other's counter in that
// row loaded again after the add (one load, in the caches), is at most
// limit. When it does not add, est is the estimate it read. Results come
// back in registers, few enough that its caller spills none.
func allowCells(other, cur *cells.CountMin, lo, hi, fit, limit uint64) (est uint64, lastFits, added bool) {
	if other.Fleet != nil {
		return allowCellsFleet(other, cur, lo, hi, fit, limit)
	}
	h2 := hi | 1
	oe, ce := ^uint64(0), ^uint64(0)
	ro, rc := other.Cells, cur.Cells
	mask, rowBytes, rows := other.Mask, other.RowBytes, other.Rows
	x := lo
	var off uintptr
	for range rows {
		off = uintptr(cells.Spread(x)&mask) * 8
		oe = min(oe, atomic.LoadUint64((*uint64)(unsafe.Add(ro, off))))
		ce = min(ce, atomic.LoadUint64((*uint64)(unsafe.Add(rc, off))))
		ro = unsafe.Add(ro, rowBytes)
		rc = unsafe.Add(rc, rowBytes)
		x += h2
	}
	oe = min(oe, cells.MaxCount)
	if before := satAdd(oe, min(ce, cells.MaxCount)); before >= fit {
		return before, false, false
	}
	otherAt := (*uint64)(unsafe.Add(ro, off-rowBytes)) // other's counter in the last row
	rc = unsafe.Add(rc, -rows*int(rowBytes))
	x, ce = lo, ^uint64(0)
	for range rows - 1 {
		c := (*uint64)(unsafe.Add(rc, uintptr(cells.Spread(x)&mask)*8))
		v := atomic.AddUint64(c, 1)
		if v > cells.MaxCount {
			v = cells.ClampCell(c)
		}
		ce = min(ce, v)
		rc = unsafe.Add(rc, rowBytes)
		x += h2
	}
	last := (*uint64)(unsafe.Add(rc, off))
	curLast := atomic.AddUint64(last, 1)
	if curLast > cells.MaxCount {
		curLast = cells.ClampCell(last)
	}
	otherLast := min(atomic.LoadUint64(otherAt), cells.MaxCount)
	return satAdd(oe, min(ce, curLast)), satAdd(otherLast, curLast) <= limit, true
}

// allowCellsFleet is allowCells in a window with a fleet part: every
// counter read counts as own + fleet (cells.SumCells), the counters the
// add returns and the last row's included, and the add writes own
// counters only.
func allowCellsFleet(other, cur *cells.CountMin, lo, hi, fit, limit uint64) (est uint64, lastFits, added bool) {
	h2 := hi | 1
	oe, ce := ^uint64(0), ^uint64(0)
	mask, rowBytes, rows := other.Mask, other.RowBytes, other.Rows
	load := func(p unsafe.Pointer, off uintptr) uint64 { return atomic.LoadUint64((*uint64)(unsafe.Add(p, off))) }
	// The first pass keeps, for up to fleetRows rows, each row's offset
	// and cur's fleet counter, so that the add's pass neither hashes nor
	// loads them again.
	const fleetRows = 8
	var offs, curFleet [fleetRows]uintptr
	x := lo
	var off uintptr
	for i := range rows {
		off = uintptr(i)*rowBytes + uintptr(cells.Spread(x)&mask)*8
		f := load(cur.Fleet, off)
		if i < fleetRows {
			offs[i], curFleet[i] = off, uintptr(f)
		}
		oe = min(oe, cells.SumCells(load(other.Cells, off), load(other.Fleet, off)))
		ce = min(ce, cells.SumCells(load(cur.Cells, off), f))
		x += h2
	}
	if before := satAdd(oe, ce); before >= fit {
		return before, false, false
	}
	last := off // the last row's counter, in every grid
	x, ce = lo, ^uint64(0)
	var curLast uint64
	for i := range rows {
		var o uintptr
		var f uint64
		if i < fleetRows {
			o, f = offs[i], uint64(curFleet[i])
		} else {
			o = uintptr(i)*rowBytes + uintptr(cells.Spread(x)&mask)*8
			f = load(cur.Fleet, o)
		}
		c := (*uint64)(unsafe.Add(cur.Cells, o))
		v := atomic.AddUint64(c, 1)
		if v > cells.MaxCount {
			v = cells.ClampCell(c)
		}
		v = cells.SumCells(v, f)
		ce = min(ce, v)
		curLast = v
		x += h2
	}
	otherLast := cells.SumCells(load(other.Cells, last), load(other.Fleet, last))
	return satAdd(oe, ce), satAdd(otherLast, curLast) <= limit, true
}

// retry returns how many turns it takes until the periods still in the
// window hold at most limit-1 for the key, and when that is on a clock.
func (w *CountMinWindow) retry(lo, hi, limit uint64) (int, time.Duration) {
	c := &w.ctl
	keep := int(c.keep)
	var buf [16]uint64 // a window of up to 16 periods counts on the stack
	per := buf[:min(keep, len(buf))]
	if keep > len(buf) {
		per = make([]uint64, keep)
	}
	// per[i]: period p-i
	p := c.readStable(func(p uint64) bool {
		clear(per)
		return c.readWindow(p, false, func(s uint64) bool {
			q := decodeSlotWord(atomic.LoadUint64(c.word(s))).period
			if p-q < uint64(keep) {
				per[p-q] = w.slots[s].EstimateHashed(lo, hi)
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
	if wp := w.periods(); !wp.Start.IsZero() && wp.Current == p {
		// The turn that ends period p+turns-1 comes at the start of period
		// p+turns, by the clock.
		if next := int64(p) + int64(turns); next <= math.MaxInt64/c.period {
			wait = time.Until(time.Unix(0, next*c.period))
		}
	}
	return turns, max(wait, 0)
}

// Decision is a rate limiter's answer for one request
// (CountMinWindow.Allow), read through its methods.
//
// It is four words, so that it comes back from Allow in registers and its
// caller keeps it there: a struct of seven fields was copied through
// memory by every caller, a store-forwarding stall that was half of what
// a decision costs beyond an Add (7 of 14 ns). The zero Decision is a
// refusal of nothing: not allowed, not counted, every figure 0.
type Decision struct {
	estimate, low uint64
	retryAfter    time.Duration
	facts         uint64 // decAllowed | decCounted | turns<<decTurnsShift | period<<decPeriodShift
}

// The bits of Decision.facts: a period fits 47 bits (maxPeriod), and
// Turns at most MaxWindowKeep, 9.
const (
	decAllowed     = 1 << 0
	decCounted     = 1 << 1
	decTurnsShift  = 2
	decTurnsMask   = 1<<9 - 1
	decPeriodShift = 11
)

// newDecision packs a decision. turns is at most MaxWindowKeep and period
// at most maxPeriod, as every window's are.
func newDecision(allowed, counted bool, estimate, low uint64, turns int, retryAfter time.Duration, period uint64) Decision {
	facts := period<<decPeriodShift | uint64(turns)&decTurnsMask<<decTurnsShift
	if allowed {
		facts |= decAllowed
	}
	if counted {
		facts |= decCounted
	}
	return Decision{estimate: estimate, low: low, retryAfter: retryAfter, facts: facts}
}

// Allowed reports whether the request is within the limit.
func (d Decision) Allowed() bool { return d.facts&decAllowed != 0 }

// Counted reports whether the request was counted in the window: always
// when Allow counts refused requests; otherwise when it was allowed, and
// when it raced other processes past the limit (see Allow).
func (d Decision) Counted() bool { return d.facts&decCounted != 0 }

// Estimate is the key's count over the window, this request included when
// it was counted: never below the true count.
func (d Decision) Estimate() uint64 { return d.estimate }

// Low is Estimate less the window's ErrorBound (at least 0): with the
// sketch's confidence the true count is at least Low.
func (d Decision) Low() uint64 { return d.low }

// Turns, for a refused request, is how many turns of the period it takes
// until the periods still in the window hold at most limit-1 for this key,
// so that one more request would be allowed unless more arrive meanwhile;
// 0 when allowed.
func (d Decision) Turns() int { return int(d.facts >> decTurnsShift & decTurnsMask) }

// RetryAfter is when that is, on a window that follows the clock: the time
// until the Turns-th turn (never early: a Rotate can only bring a turn
// sooner). 0 when allowed, and on a window turned by Rotate alone.
func (d Decision) RetryAfter() time.Duration { return d.retryAfter }

// Period is the period the decision was made in: it covered the window
// that ends there, the periods from Period-Keep+1 (or 0) to Period.
func (d Decision) Period() uint64 { return d.facts >> decPeriodShift }

// String describes the decision in one line, for logs and test failures.
func (d Decision) String() string {
	verdict := "refused"
	if d.Allowed() {
		verdict = "allowed"
	}
	if d.Counted() {
		verdict += ", counted"
	}
	s := fmt.Sprintf("%s: estimate %d (low %d) in period %d", verdict, d.estimate, d.low, d.Period())
	if !d.Allowed() {
		s += fmt.Sprintf(", %d turns, retry after %v", d.Turns(), d.retryAfter)
	}
	return s
}

// decisionJSON is a Decision's JSON: every method's answer by name, the
// retry time in nanoseconds as a time.Duration marshals.
type decisionJSON struct {
	Allowed    bool          `json:"allowed"`
	Counted    bool          `json:"counted"`
	Estimate   uint64        `json:"estimate"`
	Low        uint64        `json:"low"`
	Turns      int           `json:"turns"`
	RetryAfter time.Duration `json:"retry_after"`
	Period     uint64        `json:"period"`
}

// MarshalJSON writes the decision as an object of what its methods
// return: allowed, counted, estimate, low, turns, retry_after (in
// nanoseconds) and period.
func (d Decision) MarshalJSON() ([]byte, error) {
	return json.Marshal(decisionJSON{
		Allowed:    d.Allowed(),
		Counted:    d.Counted(),
		Estimate:   d.estimate,
		Low:        d.low,
		Turns:      d.Turns(),
		RetryAfter: d.retryAfter,
		Period:     d.Period(),
	})
}
