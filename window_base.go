package sketch

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// What both windows share, written once (the model: zstd's fastBase,
// embedded by each of its encoders): the handle, the control words and the
// window's shape, the constructor's tail, the calls that mean the same in
// both (Rotate, Freeze, Window, Current), the read protocol and the slots'
// states in Stats. Each window keeps its slots, its core and its own fast
// paths, which are measured and written by hand.

// windowBase is embedded first in CountMinWindow and BloomWindow.
type windowBase struct {
	Handle
	ctl windowCtl
	win Window
}

// start is the tail of both windows' constructors, once the handle's slots
// are laid out: a read-write handle joins the file's lock, whose liveness
// token names it in the slots it clears; then the control starts (with the
// clock, in clock mode) and the handle opens. It returns the lock (nil on
// a read-only handle). On error the mapping is closed.
func (b *windowBase) start(m *mapping, self served, win Window, clear func(s uint64)) (*fileLock, error) {
	b.init(m, self)
	b.win = win
	var lk *fileLock
	if !m.readOnly {
		if err := m.joinLock(); err != nil {
			m.close()
			return nil, err
		}
		lk = m.lk
	}
	region := m.entryBytes()
	b.ctl.init(unsafe.Pointer(&region[0]), win, lk, &m.res.clears, &b.open, b.sealed, clear)
	if b.ctl.clk != nil {
		// A handle dropped without Close stops its clock's timer. b is
		// the first field of the window, so it is where the window's
		// allocation starts.
		runtime.AddCleanup(b, (*windowClock).stop, b.ctl.clk)
	}
	b.open.Store(true)
	return lk, nil
}

// Rotate turns the period now, in every process: adds go to a new, empty
// period and the oldest one leaves the window. The new period's slot is
// made ready before the turn, and the slot of the period after it is
// cleared before Rotate returns, so adds never wait for a clear. With
// Period > 0 the clock keeps turning as well: each Rotate moves every
// later period one ahead.
func (b *windowBase) Rotate() error {
	if err := b.refuse("rotate"); err != nil {
		return err
	}
	if err := b.ctl.rotate(); err != nil {
		if !b.open.Load() {
			return b.closedErr("rotate")
		}
		return b.m.errorf("rotate", err)
	}
	return b.after("rotate")
}

// freeze is Freeze for both windows: it seals the file and fixes the
// window at the current period.
func (b *windowBase) freeze() error {
	if err := b.refuse("freeze"); err != nil {
		return err
	}
	if froze, err := b.ctl.freeze(); err != nil {
		return b.m.errorf("freeze", err)
	} else if !froze {
		return b.m.errorf("freeze", ErrFrozen)
	}
	b.froze.Store(true)
	return b.Sync()
}

// Current returns the period adds go to now (or, on a frozen window, the
// one it was frozen in): answers cover Current-Keep+1 to Current.
func (b *windowBase) Current() uint64 {
	if !b.open.Load() {
		return 0
	}
	return b.ctl.currentRead()
}

// closeWindow is both windows' Close: it stops the handle's clock, then
// closes the handle.
func (b *windowBase) closeWindow() error {
	if b.m != nil {
		b.ctl.stop()
	}
	return b.close()
}

// windowPeriods are the periods both windows' Stats report.
type windowPeriods struct {
	current, oldest, rotations uint64
	start                      time.Time // zero unless the clock alone turned
}

// periods reads the window's periods for Stats.
func (b *windowBase) periods() windowPeriods {
	c := &b.ctl
	p := c.currentRead()
	wp := windowPeriods{current: p, oldest: c.first(p), rotations: c.epoch()}
	if c.clk != nil && wp.rotations == 0 && p <= uint64(math.MaxInt64/c.period) {
		wp.start = time.Unix(0, int64(p)*c.period)
	}
	return wp
}

// slotState names slot s's state for Stats, with the period it holds or is
// cleared for: "current", "window", "next", "expired", "clearing" or
// "empty".
func (b *windowBase) slotState(s uint64, wp windowPeriods) (state string, period uint64) {
	st := decodeSlotWord(atomic.LoadUint64(b.ctl.word(s)))
	switch {
	case st.empty:
		return "empty", st.period
	case st.clearing:
		return "clearing", st.period
	case st.period == wp.current:
		return "current", st.period
	case st.period > wp.current:
		return "next", st.period
	case st.period >= wp.oldest:
		return "window", st.period
	}
	return "expired", st.period
}

// readWindow is the windows' read protocol. It calls read for each slot of
// p's window that holds its period, newest first (from p, or from p-1 with
// skipCurrent), between two loads of the slot's word, until read reports
// done. It reports false when the window turned under it: a word changed
// during its slot's read, or a word it skipped names a period past p+1;
// the older slots are then not read.
func (c *windowCtl) readWindow(p uint64, skipCurrent bool, read func(s uint64) (done bool)) bool {
	q, s, first := p, c.slotOf(p), c.first(p)
	if skipCurrent {
		if q == first {
			return true
		}
		q, s = q-1, c.prevSlot(s)
	}
	for {
		wp := c.word(s)
		wd := atomic.LoadUint64(wp)
		if wd == heldWord(q) {
			done := read(s)
			if atomic.LoadUint64(wp) != wd {
				return false
			}
			if done {
				return true
			}
		} else if wordAfter(wd, p+1) {
			return false
		}
		if q == first {
			return true
		}
		q, s = q-1, c.prevSlot(s)
	}
}

// readStable calls read with the current period until read reports that it
// read that period's window whole, and returns the period of the last
// call. The slot words only move forward, so a turn ends; after 9 tries
// the last read stands.
func (c *windowCtl) readStable(read func(p uint64) (whole bool)) uint64 {
	for try := 0; ; try++ {
		p := c.currentRead()
		if read(p) || try == 8 {
			return p
		}
		c.refresh()
	}
}

// check is the windows' part of Check: their slots have no redundancy to
// verify beyond the header.
func (b *windowBase) check() error { return nil }
