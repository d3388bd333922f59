package sketch

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// DistinctWindowConfig is a distinct window's config as an arena lists it
// (ArenaEntry.Config): its window and each period's distinct count.
type DistinctWindowConfig struct {
	Window   Window         `json:"window"`
	Distinct DistinctConfig `json:"distinct"`
}

// distinctSlotBytes is one period's slot of a distinct window: a whole
// kind 6 region (the change count's line, then the registers), rounded up
// to a cache line so that every slot starts on one.
func distinctSlotBytes(p uint) uint64 { return roundUp(distinctBytes(p), cacheLine) }

// distinctWindowBytes is the region of a distinct window: the control
// words, then keep+1 slots.
func distinctWindowBytes(p uint, keep int) uint64 {
	return windowControlBytes(keep) + uint64(keep+1)*distinctSlotBytes(p)
}

// createSpec is spec for the constructors that always create: the zero
// Window, which only attaches, is refused.
func (wc DistinctWindowConfig) createSpec() (spec, error) {
	if err := wc.Window.validate(); err != nil {
		return spec{}, err
	}
	return wc.spec()
}

// spec asks for a distinct window. The zero Window attaches to whatever
// window is stored (and cannot create); the zero DistinctConfig attaches
// to any precision and creates the default, as OpenDistinct's does.
func (wc DistinctWindowConfig) spec() (spec, error) {
	w, cfg := wc.Window, wc.Distinct
	dsp, err := cfg.spec()
	if err != nil {
		return spec{}, err
	}
	// The counts' words are kind 6's words 0 and 1: a distinct count's
	// match decides.
	matchDistinct := func(e entry) error {
		var de entry
		copy(de.params[:2], e.params[:2])
		return dsp.match(de)
	}
	sp := spec{kind: kindDistinctWindow, seed: cfg.Seed, match: matchDistinct}
	if w == (Window{}) {
		return sp, nil
	}
	if err := w.validate(); err != nil {
		return spec{}, err
	}
	sp.match = matchWindow(w, 2, matchDistinct)
	sp.size = distinctWindowBytes(uint(dsp.params[0]), w.Keep)
	sp.params = [8]uint64{dsp.params[0], dsp.params[1], uint64(w.Period), uint64(w.Keep)}
	return sp, nil
}

func distinctWindowEntryConfig(e entry) any {
	return DistinctWindowConfig{
		Window:   storedWindow(e, 2),
		Distinct: distinctEntryConfig(e).(DistinctConfig),
	}
}

func distinctWindowEntryParams(e entry) map[string]float64 {
	ps := distinctEntryParams(e)
	ps["period_ns"] = float64(e.params[2])
	ps["keep"] = float64(e.params[3])
	return ps
}

func validateDistinctWindowEntry(e entry) error {
	p, profile, period, keep := e.params[0], e.params[1], e.params[2], e.params[3]
	if err := validateDistinctParams(p, profile); err != nil {
		return fmt.Errorf("window: %w", err)
	}
	if err := validateWindowParams(period, keep); err != nil {
		return err
	}
	if want := distinctWindowBytes(uint(p), int(keep)); e.size != want {
		return fmt.Errorf("distinct window region of %d bytes, %d slots of 2^%d registers need %d", e.size, keep+1, p, want)
	}
	return nil
}

// DistinctWindow counts distinct keys over a sliding window of time, in a
// shared mapping: how many distinct keys were added in the last Keep
// periods, the current one included ("distinct clients in the last
// minute"). It forgets older periods by itself, with the rotation in the
// file as for CountMinWindow: every process agrees which period is
// current, and exactly one clears the spare slot.
//
// The file holds Keep+1 HyperLogLogs (slots), one a period, each as
// Distinct's (2^p one-byte registers, the same hash and profile), and the
// window's control words (window.go; docs/DESIGN.md, "Windows"). An add
// raises one register of the current period's slot, lock-free; Count
// estimates the union of the covered periods (the register-wise maximum
// of their slots, with Ertl's estimator), so a key added in several
// periods counts once. Its error is Distinct's: StdError relative.
//
// Count walks the covered slots' registers only when a register of one of
// them rose or the period turned since this handle last walked them; it
// otherwise costs a load of each covered slot's word and change count.
// Calls after Close return ErrClosed, and Count then returns 0.
type DistinctWindow struct {
	windowBase
	slots []cells.Distinct
	core  cells.DistinctCore // serves batches
	// cache is the last union estimate this handle computed, with the
	// period and the covered slots' change count it was computed at.
	cache atomic.Pointer[distinctWindowCached]
	// union holds the registers' union while an estimate is computed.
	union sync.Pool
}

type distinctWindowCached struct {
	period, changes uint64
	estimate        float64
}

// DistinctWindowStats describes a distinct window at one moment.
type DistinctWindowStats struct {
	// Precision, Registers, Redis and PostgreSQL are each slot's, as
	// DistinctStats has them.
	Precision  int  `json:"precision"`
	Registers  int  `json:"registers"`
	Redis      bool `json:"redis"`
	PostgreSQL bool `json:"postgresql"`
	// Estimate is the estimated number of distinct keys added in the
	// covered periods (Count, before rounding), and StdError its relative
	// standard error.
	Estimate float64 `json:"estimate"`
	StdError float64 `json:"std_error"`
	// WindowStats are the window's periods: Count covers Oldest to
	// Current.
	WindowStats
	// RegisterChanges is how many adds raised a register since the
	// window was made, in every process, periods that left the window
	// included: a monotonic count (see Window). It is not an add count,
	// which a distinct window does not keep (no Adds), as DistinctStats
	// says.
	RegisterChanges uint64 `json:"register_changes"`
	// Slots describes each slot.
	Slots []DistinctWindowSlotStats `json:"slots"`
	FileStats
}

// DistinctWindowSlotStats describes one slot of a distinct window.
type DistinctWindowSlotStats struct {
	// State is "current", "window", "next", "expired", "clearing" or
	// "empty", as CountMinWindowSlotStats has it.
	State string `json:"state"`
	// Period is the period the slot holds, or is cleared for.
	Period uint64 `json:"period"`
	// Estimate is the slot's own count: the distinct keys of its period.
	Estimate float64 `json:"estimate"`
	// Zero is how many of its registers are zero, and RegisterChanges
	// how many adds raised one of them.
	Zero            uint64 `json:"zero"`
	RegisterChanges uint64 `json:"register_changes"`
}

// OpenDistinctWindow opens the distinct window at a place (see Place),
// creating it with cfg where there is none, as OpenCountMin does.
// cfg.Distinct sizes each period's count, as OpenDistinct's config does.
// A given cfg.Window must be the stored window (ErrIncompatible
// otherwise), and an explicit cfg.Distinct the stored precision and
// profile; the zero Window attaches to any window (and cannot create).
// A window's Keep must be 1 to MaxWindowKeep and its Period 0 or at least
// a millisecond (ErrInvalidConfig).
func OpenDistinctWindow(at Place, cfg DistinctWindowConfig, opts ...Option) (*DistinctWindow, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newDistinctWindow)
}

// newDistinctWindow builds the handle for the window at m.ent.
func newDistinctWindow(m *mapping) (*DistinctWindow, error) {
	base := m.entryBase()
	p := uint(m.ent.params[0])
	win := storedWindow(m.ent, 2)
	w := &DistinctWindow{core: buildCores.Distinct}
	w.union.New = func() any { return make([]uint64, (uint64(1)<<p)/8) }
	ctl := windowControlBytes(win.Keep)
	slot := distinctSlotBytes(p)
	for i := range win.Keep + 1 {
		sb := unsafe.Add(base, ctl+uint64(i)*slot)
		w.slots = append(w.slots, cells.Distinct{
			Changes: (*uint64)(sb),
			Regs:    unsafe.Add(sb, cells.DistinctHeadBytes),
			Seed:    m.lay.seed,
			P:       p,
			Profile: m.ent.params[1],
		})
	}
	starts := make([]unsafe.Pointer, len(w.slots))
	for i := range w.slots {
		starts[i] = unsafe.Pointer(w.slots[i].Changes)
	}
	w.ctl.setFolds(starts, func(s uint64) uint64 { return atomic.LoadUint64(w.slots[s].Changes) })
	if _, err := w.start(m, w, win, w.clearSlot); err != nil {
		return nil, err
	}
	return w, nil
}

// clearSlot empties slot s for a new period: its registers, then its
// change count. The clearer owns the slot; each word is cleared with an
// atomic store, so that a reader that sees a cleared word also sees the
// slot word that says the slot is being cleared, on any hardware.
func (w *DistinctWindow) clearSlot(s uint64) {
	l := &w.slots[s]
	for i := range l.M() / 8 {
		atomic.StoreUint64(l.Word(i), 0)
	}
	atomic.StoreUint64(l.Changes, 0)
}

// Add adds key to the current period: afterwards Count counts it, in
// every process, until its period leaves the window. Adding a key again
// changes nothing within a period, and a key added in several periods of
// the window counts once. On error (closed, read-only, frozen, or the
// current slot's clear did not finish) it adds nothing.
func (w *DistinctWindow) Add(key []byte) error {
	if err := w.mayWrite("add"); err != nil {
		return err
	}
	return w.add(w.slots[0].Hash(key))
}

// AddString is Add for a string key, without converting it to a []byte.
func (w *DistinctWindow) AddString(key string) error {
	if err := w.mayWrite("add"); err != nil {
		return err
	}
	return w.add(w.slots[0].HashString(key))
}

func (w *DistinctWindow) add(h uint64) error {
	_, s, err := w.ctl.use()
	if err == nil {
		if l := &w.slots[s]; l.AddHashed(h) {
			l.Changed(1)
		}
	}
	return w.afterAdd(err)
}

// afterAdd reports an add's error, or Close that ran meanwhile.
func (w *DistinctWindow) afterAdd(err error) error {
	if !w.open.Load() {
		return w.closedErr("add")
	}
	if err != nil {
		return w.m.errorf("add", err)
	}
	return nil
}

// AddBatch adds every key to the current period, as Add does each, in the
// C core on the cgo build from distinctMinBatch keys on, as
// Distinct.AddBatch does.
func (w *DistinctWindow) AddBatch(keys [][]byte) error {
	if err := w.mayWrite("add"); err != nil {
		return err
	}
	_, s, err := w.ctl.use()
	if err == nil {
		core := w.core
		if len(keys) < cells.DistinctMinBatch {
			core = cells.DistinctGo{}
		}
		l := &w.slots[s]
		l.Changed(core.AddBatch(l, keys))
	}
	return w.afterAdd(err)
}

// Count returns the estimated number of distinct keys added in the
// periods the window covers, rounded: within StdError of the truth about
// two times in three, as Distinct.Count. A closed handle returns 0.
func (w *DistinctWindow) Count() uint64 {
	est, _ := w.estimate()
	return uint64(math.Round(est))
}

// CountCovered is Count, and says which periods the count covered. After
// Close it returns 0 and the zero Periods.
func (w *DistinctWindow) CountCovered() (uint64, Periods) {
	est, p := w.estimate()
	if !w.open.Load() {
		return 0, Periods{}
	}
	return uint64(math.Round(est)), w.covered(p)
}

// StdError returns the relative standard error of Count, 1.04/sqrt(2^p).
func (w *DistinctWindow) StdError() float64 {
	if len(w.slots) == 0 {
		return 0
	}
	return distinctStdError(w.slots[0].P)
}

// estimate is Count before rounding, with the last period of the window
// it covers; 0 on a closed handle. The covered slots' change counts are
// read before their registers, so an estimate cached at a count holds
// every raise that count counts (a raise is counted after it is made).
func (w *DistinctWindow) estimate() (float64, uint64) {
	if !w.open.Load() {
		return 0, 0
	}
	c := &w.ctl
	p := c.currentRead()
	if sig, ok := w.changes(p); ok {
		if ch := w.cache.Load(); ch != nil && ch.period == p && ch.changes == sig {
			return ch.estimate, p
		}
	}
	u := w.union.Get().([]uint64)
	defer w.union.Put(u)
	var sig uint64
	whole := false
	p = c.readStable(func(p uint64) bool {
		var ok bool
		sig, ok = w.changes(p)
		whole = w.unionOf(p, u) && ok
		return whole
	})
	if !w.open.Load() {
		return 0, 0 // what was read may be the placeholder
	}
	// After a window that kept turning, the last read stands, as
	// readStable's do, but is not cached.
	est := w.estimateOf(u)
	if whole {
		w.cache.Store(&distinctWindowCached{p, sig, est})
	}
	return est, p
}

// changes sums the change counts of the slots of p's window that hold
// their periods; false when the window turned under the read. Within a
// period, each covered slot's count only grows, so the sum names the
// registers' state.
func (w *DistinctWindow) changes(p uint64) (uint64, bool) {
	var sum uint64
	whole := w.ctl.readWindow(p, false, func(s uint64) bool {
		sum += atomic.LoadUint64(w.slots[s].Changes)
		return false
	})
	return sum, whole
}

// unionOf sets u to the register-wise maximum of the slots of p's window
// that hold their periods; false when the window turned under the read.
func (w *DistinctWindow) unionOf(p uint64, u []uint64) bool {
	clear(u)
	return w.ctl.readWindow(p, false, func(s uint64) bool {
		w.raiseTo(u, s)
		return false
	})
}

// raiseTo raises each register of u, words of a slot's size, to slot s's.
func (w *DistinctWindow) raiseTo(u []uint64, s uint64) {
	l := &w.slots[s]
	for i := range u {
		if v := atomic.LoadUint64(l.Word(uint64(i))); v != 0 {
			u[i] = maxRegisters(u[i], v)
		}
	}
}

// estimateOf estimates the count of registers u.
func (w *DistinctWindow) estimateOf(u []uint64) float64 {
	l := cells.Distinct{Regs: unsafe.Pointer(&u[0]), P: w.slots[0].P}
	var h [66]uint64
	l.Histogram(&h)
	return cells.DistinctEstimate(&h, l.P)
}

// maxRegisters is the bytewise maximum of two words of registers, without
// a loop: a register is at most 65 (q+1), so within a byte's low 7 bits,
// and (a|0x80) - b sets a byte's top bit exactly where a >= b, with no
// borrow between bytes. Bytes past 127, which only a damaged file holds,
// are taken modulo 128 (histogram then counts them as damage would be).
func maxRegisters(a, b uint64) uint64 {
	const low7, top = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	a, b = a&low7, b&low7
	ge := ((a | top) - b) & top
	mask := ge >> 7 * 0xff
	return a&mask | b&^mask
}

// Stats reports the window's periods, the count of the covered periods,
// and each slot's state and count. It walks every slot's registers, so it
// belongs on a status page, not in a loop.
func (w *DistinctWindow) Stats() DistinctWindowStats {
	s := DistinctWindowStats{
		WindowStats: WindowStats{Period: w.win.Period, Keep: w.win.Keep},
		StdError:    w.StdError(),
		FileStats:   FileStats{ReadOnly: w.ReadOnly()},
	}
	if len(w.slots) != 0 {
		s.Precision = int(w.slots[0].P)
		s.Registers = 1 << w.slots[0].P
		s.Redis = w.slots[0].Profile == cells.ProfileRedis
		s.PostgreSQL = w.slots[0].Profile == cells.ProfilePostgreSQL
	}
	if w.m != nil {
		s.Bytes = w.m.ownBytes()
	}
	if !w.open.Load() {
		return w.closedStats(s)
	}
	wp := w.periods()
	s.WindowStats, s.RegisterChanges = wp, w.ctl.adds()
	s.Estimate, _ = w.estimate()
	for i := range w.slots {
		l := &w.slots[i]
		var sl DistinctWindowSlotStats
		sl.State, sl.Period = w.slotState(uint64(i), wp)
		sl.RegisterChanges = atomic.LoadUint64(l.Changes)
		var h [66]uint64
		l.Histogram(&h)
		sl.Zero = h[0]
		sl.Estimate = cells.DistinctEstimate(&h, l.P)
		s.Slots = append(s.Slots, sl)
	}
	s.Frozen = atomic.LoadUint32(w.sealed) != 0
	if !w.open.Load() {
		return w.closedStats(s)
	}
	return s
}

func (w *DistinctWindow) closedStats(s DistinctWindowStats) DistinctWindowStats {
	return DistinctWindowStats{Precision: s.Precision, Registers: s.Registers, Redis: s.Redis, PostgreSQL: s.PostgreSQL, StdError: s.StdError,
		WindowStats: WindowStats{Period: s.Period, Keep: s.Keep}, FileStats: FileStats{Bytes: s.Bytes, ReadOnly: w.ReadOnly(), Closed: true}}
}

// check is the distinct window's part of Check: no register of any slot
// may exceed the largest rank (ErrDamaged), as Distinct's check.
func (w *DistinctWindow) check() error {
	for i := range w.slots {
		if err := w.slotDamage(uint64(i)); err != nil {
			return w.m.errorf("check", err)
		}
	}
	return w.after("check")
}

// slotDamage is ErrDamaged naming slot s's first register past the
// largest rank, or nil: the exports and snapshots that fold slots refuse
// such a slot rather than carry the value elsewhere.
func (w *DistinctWindow) slotDamage(s uint64) error {
	l := &w.slots[s]
	if j, v, bad := l.Damaged(); bad {
		return fmt.Errorf("%w: register %d of slot %d holds %d, more than the largest rank %d of precision %d", ErrDamaged, j, s, v, l.Q()+1, l.P)
	}
	return nil
}

// Close stops the handle's clock and releases the descriptor, the lock's
// liveness token and the file's pages; safe twice and while other
// goroutines use the handle. A slot this handle was clearing is finished
// by the next process that needs it.
func (w *DistinctWindow) Close() error {
	if w == nil {
		return nil
	}
	return w.closeWindow()
}

func (w *DistinctWindow) describe() (string, string) {
	if len(w.slots) == 0 {
		return "DistinctWindow", ""
	}
	return "DistinctWindow", fmt.Sprintf("2^%d registers%s, %v", w.slots[0].P, profileName(w.m.ent.params[1]), w.win)
}

func (w *DistinctWindow) statsOf() any { return w.Stats() }

// Config returns the config stored in the file: the window, the
// precision and the profile, without the seed (a secret: see Seed). A
// zero handle returns the zero config.
func (w *DistinctWindow) Config() DistinctWindowConfig {
	if w.m == nil {
		return DistinctWindowConfig{}
	}
	return distinctWindowEntryConfig(w.m.ent).(DistinctWindowConfig)
}

// ExportRedis returns the union of the periods the window covers as
// Redis's dense HyperLogLog, as Distinct.ExportRedis does for one count:
// PFCOUNT of it is Count, and PFMERGE merges it with other hosts'
// exports. It needs Redis's 16384 registers (precision 14;
// ErrIncompatible otherwise). When the window turns during the export,
// it starts again at the new period, as SnapshotCovered does. A covered
// slot with a damaged register is refused (ErrDamaged), as
// Distinct.ExportRedis refuses one.
func (w *DistinctWindow) ExportRedis() ([]byte, error) {
	out, _, err := w.ExportRedisCovered()
	return out, err
}

// ExportRedisCovered is ExportRedis, and says which periods the export
// covers.
func (w *DistinctWindow) ExportRedisCovered() ([]byte, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("export")
	}
	if p := w.slots[0].P; p != cells.RedisHLLP {
		return nil, Periods{}, w.m.errorf("export", fmt.Errorf("%w: Redis's HyperLogLog has 2^%d registers, this window 2^%d", ErrIncompatible, cells.RedisHLLP, p))
	}
	return w.exportCovered(redisDense)
}

// ExportPostgreSQL returns the union of the periods the window covers as
// a value of PostgreSQL's hll type, as Distinct.ExportPostgreSQL does for
// one count, with its caveats: hll_cardinality of it estimates Count, and
// hll_union_agg unites it with other hosts' exports. It needs at most
// 2^17 registers (precision 17; ErrIncompatible otherwise). When the
// window turns during the export, it starts again at the new period, as
// SnapshotCovered does. A covered slot with a damaged register is
// refused (ErrDamaged).
func (w *DistinctWindow) ExportPostgreSQL() ([]byte, error) {
	out, _, err := w.ExportPostgreSQLCovered()
	return out, err
}

// ExportPostgreSQLCovered is ExportPostgreSQL, and says which periods the
// export covers.
func (w *DistinctWindow) ExportPostgreSQLCovered() ([]byte, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("export")
	}
	if p := w.slots[0].P; p > cells.PostgreSQLMaxP {
		return nil, Periods{}, w.m.errorf("export", fmt.Errorf("%w: PostgreSQL's hll holds at most 2^%d registers, this window 2^%d", ErrIncompatible, cells.PostgreSQLMaxP, p))
	}
	return w.exportCovered(postgresqlFull)
}

// exportCovered folds the covered periods' registers into a union of this
// process's own, checks it and encodes it with enc.
func (w *DistinctWindow) exportCovered(enc func(*cells.Distinct) []byte) ([]byte, Periods, error) {
	u := w.union.Get().([]uint64)
	defer w.union.Put(u)
	clear(u)
	var bad error
	per, err := w.foldCovered(func(s uint64) {
		if bad == nil {
			bad = w.slotDamage(s)
		}
		w.raiseTo(u, s)
	}, func() {
		clear(u)
		bad = nil
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, Periods{}, w.m.errorf("export", err)
	}
	own := cells.Distinct{Regs: unsafe.Pointer(&u[0]), P: w.slots[0].P}
	if j, v, bad := own.Damaged(); bad {
		// A slot damaged after its check, during the fold: the union is
		// this process's own, checked again before it leaves.
		return nil, Periods{}, w.m.errorf("export", registerDamage(own.Damage(j, v)))
	}
	out := enc(&own)
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("export")
	}
	return out, per, nil
}

// ExportPeriods returns each period's HyperLogLog that the window holds,
// as Redis's dense encoding (ExportRedis's), newest first: the periods of
// the window at the current period (Current-Keep+1 to Current) whose slot
// holds them. A period's HyperLogLog PFMERGEd across hosts and merged back
// (MergePeriod) makes every host count every host's keys of that period:
// what the fleet module does, period by period. The hosts' windows need
// one config (and, in the default profile, one seed) and the same clock
// (a Period, and no Rotate). It needs precision 14 (ErrIncompatible); a
// damaged slot is ErrDamaged, a closed handle ErrClosed.
func (w *DistinctWindow) ExportPeriods() ([]WindowPeriod, error) {
	if w.open.Load() && w.slots[0].P != cells.RedisHLLP {
		return nil, w.m.errorf("export", fmt.Errorf("%w: Redis's HyperLogLog has 2^%d registers, this window 2^%d", ErrIncompatible, cells.RedisHLLP, w.slots[0].P))
	}
	return w.exportPeriods("export", func(s uint64) ([]byte, error) {
		return exportRegisters(&w.slots[s], redisDense)
	})
}

// MergePeriod merges a Redis HyperLogLog (ExportPeriods' Data of period p,
// another host's or the fleet's, as MergeRedis takes it) into the count of
// period p, when p is a period of the window now (Current-Keep+1 to
// Current): afterwards Count counts its keys while p stays in the window.
// Merging is idempotent. A period that left the window or has not begun
// is not merged (false); the slot of a past period this window never used
// is claimed for it, as an add claims the current one. Bytes MergeRedis
// refuses are refused so, and a merge during which the window turned past
// p+Keep (a Rotate, or a merge longer than a period) is ErrTimeout: part
// of p may then count in a later period. A read-only, frozen or closed
// handle merges nothing.
func (w *DistinctWindow) MergePeriod(p uint64, hll []byte) (bool, error) {
	return w.mergePeriod("merge", p, func(s uint64) error {
		return mergeRedisInto(&w.slots[s], hll)
	})
}

// Snapshot is SnapshotCovered without the periods.
func (w *DistinctWindow) Snapshot(at Place, opts ...Option) (*Distinct, error) {
	d, _, err := w.SnapshotCovered(at, opts...)
	return d, err
}

// SnapshotCovered copies the periods the window covers, while any process
// keeps adding, into ONE distinct count at a place, whose registers are
// the register-wise maximum of the covered periods' (the union of their
// keys), and returns it frozen and read-only with the periods it covers.
// It has the window's precision, profile and seed, so that it merges
// (Distinct.Merge) with the snapshots of other hosts' windows and with
// plain counts of that config, and its Count is the window's Count for
// those periods, however late it is asked.
//
// The copy counts every key whose add returned, in any process, before
// the call, in a period it covers. When the window turns during the copy,
// the copy starts again, as CountMinWindow.SnapshotCovered's does; the
// places and options are as CountMin.Snapshot's. A covered slot with a
// register past the largest rank (damage: Check reports ErrDamaged) is
// refused with ErrDamaged rather than folded into the copy.
func (w *DistinctWindow) SnapshotCovered(at Place, opts ...Option) (*Distinct, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("snapshot")
	}
	e := w.m.ent
	p := uint(e.params[0])
	sp := spec{kind: kindDistinct, size: distinctBytes(p), seed: w.m.lay.seed}
	copy(sp.params[:2], e.params[:2]) // a period's count: kind 6's words
	var periods Periods
	var err error
	sp.fill = func(data []byte, lay layout) error {
		d := lay.entries[0]
		periods, err = w.maxCovered(data[d.off : d.off+d.size])
		return err
	}
	m, err := createSnapshot(w.name(), at, sp, opts)
	d, err := finishSnapshot(&w.Handle, m, err, newDistinct)
	if err != nil {
		return nil, Periods{}, err
	}
	return d, periods, nil
}

// maxCovered raises dst's registers, a distinct count's region of the
// slots' precision, to the covered slots' and adds up their change counts
// in its change count.
func (w *DistinctWindow) maxCovered(dst []byte) (Periods, error) {
	regs := unsafe.Slice((*uint64)(unsafe.Pointer(&dst[cells.DistinctHeadBytes])), w.slots[0].M()/8)
	var changes uint64
	var bad error
	p, err := w.foldCovered(func(s uint64) {
		if bad == nil {
			bad = w.slotDamage(s)
		}
		changes += atomic.LoadUint64(w.slots[s].Changes)
		w.raiseTo(regs, s)
	}, func() {
		clear(dst)
		changes = 0
		bad = nil
	})
	*wordAt(dst, 0) = changes
	if err == nil {
		err = bad
	}
	return p, err
}

// copyRegion is windowBase.copyRegion for a distinct window: each covered
// slot's change count and registers. An arena's snapshot copies its
// distinct windows so.
func (w *DistinctWindow) copyRegion(dst []byte) error {
	return w.windowBase.copyRegion(dst, windowControlBytes(w.win.Keep), distinctSlotBytes(w.slots[0].P),
		func(s uint64) unsafe.Pointer { return unsafe.Pointer(w.slots[s].Changes) })
}
