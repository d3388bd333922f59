package sketch

import (
	"fmt"
	"math"
	"runtime"
	"sync"
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
	b.ctl.init(m.entryBase(), win, lk, &m.res.clears, &b.open, b.sealed, clear)
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

// WindowStats is what every window's Stats reports of its periods, under
// the same names for every kind: CountMinWindowStats, BloomWindowStats and
// DistinctWindowStats embed it, so their JSON keeps these fields flat.
type WindowStats struct {
	// Period and Keep are the window's.
	Period time.Duration `json:"period"`
	Keep   int           `json:"keep"`
	// Current is the period adds go to now, and Oldest the first period
	// the window's answers (Estimate, Contains, Count) cover: they cover
	// Oldest to Current.
	Current uint64 `json:"current"`
	Oldest  uint64 `json:"oldest"`
	// Start is when the current period started by the clock (Period > 0
	// and no Rotate), else zero.
	Start time.Time `json:"start,omitempty"`
	// Rotations is how many times Rotate turned the period.
	Rotations uint64 `json:"rotations"`
	// Turns is how many times the period turned, by Rotate or by the
	// clock (see Window).
	Turns uint64 `json:"turns"`
}

// periods reads the window's periods for Stats.
func (b *windowBase) periods() WindowStats {
	ws := WindowStats{Period: b.win.Period, Keep: b.win.Keep}
	c := &b.ctl
	p := c.currentRead()
	ws.Current, ws.Oldest, ws.Rotations, ws.Turns = p, c.first(p), c.epoch(), c.turns()
	if c.clk != nil && ws.Rotations == 0 && p <= uint64(math.MaxInt64/c.period) {
		ws.Start = time.Unix(0, int64(p)*c.period)
	}
	return ws
}

// slotState names slot s's state for Stats, with the period it holds or is
// cleared for: "current", "window", "next", "expired", "clearing" or
// "empty".
func (b *windowBase) slotState(s uint64, wp WindowStats) (state string, period uint64) {
	st := decodeSlotWord(atomic.LoadUint64(b.ctl.word(s)))
	switch {
	case st.empty:
		return "empty", st.period
	case st.clearing:
		return "clearing", st.period
	case st.period == wp.Current:
		return "current", st.period
	case st.period > wp.Current:
		return "next", st.period
	case st.period >= wp.Oldest:
		return "window", st.period
	}
	return "expired", st.period
}

// check is the windows' part of Check: their slots have no redundancy to
// verify beyond the header.
func (b *windowBase) check() error { return nil }

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

// WindowPeriod is one period of a window with its structure's state in
// that period, as a window's ExportPeriods gives it: the bits of its
// filter (BloomWindow) or its Redis HyperLogLog (DistinctWindow).
type WindowPeriod struct {
	Period uint64 `json:"period"`
	Data   []byte `json:"data"`
}

// exportPeriods calls export on the slot of each period of the window at
// the current period that its slot holds, newest first, and keeps what
// it gives for the periods whose slot still held them after the call (a
// slot cleared for a later period meanwhile may have given part of it).
func (b *windowBase) exportPeriods(op string, export func(s uint64) ([]byte, error)) ([]WindowPeriod, error) {
	if !b.open.Load() {
		return nil, b.closedErr(op)
	}
	c := &b.ctl
	cur := c.currentRead()
	var out []WindowPeriod
	for i := range cur - c.first(cur) + 1 {
		p := cur - i
		s := c.slotOf(p)
		if !c.held(s, p) {
			continue
		}
		data, err := export(s)
		if err != nil {
			return nil, b.m.errorf(op, err)
		}
		if c.held(s, p) {
			out = append(out, WindowPeriod{Period: p, Data: data})
		}
	}
	return out, b.after(op)
}

// mergePeriod runs merge on the slot of period p, when p is a period of
// the window at the current period: its slot is made to hold p as an add
// makes it (cleared when it held an older period, which has left the
// window). A period that left the window, or has not begun, is not
// merged (false, nil). The slot of p is cleared for a later period only
// once the current period passed p+Keep, at least a period after the
// merge began; a merge that took longer, or a Rotate during it, may leave
// part of p's state in that later period, and is ErrTimeout.
func (b *windowBase) mergePeriod(op string, p uint64, merge func(s uint64) error) (bool, error) {
	if err := b.refuse(op); err != nil {
		return false, err
	}
	c := &b.ctl
	cur := c.current()
	if p > cur || p < c.first(cur) {
		return false, nil
	}
	if err := c.prepare(p, true); err == errStale {
		return false, nil
	} else if err != nil {
		return false, b.m.errorf(op, err)
	}
	s := c.slotOf(p)
	if err := merge(s); err != nil {
		return false, b.m.errorf(op, err)
	}
	if !c.held(s, p) {
		return true, b.m.errorf(op, fmt.Errorf("%w: the window turned past period %d during the merge, whose slot may keep part of it", ErrTimeout, p))
	}
	return true, b.after(op)
}

// A window's snapshot is the periods it covers, read as its answers read
// them (readWindow): each slot of a covered period between two loads of
// its word, newest first. When the window turns under the copy (a word
// changed during its slot's read, or one names a period past the next),
// the copy starts again at the new period, at most snapshotTries times.

// windowTurnError says that a window kept turning under its copy.
type windowTurnError struct {
	name  string
	tries int
}

func (e *windowTurnError) Error() string {
	return fmt.Sprintf("the window %s turned during each of %d copies (its period is shorter than a copy takes)", e.name, e.tries)
}

func (e *windowTurnError) Unwrap() error { return ErrTimeout }

// testHookSnapshotFold runs after each slot a snapshot folds in, so that
// a test can turn the window under the copy.
var testHookSnapshotFold func(s uint64)

// foldCovered calls fold for each slot that holds a period of the window
// at the current period, until one period's window was read whole, and
// returns its periods. reset undoes the folds of a try that was not.
func (b *windowBase) foldCovered(fold func(s uint64), reset func()) (Periods, error) {
	c := &b.ctl
	for try := 1; ; try++ {
		p := c.currentRead()
		whole := c.readWindow(p, false, func(s uint64) bool {
			fold(s)
			if testHookSnapshotFold != nil {
				testHookSnapshotFold(s)
			}
			return false
		})
		if whole {
			return b.covered(p), nil
		}
		if try == snapshotTries {
			return Periods{}, &windowTurnError{b.name(), try}
		}
		reset()
		c.refresh()
	}
}

// copyRegion copies the window into dst, a region of the same window, as
// a window frozen at the period it covers: the control words, the covered
// slots with their words, and nothing of the others (left empty: never
// used, all zero). slotOff is where slot 0 starts, slotBytes each slot's
// size, and slot(s) the start of slot s in the source. An arena's
// snapshot copies its windows so.
func (b *windowBase) copyRegion(dst []byte, slotOff, slotBytes uint64, slot func(s uint64) unsafe.Pointer) error {
	c := &b.ctl
	p, err := b.foldCovered(func(s uint64) {
		copyWords(dst[slotOff+s*slotBytes:][:slotBytes], slot(s))
		*wordAt(dst, uintptr(wcWords+8*s)) = atomic.LoadUint64(c.word(s))
	}, func() { clear(dst) })
	if err != nil {
		return err
	}
	*wordAt(dst, wcEpoch) = atomic.LoadUint64(c.epochWord())
	*wordAt(dst, wcLatest) = max(atomic.LoadUint64(c.latestWord()), p.Current)
	*wordAt(dst, wcFrozen) = p.Current + 1
	return nil
}

// clearMarks are the window slots that the handles sharing one lock token
// (the structures of one arena in this process) are clearing. A slot word
// records only the clearer's token id, so a handle that finds a clear under
// its own id cannot tell from the word whether a dead predecessor with that
// id left it or a sibling handle runs it now: the marks tell. A clear
// under the process's own id is dead only when no handle marks its slot;
// taking over a live one would clear the slot again after its clearer
// published it, losing the adds made in between.
type clearMarks struct {
	mu sync.Mutex
	n  map[*uint64]int // slot word: clears running on it
}

// win swaps slot word wp from old to clearing, this token's word for a
// clear, and marks the slot until done is called. With idle set it does
// so only while no handle of the token marks the slot: the test and the
// swap are one step, so a sibling's clear is never taken for dead.
func (m *clearMarks) win(wp *uint64, old, clearing uint64, idle bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if idle && m.n[wp] > 0 {
		return false
	}
	if !atomic.CompareAndSwapUint64(wp, old, clearing) {
		return false
	}
	if m.n == nil {
		m.n = make(map[*uint64]int)
	}
	m.n[wp]++
	return true
}

// done ends a clear that win marked.
func (m *clearMarks) done(wp *uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n[wp]--; m.n[wp] <= 0 {
		delete(m.n, wp)
	}
}

// busy reports whether a handle of the token is clearing slot word wp.
func (m *clearMarks) busy(wp *uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[wp] > 0
}
