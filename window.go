package sketch

// Shared time windows: the control part every windowed structure uses,
// whatever its slots hold. A window is Keep+1 slots of one structure and a
// few control words in the file; the current period picks the slot adds go
// to, reads sum the Keep slots of the periods the window covers, and the
// spare slot is cleared for the next period while the others serve. The
// Count-Min window (countmin_window.go) is one user; docs/DESIGN.md
// ("Windows") is the protocol in prose and docs/FORMAT.md the words.
//
// Control words, native-endian uint64s at the start of the region:
//
//	0   epoch: how many times Rotate turned the period
//	8   latest: the highest period any process has turned to (clock mode)
//	16  frozen: the period Freeze froze the window at, plus 1 (0: not frozen)
//	24  turns: how many periods the clock and Rotate turned (clock mode;
//	    below)
//	32  slot words, Keep+1 of them: what each slot holds
//
// A slot word is 0 for a slot never used (all its counters are zero),
// q+1 for a slot that holds period q, and
//
//	 63        62..16       15..0
//	+---+-----------------+----------+
//	| 1 |  q + 1 (47 bits) | token id |
//	+---+-----------------+----------+
//
// while the handle with that lock token clears it for period q.

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// Window says how a windowed structure turns its periods.
//
// With Period > 0 the current period follows the system clock: period
// number Unix nanoseconds / Period (plus the Rotate calls so far), the same
// number in every process on the host, so every process counts into the
// same slot without talking to the others. With Period 0 the period turns
// only when some process calls Rotate.
//
// Each window's Stats also count what never leaves: Adds (a distinct
// window's RegisterChanges) since the window was made, in every process, and
// Turns, how many times its period turned, by Rotate or by the clock. They
// only grow (a window has no Reset; a structure removed and made again in
// an arena starts from 0), so a monitor takes their rate across turns,
// where a window's Total drops as each period leaves it. Neither costs an
// add anything: the process that clears a slot for a new period first
// folds what the slot took into the slot's retired count (a clearer killed
// part way is finished by the next, without losing or counting twice what
// the slot held), and a clock turn is counted by the first process that
// adds in (or rotates to) a later period, periods nobody used counted with
// it. What they can miss: an add that lands in a slot being cleared (made
// at the very moment of a turn, by a process that had not seen it yet,
// which the window loses as well), the turns of a process killed between
// its turn and its count, and what processes of earlier builds cleared or
// turned. docs/FORMAT.md has the words.
type Window struct {
	// Period is the length of one period, at least a millisecond; 0 turns
	// periods only on Rotate.
	Period time.Duration `json:"period"`
	// Keep is how many periods an estimate covers, the current one
	// included: 1 to MaxWindowKeep. The file holds Keep+1 copies of the
	// structure, one of them being cleared for the next period.
	Keep int `json:"keep"`
}

const (
	// MaxWindowKeep is the largest Window.Keep.
	MaxWindowKeep = 256
	// minWindowPeriod keeps period numbers within a slot word's 47 bits
	// (a millisecond clock reaches 2^47 in the year 6429).
	minWindowPeriod = time.Millisecond

	wcEpoch   = 0  // control word: Rotate calls
	wcLatest  = 8  // control word: highest period turned to
	wcFrozen  = 16 // control word: frozen period + 1
	wcWords   = 32 // the slot words start here
	wsClear   = uint64(1) << 63
	wsIDBits  = 16
	wsIDMask  = 1<<wsIDBits - 1
	wsQMask   = 1<<47 - 1
	maxPeriod = wsQMask - 2 // the largest period number a slot word holds

	// slotBits is how many low bits of windowCtl.cache hold a slot index.
	slotBits = 9
)

// windowControlBytes is the size of the control words for keep, whole
// cache lines.
func windowControlBytes(keep int) uint64 {
	return roundUp(wcWords+8*uint64(keep+1), cacheLine)
}

// validate checks a window asked for by a caller.
func (w Window) validate() error {
	switch {
	case w.Keep < 1 || w.Keep > MaxWindowKeep:
		return fmt.Errorf("%w: window Keep %d is not in [1, %d]", ErrInvalidConfig, w.Keep, MaxWindowKeep)
	case w.Period < 0:
		return fmt.Errorf("%w: window Period %v is negative", ErrInvalidConfig, w.Period)
	case w.Period > 0 && w.Period < minWindowPeriod:
		return fmt.Errorf("%w: window Period %v is shorter than %v", ErrInvalidConfig, w.Period, minWindowPeriod)
	}
	return nil
}

// validateWindowParams checks a stored window's period (nanoseconds) and
// keep.
func validateWindowParams(period, keep uint64) error {
	switch {
	case keep < 1 || keep > MaxWindowKeep:
		return fmt.Errorf("window keep %d", keep)
	case period != 0 && (period < uint64(minWindowPeriod) || period > math.MaxInt64):
		return fmt.Errorf("window period %d ns", period)
	}
	return nil
}

// storedWindow is the window a kind's entry keeps, its period and keep in
// params[at] and params[at+1].
func storedWindow(e entry, at int) Window {
	return Window{Period: time.Duration(e.params[at]), Keep: int(e.params[at+1])}
}

// matchWindow is the check every window kind's spec makes of a stored
// entry when a Window was asked for: the stored window (params[at],
// params[at+1]) must be w (ErrIncompatible), and then inner decides.
func matchWindow(w Window, at int, inner func(entry) error) func(entry) error {
	return func(e entry) error {
		if have := storedWindow(e, at); have != w {
			return fmt.Errorf("%w: asked for a window of %v, the file has %v", ErrIncompatible, w, have)
		}
		return inner(e)
	}
}

func (w Window) String() string {
	if w.Period == 0 {
		return fmt.Sprintf("keep %d, turned by Rotate", w.Keep)
	}
	return fmt.Sprintf("keep %d x %v", w.Keep, w.Period)
}

func heldWord(q uint64) uint64 { return q + 1 }

func clearingWord(q uint64, id int) uint64 {
	return wsClear | (q+1)<<wsIDBits | uint64(id)&wsIDMask
}

// slotState decodes a slot word.
type slotState struct {
	period   uint64 // the period held or being cleared for
	empty    bool   // never used
	clearing bool
	id       int // the clearer's token id
}

func decodeSlotWord(w uint64) slotState {
	switch {
	case w == 0:
		return slotState{empty: true}
	case w&wsClear != 0:
		return slotState{period: (w>>wsIDBits)&wsQMask - 1, clearing: true, id: int(w & wsIDMask)}
	}
	return slotState{period: w - 1}
}

// wordAfter reports whether slot word w names a period after p: the
// caller's idea of the current period is out of date.
func wordAfter(w, p uint64) bool {
	s := decodeSlotWord(w)
	return !s.empty && s.period > p
}

// windowCtl is one handle's part in a window's control words: the period
// arithmetic, the election of who clears a slot, and the clock.
type windowCtl struct {
	ctl    unsafe.Pointer // the control words
	words  unsafe.Pointer // the slot words
	n      uint64         // slots: keep + 1
	keep   uint64
	period int64        // nanoseconds; 0: Rotate only
	clk    *windowClock // nil when period is 0
	// cache holds the last period seen by this handle, shifted left by
	// slotBits, and its slot: a division saved on every call.
	cache atomic.Uint64
	// pair holds, the same way, the last period this handle found ready
	// for adds with the previous period held in the slot before, in a
	// window of two periods: while that period is current, an add checks
	// its own slot's word before it and the other's only after it (see
	// CountMinWindow.addOne).
	pair atomic.Uint64
	// seen holds, the same way, the last period in which this handle read
	// both slots of a window of two periods holding their periods; while
	// that period is current, an estimate checks their words after the
	// read only (see CountMinWindow.estimateOne). pair implies seen; seen
	// says nothing of the clear ahead, so reads never set pair.
	seen atomic.Uint64
	// aheadFor is the next period whose slot this handle has started to
	// clear ahead (clock mode); past it, a writer starts the next one.
	aheadFor atomic.Uint64
	// marks are the slots being cleared by the handles that share this
	// handle's token (its own goroutines among them), so that they wait
	// for each other and never take a clear over.
	marks *clearMarks
	lk    *fileLock // nil on a read-only handle
	me    int       // this handle's token id
	// clear empties slot s for a new period; the caller owns the slot.
	clear func(s uint64)
	// folds are the slots' starts, where their fold words are, and
	// slotTotal what slot s holds now (below); nil folds count
	// nothing.
	folds     []unsafe.Pointer
	slotTotal func(s uint64) uint64
	open      *atomic.Bool
	sealed    *uint32       // the file's sealed word: a frozen file is not cleared
	done      chan struct{} // closed by Close: ahead clears stop waiting
	once      sync.Once
}

// errStale means the caller's period is out of date: a slot already serves
// a later one. errBusy means a live process clears the slot and the caller
// asked not to wait.
var (
	errStale = errors.New("period out of date")
	errBusy  = errors.New("slot is being cleared")
)

// windowWait bounds how long a writer waits for a live process that clears
// the slot of the current period.
var windowWait = 10 * time.Second

// clearPatience is how long a writer waits for a clearer before it asks
// whether the clearer is alive, as the lock's waiters do.
const clearPatience = 10 * time.Millisecond

// testHookWindowClear runs in the clearer after it won slot s for period
// p, before it clears.
var testHookWindowClear func(s, p uint64)

// testHookWindowWait runs in a writer that waits for the live clear of
// slot s for period p, before each sleep.
var testHookWindowWait func(s, p uint64)

// init points the control at the region's first bytes. lk is nil for a
// read-only handle; marks are shared by every handle that shares lk.
func (c *windowCtl) init(region unsafe.Pointer, w Window, lk *fileLock, marks *clearMarks, open *atomic.Bool, sealed *uint32, clear func(s uint64)) {
	c.ctl = region
	c.words = unsafe.Add(region, wcWords)
	c.keep = uint64(w.Keep)
	c.n = c.keep + 1
	c.period = int64(w.Period)
	c.lk, c.marks, c.open, c.sealed, c.clear = lk, marks, open, sealed, clear
	c.done = make(chan struct{})
	if lk != nil {
		c.me = tokenID(lk)
	}
	c.cache.Store(math.MaxUint64) // no period: the first call divides
	c.pair.Store(math.MaxUint64)
	c.seen.Store(math.MaxUint64)
	if c.period != 0 {
		c.clk = newWindowClock(c.period)
	} else {
		c.aheadFor.Store(math.MaxUint64) // Rotate clears ahead itself
	}
}

// stop ends the clock and the waits of ahead clears; safe twice.
func (c *windowCtl) stop() {
	c.once.Do(func() {
		close(c.done)
		if c.clk != nil {
			c.clk.stop()
		}
	})
}

func (c *windowCtl) word(s uint64) *uint64 { return (*uint64)(unsafe.Add(c.words, s*8)) }
func (c *windowCtl) epochWord() *uint64    { return (*uint64)(unsafe.Add(c.ctl, wcEpoch)) }
func (c *windowCtl) latestWord() *uint64   { return (*uint64)(unsafe.Add(c.ctl, wcLatest)) }
func (c *windowCtl) frozenWord() *uint64   { return (*uint64)(unsafe.Add(c.ctl, wcFrozen)) }
func (c *windowCtl) held(s, p uint64) bool { return atomic.LoadUint64(c.word(s)) == heldWord(p) }
func (c *windowCtl) prevSlot(s uint64) uint64 {
	if s == 0 {
		return c.n - 1
	}
	return s - 1
}

// slotOf returns the slot of period p, p mod (Keep+1). The cache is asked
// only for a period it can hold: a crafted file's period past maxPeriod
// would otherwise match a new handle's empty cache (all ones) and name a
// slot past the last.
func (c *windowCtl) slotOf(p uint64) uint64 {
	if v := c.cache.Load(); v>>slotBits == p && p <= maxPeriod {
		return v & (1<<slotBits - 1)
	}
	s := p % c.n
	if p <= maxPeriod {
		c.cache.Store(p<<slotBits | s)
	}
	return s
}

// first returns the oldest period of the window that ends at p.
func (c *windowCtl) first(p uint64) uint64 {
	if p < c.keep {
		return 0
	}
	return p - c.keep + 1
}

// current returns the period adds go to now: the clock's (plus the Rotate
// calls), or a later one some process has turned to already; with Period
// 0, the Rotate calls.
func (c *windowCtl) current() uint64 {
	e := atomic.LoadUint64(c.epochWord())
	if c.clk == nil {
		return e
	}
	return max(c.clk.cur.Load()+e, atomic.LoadUint64(c.latestWord()))
}

// currentRead is current for reads: a frozen window stays at the period
// it was frozen in. A file sealed without the window's own Freeze (an
// arena's, or another structure's in it) stays at the last period any
// process turned to: the clock must not empty a window nobody can write.
func (c *windowCtl) currentRead() uint64 {
	if f := atomic.LoadUint64(c.frozenWord()); f != 0 {
		return f - 1
	}
	if c.clk != nil && atomic.LoadUint32(c.sealed) != 0 {
		return atomic.LoadUint64(c.latestWord())
	}
	return c.current()
}

// refresh reads the clock now, for a caller that found its period out of
// date.
func (c *windowCtl) refresh() {
	if c.clk != nil {
		c.clk.refresh()
	}
}

// use returns the current period and its slot, ready for adds: the slot
// holds that period. Only read-write handles call it.
func (c *windowCtl) use() (p, s uint64, err error) {
	p = c.current()
	s = c.slotOf(p)
	if c.ready(s, p) {
		return p, s, nil
	}
	return c.useSlow(p)
}

// ready reports whether slot s holds period p and the clear ahead of the
// next period has started: use has nothing to do.
func (c *windowCtl) ready(s, p uint64) bool {
	return c.held(s, p) && c.aheadFor.Load() > p
}

// useSlow is use when the period turned (for this handle) or the slot is
// not ready: in clock mode it publishes the period in latest, so that
// processes whose clock has not ticked yet follow, and starts the clear of
// the next period's slot; then it prepares the slot.
func (c *windowCtl) useSlow(p uint64) (uint64, uint64, error) {
	for try := 0; ; try++ {
		if p > maxPeriod {
			// Neither the clock nor Rotate gets here (Rotate stops at
			// maxPeriod): the file's words were damaged. Refused before
			// the clear ahead of p+1, which would wrap.
			return 0, 0, fmt.Errorf("%w: the window's words name period %d, past the largest a window holds", ErrCorrupt, p)
		}
		if c.clk != nil {
			c.raiseLatest(p, 0)
			if a := c.aheadFor.Load(); a <= p && c.aheadFor.CompareAndSwap(a, p+1) {
				go c.ahead(p + 1)
			}
		}
		err := c.prepare(p, true)
		if err == nil {
			return p, c.slotOf(p), nil
		}
		if err != errStale || try == 64 {
			if err == errStale {
				err = fmt.Errorf("%w: the slot of period %d serves a later period, and the period stays %d", ErrCorrupt, p, p)
			}
			return 0, 0, err
		}
		c.refresh()
		if c.clk == nil {
			// Turned by Rotate alone: a slot serving a later period means
			// the epoch moved, or damaged words (ErrCorrupt above); a
			// later period than the epoch's would take adds no read
			// covers.
			p = c.current()
		} else {
			p = max(c.current(), p+1)
		}
	}
}

// casMax raises *w to at least v.
func casMax(w *uint64, v uint64) {
	for {
		old := atomic.LoadUint64(w)
		if old >= v || atomic.CompareAndSwapUint64(w, old, v) {
			return
		}
	}
}

// prepare makes slot(p) hold period p: nothing to do when it does; a slot
// never used is taken as it is; a slot of an expired period is cleared by
// the one process that wins it (a compare-and-swap of its word to
// "clearing for p by me"). A slot another live process clears is waited
// for (at most windowWait; errBusy at once when wait is false); one a dead
// process was clearing is taken over and cleared again. errStale means the
// slot serves a later period than p.
func (c *windowCtl) prepare(p uint64, wait bool) error {
	if p > maxPeriod {
		// Only damaged control words (the epoch, latest) reach it: no
		// clock nor Rotate count comes near.
		return fmt.Errorf("%w: period %d is past the largest a window holds", ErrCorrupt, p)
	}
	s := c.slotOf(p)
	wp := c.word(s)
	var waited, checked time.Duration
	backoff := 10 * time.Microsecond
	for {
		if !c.open.Load() {
			return ErrClosed
		}
		w := atomic.LoadUint64(wp)
		st := decodeSlotWord(w)
		switch {
		case w == heldWord(p):
			return nil
		case !st.empty && st.period > p:
			return errStale
		case st.clearing:
			if c.frozen() {
				// Nothing is cleared once frozen, so a dead clearer's
				// work is never taken over and a wait would only run out:
				// the add is refused now, as at an expired slot.
				return ErrFrozen
			}
			if c.clearerDead(wp, st.id, !wait || waited-checked >= clearPatience) {
				checked = waited
				c.takeOver(s, w, st.id, p)
				continue
			}
			if !wait {
				return errBusy
			}
			if waited >= windowWait {
				return &clearWaitError{slot: s, period: p, id: st.id, waited: waited}
			}
			if testHookWindowWait != nil {
				testHookWindowWait(s, p)
			}
			time.Sleep(backoff)
			waited += backoff
			backoff = min(2*backoff, time.Millisecond)
		case st.empty:
			// Never used, so already zero: no clear needed.
			if atomic.CompareAndSwapUint64(wp, w, heldWord(p)) {
				return nil
			}
		default: // an expired period: win the clear
			if c.frozen() {
				return ErrFrozen
			}
			if c.marks.win(wp, w, clearingWord(p, c.me), false) {
				if err := c.clearAndPublish(s, p, w); err != nil {
					return err
				}
			}
		}
	}
}

// clearWaitError is ErrTimeout from a writer that waited windowWait for a
// live clear: it says what it waited for, not the file-initialisation wait
// the sentinel's own text names.
type clearWaitError struct {
	slot, period uint64
	id           int
	waited       time.Duration
}

func (e *clearWaitError) Error() string {
	return fmt.Sprintf("timed out after %v waiting for slot %d to be cleared for period %d by token %d, which is alive", e.waited, e.slot, e.period, e.id)
}

func (e *clearWaitError) Unwrap() error { return ErrTimeout }

// clearerDead reports whether the clear of slot word wp under token id
// was left by a dead process. A clear under this handle's own id that no
// handle sharing its token is doing was left by a dead predecessor with
// the same id. Another id is asked about only when ask is set: a live
// clear usually ends sooner than the question is worth asking.
func (c *windowCtl) clearerDead(wp *uint64, id int, ask bool) bool {
	if id == c.me {
		return !c.marks.busy(wp)
	}
	return ask && !tokenAlive(c.lk, id)
}

// takeOver finishes the clear a dead process left in slot s (word w), for
// period p. The dead clearer's token is held while its word is taken, so
// that no new handle can take its id and start a clear of its own under the
// same word meanwhile (the lock's recovery does the same). A clear under
// this handle's own id is taken only while no handle sharing the token
// has started one since clearerDead looked.
func (c *windowCtl) takeOver(s, w uint64, id int, p uint64) {
	var held heldToken
	if id != c.me {
		var ok bool
		if held, ok = holdDeadToken(c.lk, id); !ok {
			return // alive after all
		}
	}
	took := c.marks.win(c.word(s), w, clearingWord(p, c.me), id == c.me)
	if id != c.me {
		releaseDeadToken(c.lk, held)
	}
	if took {
		c.clearAndPublish(s, p, w)
	}
}

// clearAndPublish clears slot s, which this handle won (and marked) for
// period p, and publishes it as holding p. A handle closed meanwhile
// clears the placeholder of its pages, and its publish finds no word to
// change: the file's slot is left "clearing" under a token nobody holds,
// for the next process to take over.
func (c *windowCtl) clearAndPublish(s, p, was uint64) error {
	defer c.marks.done(c.word(s))
	if testHookWindowClear != nil {
		testHookWindowClear(s, p)
	}
	// A window frozen since the clear was won keeps every slot: a Rotate
	// whose turn landed just after Freeze would otherwise clear, ahead, a
	// slot of a period the frozen window covers. The slot gets its word
	// back, and nothing is cleared.
	if c.frozen() {
		atomic.CompareAndSwapUint64(c.word(s), clearingWord(p, c.me), was)
		return ErrFrozen
	}
	c.fold(s, p)
	c.clear(s)
	atomic.CompareAndSwapUint64(c.word(s), clearingWord(p, c.me), heldWord(p))
	runtime.KeepAlive(c)
	return nil
}

// frozen reports whether the window was frozen or its file sealed: from
// then on no slot is cleared.
func (c *windowCtl) frozen() bool {
	return atomic.LoadUint64(c.frozenWord()) != 0 || atomic.LoadUint32(c.sealed) != 0
}

// ahead clears the slot of period next while the period before it serves,
// so that writers find it ready when the period turns. It waits until a
// quarter of the period has passed, so that processes whose clock ticked
// late have turned too, and leaves the slot to any other process already
// clearing it.
func (c *windowCtl) ahead(next uint64) {
	start := int64(c.clk.cur.Load()) * c.period
	if d := time.Duration(start + c.period/4 - time.Now().UnixNano()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
			return
		}
	}
	if c.lk == nil {
		return // a read-only handle clears nothing
	}
	if c.lk.rlock() != nil { // as rotate: not across a freeze
		return // a live writer holds the lock: writers prepare the slot
	}
	defer c.lk.runlock()
	if !c.open.Load() || c.frozen() || c.current() >= next {
		return // closed, frozen, or the period turned: writers prepare the slot
	}
	c.prepare(next, false)
}

// rotate turns the period: it makes the next period's slot ready, then
// moves the epoch (so writers never wait at the turn), then clears the slot
// of the period after, ahead.
func (c *windowCtl) rotate() error {
	// Under the file's read lock, which Freeze takes for writing: a Rotate
	// either turns the window and clears ahead before the freeze records
	// its period, or sees the freeze and does nothing. A wait for the
	// lock past its bound fails with ErrTimeout.
	if err := c.lk.rlock(); err != nil {
		return err
	}
	defer c.lk.runlock()
	if c.frozen() {
		return ErrFrozen
	}
	var p uint64
	for stuck := 0; ; {
		e := atomic.LoadUint64(c.epochWord())
		p = c.current()
		if e >= maxPeriod || p+1 > maxPeriod {
			return fmt.Errorf("%w: the window's epoch word says it turned %d times, past the most it can", ErrCorrupt, e)
		}
		err := c.prepare(p+1, true)
		if err == errStale {
			// Other processes turned the window past p+1 meanwhile (a
			// Rotate that waits for a clear may lose the turn many times
			// in a row): try again from where they left it. Only damaged
			// words name a later period while the period stays put.
			if c.current() != p {
				continue
			}
			if stuck++; stuck < 64 {
				continue
			}
			return fmt.Errorf("%w: the slot of period %d serves a later period, and the period stays %d", ErrCorrupt, p+1, p)
		}
		if err != nil {
			return err
		}
		if atomic.CompareAndSwapUint64(c.epochWord(), e, e+1) {
			break
		}
	}
	if c.clk != nil {
		// p+1, not current(): a handle whose timer is late took p from
		// latest, and its clock plus the new epoch may still say p.
		c.raiseLatest(p+1, 1)
	}
	err := c.prepare(c.current()+1, false)
	if err == errBusy || err == errStale {
		err = nil // another process clears it, or the window turned again
	}
	return err
}

// freeze records the period a frozen window stays at and seals the file,
// under the file's write lock, so that no Rotate or clear ahead is half
// way (they hold the read lock); it reports false when the file was
// sealed already, and fails with the lock's ErrTimeout.
func (c *windowCtl) freeze() (bool, error) {
	if err := c.lk.lock(); err != nil {
		return false, err
	}
	defer c.lk.unlock()
	atomic.CompareAndSwapUint64(c.frozenWord(), 0, c.current()+1)
	return atomic.CompareAndSwapUint32(c.sealed, 0, 1), nil
}

// epoch returns the number of Rotate calls.
func (c *windowCtl) epoch() uint64 { return atomic.LoadUint64(c.epochWord()) }

// windowClock is a handle's idea of the clock's period number, moved by a
// timer at each turn: reading the clock on every call would cost more than
// an add. A late timer is covered by the file's latest word: the first
// process that turns publishes the period, and the others follow it.
type windowClock struct {
	period  int64
	cur     atomic.Uint64
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

// newWindowClock starts the clock. It holds no reference to the handle,
// so a handle dropped without Close is still collected (its cleanup stops
// the timer).
func newWindowClock(period int64) *windowClock {
	k := &windowClock{period: period}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.timer = time.AfterFunc(k.untilNext(k.refresh()), k.tick)
	return k
}

// refresh reads the clock and moves cur forward to its period; it returns
// the clock's time. A clock stepped back does not move cur back.
func (k *windowClock) refresh() int64 {
	now := max(time.Now().UnixNano(), 0)
	casMax64(&k.cur, uint64(now/k.period))
	return now
}

func casMax64(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if old >= v || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// untilNext is how long from now until the next period starts.
func (k *windowClock) untilNext(now int64) time.Duration {
	return time.Duration(k.period - now%k.period)
}

func (k *windowClock) tick() {
	now := k.refresh()
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped {
		k.timer.Reset(k.untilNext(now))
	}
}

func (k *windowClock) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	k.timer.Stop()
}

// A window's adds since it was made, and its turns, counted without a cost
// to any add. A slot already knows what it took in its period (a Count-Min
// slot's row sum, a Bloom slot's stripe counts, a distinct slot's change
// count); what a clear would lose, the clearer first folds into the slot's
// retired count. A window's adds are then the sum, over its slots, of the
// retired count and what the slot holds now.
//
// The fold words of a slot are three words at foldOff in the slot, in its
// first line, which no add, clear or reset touches (a Count-Min slot's
// stripe 0 holds the stripe count and the reset generation before them, a
// Bloom slot's its added and seen counts, a distinct slot's its change
// count):
//
//	foldOff+0   commit: (q+1)<<1 | v, the clear to period q whose fold is
//	            done, and which of the two next words is current (0: none)
//	foldOff+8   retired count, version 0
//	foldOff+16  retired count, version 1
//
// Only the clearer of a slot, which owns it, folds: it writes the
// retired count that is not current, then the commit word, one atomic
// store. A clearer killed before the commit left the slot whole (it clears
// only after the commit) and its successor, clearing for the same period,
// folds again from the same numbers; one killed after the commit left a
// fold its successor sees and skips. So a kill neither loses nor counts
// twice what a slot held.

const (
	foldOff = 16

	// wcTurns is the control word that counts a clock window's turns
	// (see windowCtl.raiseLatest).
	wcTurns = 24
)

// testHookWindowFolded runs in a clearer of slot s for period p after its
// fold is committed and before the slot is cleared.
var testHookWindowFolded func(s, p uint64)

// setFolds gives the control each slot's start, where its fold words are,
// and what a slot holds now (total). Called before start.
func (c *windowCtl) setFolds(slots []unsafe.Pointer, total func(s uint64) uint64) {
	c.folds, c.slotTotal = slots, total
}

func (c *windowCtl) foldCommit(s uint64) *uint64 {
	return (*uint64)(unsafe.Add(c.folds[s], foldOff))
}

func (c *windowCtl) foldRetired(s, v uint64) *uint64 {
	return (*uint64)(unsafe.Add(c.folds[s], foldOff+8+8*(v&1)))
}

// fold adds what slot s holds to its retired count, once for the clear to
// period p: the caller owns the slot (its word says it clears it for p).
func (c *windowCtl) fold(s, p uint64) {
	if c.folds == nil {
		return
	}
	f := atomic.LoadUint64(c.foldCommit(s))
	if f>>1 == p+1 {
		return // a clearer of p killed after its fold committed
	}
	v := f & 1
	r := atomic.LoadUint64(c.foldRetired(s, v))
	atomic.StoreUint64(c.foldRetired(s, 1-v), addSat64(r, c.slotTotal(s)))
	atomic.StoreUint64(c.foldCommit(s), (p+1)<<1|(1-v))
	if testHookWindowFolded != nil {
		testHookWindowFolded(s, p)
	}
}

// addSat64 adds, saturating at the largest uint64.
func addSat64(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// adds returns the adds the window took since it was made: each slot's
// retired count and what it holds now. A slot is read between two loads
// of its word and its commit word; when either moved (the slot was won for
// a clear, or folded, meanwhile), it is read again. A slot whose clear has
// committed its fold counts its retired count alone: its clear may have
// begun.
func (c *windowCtl) adds() uint64 {
	if c.folds == nil {
		return 0
	}
	var sum uint64
	for s := range c.n {
		sum = addSat64(sum, c.slotAdds(s))
	}
	return sum
}

func (c *windowCtl) slotAdds(s uint64) uint64 {
	for try := 0; ; try++ {
		f := atomic.LoadUint64(c.foldCommit(s))
		w := atomic.LoadUint64(c.word(s))
		n := atomic.LoadUint64(c.foldRetired(s, f&1))
		if st := decodeSlotWord(w); !st.clearing || f>>1 != st.period+1 {
			n = addSat64(n, c.slotTotal(s))
		}
		if (atomic.LoadUint64(c.word(s)) == w && atomic.LoadUint64(c.foldCommit(s)) == f) || try == 16 {
			return n
		}
	}
}

// raiseLatest raises the latest word to period v (clock mode) and counts
// the periods it moved in the turns word. The first period a window
// takes (latest still 0) is no turn; countFirst is what counts then (a
// Rotate's own turn). A process killed between the two loses those turns
// from the count.
func (c *windowCtl) raiseLatest(v, countFirst uint64) {
	w := c.latestWord()
	for {
		old := atomic.LoadUint64(w)
		if old >= v {
			return
		}
		if atomic.CompareAndSwapUint64(w, old, v) {
			n := v - old
			if old == 0 {
				n = countFirst
			}
			if n != 0 {
				atomic.AddUint64((*uint64)(unsafe.Add(c.ctl, wcTurns)), n)
			}
			return
		}
	}
}

// turns returns how many times the window's period turned, by Rotate or
// by the clock: without a clock, the Rotate calls; with one, the turns
// counted in the file as processes met them.
func (c *windowCtl) turns() uint64 {
	if c.clk == nil {
		return c.epoch()
	}
	return atomic.LoadUint64((*uint64)(unsafe.Add(c.ctl, wcTurns)))
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

// plainClears is set on machines whose stores become visible in program
// order, where a slot is cleared with the core's plain stores.
const plainClears = runtime.GOARCH == "amd64" || runtime.GOARCH == "386" || runtime.GOARCH == "s390x"

// satAdd adds two estimates of at most maxCount, saturating at maxCount.
func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 || s > cells.MaxCount {
		return cells.MaxCount
	}
	return s
}
