package sketch

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// BloomWindowConfig is a Bloom window's config as an arena lists it
// (ArenaEntry.Config): its window and the size of each period's filter.
type BloomWindowConfig struct {
	Window Window      `json:"window"`
	Bloom  BloomConfig `json:"bloom"`
}

// bloomWindowBytes is the region of a Bloom window: the control words,
// then keep+1 slots, each a whole Bloom region (kind 2's layout, a
// multiple of 64 bytes already).
func bloomWindowBytes(blocks uint64, keep int) uint64 {
	return windowControlBytes(keep) + uint64(keep+1)*bloomBytes(blocks)
}

// createSpec is spec for the constructors that
// always create: the zero Window and a config without Capacity, which
// only attach, are refused.
func (wc BloomWindowConfig) createSpec() (spec, error) {
	w, cfg := wc.Window, wc.Bloom
	if err := w.validate(); err != nil {
		return spec{}, err
	}
	if cfg.Capacity == 0 {
		return spec{}, errNoCapacity
	}
	return wc.spec()
}

// spec asks for a Bloom window. The zero Window attaches to
// whatever window is stored, and a config without Capacity to whatever
// filters; either one cannot create (size 0).
func (wc BloomWindowConfig) spec() (spec, error) {
	w, cfg := wc.Window, wc.Bloom
	bsp, err := cfg.spec()
	if err != nil {
		return spec{}, err
	}
	// The filters' words are kind 2's words 0 to 3: a Bloom filter's
	// match decides, with the same tolerance for the file's own config.
	matchBloom := func(e entry) error {
		var be entry
		copy(be.params[:4], e.params[:4])
		return bsp.match(be)
	}
	sp := spec{kind: kindBloomWindow, seed: cfg.Seed, match: matchBloom}
	if w == (Window{}) {
		return sp, nil
	}
	if err := w.validate(); err != nil {
		return spec{}, err
	}
	sp.match = matchWindow(w, 4, matchBloom)
	if cfg.Capacity == 0 {
		return sp, nil
	}
	// At most 2^40 blocks a slot and 257 slots: no overflow.
	blocks := bsp.params[2]
	size := bloomWindowBytes(blocks, w.Keep)
	if size > maxFileSize-pageSize*4 {
		return spec{}, fmt.Errorf("%w: %d slots of %d bits need %d bytes, more than a sketch file may have (%d)", ErrInvalidConfig, w.Keep+1, blocks*cells.BloomBlockBits, size, uint64(maxFileSize))
	}
	sp.size = size
	sp.params = [8]uint64{bsp.params[0], bsp.params[1], blocks, bsp.params[3], uint64(w.Period), uint64(w.Keep)}
	return sp, nil
}

func bloomWindowEntryConfig(e entry) any {
	return BloomWindowConfig{
		Window: storedWindow(e, 4),
		Bloom:  BloomConfig{Capacity: e.params[0], FPRate: math.Float64frombits(e.params[1])},
	}
}

func bloomWindowEntryParams(e entry) map[string]float64 {
	ps := bloomEntryParams(e)
	ps["period_ns"] = float64(e.params[4])
	ps["keep"] = float64(e.params[5])
	return ps
}

func validateBloomWindowEntry(e entry) error {
	if err := validateBloomParams(e.params[0], e.params[1], e.params[2], e.params[3]); err != nil {
		return fmt.Errorf("window: %w", err)
	}
	blocks, period, keep := e.params[2], e.params[4], e.params[5]
	if err := validateWindowParams(period, keep); err != nil {
		return err
	}
	if want := bloomWindowBytes(blocks, int(keep)); e.size != want {
		return fmt.Errorf("Bloom window region of %d bytes, %d slots of %d blocks need %d", e.size, keep+1, blocks, want)
	}
	return nil
}

// BloomWindow is a Bloom filter over a sliding window of time, in a shared
// mapping: it answers whether a key was added in the last Keep periods, the
// current one included, and forgets older periods by itself. It replaces
// the two filters a caller would otherwise swap and reset: the rotation
// is in the file, so every process agrees which filter is current and
// exactly one clears the spare. Any number of goroutines and processes add
// and check at once, lock-free.
//
// The file holds Keep+1 Bloom filters (slots), each sized by the
// BloomConfig for one period's keys, and the window's control words
// (window.go; docs/DESIGN.md, "Windows"). Every process computes the same
// current period, from the clock or from the Rotate count stored in the
// file, and adds to that period's slot; Contains asks the Keep slots of the
// window. The spare slot is cleared for the next period while the others
// serve, by the one process that wins it; a process killed while it
// clears is taken over by the next one that needs the slot.
//
// The false of Contains is exact for the periods covered: a key added in any of
// the last Keep periods, before Contains started, in any process, is found.
// A key added only in periods that have left the window, or never, is
// found with the false-positive rate of the Keep filters asked: about
// 1 - (1-r_1)·…·(1-r_Keep), each r_i its filter's rate at its load, so at
// most about Keep·FPRate while each period holds at most Capacity keys
// (size FPRate as the target divided by Keep). An add made at the very
// moment of a turn by a process that had not seen it yet lands in the old
// period, as CountMinWindow's do.
//
// Calls after Close return ErrClosed; Contains then answers true, never
// claiming a key is absent.
type BloomWindow struct {
	windowBase
	slots  []cells.Bloom
	core   cells.BloomCore // serves batches
	stripe int             // this handle's stripe of each slot's counts
}

// BloomWindowStats describes a Bloom window at one moment.
type BloomWindowStats struct {
	// Bits, Hashes, Capacity and FPRate are each slot's, as BloomStats
	// has them: a slot holds one period's keys.
	Bits     uint64  `json:"bits"`
	Hashes   int     `json:"hashes"`
	Capacity uint64  `json:"capacity"`
	FPRate   float64 `json:"fp_rate"`
	// WindowStats are the window's periods: Contains covers Oldest to
	// Current.
	WindowStats
	// Adds is the adds since the window was made, in every process,
	// periods that left the window included (each slot's Adds,
	// and what its earlier periods took): a monotonic count
	// (see Window).
	Adds uint64 `json:"adds"`
	// FPRateNow is the modelled false-positive rate of Contains over the
	// whole window now: the rate at which it finds a key never added in
	// the periods covered, 1 - Π(1 - Rate) over their slots (FPRate is
	// each slot's target at Capacity, Rate each slot's own now). A closed
	// handle reports 1.
	FPRateNow float64 `json:"fp_rate_now"`
	// Slots describes each slot.
	Slots []BloomWindowSlotStats `json:"slots"`
	FileStats
}

// BloomWindowSlotStats describes one slot of a Bloom window.
type BloomWindowSlotStats struct {
	// State is "current", "window", "next", "expired", "clearing" or
	// "empty", as CountMinWindowSlotStats has it.
	State string `json:"state"`
	// Period is the period the slot holds, or is cleared for.
	Period uint64 `json:"period"`
	// Set, Fill and Estimated are BloomStats' for the slot's filter: Fill
	// near one half means the period reached Capacity.
	Set       uint64  `json:"set"`
	Fill      float64 `json:"fill"`
	Estimated float64 `json:"estimated"`
	// Rate is the filter's modelled false-positive rate at the estimated
	// load (1 when every bit is set).
	Rate float64 `json:"rate"`
	// Adds counts the adds to the slot since it was cleared for its
	// period, and AddsPresent the part of them that found every bit
	// already set, as BloomStats has them.
	Adds        uint64 `json:"adds"`
	AddsPresent uint64 `json:"adds_present"`
}

// OpenBloomWindow opens the Bloom window at a place (see Place), creating
// it with cfg where there is none, as OpenCountMin does. cfg.Bloom sizes
// each period's filter. A given cfg.Window must be the stored window
// (ErrIncompatible otherwise), and a cfg.Bloom with a Capacity must size
// the stored filters; the zero Window attaches to any window and a
// cfg.Bloom without Capacity to any filters, and neither can create. A
// window's Keep must be 1 to MaxWindowKeep and its Period 0 or at least a
// millisecond (ErrInvalidConfig).
func OpenBloomWindow(at Place, cfg BloomWindowConfig, opts ...Option) (*BloomWindow, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newBloomWindow)
}

// newBloomWindow builds the handle for the window at m.ent. A read-write
// handle joins the file's lock: its liveness token names it in the slots
// it clears, and picks its stripe of each slot's counts.
func newBloomWindow(m *mapping) (*BloomWindow, error) {
	base := m.entryBase()
	blocks, k := m.ent.params[2], int(m.ent.params[3])
	win := storedWindow(m.ent, 4)
	w := &BloomWindow{core: buildCores.Bloom}
	ctl := windowControlBytes(win.Keep)
	slot := bloomBytes(blocks)
	for i := range win.Keep + 1 {
		sb := unsafe.Add(base, ctl+uint64(i)*slot)
		w.slots = append(w.slots, cells.Bloom{
			Stripes:  sb,
			Words:    unsafe.Add(sb, cells.StripesBytes),
			Seed:     m.lay.seed,
			Blocks:   blocks,
			K:        k,
			Prefetch: blocks*cells.BloomBlockBytes > cells.L2Bytes()/4,
		})
	}
	starts := make([]unsafe.Pointer, len(w.slots))
	for i := range w.slots {
		starts[i] = w.slots[i].Stripes
	}
	w.ctl.setFolds(starts, func(s uint64) uint64 {
		added, seen := w.slots[s].Counts()
		return added + seen
	})
	lk, err := w.start(m, w, win, w.clearSlot)
	if err != nil {
		return nil, err
	}
	if lk != nil {
		w.stripe = lockStripe(lk)
	}
	return w, nil
}

// clearSlot empties slot s for a new period, bits and counts, as
// CountMinWindow.clearSlot does: the Bloom reset's plain stores where
// stores become visible in program order, an atomic store a word
// elsewhere.
func (w *BloomWindow) clearSlot(s uint64) {
	l := &w.slots[s]
	if plainClears {
		l.Reset()
		return
	}
	for i := uint64(0); i < l.Nwords(); i++ {
		atomic.StoreUint64(l.Word(i), 0)
	}
	for i := uintptr(0); i < cells.StripeCount; i++ {
		line := unsafe.Add(l.Stripes, i*cells.StripeBytes)
		atomic.StoreUint64((*uint64)(unsafe.Add(line, cells.BloomAddedOff)), 0)
		atomic.StoreUint64((*uint64)(unsafe.Add(line, cells.BloomSeenOff)), 0)
	}
}

// add adds the key hashing to (lo, hi) to the current period and reports
// whether it was in the window before, and the period the add went to.
// The current slot is checked first (its block's line is then on its
// way); a key it lacks is looked for in the earlier periods before the
// atomic ORs, so that those slots' cache misses overlap the current one's.
func (w *BloomWindow) add(lo, hi uint64) (already bool, addP uint64, err error) {
	p, s, err := w.ctl.use()
	if err != nil {
		return false, 0, err
	}
	cur := &w.slots[s]
	if cur.Missing(cur.Block(lo), hi) == 0 {
		cur.Count(w.stripe, 0, 1)
		return true, p, nil
	}
	found := w.inEarlier(lo, hi, p, s)
	a := cur.AddHashed(lo, hi)
	if a {
		cur.Count(w.stripe, 0, 1)
	} else {
		cur.Count(w.stripe, 1, 0)
	}
	return a || found, p, nil
}

// inEarlier reports whether the key is in a slot of the window's periods
// before p (whose slot is s), newest first. A slot is asked only while its
// word says it holds its period. When a word changed under the read, or a
// skipped one names a period after p+1, the window turned meanwhile: the
// slots not asked yet are left out, so that the answer errs towards
// "new", as two processes adding one new key at once do.
func (w *BloomWindow) inEarlier(lo, hi, p, s uint64) bool {
	found := false
	w.ctl.readWindow(p, true, func(t uint64) bool {
		found = w.slots[t].CheckHashed(lo, hi)
		return found
	})
	return found
}

// Add adds key to the current period and reports whether it was already
// in the window: true when every one of its bits was already set in the
// current period's filter, or when the filter of an earlier period of the
// window has the key (what Contains would have answered just before, up to
// the current filter's own bits). Either way the key is now in the
// current period, so it stays in the window for Keep more periods. False
// means this call set a bit in the current filter and no earlier period
// has the key. As with Bloom.Add, two processes adding one new key at
// once may both be told false, and so may an add that meets a turn of the
// period; what must happen once needs a lock. On error (closed,
// read-only, frozen, or the current slot's clear did not finish) it adds
// nothing and returns false.
func (w *BloomWindow) Add(key []byte) (already bool, err error) {
	if err := w.mayWrite("add"); err != nil {
		return false, err
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	already, _, err = w.add(lo, hi)
	return w.afterAdd(already, err)
}

// AddString is Add for a string key, without converting it to a []byte.
func (w *BloomWindow) AddString(key string) (already bool, err error) {
	if err := w.mayWrite("add"); err != nil {
		return false, err
	}
	lo, hi := cells.HashString(key, w.slots[0].Seed)
	already, _, err = w.add(lo, hi)
	return w.afterAdd(already, err)
}

// afterAdd passes an add's answer on, unless the call failed or Close ran
// meanwhile.
func (w *BloomWindow) afterAdd(already bool, err error) (bool, error) {
	if !w.open.Load() {
		return false, w.closedErr("add")
	}
	if err != nil {
		return false, w.m.errorf("add", err)
	}
	return already, nil
}

// AddBatch adds every key to the current period, as Add does each. When
// already is not nil it must have len(keys) elements and receives each
// key's answer; with already nil no earlier period is asked, and a batch
// costs what Bloom.AddBatch's does. Batches go to the core as
// Bloom.AddBatch's do.
func (w *BloomWindow) AddBatch(keys [][]byte, already []bool) error {
	if err := w.mayWrite("add"); err != nil {
		return err
	}
	if already != nil && len(already) != len(keys) {
		return w.m.errorf("add", fmt.Errorf("%w: %d answers for %d keys", ErrInvalidArgument, len(already), len(keys)))
	}
	c := &w.ctl
	p, s, err := c.use()
	if err != nil {
		_, err = w.afterAdd(false, err)
		return err
	}
	cur := &w.slots[s]
	added := w.batchCore(len(keys), cur).AddBatch(cur, keys, already)
	cur.Count(w.stripe, added, uint64(len(keys))-added)
	if already != nil && added != 0 && p > c.first(p) {
		w.findBatch(keys, already, p, true)
	}
	return w.after("add")
}

// Contains reports whether key is probably in the window: whether the filter
// of any of the last Keep periods has it. False is exact: a key added in
// one of those periods before Contains started, in any process, is always
// found. A closed handle answers true: it never claims a key is absent.
func (w *BloomWindow) Contains(key []byte) bool {
	if !w.open.Load() {
		return true
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	found, _ := w.lookup(lo, hi)
	return found || !w.open.Load()
}

// ContainsString is Contains for a string key.
func (w *BloomWindow) ContainsString(key string) bool {
	if !w.open.Load() {
		return true
	}
	lo, hi := cells.HashString(key, w.slots[0].Seed)
	found, _ := w.lookup(lo, hi)
	return found || !w.open.Load()
}

// lookup asks the slots of the window, newest first, each read between two
// loads of its word, and returns the answer and the window's last period.
// A slot whose word does not hold its period is not asked. When a word
// changed under a read that found nothing, or a skipped word names a
// period past the next, another process has turned the period: the read
// starts again for the new window (the words only move forward, so this
// ends; after a few tries the last answer is kept).
func (w *BloomWindow) lookup(lo, hi uint64) (found bool, p uint64) {
	p = w.ctl.currentRead()
	if found, ok := w.checkHeld(lo, hi, p); ok {
		return found, p
	}
	p = w.ctl.readStable(func(p uint64) bool {
		found = false
		return w.ctl.readWindow(p, false, func(s uint64) bool {
			found = w.slots[s].CheckHashed(lo, hi)
			return found
		})
	})
	return found, p
}

// checkHeld is check's usual case, written out (the read protocol's
// closures cost a Contains at Keep 2 about 2 ns, 8-10%: measured with
// BenchmarkBloomWindowCheck): every slot of p's window holds its period
// and none changed under its read. ok is false when one did not, and
// check then reads the window again with readWindow.
func (w *BloomWindow) checkHeld(lo, hi, p uint64) (found, ok bool) {
	c := &w.ctl
	q, s, first := p, c.slotOf(p), c.first(p)
	for {
		wp := c.word(s)
		wd := atomic.LoadUint64(wp)
		if wd != heldWord(q) {
			return false, false
		}
		f := w.slots[s].CheckHashed(lo, hi)
		if atomic.LoadUint64(wp) != wd {
			return false, false
		}
		if f {
			return true, true
		}
		if q == first {
			return false, true
		}
		q, s = q-1, c.prevSlot(s)
	}
}

// ContainsBatch stores Contains(keys[i]) in out[i]; out must have
// len(keys) elements (ErrInvalidArgument otherwise, and nothing is asked).
// Each slot of the window is asked, as a Bloom filter's batch, about the
// keys the newer slots did not have. A closed handle answers true for
// every key and returns ErrClosed.
func (w *BloomWindow) ContainsBatch(keys [][]byte, out []bool) error {
	if len(out) != len(keys) {
		return fmt.Errorf("sketch: contains %s: %w: %d answers for %d keys", w.name(), ErrInvalidArgument, len(out), len(keys))
	}
	if w.open.Load() {
		w.checkBatch(keys, out)
		if w.open.Load() {
			return nil
		}
	}
	for i := range out {
		out[i] = true
	}
	return w.closedErr("contains")
}

// checkBatch is check for a batch: the whole window again when a slot's
// word changed under it.
func (w *BloomWindow) checkBatch(keys [][]byte, out []bool) {
	w.ctl.readStable(func(p uint64) bool {
		clear(out)
		return w.findBatch(keys, out, p, false)
	})
}

// bloomScratch is findBatch's buffers: a chunk of keys still unanswered
// and their answers. Pooled, since buffers handed to a core (an interface)
// would otherwise be allocated on every call.
type bloomScratch struct {
	keys [cells.BatchChunk][]byte
	idx  [cells.BatchChunk]int
	res  [cells.BatchChunk]bool
}

var bloomScratchPool = sync.Pool{New: func() any { return new(bloomScratch) }}

// findBatch sets out[i] for each key found in a slot of p's window (but
// p's own with skipCurrent), each slot asked only about the keys still
// false. It reports false when the window turned under it (readWindow);
// what was found stays.
func (w *BloomWindow) findBatch(keys [][]byte, out []bool, p uint64, skipCurrent bool) bool {
	sc := bloomScratchPool.Get().(*bloomScratch)
	defer func() {
		clear(sc.keys[:])
		bloomScratchPool.Put(sc)
	}()
	return w.ctl.readWindow(p, skipCurrent, func(s uint64) bool {
		l := &w.slots[s]
		left := 0
		for base := 0; base < len(keys); base += cells.BatchChunk {
			n := 0
			for i := base; i < min(base+cells.BatchChunk, len(keys)); i++ {
				if !out[i] {
					sc.keys[n], sc.idx[n] = keys[i], i
					n++
				}
			}
			if n == 0 {
				continue
			}
			w.batchCore(n, l).ContainsBatch(l, sc.keys[:n], sc.res[:n])
			for j, f := range sc.res[:n] {
				if f {
					out[sc.idx[j]] = true
				} else {
					left++
				}
			}
		}
		return left == 0
	})
}

// batchCore picks the core for a batch of n keys on slot l, as
// Bloom.batchCore does.
func (w *BloomWindow) batchCore(n int, l *cells.Bloom) cells.BloomCore {
	if n < cells.BloomMinBatch || !l.Prefetch {
		return cells.BloomGo{}
	}
	return w.core
}

// Bits returns m, the bits of each period's filter.
func (w *BloomWindow) Bits() uint64 {
	if len(w.slots) == 0 {
		return 0
	}
	return w.slots[0].Blocks * cells.BloomBlockBits
}

// Hashes returns k, the bits a key sets.
func (w *BloomWindow) Hashes() int {
	if len(w.slots) == 0 {
		return 0
	}
	return w.slots[0].K
}

// Stats reports the window's periods and each slot's state, fill and
// counts. It walks every slot's bits, so it belongs on a status page, not
// in a loop.
func (w *BloomWindow) Stats() BloomWindowStats {
	s := BloomWindowStats{
		Bits:        w.Bits(),
		Hashes:      w.Hashes(),
		Capacity:    w.Config().Bloom.Capacity,
		WindowStats: WindowStats{Period: w.win.Period, Keep: w.win.Keep},
		FileStats:   FileStats{ReadOnly: w.ReadOnly()},
	}
	if w.m != nil {
		s.FPRate = w.Config().Bloom.FPRate
		s.Bytes = w.m.ownBytes()
	}
	if !w.open.Load() {
		return w.closedStats(s)
	}
	wp := w.periods()
	s.WindowStats, s.Adds = wp, w.ctl.adds()
	miss := 1.0 // the chance that no covered slot finds an absent key
	for i := range w.slots {
		l := &w.slots[i]
		var sl BloomWindowSlotStats
		sl.State, sl.Period = w.slotState(uint64(i), wp)
		sl.Set = l.CountSet()
		sl.Fill = float64(sl.Set) / float64(s.Bits)
		sl.Estimated = bloomEstimate(l, sl.Set)
		switch {
		case sl.Set == 0:
			sl.Rate = 0
		case sl.Estimated == math.MaxFloat64:
			sl.Rate = 1
		default:
			sl.Rate = bloomFP(sl.Estimated/float64(l.Blocks), l.K)
		}
		added, seen := l.Counts()
		sl.Adds, sl.AddsPresent = added+seen, seen
		if sl.State == "current" || sl.State == "window" {
			miss *= 1 - sl.Rate
		}
		s.Slots = append(s.Slots, sl)
	}
	s.FPRateNow = 1 - miss
	s.Frozen = atomic.LoadUint32(w.sealed) != 0
	if !w.open.Load() {
		return w.closedStats(s)
	}
	return s
}

func (w *BloomWindow) closedStats(s BloomWindowStats) BloomWindowStats {
	return BloomWindowStats{Bits: s.Bits, Hashes: s.Hashes, Capacity: s.Capacity, FPRate: s.FPRate,
		WindowStats: WindowStats{Period: s.Period, Keep: s.Keep}, FPRateNow: 1, FileStats: FileStats{Bytes: s.Bytes, ReadOnly: w.ReadOnly(), Closed: true}}
}

// Close stops the handle's clock and releases the descriptor, the lock's
// liveness token and the file's pages; safe twice and while other
// goroutines use the handle, as Bloom.Close is. A slot this handle was
// clearing is finished by the next process that needs it.
func (w *BloomWindow) Close() error {
	if w == nil {
		return nil
	}
	return w.closeWindow()
}

func (w *BloomWindow) describe() (string, string) {
	return "BloomWindow", fmt.Sprintf("%d bits, %d hashes, %v", w.Bits(), w.Hashes(), w.win)
}
func (w *BloomWindow) statsOf() any { return w.Stats() }

// Config returns the config stored in the file: the window and the Capacity and FPRate each period's filter was sized for, without the seed
// (a secret: see Seed). Opening the same place with it attaches; creating
// another structure with it (and the same seed) makes one that merges with
// this one. A zero handle returns the zero config.
func (w *BloomWindow) Config() BloomWindowConfig {
	if w.m == nil {
		return BloomWindowConfig{}
	}
	return bloomWindowEntryConfig(w.m.ent).(BloomWindowConfig)
}

// ContainsCovered is Contains, and says which periods the answer covered:
// false means key was added in none of them. After Close it returns true
// and the zero Periods.
func (w *BloomWindow) ContainsCovered(key []byte) (bool, Periods) {
	if !w.open.Load() {
		return true, Periods{}
	}
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	found, p := w.lookup(lo, hi)
	if !w.open.Load() {
		return true, Periods{}
	}
	return found, w.covered(p)
}

// ExportPeriods returns the bits of each period's filter that the window
// holds, newest first: the periods of the window at the current period
// (Current-Keep+1 to Current) whose slot holds them, as ExportBits gives
// a filter's. A period's filter ORed across hosts (BITOP OR of each
// host's export of that period) and merged back (MergePeriod) makes every
// host's window find every host's keys of that period: what the fleet
// module does, period by period, for replays caught fleet-wide. The hosts'
// windows need one config and seed and the same clock (a Period, and no
// Rotate: Rotate turns one host's periods only). A closed handle is
// ErrClosed.
func (w *BloomWindow) ExportPeriods() ([]WindowPeriod, error) {
	return w.exportPeriods("export", func(s uint64) ([]byte, error) {
		return bloomBitsOf(&w.slots[s]), nil
	})
}

// MergePeriod ORs bits (ExportPeriods' Data of period p, another host's or
// the fleet's) into the filter of period p, when p is a period of the
// window now (Current-Keep+1 to Current): afterwards Contains finds the
// keys of those bits while p stays in the window. Merging is idempotent. A
// period that left the window or has not begun is not merged (false). The
// slot of a past period this window never used is claimed for it, as an
// add claims the current one. Bits of another length are ErrIncompatible,
// and a merge during which the window turned past p+Keep (a Rotate, or a
// merge longer than a period) is ErrTimeout: part of p's bits may then
// show in a later period, as false positives. Adds does not change; a
// read-only, frozen or closed handle merges nothing.
func (w *BloomWindow) MergePeriod(p uint64, bits []byte) (bool, error) {
	return w.mergePeriod("merge", p, func(s uint64) error {
		return orBloomBits(&w.slots[s], bits)
	})
}

// Snapshot is SnapshotCovered without the periods.
func (w *BloomWindow) Snapshot(at Place, opts ...Option) (*Bloom, error) {
	b, _, err := w.SnapshotCovered(at, opts...)
	return b, err
}

// SnapshotCovered copies the periods the window covers, while any process
// keeps adding, into ONE Bloom filter at a place, the OR of the covered
// periods' filters, and returns it frozen and read-only with the periods
// it covers. It has the window's filter's bits, hashes and seed, so that
// it merges (Bloom.Merge) with the snapshots of other hosts' windows and
// with plain filters of that config; its Adds and AddsPresent are the
// covered periods' sums.
//
// The copy answers true for every key whose add returned, in any process,
// before the call, in a period it covers (no false negative); its
// false-positive rate is about that of the union of those periods' keys
// in one filter, higher than one period's. When the window turns during
// the copy, the copy starts again, as CountMinWindow.SnapshotCovered's
// does; the places and options are as CountMin.Snapshot's.
func (w *BloomWindow) SnapshotCovered(at Place, opts ...Option) (*Bloom, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("snapshot")
	}
	e := w.m.ent
	blocks := e.params[2]
	sp := spec{kind: kindBloom, size: bloomBytes(blocks), seed: w.m.lay.seed}
	copy(sp.params[:4], e.params[:4]) // a period's filter: kind 2's words
	var periods Periods
	var err error
	sp.fill = func(data []byte, lay layout) error {
		d := lay.entries[0]
		periods, err = w.orCovered(data[d.off : d.off+d.size])
		return err
	}
	m, err := createSnapshot(w.name(), at, sp, opts)
	b, err := finishSnapshot(&w.Handle, m, err, newBloom)
	if err != nil {
		return nil, Periods{}, err
	}
	return b, periods, nil
}

// orCovered ORs the covered slots' bits into dst, a Bloom region of the
// slots' size, and adds up their counts in its first stripe.
func (w *BloomWindow) orCovered(dst []byte) (Periods, error) {
	words := unsafe.Add(unsafe.Pointer(&dst[0]), cells.StripesBytes)
	var added, seen uint64
	p, err := w.foldCovered(func(s uint64) {
		l := &w.slots[s]
		for i := uint64(0); i < l.Nwords(); i++ {
			if v := atomic.LoadUint64(l.Word(i)); v != 0 {
				*(*uint64)(unsafe.Add(words, i*8)) |= v
			}
		}
		a, sn := l.Counts()
		added, seen = added+a, seen+sn
	}, func() {
		clear(dst)
		added, seen = 0, 0
	})
	if err != nil {
		return p, err
	}
	*wordAt(dst, cells.BloomAddedOff) = added
	*wordAt(dst, cells.BloomSeenOff) = seen
	return p, nil
}

// copyRegion is windowBase.copyRegion for a Bloom window.
func (w *BloomWindow) copyRegion(dst []byte) error {
	return w.windowBase.copyRegion(dst, windowControlBytes(w.win.Keep), bloomBytes(w.slots[0].Blocks),
		func(s uint64) unsafe.Pointer { return w.slots[s].Stripes })
}
