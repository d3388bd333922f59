package sketch

import (
	"encoding/json"
	"fmt"
	"time"
)

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
