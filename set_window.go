package sketch

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// SetWindowConfig is an exact set window's config: its window and the
// set's capacity and key length. Capacity counts every key the table
// holds, those whose period has left the window included until an add
// that finds the set full sweeps them out.
type SetWindowConfig struct {
	Window Window    `json:"window"`
	Set    SetConfig `json:"set"`
}

// setWindowBytes is the region of a set window: the window's control
// words, then a set's header and slots, each slot with a period word.
func setWindowBytes(capacity, keyBytes uint64, keep int) uint64 {
	return windowControlBytes(keep) + setBytes(capacity, keyBytes, true)
}

func (wc SetWindowConfig) createSpec() (spec, error) {
	if err := wc.Window.validate(); err != nil {
		return spec{}, err
	}
	if wc.Set.Capacity == 0 {
		return spec{}, errNoCapacity
	}
	return wc.spec()
}

// Bytes returns the size of the file a set window of this config needs,
// header included.
func (wc SetWindowConfig) Bytes() (uint64, error) {
	sp, err := wc.createSpec()
	if err != nil {
		return 0, err
	}
	return sp.fileSize(), nil
}

// spec asks for a set window: the zero Window attaches to any window, a
// Set without Capacity to any set (with its KeyBytes if it gives one);
// either one cannot create.
func (wc SetWindowConfig) spec() (spec, error) {
	ssp, err := wc.Set.specAt(kindExactSetWindow, true)
	if err != nil {
		return spec{}, err
	}
	sp := spec{kind: kindExactSetWindow, seed: wc.Set.Seed, match: ssp.match}
	w := wc.Window
	if w == (Window{}) {
		return sp, nil
	}
	if err := w.validate(); err != nil {
		return spec{}, err
	}
	sp.match = matchWindow(w, 3, ssp.match)
	if wc.Set.Capacity == 0 {
		return sp, nil
	}
	sp.size = windowControlBytes(w.Keep) + ssp.size
	sp.params = ssp.params
	sp.params[3], sp.params[4] = uint64(w.Period), uint64(w.Keep)
	return sp, nil
}

func setWindowEntryConfig(e entry) any {
	return SetWindowConfig{Window: storedWindow(e, 3), Set: setEntryConfig(e).(SetConfig)}
}

func setWindowEntryParams(e entry) map[string]float64 {
	ps := setEntryParams(e)
	ps["period_ns"] = float64(e.params[3])
	ps["keep"] = float64(e.params[4])
	return ps
}

func validateSetWindowEntry(e entry) error {
	if err := validateSetParams(e, true); err != nil {
		return fmt.Errorf("window: %w", err)
	}
	if err := validateWindowParams(e.params[3], e.params[4]); err != nil {
		return err
	}
	if want := setWindowBytes(e.params[0], e.params[1], int(e.params[4])); e.size != want {
		return fmt.Errorf("set window region of %d bytes, want %d", e.size, want)
	}
	return nil
}

// SetWindow is an exact set whose keys expire with their period, in a
// shared mapping: it holds a key from the period it was added in until
// that period leaves the window (Keep periods, the current one
// included), for replay detection within a window. Of any number of
// goroutines and processes adding one new id at once, exactly one is told
// it is new; an id seen in the window is told it is not.
//
// It is one table, as Set's (docs/DESIGN.md, "The exact set"), whose
// slots also keep the period their key was added in: a key is held while
// that period is in the window, and the slot of an expired key is taken
// by the next add whose path it is on, as a removed key's is. The periods
// are the windows' (window.go): every process computes the same current
// period from the clock or from the Rotate count in the file, and Rotate,
// Freeze and Current are theirs. Adding an id held in an expired period
// adds it in the current one.
//
// Capacity counts the keys the table holds, expired ones included: an add
// that finds the set full first sweeps the expired keys out (one walk of
// the table), and returns ErrFull only when Capacity keys are still in the
// window. Size it for the most ids Keep periods see.
//
// Contains, Keys and Stats take no lock; Add, Remove and Freeze take the
// file's write lock, as Set's do, and a process killed in one leaves
// nothing to repair. Served in Go in both builds.
type SetWindow struct {
	windowBase
	t        cells.Set
	capacity uint64
	lk       *fileLock // nil on a read-only handle
}

// SetWindowStats describes a set window at one moment.
type SetWindowStats struct {
	Capacity uint64 `json:"capacity"`
	KeyBytes int    `json:"key_bytes"`
	Slots    uint64 `json:"slots"`
	// Live is the keys of the periods the window covers; Held counts
	// expired ones too, which take room until an add sweeps them out
	// (Fill is Held / Capacity).
	Live uint64  `json:"live"`
	Held uint64  `json:"held"`
	Fill float64 `json:"fill"`
	// Tombstones, LongestRun, Adds and Removes are SetStats'.
	Tombstones uint64 `json:"tombstones"`
	LongestRun uint64 `json:"longest_run"`
	Adds       uint64 `json:"adds"`
	Removes    uint64 `json:"removes"`
	WindowStats
	FileStats
}

// OpenSetWindow opens the exact set window at a place (see Place),
// creating it with cfg where there is none, as OpenCountMin does. A given
// cfg.Window must be the stored window, and cfg.Set's Capacity and
// KeyBytes the stored ones where given (ErrIncompatible); the zero
// Window attaches to any window and a Set without Capacity to any set,
// and neither can create.
func OpenSetWindow(at Place, cfg SetWindowConfig, opts ...Option) (*SetWindow, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newSetWindow)
}

func newSetWindow(m *mapping) (*SetWindow, error) {
	e := m.ent
	win := storedWindow(e, 3)
	w := &SetWindow{capacity: e.params[0]}
	w.t = setTable(unsafe.Add(m.entryBase(), windowControlBytes(win.Keep)), e, m.lay.seed, true)
	// The window's slot words are kept as the other windows keep them,
	// so that every process agrees on the periods; their slots hold
	// nothing, so a clear has nothing to do.
	lk, err := w.start(m, w, win, func(uint64) {})
	if err != nil {
		return nil, err
	}
	w.lk = lk
	return w, nil
}

// Add adds key in the current period unless the window holds it, and
// reports whether it added: of any number of goroutines and processes
// adding one new id at once, exactly one is told true. A new key when
// Capacity keys are in the window is ErrFull; a key longer than KeyBytes
// is ErrInvalidArgument.
func (w *SetWindow) Add(key []byte) (added bool, err error) {
	if len(key) > w.t.KeyBytes {
		return false, w.m.errorf("add", fmt.Errorf("%w: a key of %d bytes is longer than the set's %d", ErrInvalidArgument, len(key), w.t.KeyBytes))
	}
	if err := w.mayWrite("add"); err != nil {
		return false, err
	}
	// The period is published (latest) before the lock, so that every
	// add after this one, in any process, is in this period or later.
	p, _, err := w.ctl.use()
	if err != nil {
		return false, w.m.errorf("add", err)
	}
	lo, hi := cells.Hash(key, w.t.Seed)
	err = w.exclusive("add", func() error {
		q := max(p, w.ctl.current())
		var full bool
		added, full = w.t.Insert(key, lo, hi, q, w.ctl.first(q), w.capacity)
		if full {
			return fmt.Errorf("%w: %d keys are in its window, its capacity", ErrFull, w.capacity)
		}
		return nil
	})
	return added, err
}

// AddString is Add for a string key, without copying it.
func (w *SetWindow) AddString(key string) (added bool, err error) {
	return w.Add(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Contains reports whether key was added in one of the periods the
// window covers (and not removed), without a lock, as Set.Contains. A
// closed handle answers false.
func (w *SetWindow) Contains(key []byte) bool {
	if len(key) > w.t.KeyBytes || !w.open.Load() {
		return false
	}
	lo, hi := cells.Hash(key, w.t.Seed)
	return w.t.Find(key, lo, hi, w.ctl.first(w.ctl.currentRead()))
}

// ContainsString is Contains for a string key, without copying it.
func (w *SetWindow) ContainsString(key string) bool {
	return w.Contains(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Remove takes key out of the window and reports whether the window held
// it.
func (w *SetWindow) Remove(key []byte) (removed bool, err error) {
	if len(key) > w.t.KeyBytes {
		return false, w.refuse("remove")
	}
	lo, hi := cells.Hash(key, w.t.Seed)
	err = w.exclusive("remove", func() error {
		removed = w.t.Remove(key, lo, hi, w.ctl.first(w.ctl.current()))
		return nil
	})
	return removed, err
}

// RemoveString is Remove for a string key, without copying it.
func (w *SetWindow) RemoveString(key string) (removed bool, err error) {
	return w.Remove(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Keys returns the keys of the periods the window covers, in no order,
// as Set.Keys does.
func (w *SetWindow) Keys() ([][]byte, error) {
	if !w.open.Load() {
		return nil, w.closedErr("list")
	}
	keys, err := listKeys(&w.t, w.ctl.first(w.ctl.currentRead()), w.lk)
	if err != nil {
		return nil, w.m.errorf("list", err)
	}
	return keys, w.after("list")
}

// Len returns how many keys the window holds now; it walks the table.
func (w *SetWindow) Len() uint64 {
	if !w.open.Load() {
		return 0
	}
	_, _, live, _ := w.t.Census(w.ctl.first(w.ctl.currentRead()))
	return live
}

// exclusive is Set.exclusive for the window.
func (w *SetWindow) exclusive(op string, f func() error) error {
	if err := w.refuse(op); err != nil {
		return err
	}
	if err := w.lk.lock(); err != nil {
		return w.m.errorf(op, err)
	}
	if atomic.LoadUint32(w.sealed) != 0 {
		w.lk.unlock()
		return w.m.errorf(op, ErrFrozen)
	}
	w.t.Recover()
	err := f()
	if uerr := w.lk.unlock(); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return w.m.errorf(op, err)
	}
	return w.after(op)
}

// Stats reports the window's shape, periods and how its slots are used;
// it walks the table.
func (w *SetWindow) Stats() SetWindowStats {
	st := SetWindowStats{Capacity: w.capacity, KeyBytes: w.t.KeyBytes, Slots: w.t.Size(), FileStats: FileStats{ReadOnly: w.ReadOnly()}}
	if w.m == nil || !w.open.Load() {
		st.Closed = true
		return st
	}
	st.WindowStats = w.periods()
	st.Bytes = w.m.ownBytes()
	st.Held, st.Tombstones, st.Live, st.LongestRun = w.t.Census(st.Oldest)
	st.Fill = float64(st.Held) / float64(w.capacity)
	st.Adds, st.Removes = w.t.Load(cells.SetHeadAdds), w.t.Load(cells.SetHeadRemoves)
	st.Frozen = atomic.LoadUint32(w.sealed) != 0
	if !w.open.Load() {
		return SetWindowStats{Capacity: st.Capacity, KeyBytes: st.KeyBytes, Slots: st.Slots, FileStats: FileStats{ReadOnly: w.ReadOnly(), Closed: true}}
	}
	return st
}

// Close stops the handle's clock and releases the descriptor, the lock's
// liveness token and the file's pages; safe twice.
func (w *SetWindow) Close() error {
	if w == nil {
		return nil
	}
	return w.closeWindow()
}

func (w *SetWindow) describe() (string, string) {
	return "SetWindow", fmt.Sprintf("%v, capacity %d, keys of up to %d bytes", w.win, w.capacity, w.t.KeyBytes)
}

func (w *SetWindow) statsOf() any { return w.Stats() }

// check is Set's check of the table.
func (w *SetWindow) check() error {
	if msg := w.t.Check(); msg != "" {
		return w.m.errorf("check", fmt.Errorf("%w: %s", ErrDamaged, msg))
	}
	if !w.open.Load() {
		return w.closedErr("check")
	}
	return nil
}

// Config returns the config stored in the file, without the seed. A
// zero handle returns the zero config.
func (w *SetWindow) Config() SetWindowConfig {
	if w.m == nil {
		return SetWindowConfig{}
	}
	return setWindowEntryConfig(w.m.ent).(SetWindowConfig)
}

// Snapshot copies the window into a new one at another place, frozen at
// the current period and read-only: it holds the keys the window held
// when the copy was made, however late it is read. The copy is made as
// Set.Snapshot's.
func (w *SetWindow) Snapshot(at Place, opts ...Option) (*SetWindow, error) {
	if !w.open.Load() {
		return nil, w.closedErr("snapshot")
	}
	m, err := createSnapshot(w.name(), at, entrySpec(w.m.ent, w.t.Seed, w.copyRegion), opts)
	return finishSnapshot(&w.Handle, m, err, newSetWindow)
}

// copyRegion copies the window's region into dst, frozen at the period
// current when the copy ended.
func (w *SetWindow) copyRegion(dst []byte) error {
	if err := copySetRegion(&w.t, w.lk, dst, uintptr(windowControlBytes(w.win.Keep))); err != nil {
		return err
	}
	p := w.ctl.currentRead()
	*wordAt(dst, wcLatest) = max(*wordAt(dst, wcLatest), p)
	*wordAt(dst, wcFrozen) = p + 1
	return nil
}
