package sketch

// Periods is the span of periods an answer of a window covered: Oldest to
// Current, both included, as the window stood when it answered. A caller
// that records what it added per period (a test, an audit) checks an
// answer against exactly those periods, without bracketing the call with
// Current, which a turn between the two calls would make wrong.
type Periods struct {
	Oldest  uint64 `json:"oldest"`
	Current uint64 `json:"current"`
}

// covered returns the window's periods ending at p.
func (b *windowBase) covered(p uint64) Periods {
	return Periods{Oldest: b.ctl.first(p), Current: p}
}

// EstimateCovered is Estimate, and says which periods the estimate
// covered: it is never below what those periods counted for key. After
// Close it returns ClosedEstimate and the zero Periods.
func (w *CountMinWindow) EstimateCovered(key []byte) (uint64, Periods) {
	if !w.open.Load() {
		return ClosedEstimate, Periods{}
	}
	lo, hi := hashKey(key, w.slots[0].seed)
	est, p := w.estimateOne(lo, hi)
	if !w.open.Load() {
		return ClosedEstimate, Periods{}
	}
	return est, w.covered(p)
}

// ContainsCovered is Contains, and says which periods the answer covered:
// false means key was added in none of them. After Close it returns true
// and the zero Periods.
func (w *BloomWindow) ContainsCovered(key []byte) (bool, Periods) {
	if !w.open.Load() {
		return true, Periods{}
	}
	lo, hi := hashKey(key, w.slots[0].seed)
	found, p := w.lookup(lo, hi)
	if !w.open.Load() {
		return true, Periods{}
	}
	return found, w.covered(p)
}
