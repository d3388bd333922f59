package sketch

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// Limit is one limit that Limits decides a key against: a rate limiter
// (*GCRA), or a window with its limit (WindowLimit). Only the package's
// types implement it.
type Limit interface {
	// seed is the seed the limit hashes keys with, so that Limits hashes
	// a key once for the limits of one seed (those of one arena).
	seed() uint64
	// peek decides without counting, for the key hashing to (lo, hi):
	// whether a request of cost would pass, and when to retry if not.
	peek(lo, hi, cost uint64, now int64) (bool, time.Duration, error)
	// take decides and counts a request that passes, as the limit's own
	// decision does.
	take(key []byte, lo, hi, cost uint64, now int64) (bool, time.Duration, error)
}

// WindowLimit is a Count-Min window with the most requests a key may make
// in the periods it covers, as CountMinWindow.Allow takes it, for Limits.
// A window counts one request at a time: Limits with a window refuses a
// cost other than 1.
type WindowLimit struct {
	Window *CountMinWindow
	Limit  uint64
}

func (l WindowLimit) check() error {
	switch {
	case l.Window == nil:
		return fmt.Errorf("%w: a WindowLimit without a Window", ErrInvalidArgument)
	case l.Limit == 0:
		return fmt.Errorf("%w: %s: a limit of 0 allows nothing", ErrInvalidArgument, l.Window.name())
	}
	return nil
}

func (l WindowLimit) cost(cost uint64) error {
	if cost != 1 {
		return fmt.Errorf("sketch: allow %s: %w: a window counts one request at a time, not a cost of %d", l.Window.name(), ErrInvalidArgument, cost)
	}
	return nil
}

func (l WindowLimit) seed() uint64 { return l.Window.slots[0].Seed }

func (l WindowLimit) peek(lo, hi, cost uint64, _ int64) (bool, time.Duration, error) {
	if err := l.cost(cost); err != nil {
		return false, 0, err
	}
	w := l.Window
	if err := w.mayWrite("allow"); err != nil {
		return false, 0, err
	}
	est, _ := w.estimateOne(lo, hi)
	if est < l.Limit {
		return true, 0, nil
	}
	_, after := w.retry(lo, hi, l.Limit)
	return false, after, w.after("allow")
}

func (l WindowLimit) take(key []byte, lo, hi, cost uint64, _ int64) (bool, time.Duration, error) {
	if err := l.cost(cost); err != nil {
		return false, 0, err
	}
	if err := l.Window.mayWrite("allow"); err != nil {
		return false, 0, err
	}
	d, err := l.Window.allowHashed(key, lo, hi, l.Limit, false)
	return d.Allowed(), d.RetryAfter(), err
}

func (g *GCRA) seed() uint64 { return g.l.Seed }

func (g *GCRA) peek(lo, hi, cost uint64, now int64) (bool, time.Duration, error) {
	if err := g.mayDecide(cost); err != nil {
		return false, 0, err
	}
	d := g.decision(false, g.l.TAT(lo, hi), uint64(now), max(cost, 1), true)
	return d.Allowed, d.RetryAfter, g.after("allow")
}

func (g *GCRA) take(_ []byte, lo, hi, cost uint64, now int64) (bool, time.Duration, error) {
	if err := g.mayDecide(cost); err != nil {
		return false, 0, err
	}
	d, err := g.allowHashed(lo, hi, cost, now)
	return d.Allowed, d.RetryAfter, err
}

// Limits is several limits a key is decided against together: a request
// passes when every limit lets it through, as a client of an API with 10
// requests a second and 1000 an hour expects (a GCRA and a WindowLimit).
// When one refuses, the request counts in none of them, but for racing
// processes (see Allow). Build it once with NewLimits; it is safe for
// concurrent use, and holds the limits' handles without owning them.
type Limits struct {
	limits []Limit
}

// NewLimits returns the limits, decided in the order given: put the one
// that refuses most often last, where a refusal costs one pass. At least
// one limit; nil ones and invalid WindowLimits are ErrInvalidArgument.
func NewLimits(limits ...Limit) (*Limits, error) {
	if len(limits) == 0 {
		return nil, fmt.Errorf("sketch: limits: %w: no limit given", ErrInvalidArgument)
	}
	for i, l := range limits {
		var err error
		switch l := l.(type) {
		case nil:
			err = fmt.Errorf("%w: limit %d is nil", ErrInvalidArgument, i)
		case *GCRA:
			if l == nil {
				err = fmt.Errorf("%w: limit %d is a nil *GCRA", ErrInvalidArgument, i)
			}
		case WindowLimit:
			err = l.check()
		}
		if err != nil {
			return nil, fmt.Errorf("sketch: limits: %w", err)
		}
	}
	return &Limits{limits: append([]Limit(nil), limits...)}, nil
}

// LimitsDecision is Limits' answer for one request.
type LimitsDecision struct {
	// Allowed reports whether every limit let the request through; it
	// then counts in each.
	Allowed bool `json:"allowed"`
	// Refused is the index of the limit that refused it (the first to),
	// -1 when allowed.
	Refused int `json:"refused"`
	// RetryAfter is, for a refused request, the longest of the refusing
	// limits' retry-afters read before anything was counted (or the one
	// that refused in the count): when the request would pass them.
	RetryAfter time.Duration `json:"retry_after"`
	// Overcounted is set when a refused request still counted in some
	// limits: another process's request of the same key was counted
	// between this one's read and its count (see Limits.Allow).
	Overcounted bool `json:"overcounted"`
}

// Allow decides a request of cost for key against every limit, at one
// time, now, for every rate limiter among them. It reads every limit but
// the last without counting; a refusal there counts nothing, and the last
// is then read too, so that the retry-after returned is the longest of
// every refusing limit's. Otherwise it decides the last as its own Allow
// does (a refusal counts nothing), then counts the others in order.
//
// What racing processes can do: a request whose reads passed can be
// refused when it counts in one of the first limits, because requests of
// the same key from other processes took what was left between its read
// and its count. It then stays counted in the limits counted before
// (Overcounted): each such refusal adds at most its cost to each of them,
// so a key is never allowed past any limit, and is refused early by at
// most the requests that raced it. Without racing requests of a key, a
// refused request counts in none.
//
// A Count-Min window's limit holds as its Allow's does (never past the
// limit; see CountMinWindow.Allow); a rate limiter's as its Allow's.
func (ls *Limits) Allow(key []byte, cost uint64) (LimitsDecision, error) {
	now := unixClock.now()
	last := len(ls.limits) - 1
	var h keyHashes
	d := LimitsDecision{Refused: -1}
	for i, l := range ls.limits[:last] {
		lo, hi := h.of(key, l.seed())
		ok, after, err := l.peek(lo, hi, cost, now)
		if err != nil {
			return LimitsDecision{}, err
		}
		if !ok {
			if d.Refused < 0 {
				d.Refused = i
			}
			d.RetryAfter = max(d.RetryAfter, after)
		}
	}
	if d.Refused >= 0 {
		// The last may refuse for longer: a client told to come back
		// sooner than it would pass would only be refused again.
		lo, hi := h.of(key, ls.limits[last].seed())
		ok, after, err := ls.limits[last].peek(lo, hi, cost, now)
		if err != nil {
			return LimitsDecision{}, err
		}
		if !ok {
			d.RetryAfter = max(d.RetryAfter, after)
		}
		return d, nil
	}
	for i := last; i >= 0; i = ls.next(i, last) {
		lo, hi := h.of(key, ls.limits[i].seed())
		ok, after, err := ls.limits[i].take(key, lo, hi, cost, now)
		if err != nil {
			return LimitsDecision{}, err
		}
		if !ok {
			return LimitsDecision{Refused: i, RetryAfter: after, Overcounted: i != last}, nil
		}
	}
	return LimitsDecision{Allowed: true, Refused: -1}, nil
}

// keyHashes is a key's hash with the last seed asked for: limits of one
// arena share its seed, and the key is hashed once for them.
type keyHashes struct {
	seed, lo, hi uint64
	done         bool
}

func (h *keyHashes) of(key []byte, seed uint64) (lo, hi uint64) {
	if !h.done || h.seed != seed {
		h.lo, h.hi = cells.Hash(key, seed)
		h.seed, h.done = seed, true
	}
	return h.lo, h.hi
}

// next is the limit counted after i: the last is counted first, then the
// others from the first; -1 after them all.
func (ls *Limits) next(i, last int) int {
	switch {
	case i == last:
		i = 0
	default:
		i++
	}
	if i == last {
		return -1
	}
	return i
}

// AllowString is Allow for a string key, without copying it.
func (ls *Limits) AllowString(key string, cost uint64) (LimitsDecision, error) {
	return ls.Allow(unsafe.Slice(unsafe.StringData(key), len(key)), cost)
}
