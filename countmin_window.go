package sketch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// CountMinWindowConfig is a Count-Min window's config as an arena lists it
// (ArenaEntry.Config): its window and the shape of each period's sketch.
type CountMinWindowConfig struct {
	Window   Window         `json:"window"`
	CountMin CountMinConfig `json:"count_min"`
}

// countMinSlotBytes is one slot of a Count-Min window: a whole Count-Min
// region (kind 1's layout: its lanes' grids one after the other, then its
// fleet grid, when the window keeps a fleet part), rounded up to a cache
// line. A slot cleared for a new period is cleared whole, every lane and
// the fleet part included; lanes <= 1 is one grid.
func countMinSlotBytes(rows, width, lanes int, fleet bool) uint64 {
	return roundUp(countMinLanesBytes(rows, width, lanes, fleet), cacheLine)
}

// countMinWindowBytes is the region of a Count-Min window: the control
// words, then keep+1 slots.
func countMinWindowBytes(rows, width, keep, lanes int, fleet bool) uint64 {
	return windowControlBytes(keep) + uint64(keep+1)*countMinSlotBytes(rows, width, lanes, fleet)
}

// createSpec is spec for the constructors that
// always create: the zero Window, which only attaches, is refused.
func (wc CountMinWindowConfig) createSpec() (spec, error) {
	if err := wc.Window.validate(); err != nil {
		return spec{}, err
	}
	return wc.spec()
}

func (wc CountMinWindowConfig) spec() (spec, error) {
	w, cfg := wc.Window, wc.CountMin
	rows, width, explicit, err := cfg.shape()
	if err != nil {
		return spec{}, err
	}
	k, keyBytes, withCands, err := cfg.candidates()
	if err != nil {
		return spec{}, err
	}
	if err := cfg.checkLanes(); err != nil {
		return spec{}, err
	}
	if cfg.ConservativeUpdate {
		return spec{}, fmt.Errorf("%w: a window's adds are plain (conservative update is for a Count-Min sketch)", ErrInvalidConfig)
	}
	if w == (Window{}) {
		// The zero window attaches to whatever window is stored, and
		// cannot create (size 0).
		sp := spec{kind: kindCountMinWindow, seed: cfg.Seed}
		sp.match = func(e entry) error {
			if explicit && (e.params[0] != uint64(rows) || e.params[1] != uint64(width)) {
				return fmt.Errorf("%w: asked for %d x %d counters, the file has %d x %d", ErrIncompatible, rows, width, e.params[0], e.params[1])
			}
			if err := matchFleet(cfg.Fleet, e.params[6]); err != nil {
				return err
			}
			if err := matchWindowLanes(cfg.Lanes, e); err != nil {
				return err
			}
			return matchCandidates(e, 4, k, keyBytes, withCands)
		}
		return sp, nil
	}
	if err := w.validate(); err != nil {
		return spec{}, err
	}
	// At most 64 x 2^40 counters a slot and 257 slots: no overflow.
	size := withTable(countMinWindowBytes(rows, width, w.Keep, cfg.Lanes, cfg.Fleet), k, keyBytes)
	if size > maxFileSize-pageSize*4 {
		return spec{}, fmt.Errorf("%w: %d slots of %d x %d counters need %d bytes, more than a sketch file may have (%d)", ErrInvalidConfig, w.Keep+1, rows, width, size, uint64(maxFileSize))
	}
	sp := spec{
		kind:   kindCountMinWindow,
		size:   size,
		params: [8]uint64{uint64(rows), uint64(width), uint64(w.Period), uint64(w.Keep), uint64(k), uint64(keyBytes), flagWord(cfg.Fleet), lanesWord(cfg.Lanes, false)},
		seed:   cfg.Seed,
	}
	sp.match = matchWindow(w, 2, func(e entry) error {
		if explicit && (e.params[0] != uint64(rows) || e.params[1] != uint64(width)) {
			return fmt.Errorf("%w: asked for %d x %d counters, the file has %d x %d", ErrIncompatible, rows, width, e.params[0], e.params[1])
		}
		if err := matchFleet(cfg.Fleet, e.params[6]); err != nil {
			return err
		}
		if err := matchWindowLanes(cfg.Lanes, e); err != nil {
			return err
		}
		return matchCandidates(e, 4, k, keyBytes, withCands)
	})
	return sp, nil
}

// matchWindowLanes is an open's check of the lanes asked for against the
// stored ones (param word 7): 0 takes what the file has, as kind 1 does.
func matchWindowLanes(lanes int, e entry) error {
	if lanes != 0 && lanesWord(lanes, false) != e.params[7] {
		return fmt.Errorf("%w: asked for %d lanes, the file has %d", ErrIncompatible, lanes, max(e.params[7], 1))
	}
	return nil
}

func countMinWindowEntryConfig(e entry) any {
	return CountMinWindowConfig{
		Window:   storedWindow(e, 2),
		CountMin: CountMinConfig{Rows: int(e.params[0]), Width: int(e.params[1]), Candidates: int(e.params[4]), CandidateKeyBytes: int(e.params[5]), Fleet: e.params[6] == 1, Lanes: int(e.params[7])},
	}
}

func countMinWindowEntryParams(e entry) map[string]float64 {
	p := e.params
	m := map[string]float64{"rows": float64(p[0]), "width": float64(p[1]), "period_ns": float64(p[2]), "keep": float64(p[3])}
	if p[4] != 0 {
		m["candidates"], m["candidate_key_bytes"] = float64(p[4]), float64(p[5])
	}
	if p[6] != 0 {
		m["fleet"] = float64(p[6])
	}
	if p[7] != 0 {
		m["lanes"] = float64(p[7])
	}
	return m
}

func validateCountMinWindowEntry(e entry) error {
	rows, width, period, keep := e.params[0], e.params[1], e.params[2], e.params[3]
	switch {
	case rows < 1 || rows > maxRows:
		return fmt.Errorf("count-min window rows %d", rows)
	case width < 1 || width > maxWidth || width&(width-1) != 0:
		return fmt.Errorf("count-min window width %d", width)
	case e.params[6] > 1:
		return fmt.Errorf("count-min window fleet flag %d", e.params[6])
	case e.params[7] == 1 || e.params[7] > MaxLanes:
		return fmt.Errorf("count-min window lanes %d", e.params[7])
	}
	if err := validateWindowParams(period, keep); err != nil {
		return err
	}
	if err := validateCandidates(e.params[4], e.params[5]); err != nil {
		return err
	}
	if want := withTable(countMinWindowBytes(int(rows), int(width), int(keep), int(e.params[7]), e.params[6] == 1), int(e.params[4]), int(e.params[5])); e.size != want {
		return fmt.Errorf("count-min window region of %d bytes, %d slots of %d x %d (%d lanes, fleet part %d) with %d candidates need %d", e.size, keep+1, rows, width, max(e.params[7], 1), e.params[6], e.params[4], want)
	}
	return nil
}

// CountMinWindow is a Count-Min sketch over a sliding window of time, in a
// shared mapping: it answers how often a key was counted in the last Keep
// periods, the current one included, and forgets older periods by itself.
// Any number of goroutines and processes add and estimate at once,
// lock-free.
//
// The file holds Keep+1 Count-Min sketches (slots) and a few control
// words. Every process computes the same current period, from the clock
// or from the Rotate count stored in the file, so all of them add to that
// period's slot without talking to each other. Estimates sum the Keep
// slots of the window. The spare slot is cleared for the next period while
// the others serve, by the one process that wins it, so a clear never
// races the adds of its period; a process killed while it clears is taken
// over by the next one that needs the slot.
//
// An estimate covers the periods from Current-Keep+1 to Current and is
// never below what was counted in them: adds made before the current
// period turned, in any process, are in it. At a turn, a reader whose
// period is the old one while another process has moved to the new one,
// and clears the oldest slot of the old window, notices (the slot's word
// changed under it) and answers for the new window instead. An add made
// at the very moment of a turn by a process that had not seen it yet
// counts in the old period. Estimates exceed the truth by at most about
// ErrorRate times the window's total, with the sketch's confidence.
//
// Calls after Close return ErrClosed (Estimate returns ClosedEstimate), as
// CountMin's do.
type CountMinWindow struct {
	windowBase
	slots  []cells.CountMin
	core   cells.CountMinCore // serves batches and whole-slot walks
	totals windowTotals       // Total's cache
	top    *candidateTable    // nil without Candidates
	// lanes are the lanes this read-write handle adds to, the same
	// index in every slot, claimed in slot 0's stripes ("Lanes of a
	// Count-Min window", below); nil without lanes.
	lanes *handleLanes
}

// CountMinWindowStats describes a Count-Min window at one moment.
type CountMinWindowStats struct {
	// Rows and Width are each slot's shape.
	Rows  int `json:"rows"`
	Width int `json:"width"`
	// Fleet says that the window keeps a fleet part in each slot
	// (CountMinConfig.Fleet, SetFleetPeriod).
	Fleet bool `json:"fleet,omitempty"`
	// Lanes is the lanes each slot keeps (CountMinConfig.Lanes); 0 for
	// one grid. Lane is the one this handle adds to, in every slot, and
	// LaneOwned whether it claimed it (false: it shares a lane with
	// other handles, every lane having a live owner, or it is read-only).
	Lanes     int  `json:"lanes,omitempty"`
	Lane      int  `json:"lane,omitempty"`
	LaneOwned bool `json:"lane_owned,omitempty"`
	// WindowStats are the window's periods: estimates cover Oldest to
	// Current.
	WindowStats
	// Adds is everything counted since the window was made, in every
	// process (n for AddN), periods that left the window included: a
	// monotonic count (see Window), where Total drops as periods leave.
	Adds uint64 `json:"adds"`
	// Total is everything counted in the periods covered: the sum of
	// their slots' totals.
	Total uint64 `json:"total"`
	// ErrorBound is the absolute error bound at that total,
	// ceil(e/Width · Total); with a fleet part, at Total plus the covered
	// slots' fleet totals.
	ErrorBound uint64 `json:"error_bound"`
	// Slots describes each slot.
	Slots []CountMinWindowSlotStats `json:"slots"`
	// Candidates describes the candidate table, if the window keeps one.
	Candidates *CandidateStats `json:"candidates,omitempty"`
	FileStats
}

// CountMinWindowSlotStats describes one slot of a Count-Min window.
type CountMinWindowSlotStats struct {
	// State is "current" (adds go here), "window" (an earlier period
	// estimates cover), "next" (cleared ahead for the next period),
	// "expired" (an older period, to be cleared), "clearing" or "empty"
	// (never used).
	State string `json:"state"`
	// Period is the period the slot holds, or is cleared for.
	Period uint64 `json:"period"`
	// Total is the slot's largest row sum: everything counted in it. A
	// slot keeps no separate add count (CountMinStats.Adds), which would
	// cost every add an atomic add more and tell nothing the rows do not.
	Total uint64 `json:"total"`
}

// OpenCountMinWindow opens the Count-Min window at a place (see Place),
// creating it with cfg where there is none, as OpenCountMin does. A given
// cfg.Window must be the stored window (ErrIncompatible otherwise), and an
// explicit cfg.CountMin the stored shape; the zero cfg.CountMin creates
// the default shape and attaches to any, and the zero Window attaches to
// any window and cannot create. A window's Keep must be 1 to
// MaxWindowKeep and its Period 0 or at least a millisecond
// (ErrInvalidConfig).
func OpenCountMinWindow(at Place, cfg CountMinWindowConfig, opts ...Option) (*CountMinWindow, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newCountMinWindow)
}

// newCountMinWindow builds the handle for the window at m.ent. A
// read-write handle joins the file's lock, whose liveness token names it
// in the slots it clears.
func newCountMinWindow(m *mapping) (*CountMinWindow, error) {
	base := m.entryBase()
	rows, width := int(m.ent.params[0]), int(m.ent.params[1])
	win := storedWindow(m.ent, 2)
	w := &CountMinWindow{core: buildCores.CountMin}
	ctl := windowControlBytes(win.Keep)
	fleet := m.ent.params[6] == 1
	lanes := int(max(m.ent.params[7], 1))
	slot := countMinSlotBytes(rows, width, lanes, fleet)
	salt := rand.Uint64() // the handle's: picks its goroutines' stripes
	for i := range win.Keep + 1 {
		sb := unsafe.Add(base, ctl+uint64(i)*slot)
		w.slots = append(w.slots, cells.CountMin{
			Stripes:   sb,
			Cells:     unsafe.Add(sb, cells.StripesBytes),
			Seed:      m.lay.seed,
			Salt:      salt,
			Mask:      uint64(width) - 1,
			Rows:      rows,
			RowBytes:  uintptr(width * 8),
			Prefetch:  uint64(rows)*uint64(width)*8 > cells.L2Bytes(),
			Uncounted: true,
		})
		l := &w.slots[i]
		if lanes > 1 {
			l.Lanes, l.LaneBytes = lanes, uintptr(rows)*uintptr(width)*8
		}
		if fleet { // after every lane
			l.Fleet = unsafe.Add(l.Cells, uint64(lanes)*uint64(rows)*uint64(width)*8)
		}
	}
	w.totals.slots, w.totals.width = make([]slotTotal, len(w.slots)), width
	starts := make([]unsafe.Pointer, len(w.slots))
	for i := range w.slots {
		starts[i] = w.slots[i].Stripes
	}
	w.ctl.setFolds(starts, func(s uint64) uint64 { return rowTotal(&w.slots[s]) })
	lk, err := w.start(m, w, win, w.clearSlot)
	if err != nil {
		return nil, err
	}
	if lanes > 1 && lk != nil {
		w.lanes = newHandleLanes(&w.slots[0], lk, lanes, false, !m.noLane)
		w.pointLanes(w.lanes.first().lane)
	}
	if k := int(m.ent.params[4]); k != 0 {
		w.top = newCandidateTable(m.entryBytes(), countMinWindowBytes(rows, width, win.Keep, lanes, fleet), k, int(m.ent.params[5]), m)
	}
	return w, nil
}

// clearSlot empties slot s for a new period. The clearer owns the slot:
// writers and readers of the new period wait for the word that says the
// slot holds it. On strongly ordered machines the core's reset (plain
// stores) serves; elsewhere every counter is cleared with an atomic store,
// so that a reader that sees a cleared counter also sees the word that
// says the slot is being cleared, whatever the hardware reorders. Every
// lane is cleared; the lanes' owner words (slot 0's stripes, at
// laneOwnerOff) are the window's, and stay.
func (w *CountMinWindow) clearSlot(s uint64) {
	l := &w.slots[s]
	l.BumpGen(true)
	if l.Fleet != nil {
		atomic.StoreUint64(stripeWord(l, fleetTotalOff), 0)
	}
	n := uintptr(l.Rows) * uintptr(l.Mask+1)
	if plainClears {
		// The core's Reset clears every lane.
		w.core.Reset(l)
		if l.Fleet != nil { // the period's fleet counts leave with it
			clear(unsafe.Slice((*uint64)(l.Fleet), n))
		}
	} else {
		grids := uintptr(max(l.Lanes, 1)) // the lanes, one after the other
		if l.Fleet != nil {
			grids++ // the fleet grid follows the last
		}
		grid := unsafe.Slice((*uint64)(l.Cells), grids*n)
		for i := range grid {
			atomic.StoreUint64(&grid[i], 0)
		}
		for i := uintptr(0); i < cells.StripeCount; i++ {
			atomic.StoreUint64((*uint64)(unsafe.Add(l.Stripes, i*cells.StripeBytes)), 0)
		}
	}
	l.BumpGen(false)
}

// add counts n for the key hashing to (lo, hi) in the current period, p
// as the caller read it, and returns what addOne does. addOne calls it
// when its short way does not serve.
func (w *CountMinWindow) add(p, lo, hi, n uint64) (est, addP, winP uint64, err error) {
	c := &w.ctl
	s := c.slotOf(p)
	if !c.ready(s, p) {
		if p, s, err = c.useSlow(p); err != nil {
			return ClosedEstimate, 0, 0, err
		}
	}
	// The rest of the window first, two slots at a time, and the last of
	// them with a load of the current slot's counters: these loads' cache
	// misses overlap, where the atomic adds would wait for each. A slot
	// that holds no period of the window (one nobody added to) counts
	// nothing. Then the add, and a check that the slots read held their
	// periods throughout; when the period turned under the read, the
	// estimate is taken again by the walk that copes with it.
	cur := &w.slots[s]
	first := c.first(p)
	var others uint64
	held := true
	switch {
	case p == first:
	case p-1 == first: // one other slot, as in a window of Keep 2
		t := c.prevSlot(s)
		wt := c.word(t)
		was := atomic.LoadUint64(wt)
		switch {
		case was == heldWord(p-1) && n-1 < cells.FastAdd: // n is 1 to fastAdd
			// The usual case: one call reads the other slot, loads the
			// current slot's counters and adds. The next adds in this
			// period take addOne's short way.
			if p <= maxPeriod { // a crafted file's period could not be cached
				c.pair.Store(p<<slotBits | s)
				c.seen.Store(p<<slotBits | s)
			}
			var v uint64
			others, v = readThenAdd(&w.slots[t], cur, lo, hi, n)
			if atomic.LoadUint64(wt) == was && c.held(s, p) {
				return satAdd(others, v), p, p, nil
			}
			est, winP = w.estimate(lo, hi)
			return est, p, winP, nil
		case was == heldWord(p-1):
			others, _ = estimateTouch(&w.slots[t], cur, lo, hi)
			held = atomic.LoadUint64(wt) == was
		default:
			held = !wordAfter(was, p+1)
		}
	default:
		if others, held = w.sumHeld(p-1, c.prevSlot(s), first, lo, hi, cur); !held {
			others, held = w.othersWalk(p, s, lo, hi)
		}
	}
	var v uint64
	if n == 0 {
		v = cur.EstimateHashed(lo, hi)
	} else {
		v = cur.AddCells(lo, hi, n) // a slot keeps no add count (Stats sums its rows)
	}
	if held && c.held(s, p) {
		return satAdd(others, v), p, p, nil
	}
	est, winP = w.estimate(lo, hi)
	return est, p, winP, nil
}

// addOne is Add's and AddN's work once the key is hashed: add, and what
// afterUse does. It returns the estimate over the window, the period the
// add went to and the window's last period (later than the add's when the
// period turned during the call). It serves the usual case itself, in a
// window of two periods whose slots this handle found ready in this period
// before (the pair cache). It checks the current slot's word before the
// add, as every add does (it never writes into a slot that does not hold
// its period), and the other slot's only after it: a slot's word never
// returns to a period it left, so a word that held its period when the
// pair was cached and after the read held it throughout. add serves the
// rest, and caches the pair.
func (w *CountMinWindow) addOne(lo, hi, n uint64) (est, addP, winP uint64, err error) {
	c := &w.ctl
	p := c.current()
	if v := c.pair.Load(); v>>slotBits == p && p <= maxPeriod && n-1 < cells.FastAdd && c.held(v&(1<<slotBits-1), p) {
		s := v & (1<<slotBits - 1)
		t := c.prevSlot(s)
		others, cur := readThenAdd(&w.slots[t], &w.slots[s], lo, hi, n)
		est, addP, winP = satAdd(others, cur), p, p
		if !c.held(t, p-1) || !c.held(s, p) {
			est, winP = w.estimate(lo, hi) // the period turned under the add
		}
		if !w.open.Load() {
			return ClosedEstimate, 0, 0, w.closedErr("add")
		}
		return est, addP, winP, nil
	}
	est, addP, winP, err = w.add(p, lo, hi, n)
	est, err = w.afterUse(est, err, "add")
	return est, addP, winP, err
}

// othersWalk sums the key's estimates in the slots of periods p-1 down to
// the window's first (slot s holds p) that hold their period, slot by
// slot, each read between two loads of its word; ok is false when a word
// changed under the read, or names a period past p+1: the period turned.
func (w *CountMinWindow) othersWalk(p, s, lo, hi uint64) (est uint64, ok bool) {
	ok = w.ctl.readWindow(p, true, func(t uint64) bool {
		est = satAdd(est, w.slots[t].EstimateHashed(lo, hi))
		return false
	})
	if !ok {
		return 0, false
	}
	return est, true
}

// sumHeld sums the key's estimates in the slots of periods p down to first
// (slot s holds p), two slots at a time, each read between two loads of
// its word; ok is false when a slot does not hold its period, before or
// after the read. When cur is not nil, a last odd slot's read also loads
// cur's counters, which the caller adds to next (estimateTouch).
func (w *CountMinWindow) sumHeld(p, s, first, lo, hi uint64, cur *cells.CountMin) (est uint64, ok bool) {
	c := &w.ctl
	for {
		ws := c.word(s)
		if p == first {
			was := atomic.LoadUint64(ws)
			var v uint64
			if cur == nil {
				v = w.slots[s].EstimateHashed(lo, hi)
			} else {
				v, _ = estimateTouch(&w.slots[s], cur, lo, hi)
			}
			if was != heldWord(p) || atomic.LoadUint64(ws) != was {
				return 0, false
			}
			return satAdd(est, v), true
		}
		t := c.prevSlot(s)
		wt := c.word(t)
		wasS, wasT := atomic.LoadUint64(ws), atomic.LoadUint64(wt)
		vs, vt := estimatePair(&w.slots[s], &w.slots[t], lo, hi)
		if wasS != heldWord(p) || wasT != heldWord(p-1) || atomic.LoadUint64(ws) != wasS || atomic.LoadUint64(wt) != wasT {
			return 0, false
		}
		est = satAdd(est, satAdd(vs, vt))
		if p-1 == first {
			return est, true
		}
		p, s = p-2, c.prevSlot(t)
	}
}

// estimateOne is Estimate's work once the key is hashed: the estimate
// and the window's last period. It serves the usual case itself, in a
// window of two periods whose slots this handle saw holding their periods
// in this period before (the seen cache): it loads the slots' words after
// the read only, as addOne does for the other slot (a word that held its
// period then and after the read held it throughout). estimate serves the
// rest, and caches what it saw.
func (w *CountMinWindow) estimateOne(lo, hi uint64) (est, p uint64) {
	c := &w.ctl
	p = c.currentRead()
	if v := c.seen.Load(); v>>slotBits == p && p <= maxPeriod {
		s := v & (1<<slotBits - 1)
		t := c.prevSlot(s)
		vs, vt := estimatePair(&w.slots[s], &w.slots[t], lo, hi)
		if c.held(s, p) && c.held(t, p-1) && w.open.Load() {
			return satAdd(vs, vt), p
		}
	}
	est, p = w.estimate(lo, hi)
	if !w.open.Load() {
		return ClosedEstimate, p
	}
	return est, p
}

// estimate returns the key's estimate over the window, and the window's
// last period: the sum over the slots that hold a period of the window,
// each read between two loads of its word. When a word changed under the
// read, or names a period past the next, another process has turned the
// period: the read starts again for the new window (the file's words only
// move forward, so this ends; after a few tries the last sum is kept).
func (w *CountMinWindow) estimate(lo, hi uint64) (est, p uint64) {
	c := &w.ctl
	p = c.currentRead()
	s, first := c.slotOf(p), c.first(p)
	if p-1 == first { // two slots, as in a window of Keep 2: read straight
		t := c.prevSlot(s)
		ws, wt := c.word(s), c.word(t)
		wasS, wasT := atomic.LoadUint64(ws), atomic.LoadUint64(wt)
		if wasT == heldWord(p-1) {
			vs, vt := estimatePair(&w.slots[s], &w.slots[t], lo, hi)
			if wasS == heldWord(p) && atomic.LoadUint64(ws) == wasS && atomic.LoadUint64(wt) == wasT {
				if p <= maxPeriod {
					c.seen.Store(p<<slotBits | s) // the next reads take estimateOne's short way
				}
				return satAdd(vs, vt), p
			}
		} else if wasS == heldWord(p) && !wordAfter(wasT, p+1) {
			// The previous period's slot holds none of the window's
			// periods (nobody added in it): the current slot alone.
			v := w.slots[s].EstimateHashed(lo, hi)
			if atomic.LoadUint64(ws) == wasS {
				return v, p
			}
		}
	} else if est, ok := w.sumHeld(p, s, first, lo, hi, nil); ok {
		return est, p // the usual case: every slot holds its period
	}
	p = c.readStable(func(p uint64) bool {
		est = 0
		return c.readWindow(p, false, func(s uint64) bool {
			est = satAdd(est, w.slots[s].EstimateHashed(lo, hi))
			return false
		})
	})
	return est, p
}

// Add counts key once in the current period and returns its estimate over
// the window: the sum of its counts in the periods covered, so never below
// the true count of those periods. It returns ErrClosed after Close.
func (w *CountMinWindow) Add(key []byte) (uint64, error) {
	if w.readOnlyNow() {
		return ClosedEstimate, w.refuse("add")
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	est, addP, _, err := w.addOne(lo, hi, 1)
	if w.top != nil && err == nil {
		w.feed(lo, hi, unsafe.String(unsafe.SliceData(key), len(key)), est, 1, addP)
	}
	return est, err
}

// AddN counts key n times and returns its new estimate over the window.
// Counters saturate at 2^63, and so does the sum over the window.
func (w *CountMinWindow) AddN(key []byte, n uint64) (uint64, error) {
	if w.readOnlyNow() {
		return ClosedEstimate, w.refuse("add")
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	est, addP, _, err := w.addOne(lo, hi, n)
	if w.top != nil && err == nil && n != 0 {
		w.feed(lo, hi, unsafe.String(unsafe.SliceData(key), len(key)), est, n, addP)
	}
	return est, err
}

// AddString is Add for a string key.
func (w *CountMinWindow) AddString(key string) (uint64, error) {
	if w.readOnlyNow() {
		return ClosedEstimate, w.refuse("add")
	}
	lo, hi := cells.HashString(key, w.slots[0].Seed)
	est, addP, _, err := w.addOne(lo, hi, 1)
	if w.top != nil && err == nil {
		w.feed(lo, hi, key, est, 1, addP)
	}
	return est, err
}

// afterUse passes on an estimate, unless the call failed or Close ran
// meanwhile (then the estimate may have come from the placeholder that
// replaced the file's pages).
func (w *CountMinWindow) afterUse(est uint64, err error, op string) (uint64, error) {
	if !w.open.Load() {
		return ClosedEstimate, w.closedErr(op)
	}
	if err != nil {
		return ClosedEstimate, w.m.errorf(op, err)
	}
	return est, nil
}

// AddBatch counts each key once in the current period. When estimates is
// not nil it must have len(keys) elements and receives each key's
// estimate over the window after its add. Batches go to the core as
// CountMin.AddBatch's do.
func (w *CountMinWindow) AddBatch(keys [][]byte, estimates []uint64) error {
	if w.readOnlyNow() {
		return w.refuse("add")
	}
	if estimates != nil && len(estimates) != len(keys) {
		return w.m.errorf("add", fmt.Errorf("%w: %d estimates for %d keys", ErrInvalidArgument, len(estimates), len(keys)))
	}
	if w.top != nil && estimates == nil {
		// The table needs each key's estimate.
		var buf [cells.BatchChunk]uint64
		for base := 0; base < len(keys); base += cells.BatchChunk {
			chunk := keys[base:min(base+cells.BatchChunk, len(keys))]
			if err := w.addBatch(chunk, buf[:len(chunk)]); err != nil {
				return err
			}
		}
		return nil
	}
	return w.addBatch(keys, estimates)
}

// addBatch is AddBatch's work, and the batch's offers to the table.
func (w *CountMinWindow) addBatch(keys [][]byte, estimates []uint64) error {
	p, s, err := w.ctl.use()
	if err != nil {
		_, err = w.afterUse(0, err, "add")
		return err
	}
	if estimates == nil && w.lanes != nil {
		w.addBlind(&w.slots[s], keys)
	} else {
		w.batchCore(len(keys), &w.slots[s]).AddBatch(&w.slots[s], keys, 1, estimates)
	}
	if estimates != nil && !w.sumOthers(keys, estimates, p, s, heldWord(p)) {
		// The period turned under the batch: estimate it again whole.
		w.ctl.refresh()
		w.estimateBatch(keys, estimates)
	}
	if w.top != nil {
		for i, e := range estimates {
			if f, tp := w.top.floor(); sampled(e, 1) && (e > f || tp != p+1) {
				lo, hi := cells.Hash(keys[i], w.slots[0].Seed)
				w.feed(lo, hi, unsafe.String(unsafe.SliceData(keys[i]), len(keys[i])), e, 1, p)
			}
		}
	}
	return w.afterBatch(estimates, "add")
}

// sumOthers adds to est the keys' estimates in the window's slots other
// than the current one (s, of period p). It reports false when a slot's
// word changed under it.
func (w *CountMinWindow) sumOthers(keys [][]byte, est []uint64, p, s, cur uint64) bool {
	c := &w.ctl
	var buf [cells.BatchChunk]uint64
	held := c.readWindow(p, true, func(t uint64) bool {
		for base := 0; base < len(keys); base += cells.BatchChunk {
			chunk := keys[base:min(base+cells.BatchChunk, len(keys))]
			w.batchCore(len(chunk), &w.slots[t]).EstimateBatch(&w.slots[t], chunk, buf[:len(chunk)])
			for i, v := range buf[:len(chunk)] {
				est[base+i] = satAdd(est[base+i], v)
			}
		}
		return false
	})
	// The current slot still holds what it held when its part was read:
	// a slot nobody has added to in this period yet counts nothing.
	return held && atomic.LoadUint64(c.word(s)) == cur
}

// EstimateBatch stores each key's estimate over the window in estimates,
// which must have len(keys) elements. After Close it fills estimates with
// ClosedEstimate and returns ErrClosed.
func (w *CountMinWindow) EstimateBatch(keys [][]byte, estimates []uint64) error {
	if len(estimates) != len(keys) {
		return fmt.Errorf("sketch: estimate %s: %w: %d estimates for %d keys", w.name(), ErrInvalidArgument, len(estimates), len(keys))
	}
	if w.open.Load() {
		w.estimateBatch(keys, estimates)
	}
	return w.afterBatch(estimates, "estimate")
}

// estimateBatch is estimate for a batch: the whole window again when a
// slot's word changed under it.
func (w *CountMinWindow) estimateBatch(keys [][]byte, est []uint64) {
	c := &w.ctl
	if !w.slots[0].Prefetch && w.estimateHeldBatch(keys, est) {
		return
	}
	c.readStable(func(p uint64) bool {
		s := c.slotOf(p)
		clear(est)
		wd := atomic.LoadUint64(c.word(s))
		if wd == heldWord(p) {
			var buf [cells.BatchChunk]uint64
			for base := 0; base < len(keys); base += cells.BatchChunk {
				chunk := keys[base:min(base+cells.BatchChunk, len(keys))]
				w.batchCore(len(chunk), &w.slots[s]).EstimateBatch(&w.slots[s], chunk, buf[:len(chunk)])
				copy(est[base:], buf[:len(chunk)])
			}
		} else if wordAfter(wd, p+1) {
			return false
		}
		return w.sumOthers(keys, est, p, s, wd)
	})
}

// estimateHeldBatch is estimateBatch on a grid in the caches, where no
// core fetches ahead: each key is hashed once and read in every slot of
// the window, two slots at a time, as Estimate does, rather than hashed
// again for each slot's batch. It reports false, leaving est to the
// caller, when some slot does not hold its period.
func (w *CountMinWindow) estimateHeldBatch(keys [][]byte, est []uint64) bool {
	c := &w.ctl
	p := c.currentRead()
	s, first := c.slotOf(p), c.first(p)
	seed := w.slots[0].Seed
	for i, k := range keys {
		lo, hi := cells.Hash(k, seed)
		v, ok := w.sumHeld(p, s, first, lo, hi, nil)
		if !ok {
			return false
		}
		est[i] = v
	}
	return true
}

// afterBatch is afterUse for a batch's estimates.
func (w *CountMinWindow) afterBatch(estimates []uint64, op string) error {
	if !w.open.Load() {
		for i := range estimates {
			estimates[i] = ClosedEstimate
		}
		return w.closedErr(op)
	}
	return nil
}

// batchCore picks the core for a batch of n keys on slot l, as
// CountMin.batchCore does.
func (w *CountMinWindow) batchCore(n int, l *cells.CountMin) cells.CountMinCore {
	if n < cells.CountMinMinBatch || !l.Prefetch {
		return cells.CountMinGo{}
	}
	return w.core
}

// Estimate returns the key's estimate over the window: the sum of its
// counts in the last Keep periods, never below the true count. After
// Close it returns ClosedEstimate.
func (w *CountMinWindow) Estimate(key []byte) uint64 {
	if !w.open.Load() {
		return ClosedEstimate
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	est, _ := w.estimateOne(lo, hi)
	return est
}

// EstimateString is Estimate for a string key.
func (w *CountMinWindow) EstimateString(key string) uint64 {
	if !w.open.Load() {
		return ClosedEstimate
	}
	lo, hi := cells.HashString(key, w.slots[0].Seed)
	est, _ := w.estimateOne(lo, hi)
	return est
}

// Stats reports the window's periods, each slot's state and total, and the
// total and error bound over the periods covered. It walks every slot.
func (w *CountMinWindow) Stats() CountMinWindowStats {
	s := CountMinWindowStats{
		Rows:        w.Config().CountMin.Rows,
		Width:       w.Config().CountMin.Width,
		Fleet:       w.Config().CountMin.Fleet,
		Lanes:       w.Config().CountMin.Lanes,
		Lane:        w.lanes.first().lane,
		LaneOwned:   w.lanes.first().tag != 0,
		WindowStats: WindowStats{Period: w.win.Period, Keep: w.win.Keep},
		FileStats:   FileStats{ReadOnly: w.ReadOnly()},
	}
	if w.m != nil {
		s.Bytes = w.m.ownBytes()
	}
	if !w.open.Load() {
		s.Closed, s.Total, s.ErrorBound = true, ClosedEstimate, ClosedEstimate
		return s
	}
	wp := w.periods()
	s.WindowStats, s.Adds = wp, w.ctl.adds()
	sums := make([]uint64, s.Rows)
	var fleet uint64 // the covered slots' fleet totals
	for i := range w.slots {
		var sl CountMinWindowSlotStats
		sl.State, sl.Period = w.slotState(uint64(i), wp)
		w.core.RowSums(&w.slots[i], sums)
		for _, v := range sums {
			sl.Total = max(sl.Total, v)
		}
		if sl.State == "current" || sl.State == "window" {
			s.Total = satAdd(s.Total, min(sl.Total, cells.MaxCount))
			fleet = satAdd(fleet, storedFleetTotal(&w.slots[i]))
		}
		s.Slots = append(s.Slots, sl)
	}
	s.ErrorBound = errorBound(satAdd(s.Total, fleet), s.Width)
	s.Candidates = w.top.stats(w, s.ErrorBound)
	s.Frozen = atomic.LoadUint32(w.sealed) != 0
	if !w.open.Load() {
		return CountMinWindowStats{Rows: s.Rows, Width: s.Width, Fleet: s.Fleet, Lanes: s.Lanes, Lane: s.Lane, LaneOwned: s.LaneOwned, WindowStats: WindowStats{Period: s.Period, Keep: s.Keep},
			FileStats: FileStats{Bytes: s.Bytes, ReadOnly: w.ReadOnly(), Closed: true}, Total: ClosedEstimate, ErrorBound: ClosedEstimate}
	}
	return s
}

// Close stops the handle's clock and releases the descriptor, the lock's
// liveness token and the file's pages; safe twice and while other
// goroutines use the handle, as CountMin.Close is. A slot this handle was
// clearing is finished by the next process that needs it.
func (w *CountMinWindow) Close() error {
	if w == nil {
		return nil
	}
	if w.open.Load() && w.lanes != nil {
		w.lanes.release(&w.slots[0])
	}
	return w.closeWindow()
}

func (w *CountMinWindow) describe() (string, string) {
	rows, width := 0, uint64(0)
	if len(w.slots) > 0 {
		rows, width = w.slots[0].Rows, w.slots[0].Mask+1
	}
	if w.top != nil {
		return "CountMinWindow", fmt.Sprintf("%d x %d, %v, %d candidates", rows, width, w.win, w.top.k)
	}
	return "CountMinWindow", fmt.Sprintf("%d x %d, %v", rows, width, w.win)
}

func (w *CountMinWindow) statsOf() any { return w.Stats() }

// Config returns the config stored in the file: the window (Period and Keep) and each slot's shape (Rows and Width), without the seed
// (a secret: see Seed). Opening the same place with it attaches; creating
// another structure with it (and the same seed) makes one that merges with
// this one. A zero handle returns the zero config.
func (w *CountMinWindow) Config() CountMinWindowConfig {
	if w.m == nil {
		return CountMinWindowConfig{}
	}
	return countMinWindowEntryConfig(w.m.ent).(CountMinWindowConfig)
}

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
	return satAdd(t, w.totals.fleet.Load()) / (w.slots[0].Mask + 1)
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

// TopCovered is Top, and says which periods its estimates covered: every
// estimate listed is over the window that ends at the returned period
// (each never below what those periods counted for its key). When the
// period turns while the table is read, the read starts again at the new
// one: ErrTimeout after topTries tries, from a window whose period is
// shorter than a read of the table takes.
func (w *CountMinWindow) TopCovered(n int) ([]HeavyHitter, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("top")
	}
	if w.top == nil {
		return nil, Periods{}, w.m.errorf("top", errNoCandidates)
	}
	for range topTries {
		h := &periodHost{w: w, p: w.ctl.currentRead()}
		hs := w.top.top(h, n, w.ErrorBound())
		if !w.open.Load() {
			return nil, Periods{}, w.closedErr("top")
		}
		if !h.turned {
			return hs, w.covered(h.p), nil
		}
	}
	return nil, Periods{}, w.m.errorf("top", fmt.Errorf("%w: the period turned during each of %d reads of the candidate table", ErrTimeout, topTries))
}

// topTries is how many reads of the table TopCovered makes before it
// gives up on a window turning under them.
const topTries = 3

// periodHost is the window as TopCovered's table reads it: the estimates
// over the window ending at period p, noting whether one was over
// another (the period turned).
type periodHost struct {
	w      *CountMinWindow
	p      uint64
	turned bool
}

func (h *periodHost) recount(lo, hi uint64) uint64 {
	est, p := h.w.estimateOne(lo, hi)
	if p != h.p {
		h.turned = true
	}
	return est
}

func (h *periodHost) noiseFloor() uint64 { return h.w.noiseFloor() }

// check is the window's part of Check: its candidate table's.
func (w *CountMinWindow) check() error {
	if w.top != nil {
		if err := w.top.check(); err != nil {
			return w.m.errorf("check", err)
		}
	}
	return nil
}

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
	fleet  atomic.Uint64 // the covered slots' fleet totals, with a fleet part
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
//
// With a fleet part it is the bound at Total() plus the covered slots'
// fleet totals as last stored (SetFleetPeriod), since every estimate
// counts both; read with the total, as often.
func (w *CountMinWindow) ErrorBound() uint64 {
	if !w.open.Load() {
		return ClosedEstimate
	}
	w.windowTotal()
	b := w.totals.bound.Load()
	if !w.open.Load() {
		return ClosedEstimate
	}
	return b
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
	var total, fleet uint64
	p = c.readStable(func(p uint64) bool {
		total, fleet = 0, 0
		return c.readWindow(p, false, func(s uint64) bool {
			fleet = satAdd(fleet, storedFleetTotal(&w.slots[s]))
			word := atomic.LoadUint64(c.word(s))
			st := &tc.slots[s]
			if !st.final || st.word != word {
				st.word, st.sum = word, rowTotal(&w.slots[s])
				// An add that read the period before it turned may
				// still land in the previous period's slot.
				st.final = decodeSlotWord(word).period+2 <= p
			}
			total = satAdd(total, st.sum)
			return false
		})
	})
	tc.total.Store(total)
	tc.fleet.Store(fleet)
	tc.bound.Store(errorBound(satAdd(total, fleet), tc.width))
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

// rowTotal returns the sum of row 0 (of every lane): everything counted
// in the slot, as every row sums to it (but for adds running now).
func rowTotal(l *cells.CountMin) uint64 {
	var sum uint64
	for j := range uintptr(max(l.Lanes, 1)) {
		row := unsafe.Add(l.Cells, j*l.LaneBytes)
		for i := uint64(0); i <= l.Mask; i++ {
			sum = satAdd(sum, atomic.LoadUint64((*uint64)(unsafe.Add(row, i*8))))
		}
	}
	return min(sum, cells.MaxCount)
}

// EstimateCovered is Estimate, and says which periods the estimate
// covered: it is never below what those periods counted for key. After
// Close it returns ClosedEstimate and the zero Periods.
func (w *CountMinWindow) EstimateCovered(key []byte) (uint64, Periods) {
	if !w.open.Load() {
		return ClosedEstimate, Periods{}
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	est, p := w.estimateOne(lo, hi)
	if !w.open.Load() {
		return ClosedEstimate, Periods{}
	}
	return est, w.covered(p)
}

// Snapshot is SnapshotCovered without the periods.
func (w *CountMinWindow) Snapshot(at Place, opts ...Option) (*CountMin, error) {
	c, _, err := w.SnapshotCovered(at, opts...)
	return c, err
}

// SnapshotCovered copies the periods the window covers, while any process
// keeps adding, into ONE Count-Min sketch at a place, whose counters are
// the sums of the covered periods' counters, and returns it frozen and
// read-only with the periods it covers. It has the window's shape (Rows,
// Width) and seed, so that it merges (CountMin.Merge) with the snapshots
// of other hosts' windows and with plain sketches of that shape; its
// Total is what the covered periods counted. A plain sketch, not a
// window: it is for merging and shipping, and answers as the window did
// for those periods, however late it is asked.
//
// Every estimate of the copy is at least what the adds that returned, in
// any process, before the call counted for its key in the periods it
// covers, which are the window's when the copy ran: when the window turns
// during the copy, the copy starts again at the new period (ErrTimeout,
// after several tries, from a window whose period is shorter than a copy
// takes). The places and options are as CountMin.Snapshot's. A window
// with a fleet part makes a copy with one, the covered slots' fleet parts
// summed as their own counters are, so that the copy answers at least as
// the window did, and merges (which add own counters only) leave the
// fleet's counts out.
func (w *CountMinWindow) SnapshotCovered(at Place, opts ...Option) (*CountMin, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("snapshot")
	}
	rows, width := int(w.m.ent.params[0]), w.m.ent.params[1]
	k, keyBytes := int(w.m.ent.params[4]), int(w.m.ent.params[5])
	fleet := w.slots[0].Fleet != nil
	sp, err := CountMinConfig{Rows: rows, Width: int(width), Candidates: k, CandidateKeyBytes: keyBytes, Fleet: fleet}.spec()
	if err != nil {
		return nil, Periods{}, w.m.errorf("snapshot", err)
	}
	sp.seed = w.m.lay.seed
	var periods Periods
	sp.fill = func(data []byte, lay layout) error {
		d := lay.entries[0]
		region := data[d.off : d.off+d.size]
		if periods, err = w.sumCovered(region); err != nil || w.top == nil {
			return err
		}
		// The window's candidates, counted in the copy: the copy lists
		// the loudest keys of the periods it covers.
		base := unsafe.Pointer(&region[0])
		l := cells.CountMin{Stripes: base, Cells: unsafe.Add(base, cells.StripesBytes), Seed: w.m.lay.seed, Mask: width - 1, Rows: rows, RowBytes: uintptr(width * 8)}
		if fleet {
			l.Fleet = unsafe.Add(l.Cells, uint64(rows)*width*8)
		}
		tableAt(region, countMinGridsBytes(rows, int(width), fleet), k, keyBytes, w.m.lay.seed).place(layoutHost{&l}, w.top.collect())
		return nil
	}
	m, err := createSnapshot(w.name(), at, sp, opts)
	c, err := finishSnapshot(&w.Handle, m, err, newCountMin)
	if err != nil {
		return nil, Periods{}, err
	}
	return c, periods, nil
}

// sumCovered adds the covered slots' counters into dst, a Count-Min
// region of the slots' shape, saturating, and sets its add count to the
// smallest row sum: what every row holds, so that the copy's Total is
// the periods' and its Check finds its add count below no row.
func (w *CountMinWindow) sumCovered(dst []byte) (Periods, error) {
	grid := unsafe.Add(unsafe.Pointer(&dst[0]), cells.StripesBytes)
	l0 := &w.slots[0]
	n := uintptr(l0.Rows) * uintptr(l0.Mask+1)
	add := func(into, src unsafe.Pointer) {
		for i := uintptr(0); i < n; i++ {
			if v := atomic.LoadUint64((*uint64)(unsafe.Add(src, i*8))); v != 0 {
				d := (*uint64)(unsafe.Add(into, i*8))
				*d = satAdd(*d, min(v, cells.MaxCount))
			}
		}
	}
	p, err := w.foldCovered(func(s uint64) {
		l := &w.slots[s]
		for j := range uintptr(max(l.Lanes, 1)) { // every lane into the copy's one grid
			add(grid, unsafe.Add(l.Cells, j*l.LaneBytes))
		}
		if l.Fleet != nil { // into the copy's fleet part, after its grid
			add(unsafe.Add(grid, n*8), l.Fleet)
		}
	}, func() { clear(dst) })
	if err != nil {
		return p, err
	}
	l := cells.CountMin{Stripes: unsafe.Pointer(&dst[0]), Cells: grid, Mask: l0.Mask, Rows: l0.Rows, RowBytes: l0.RowBytes}
	sums := make([]uint64, l.Rows)
	cells.CountMinGo{}.RowSums(&l, sums)
	least := sums[0]
	for _, v := range sums {
		least = min(least, v)
	}
	*wordAt(dst, 0) = min(least, cells.MaxCount)
	// A window records no weights: the copy's says its rows may differ
	// by as much as they do (adds torn or running during the copy), so
	// that its Check does not take that for damage.
	*wordAt(dst, weightOff) = copyWeight(1, slices.Max(sums)-least)
	if l0.Fleet != nil { // the copy's fleet total: its summed fleet grid's
		l.Cells = unsafe.Add(grid, n*8)
		cells.CountMinGo{}.RowSums(&l, sums)
		*wordAt(dst, fleetTotalOff) = min(slices.Max(sums), cells.MaxCount)
	}
	return p, nil
}

// copyRegion is windowBase.copyRegion for a Count-Min window.
func (w *CountMinWindow) copyRegion(dst []byte) error {
	rows, width, lanes, fleet := w.slots[0].Rows, int(w.slots[0].Mask+1), w.slots[0].Lanes, w.slots[0].Fleet != nil
	if err := w.windowBase.copyRegion(dst, windowControlBytes(w.win.Keep), countMinSlotBytes(rows, width, lanes, fleet),
		func(s uint64) unsafe.Pointer { return w.slots[s].Stripes }); err != nil {
		return err
	}
	if w.top != nil {
		w.top.copyTo(dst, countMinWindowBytes(rows, width, w.win.Keep, lanes, fleet))
	}
	return nil
}

// The fleet part of a Count-Min window (CountMinConfig.Fleet): each slot
// keeps, after its own counters, a fleet grid of the same shape that
// every read of the slot adds to them (an estimate sums, over the slots
// of the window, the row minimum of own + fleet), that no add writes, and
// that the clear of the slot for a new period clears with it. A fleet
// agent syncs it period by period, as CountMin.ExportCounts and
// SetFleetCounts do for a sketch.

// ExportPeriods returns the own counters of each period the window holds,
// newest first: the periods of the window at the current period
// (Current-Keep+1 to Current) whose slot holds them, each as
// CountMin.ExportCounts encodes a grid (rows x width uint64
// little-endian, row-major, each counter read once, atomically), without
// the fleet part. A period whose slot was cleared for a later one during
// the export is left out. A closed handle is ErrClosed.
func (w *CountMinWindow) ExportPeriods() ([]WindowPeriod, error) {
	return w.exportPeriods("export", func(s uint64) ([]byte, error) {
		return exportCounts(&w.slots[s]), nil // the lanes summed
	})
}

// SetFleetPeriod stores counts (ExportPeriods' encoding of one period:
// the sum of the other hosts' counters of period p) into the fleet part of
// period p's slot, with an atomic store of each absolute value, when p is
// a period of the window now (Current-Keep+1 to Current): while p stays
// in the window every estimate, and Allow, counts each of the slot's
// cells as own + fleet, so that a key is refused once the fleet's count
// plus this host's reaches the limit. Stores are idempotent, as
// CountMin.SetFleetCounts's are. A period that left the window or has not
// begun is not stored (false). The slot of a past period this window
// never used is claimed for it, as an add claims the current one. A
// window without a fleet part, or counts of another length, is
// ErrIncompatible; a store during which the window turned past p+Keep (a
// Rotate, or a store longer than a period) is ErrTimeout, as the next
// period's slot may then hold part of p's counts until the next store; a
// read-only, frozen or closed handle stores nothing.
func (w *CountMinWindow) SetFleetPeriod(p uint64, counts []byte) (bool, error) {
	if w.slots == nil {
		return false, w.refuse("set fleet period")
	}
	l0 := &w.slots[0]
	if l0.Fleet == nil || uint64(len(counts)) != uint64(l0.Rows)*(l0.Mask+1)*8 {
		if err := w.refuse("set fleet period"); err != nil {
			return false, err
		}
		return false, w.m.errorf("set fleet period", storeFleet(l0, counts))
	}
	return w.mergePeriod("set fleet period", p, func(s uint64) error {
		return storeFleet(&w.slots[s], counts)
	})
}

// Lanes of a Count-Min window (CountMinConfig.Lanes; docs/DESIGN.md,
// "Lanes"): every slot keeps the lanes, and a handle adds to the same
// lane index in each. Its claim is made once for the window, in slot 0's
// stripes (laneOwner of &w.slots[0]), whose owner words a slot's clear
// leaves alone (it zeroes each stripe's add count word, and the window's
// words of stripe 0 sit below laneOwnerOff). Every read of a slot sums
// its lanes: the cells functions do, and the pair reads below take them
// when the slots have lanes.

// pointLanes points every slot's adds at lane j.
func (w *CountMinWindow) pointLanes(j int) {
	for i := range w.slots {
		w.slots[i].Lane = laneGrid(&w.slots[i], j)
	}
}

// addBlind is AddBatch without estimates on a window of lanes, into slot
// l: as CountMin.addBlind, the keys go to a lane of the handle no other
// of its goroutines adds to at the moment.
func (w *CountMinWindow) addBlind(l *cells.CountMin, keys [][]byte) {
	s := w.lanes.takeSoon(&w.slots[0])
	if s == nil {
		w.batchCore(len(keys), l).AddBatch(l, keys, 1, nil)
		return
	}
	lane := *l
	lane.Lane = laneGrid(l, s.lane)
	w.batchCore(len(keys), &lane).AddBatch(&lane, keys, 1, nil)
	s.busy.Store(0)
}

// estimatePair is cells.EstimatePair, its lanes summed when the slots
// have lanes.
func estimatePair(a, b *cells.CountMin, lo, hi uint64) (uint64, uint64) {
	if a.Lanes > 1 {
		return a.EstimateHashed(lo, hi), b.EstimateHashed(lo, hi)
	}
	return cells.EstimatePair(a, b, lo, hi)
}

// estimateTouch is cells.EstimateTouch, other's lanes summed when the
// slots have lanes (cur's lane is the one touched).
func estimateTouch(other, cur *cells.CountMin, lo, hi uint64) (est, sink uint64) {
	if other.Lanes > 1 {
		return other.EstimateHashed(lo, hi), cur.TouchHashed(lo, hi)
	}
	return cells.EstimateTouch(other, cur, lo, hi)
}

// readThenAdd is cells.ReadThenAdd; when the slots have lanes, the read
// of other sums its lanes, and the add goes to cur's lane of this handle
// and returns cur's estimate over its lanes.
func readThenAdd(other, cur *cells.CountMin, lo, hi, n uint64) (otherEst, curEst uint64) {
	if other.Lanes > 1 {
		return other.EstimateHashed(lo, hi), cur.AddCells(lo, hi, n)
	}
	return cells.ReadThenAdd(other, cur, lo, hi, n)
}
