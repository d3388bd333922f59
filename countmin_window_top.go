package sketch

// The candidate table of a Count-Min window (candidates.go): one table for
// the window, fed with estimates over the window. At each turn of the
// period the first add of the new period re-estimates the candidates
// against the new window, under the lock, and those that fell to the
// noise floor leave.

// feed hands the estimate over the window of an add of n to the table
// when it passed the floor, or when the table is not yet set for the
// add's period.
func (w *CountMinWindow) feed(lo, hi uint64, key string, est, n, addP uint64) {
	if !sampled(est, n) {
		return
	}
	if f, p := w.top.floor(); (est > f || p != addP+1) && w.open.Load() {
		w.top.offer(w, lo, hi, key, est, addP+1)
	}
}

func (w *CountMinWindow) recount(lo, hi uint64) uint64 {
	est, _ := w.estimateOne(lo, hi)
	return est
}

func (w *CountMinWindow) noiseFloor() uint64 {
	t := w.windowTotal()
	return t / (w.slots[0].mask + 1)
}

// Top lists the loudest keys of the window's candidate table (a window
// created with CountMin.Candidates), loudest first, with their estimates
// over the window now and those less ErrorBound, as CountMin.Top does.
// Keys quieter than the window's total over its width are left out, and
// leave the table at the next turn of the period.
func (w *CountMinWindow) Top(n int) ([]HeavyHitter, error) {
	if !w.open.Load() {
		return nil, w.closedErr("top")
	}
	if w.top == nil {
		return nil, w.m.errorf("top", errNoCandidates)
	}
	hs := w.top.top(w, n, w.ErrorBound())
	if !w.open.Load() {
		return nil, w.closedErr("top")
	}
	return hs, nil
}

// check is the window's part of Check: its candidate table's.
func (w *CountMinWindow) check() error {
	if w.top != nil {
		if err := w.top.check(); err != nil {
			return w.m.errorf("check", err)
		}
	}
	return nil
}
