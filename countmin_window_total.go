package sketch

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// totalsFresh is how long a Count-Min window's Total may serve from its
// cache before it reads the current period's slot again.
const totalsFresh = time.Millisecond

// windowTotals is a Count-Min window handle's cache for Total: the sum of
// one row of each slot in the window. A window's slots keep no add count
// (it would cost every add an atomic add more: 15% of a window Add,
// measured), so a total is read from the counters; every row sums to the
// slot's total, so one row serves. A slot two periods or more before the
// current one takes no more adds, and its sum is kept while it holds that
// period; the others are read again once totalsFresh has passed or the
// period has turned.
type windowTotals struct {
	// The last read, for the served path, which takes no lock: a torn
	// combination of these three only serves a total a read older or
	// newer.
	at     atomic.Int64 // nanoseconds since totalsEpoch, 0 for none
	period atomic.Uint64
	total  atomic.Uint64
	// bound is the error bound at total, and live says that the last
	// read is younger than totalsFresh by a timer's reckoning, so that
	// Allow serves the bound without reading the clock, which cost it
	// about 20 ns where an Add costs 50 (measured). A torn combination of
	// period, bound and live only serves a bound a read older or newer,
	// as the three above.
	bound atomic.Uint64
	live  atomic.Bool
	width int        // the slots' width
	mu    sync.Mutex // serialises reads of the counters, and guards expiry
	// expiry clears live totalsFresh after the last read (a late timer
	// serves the bound longer: up to the timer's delay more of the adds).
	expiry *time.Timer
	slots  []slotTotal
}

// totalsEpoch is what windowTotals.at counts from, on the monotonic clock.
var totalsEpoch = time.Now()

type slotTotal struct {
	word  uint64 // the slot's word when its sum was read
	sum   uint64
	final bool // no add can reach the slot while it holds that word
}

// Total returns everything counted in the periods the window covers: the
// sum of one row of each slot, read again at most every millisecond and
// whenever the period turns, so it trails the adds of the last
// millisecond (a CountMin's Total trails the adds running at that
// moment). Asked more often, it costs a clock read; otherwise a walk of
// one row of the newest two slots (Stats walks every row of every slot). After Close it returns ClosedEstimate.
func (w *CountMinWindow) Total() uint64 {
	if !w.open.Load() {
		return ClosedEstimate
	}
	t := w.windowTotal()
	if !w.open.Load() {
		return ClosedEstimate
	}
	return t
}

// ErrorBound returns the window's additive error bound at Confidence:
// ceil(e/Width · Total()), what an estimate over the window may exceed the
// true count by. A rate limiter compares an estimate with its limit plus
// this bound to refuse only keys surely over it. After Close it returns
// ClosedEstimate.
func (w *CountMinWindow) ErrorBound() uint64 {
	t := w.Total()
	if t == ClosedEstimate {
		return ClosedEstimate
	}
	return errorBound(t, int(w.slots[0].mask+1))
}

func (w *CountMinWindow) windowTotal() uint64 {
	tc := &w.totals
	c := &w.ctl
	p, now := c.currentRead(), int64(time.Since(totalsEpoch))+1
	if at := tc.at.Load(); at != 0 && p == tc.period.Load() && now-at < int64(totalsFresh) {
		return tc.total.Load()
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var total uint64
	p = c.readStable(func(p uint64) bool {
		total = 0
		return c.readWindow(p, false, func(s uint64) bool {
			word := atomic.LoadUint64(c.word(s))
			st := &tc.slots[s]
			if !st.final || st.word != word {
				st.word, st.sum = word, w.slots[s].rowTotal()
				// An add that read the period before it turned may
				// still land in the previous period's slot.
				st.final = decodeSlotWord(word).period+2 <= p
			}
			total = satAdd(total, st.sum)
			return false
		})
	})
	tc.total.Store(total)
	tc.bound.Store(errorBound(total, tc.width))
	tc.period.Store(p)
	tc.at.Store(now)
	tc.live.Store(true)
	if tc.expiry == nil {
		tc.expiry = time.AfterFunc(totalsFresh, tc.expire)
	} else {
		tc.expiry.Reset(totalsFresh)
	}
	return total
}

// expire is the expiry timer's: Allow's next Low reads the total again.
func (tc *windowTotals) expire() { tc.live.Store(false) }

// rowTotal returns the sum of row 0: everything counted in the slot, as
// every row sums to it (but for adds running now).
func (l *cmsLayout) rowTotal() uint64 {
	var sum uint64
	for i := uint64(0); i <= l.mask; i++ {
		sum = satAdd(sum, atomic.LoadUint64((*uint64)(unsafe.Add(l.cells, i*8))))
	}
	return min(sum, maxCount)
}
