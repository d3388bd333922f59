//go:build linux

package sketch

// One suite for every window. CountMinWindow, BloomWindow and
// DistinctWindow share their base (window_base.go: Rotate, Freeze,
// Current, Close, the read protocol, the clear's election), so what holds
// for that base is tested once here, over a table of the three kinds,
// with subtests named by kind: turns, views, freeze, close, damaged
// words, clears taken over or waited for, clock windows, and the process
// and race tests whose logic is the same. The model is bbolt's
// freelist_test.go, one table over every freelist. What only one kind
// promises (a Count-Min window's exact estimates per period, a Bloom
// window's fill and false positives, a distinct window's counts) stays in
// the kind's files. TestWindows_EveryWindowKind keeps the table to every
// window kind of testKinds.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

// windowCfgs sizes a window of any kind: each kind opens with its own
// part.
type windowCfgs struct {
	CountMin CountMinConfig
	Bloom    BloomConfig
	Distinct DistinctConfig
}

// dwinCfg is the distinct window's count of a period: 2^10 registers,
// with a fixed seed, so that the few keys a test adds take registers of
// their own (the adapter's answer for a key reads its register).
var dwinCfg = DistinctConfig{Precision: 10, Seed: 0xd157}

var (
	// exactCfgs: a Count-Min window whose estimates of a few hundred keys
	// are exact, a Bloom window of a few thousand keys a period at 1%,
	// and a distinct window of 2^10 registers.
	exactCfgs = windowCfgs{CountMin: winCfg, Bloom: bwinCfg, Distinct: dwinCfg}
	// procCfgs are the windows the child processes share.
	procCfgs = windowCfgs{CountMin: winCfg, Bloom: bwinProcCfg, Distinct: dwinCfg}
)

// windowKind is one kind of window as the suite drives it.
type windowKind struct {
	name string // the type's name, which String shows; it names subtests
	// open opens the window at a place with win and the kind's part of
	// cfgs.
	open func(at Place, win Window, cfgs windowCfgs, opts ...Option) (testWindow, error)
	// zero is a zero handle of the kind.
	zero func() testWindow
	// openPlain opens the kind's structure of one period (CountMin,
	// Bloom) at a place with its part of cfgs, and closes it.
	openPlain func(at Place, cfgs windowCfgs) error
	// stored is the config a window opened with win and cfgs reports
	// (Config): without the seed.
	stored func(win Window, cfgs windowCfgs) any
	// most is the largest count the kind tells of a key: a filter tells
	// present (1) or absent (0). closedCount is what a closed handle
	// tells of any key: ClosedEstimate, or present (a distinct window:
	// 0, as its Count).
	most, closedCount uint64
	// raisesOnly: the window's Adds counts only the adds that changed it
	// (a distinct window's Changes, the adds that raised a register), so
	// it is at most the adds made, not all of them.
	raisesOnly bool
	// keepParam and periodParam index the window's Keep and Period in the
	// file's entry parameters; spareParam is the first one unused.
	keepParam, periodParam, spareParam int
	// addRole and clearRole are the roles (TestHelperProcess) of the
	// kind's child that adds its own keys and of the one that stops inside
	// a clear.
	addRole, clearRole string
	// truth checks, once the children that added (addRole) are done, that
	// the window's answers cover the keys they printed; when the window no
	// longer turns (Rotate only), that it answers for all of them.
	truth func(t *testing.T, w testWindow, hs []*helper, still bool)
}

// counts is what the kind tells of a key counted n times in the window.
func (k *windowKind) counts(n uint64) uint64 { return min(n, k.most) }

// testWindow is a window handle through its kind's adapter: the shared
// methods as they are, the kind's verbs in common terms.
type testWindow interface {
	Rotate() error
	Freeze() error
	Current() uint64
	Close() error
	String() string
	Path() string
	Seed() uint64
	File() (*os.File, error)
	Sync() error
	StatsVar() StatsVar
	base() *windowBase // the control words
	handle() any       // the *CountMinWindow or *BloomWindow
	config() any       // Config()
	window() Window    // Config().Window
	// addN counts key n times (a filter takes it once, whatever n) and
	// returns what the add reports.
	addN(key []byte, n uint64) (addAnswer, error)
	// addBatch adds each key once, with AddBatch; out, when not nil,
	// receives each key's answer.
	addBatch(keys [][]byte, out []addAnswer) error
	// adds calls every add verb of the kind once with key, by name.
	adds(key []byte) map[string]error
	// count, countString and countBatch are what the window tells of a
	// key (Estimate, Contains as 0 or 1); countAt is count with the last
	// period of the window it read.
	count(key []byte) uint64
	countString(key string) uint64
	countBatch(keys [][]byte, out []uint64) error
	countAt(key []byte) (n, p uint64)
	// plant puts key, n times, into slot s's structure directly, as a
	// clear that stopped half way leaves it.
	plant(s uint64, key string, n uint64)
	stats() windowStats
	// sample is what the file shows now, for the process tests.
	sample() winSample
}

// addAnswer is what an add reports of its key: the window's count just
// before the add and with it. A Bloom window's before is 1 when the key
// was already in the window, and its after is 1.
type addAnswer struct{ before, after uint64 }

// windowStats is the part of a window's Stats both kinds have.
type windowStats struct {
	current, oldest, rotations uint64
	frozen, closed             bool
	// closedAnswers: the Stats are those of a closed handle (Count-Min:
	// Total is ClosedEstimate; Bloom: FPRateNow is 1, with no slots).
	closedAnswers bool
	slots         []slotStats
}

// slotStats is what both kinds' Stats say of one slot.
type slotStats struct {
	state  string
	period uint64
	// counted is what the slot took: a Count-Min slot's Total, a Bloom
	// slot's adds that set a bit (Added). seen is a Bloom slot's adds
	// that found their bits set (0 for Count-Min). empty: nothing in it
	// (Total 0, no bit set).
	counted, seen uint64
	empty         bool
}

var (
	countMinWindowKind = &windowKind{
		name: "CountMinWindow",
		open: func(at Place, win Window, cfgs windowCfgs, opts ...Option) (testWindow, error) {
			w, err := OpenCountMinWindow(at, CountMinWindowConfig{Window: win, CountMin: cfgs.CountMin}, opts...)
			if err != nil {
				return nil, err
			}
			return cmWindow{w}, nil
		},
		zero: func() testWindow { return cmWindow{new(CountMinWindow)} },
		openPlain: func(at Place, cfgs windowCfgs) error {
			c, err := OpenCountMin(at, cfgs.CountMin)
			if err != nil {
				return err
			}
			return c.Close()
		},
		stored: func(win Window, cfgs windowCfgs) any {
			return CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: cfgs.CountMin.Rows, Width: cfgs.CountMin.Width}}
		},
		most: cells.MaxCount, closedCount: ClosedEstimate,
		keepParam: 3, periodParam: 2, spareParam: 4,
		addRole: "winadd", clearRole: "winclear",
		truth: countMinWindowTruth,
	}
	bloomWindowKind = &windowKind{
		name: "BloomWindow",
		open: func(at Place, win Window, cfgs windowCfgs, opts ...Option) (testWindow, error) {
			w, err := OpenBloomWindow(at, BloomWindowConfig{Window: win, Bloom: cfgs.Bloom}, opts...)
			if err != nil {
				return nil, err
			}
			return bloomWindow{w}, nil
		},
		zero: func() testWindow { return bloomWindow{new(BloomWindow)} },
		openPlain: func(at Place, cfgs windowCfgs) error {
			b, err := OpenBloom(at, cfgs.Bloom)
			if err != nil {
				return err
			}
			return b.Close()
		},
		stored: func(win Window, cfgs windowCfgs) any {
			return BloomWindowConfig{Window: win, Bloom: BloomConfig{Capacity: cfgs.Bloom.Capacity, FPRate: cfgs.Bloom.FPRate}}
		},
		most: 1, closedCount: 1,
		keepParam: 5, periodParam: 4, spareParam: 6,
		addRole: "bwinadd", clearRole: "bwinclear",
		truth: refsTruth,
	}
	distinctWindowKind = &windowKind{
		name: "DistinctWindow",
		open: func(at Place, win Window, cfgs windowCfgs, opts ...Option) (testWindow, error) {
			w, err := OpenDistinctWindow(at, DistinctWindowConfig{Window: win, Distinct: cfgs.Distinct}, opts...)
			if err != nil {
				return nil, err
			}
			return distinctWindow{w}, nil
		},
		zero: func() testWindow { return distinctWindow{new(DistinctWindow)} },
		openPlain: func(at Place, cfgs windowCfgs) error {
			d, err := OpenDistinct(at, cfgs.Distinct)
			if err != nil {
				return err
			}
			return d.Close()
		},
		stored: func(win Window, cfgs windowCfgs) any {
			return DistinctWindowConfig{Window: win, Distinct: DistinctConfig{Precision: cfgs.Distinct.Precision, Redis: cfgs.Distinct.Redis}}
		},
		most: 1, closedCount: 0, raisesOnly: true,
		keepParam: 3, periodParam: 2, spareParam: 4,
		addRole: "dwinkeys", clearRole: "dwinclear",
		truth: refsTruth,
	}
	windowKinds = []*windowKind{countMinWindowKind, bloomWindowKind, distinctWindowKind}
)

// windowsOutsideSuite are the window kinds the suite does not drive, and
// why: their tests are their own.
var windowsOutsideSuite = map[string]string{
	// One table whose slots keep each key's period: no structure per
	// period to plant, clear or take over (set_window_test.go).
	"SetWindow": "keeps one table, not a structure per period",
}

// TestWindows_EveryWindowKind: the suite has a row for every window kind
// (testKinds) but those outside it, and no other.
func TestWindows_EveryWindowKind(t *testing.T) {
	var want, got []string
	for _, k := range testKinds {
		if k.window && windowsOutsideSuite[k.name] == "" {
			want = append(want, k.name)
		}
	}
	for _, k := range windowKinds {
		got = append(got, k.name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("windowKinds are %v, the window kinds of testKinds %v", got, want)
	}
}

// forEachKind runs f as a subtest for each kind of window.
func forEachKind(t *testing.T, f func(t *testing.T, k *windowKind)) {
	for _, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) { f(t, k) })
	}
}

// mustOpenKind opens a window of kind k, closed when the test ends.
func mustOpenKind(t testing.TB, k *windowKind, at Place, win Window, cfgs windowCfgs, opts ...Option) testWindow {
	t.Helper()
	w, err := k.open(at, win, cfgs, opts...)
	if err != nil {
		t.Fatalf("Open%s(%+v, %+v, %+v): %v", k.name, at, win, cfgs, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// cmWindow is a Count-Min window through the suite's adapter.
type cmWindow struct{ *CountMinWindow }

func (w cmWindow) base() *windowBase { return &w.windowBase }
func (w cmWindow) handle() any       { return w.CountMinWindow }
func (w cmWindow) config() any       { return w.Config() }
func (w cmWindow) window() Window    { return w.Config().Window }

func (w cmWindow) addN(key []byte, n uint64) (addAnswer, error) {
	var est uint64
	var err error
	if n == 1 {
		est, err = w.Add(key)
	} else {
		est, err = w.AddN(key, n)
	}
	return addAnswer{before: est - min(est, n), after: est}, err
}

func (w cmWindow) addBatch(keys [][]byte, out []addAnswer) error {
	var est []uint64
	if out != nil {
		est = make([]uint64, len(out))
	}
	err := w.AddBatch(keys, est)
	for i, e := range est {
		out[i] = addAnswer{before: e - min(e, 1), after: e}
	}
	return err
}

func (w cmWindow) adds(key []byte) map[string]error {
	_, add := w.Add(key)
	_, addN := w.AddN(key, 2)
	_, addS := w.AddString(string(key))
	return map[string]error{"Add": add, "AddN": addN, "AddString": addS,
		"AddBatch": w.AddBatch([][]byte{key}, nil), "AddBatch/estimates": w.AddBatch([][]byte{key}, make([]uint64, 1))}
}

func (w cmWindow) count(key []byte) uint64                   { return w.Estimate(key) }
func (w cmWindow) countString(key string) uint64             { return w.EstimateString(key) }
func (w cmWindow) countBatch(k [][]byte, out []uint64) error { return w.EstimateBatch(k, out) }

func (w cmWindow) countAt(key []byte) (uint64, uint64) {
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	return w.estimateOne(lo, hi)
}

func (w cmWindow) plant(s uint64, key string, n uint64) {
	lo, hi := cells.HashString(key, w.slots[0].Seed)
	w.slots[s].AddHashed(lo, hi, n)
}

func (w cmWindow) stats() windowStats {
	st := w.Stats()
	ws := windowStats{current: st.Current, oldest: st.Oldest, rotations: st.Rotations, frozen: st.Frozen,
		closed: st.Closed, closedAnswers: st.Total == ClosedEstimate}
	for _, sl := range st.Slots {
		ws.slots = append(ws.slots, slotStats{state: sl.State, period: sl.Period, counted: sl.Total, empty: sl.Total == 0})
	}
	return ws
}

// sample takes each slot's first row sum: a slot keeps no add count.
func (w cmWindow) sample() winSample {
	s := winSample{epoch: w.ctl.epoch()}
	sums := make([]uint64, w.slots[0].Rows)
	for i := range w.slots {
		s.words = append(s.words, atomic.LoadUint64(w.ctl.word(uint64(i))))
		// The handle's core: C in cgo builds, which the race detector
		// does not slow down (the sampler must finish inside a period).
		w.core.RowSums(&w.slots[i], sums)
		s.adds = append(s.adds, sums[0])
	}
	return s
}

// bloomWindow is a Bloom window through the suite's adapter.
type bloomWindow struct{ *BloomWindow }

func (w bloomWindow) base() *windowBase { return &w.windowBase }
func (w bloomWindow) handle() any       { return w.BloomWindow }
func (w bloomWindow) config() any       { return w.Config() }
func (w bloomWindow) window() Window    { return w.Config().Window }

func (w bloomWindow) addN(key []byte, _ uint64) (addAnswer, error) {
	already, err := w.Add(key)
	return addAnswer{before: b2u(already), after: b2u(err == nil)}, err
}

func (w bloomWindow) addBatch(keys [][]byte, out []addAnswer) error {
	var already []bool
	if out != nil {
		already = make([]bool, len(out))
	}
	err := w.AddBatch(keys, already)
	for i, a := range already {
		out[i] = addAnswer{before: b2u(a), after: b2u(err == nil)}
	}
	return err
}

func (w bloomWindow) adds(key []byte) map[string]error {
	_, add := w.Add(key)
	_, addS := w.AddString(string(key))
	return map[string]error{"Add": add, "AddString": addS,
		"AddBatch": w.AddBatch([][]byte{key}, nil), "AddBatch/already": w.AddBatch([][]byte{key}, make([]bool, 1))}
}

func (w bloomWindow) count(key []byte) uint64       { return b2u(w.Contains(key)) }
func (w bloomWindow) countString(key string) uint64 { return b2u(w.ContainsString(key)) }

func (w bloomWindow) countBatch(keys [][]byte, out []uint64) error {
	found := make([]bool, len(out))
	err := w.ContainsBatch(keys, found)
	for i, f := range found {
		out[i] = b2u(f)
	}
	return err
}

func (w bloomWindow) countAt(key []byte) (uint64, uint64) {
	lo, hi := cells.Hash(key, w.slots[0].Seed)
	found, p := w.lookup(lo, hi)
	return b2u(found), p
}

func (w bloomWindow) plant(s uint64, key string, _ uint64) {
	lo, hi := cells.HashString(key, w.slots[0].Seed)
	w.slots[s].AddHashed(lo, hi)
}

func (w bloomWindow) stats() windowStats {
	st := w.Stats()
	ws := windowStats{current: st.Current, oldest: st.Oldest, rotations: st.Rotations, frozen: st.Frozen,
		closed: st.Closed, closedAnswers: st.FPRateNow == 1 && len(st.Slots) == 0}
	for _, sl := range st.Slots {
		ws.slots = append(ws.slots, slotStats{state: sl.State, period: sl.Period, counted: sl.Adds - sl.AddsPresent, seen: sl.AddsPresent, empty: sl.Set == 0})
	}
	return ws
}

// sample takes each slot's adds, new or not.
func (w bloomWindow) sample() winSample {
	s := winSample{epoch: w.ctl.epoch()}
	for i := range w.slots {
		s.words = append(s.words, atomic.LoadUint64(w.ctl.word(uint64(i))))
		added, seen := w.slots[i].Counts()
		s.adds = append(s.adds, added+seen)
	}
	return s
}

// distinctWindow is a distinct window through the suite's adapter. A
// distinct count answers for no key, so what the adapter tells of a key
// is what its register shows: 1 when a slot of the window holds the
// key's rank or more in the key's register (as a Bloom filter of one
// hash would), which every key added in the window's periods does, and a
// key no other key shares a register with does only then. Closed, it
// answers 0, as Count does; it has no batch read, so countBatch asks key
// by key and, closed, returns the ErrClosed the other kinds' batch reads
// return (the suite's check of it holds for the adapter only).
type distinctWindow struct{ *DistinctWindow }

func (w distinctWindow) base() *windowBase { return &w.windowBase }
func (w distinctWindow) handle() any       { return w.DistinctWindow }
func (w distinctWindow) config() any       { return w.Config() }
func (w distinctWindow) window() Window    { return w.Config().Window }

func (w distinctWindow) addN(key []byte, _ uint64) (addAnswer, error) {
	before := w.count(key)
	err := w.Add(key)
	return addAnswer{before: before, after: b2u(err == nil)}, err
}

func (w distinctWindow) addBatch(keys [][]byte, out []addAnswer) error {
	for i := range out {
		out[i].before = w.count(keys[i])
	}
	err := w.AddBatch(keys)
	for i := range out {
		out[i].after = b2u(err == nil)
	}
	return err
}

func (w distinctWindow) adds(key []byte) map[string]error {
	return map[string]error{"Add": w.Add(key), "AddString": w.AddString(string(key)), "AddBatch": w.AddBatch([][]byte{key})}
}

func (w distinctWindow) count(key []byte) uint64 {
	n, _ := w.countAt(key)
	return n
}

func (w distinctWindow) countString(key string) uint64 { return w.count([]byte(key)) }

func (w distinctWindow) countBatch(keys [][]byte, out []uint64) error {
	for i, k := range keys {
		out[i] = w.count(k)
	}
	if !w.open.Load() {
		return w.closedErr("count")
	}
	return nil
}

func (w distinctWindow) countAt(key []byte) (uint64, uint64) {
	if !w.open.Load() {
		return 0, 0
	}
	reg, rank := w.slots[0].Place(w.slots[0].Hash(key))
	found := false
	p := w.ctl.readStable(func(p uint64) bool {
		found = false
		return w.ctl.readWindow(p, false, func(s uint64) bool {
			found = w.slots[s].Register(reg) >= rank
			return found
		})
	})
	if !w.open.Load() {
		return 0, p // what was read may be the placeholder
	}
	return b2u(found), p
}

func (w distinctWindow) plant(s uint64, key string, _ uint64) {
	w.slots[s].AddHashed(w.slots[0].HashString(key))
}

func (w distinctWindow) stats() windowStats {
	st := w.Stats()
	ws := windowStats{current: st.Current, oldest: st.Oldest, rotations: st.Rotations, frozen: st.Frozen,
		closed: st.Closed, closedAnswers: st.Estimate == 0 && len(st.Slots) == 0}
	for _, sl := range st.Slots {
		ws.slots = append(ws.slots, slotStats{state: sl.State, period: sl.Period, counted: sl.RegisterChanges, empty: sl.Zero == uint64(st.Registers)})
	}
	return ws
}

// sample takes each slot's change count: the adds that raised a
// register.
func (w distinctWindow) sample() winSample {
	s := winSample{epoch: w.ctl.epoch()}
	for i := range w.slots {
		s.words = append(s.words, atomic.LoadUint64(w.ctl.word(uint64(i))))
		s.adds = append(s.adds, atomic.LoadUint64(w.slots[i].Changes))
	}
	return s
}

// checkTurned checks a Rotate-only window after round turns: Current and
// Stats name the periods covered; one slot serves the current period,
// the window's earlier periods have theirs, and after the first turn one
// more is cleared ahead for the next. It returns the Stats.
func checkTurned(t *testing.T, w testWindow, round uint64) windowStats {
	t.Helper()
	if got := w.Current(); got != round {
		t.Fatalf("Current() = %d after %d rotations", got, round)
	}
	st := w.stats()
	first := w.base().ctl.first(round)
	if st.current != round || st.oldest != first || st.rotations != round {
		t.Fatalf("round %d: Stats = current %d oldest %d rotations %d, want %d %d %d",
			round, st.current, st.oldest, st.rotations, round, first, round)
	}
	states := map[string]int{}
	for _, sl := range st.slots {
		states[sl.state]++
	}
	if states["current"] != 1 || states["window"] != min(w.window().Keep-1, int(round)) {
		t.Fatalf("round %d: slot states %v", round, states)
	}
	if round > 0 && states["next"] != 1 {
		t.Fatalf("round %d: no slot cleared ahead for the next period: %v", round, states)
	}
	return st
}

// TestWindows_ErrInvalidConfig: windows that cannot be built, at every
// place; the zero Window only attaches, so it creates nothing.
func TestWindows_ErrInvalidConfig(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, w := range []Window{
			{},
			{Keep: -1},
			{Keep: MaxWindowKeep + 1},
			{Period: -time.Second, Keep: 2},
			{Period: time.Microsecond, Keep: 2},
		} {
			t.Run(fmt.Sprintf("period=%v/keep=%d", w.Period, w.Keep), func(t *testing.T) {
				for _, at := range []Place{Path(tempPath(t, "win")), Memory(), Memfd("win")} {
					if _, err := k.open(at, w, exactCfgs); !errors.Is(err, ErrInvalidConfig) {
						t.Errorf("Open%s(%v) = %v, want ErrInvalidConfig", k.name, at, err)
					}
				}
			})
		}
		// The zero Window, with a Count-Min shape or the Bloom window's
		// zero config, at a path where there is nothing to attach to.
		cfgs := windowCfgs{CountMin: winCfg}
		missing := tempPath(t, "missing")
		_, err := k.open(Path(missing), Window{}, cfgs)
		if !errors.Is(err, ErrInvalidConfig) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
			t.Errorf("zero Window on a missing file = %v, want ErrInvalidConfig and fs.ErrNotExist naming the file", err)
		}
		if _, err := k.open(Memory(), Window{}, cfgs); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("the zero Window in memory = %v, want ErrInvalidConfig", err)
		}
	})
}

// incompatible is a window asked of a file that holds another.
type incompatible struct {
	name string
	win  Window
	cfgs windowCfgs
}

// checkIncompatible opens each case of kind k with open: each is refused
// with ErrIncompatible.
func checkIncompatible(t *testing.T, k *windowKind, open func(win Window, cfgs windowCfgs) error, cases []incompatible) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := open(tc.win, tc.cfgs); !errors.Is(err, ErrIncompatible) {
				t.Errorf("Open%s(%+v, %+v) = %v, want ErrIncompatible", k.name, tc.win, tc.cfgs, err)
			}
		})
	}
}

// opener opens, and closes, windows of kind k at path.
func opener(k *windowKind, path string) func(win Window, cfgs windowCfgs) error {
	return func(win Window, cfgs windowCfgs) error {
		w, err := k.open(Path(path), win, cfgs)
		if err == nil {
			w.Close()
		}
		return err
	}
}

// TestWindows_ErrIncompatible: a window attached with another window than
// the file's is refused, and so are the files of the other window kind
// and of the kind's plain structure, and a window asked of them.
func TestWindows_ErrIncompatible(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		path := tempPath(t, "win")
		win := Window{Period: time.Minute, Keep: 3}
		w := mustOpenKind(t, k, Path(path), win, exactCfgs)
		w.addN([]byte("k"), 1)
		checkIncompatible(t, k, opener(k, path), []incompatible{
			{"keep", Window{Period: time.Minute, Keep: 2}, exactCfgs},
			{"period", Window{Period: time.Second, Keep: 3}, exactCfgs},
			{"rotate only", Window{Keep: 3}, exactCfgs},
		})
		if err := k.openPlain(Path(path), windowCfgs{}); !errors.Is(err, ErrIncompatible) {
			t.Errorf("the plain structure of a %s file = %v, want ErrIncompatible", k.name, err)
		}
		plain := tempPath(t, "plain")
		if err := k.openPlain(Path(plain), windowCfgs{Bloom: bwinCfg}); err != nil {
			t.Fatal(err)
		}
		for _, other := range windowKinds {
			for _, tc := range []struct {
				win  Window
				cfgs windowCfgs
			}{{Window{}, windowCfgs{}}, {win, windowCfgs{}}, {win, exactCfgs}} {
				if other != k {
					if _, err := other.open(Path(path), tc.win, tc.cfgs); !errors.Is(err, ErrIncompatible) {
						t.Errorf("Open%s(%+v, %+v) of a %s file = %v, want ErrIncompatible", other.name, tc.win, tc.cfgs, k.name, err)
					}
					continue
				}
				if _, err := k.open(Path(plain), tc.win, tc.cfgs); !errors.Is(err, ErrIncompatible) {
					t.Errorf("Open%s(%+v, %+v) of the plain structure's file = %v, want ErrIncompatible", k.name, tc.win, tc.cfgs, err)
				}
			}
		}
	})
}

// TestWindows_ZeroWindowAttach: the zero Window and config attach to the
// stored window, by path and through an inherited descriptor of a memfd,
// and report it; a turn or an add through the attached handle is one for
// the other handle too. Another window, shape or seed is refused.
func TestWindows_ZeroWindowAttach(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		t.Run("path", func(t *testing.T) {
			path := tempPath(t, "win")
			win := Window{Keep: 3}
			w := mustOpenKind(t, k, Path(path), win, exactCfgs)
			w.addN([]byte("a"), 1)
			z := mustOpenKind(t, k, Path(path), Window{}, windowCfgs{})
			if got, want := z.config(), k.stored(win, exactCfgs); got != want {
				t.Errorf("zero Window attached as %+v, want %+v", got, want)
			}
			if got := z.countString("a"); got != 1 {
				t.Errorf("count(a) through the zero-Window handle = %d, want 1", got)
			}
			if _, err := z.addN([]byte("a"), 1); err != nil {
				t.Fatal(err)
			}
			if err := z.Rotate(); err != nil {
				t.Fatal(err)
			}
			if got := w.countString("a"); got != k.counts(2) || w.Current() != 1 {
				t.Errorf("after the zero-Window handle's add and Rotate: count %d, current %d; want %d, 1", got, w.Current(), k.counts(2))
			}
		})
		t.Run("memfd", func(t *testing.T) {
			win := Window{Keep: 2}
			w := mustOpenKind(t, k, Memfd("win"), win, exactCfgs)
			w.addN([]byte("k"), 1)
			attach := func(aw Window, cfgs windowCfgs) (testWindow, error) {
				f, err := w.File()
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				return k.open(Inherited(f.Fd()), aw, cfgs)
			}
			a, err := attach(Window{}, windowCfgs{})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if a.countString("k") != 1 || a.window() != win || a.Path() != "" {
				t.Errorf("attached: count(k) = %d, window %+v, Path() = %q", a.countString("k"), a.window(), a.Path())
			}
			if err := a.Rotate(); err != nil {
				t.Fatal(err)
			}
			if got, _ := w.addN([]byte("k"), 1); got.before != 1 || w.Current() != 1 {
				t.Errorf("after the attached handle's Rotate: Add(k) = %+v at period %d, want 1 before, at 1", got, w.Current())
			}
			checkIncompatible(t, k, func(aw Window, cfgs windowCfgs) error {
				a, err := attach(aw, cfgs)
				if err == nil {
					a.Close()
				}
				return err
			}, []incompatible{
				{"keep", Window{Keep: 3}, windowCfgs{}},
				{"shape", Window{}, windowCfgs{CountMin: CountMinConfig{Rows: 4, Width: 1 << 12}, Bloom: BloomConfig{Capacity: 10}, Distinct: DistinctConfig{Precision: 12}}},
				{"seed", win, windowCfgs{CountMin: CountMinConfig{Rows: 4, Width: 1 << 14, Seed: 1}, Bloom: BloomConfig{Capacity: 4000, FPRate: 0.01, Seed: 1},
					Distinct: DistinctConfig{Precision: dwinCfg.Precision, Seed: 1}}},
			})
		})
	})
}

// TestWindows_ViewsAndClose: a read-only view reads and refuses mutators;
// a frozen window refuses them and keeps its window however late it is
// read; a closed handle reports ErrClosed and answers what cannot pass
// for an answer of an open one (Count-Min: ClosedEstimate; a filter never
// claims absence); String hides the seed.
func TestWindows_ViewsAndClose(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		path := tempPath(t, "win")
		// Periods of an hour keep the real clock out of the way: the test
		// moves it by hand past the window after the freeze.
		win := Window{Period: time.Hour, Keep: 2}
		w := mustOpenKind(t, k, Path(path), win, exactCfgs)
		if _, err := w.addN([]byte("k"), 7); err != nil {
			t.Fatal(err)
		}
		mutators := func(w testWindow) map[string]error {
			errs := w.adds([]byte("x"))
			errs["Rotate"], errs["Freeze"] = w.Rotate(), w.Freeze()
			return errs
		}
		ro := mustOpenKind(t, k, Path(path), win, exactCfgs, WithReadOnly())
		if got, absent := ro.countString("k"), ro.countString("absent"); got != k.counts(7) || absent != 0 {
			t.Errorf("read-only count(k), count(absent) = %d, %d; want %d, 0", got, absent, k.counts(7))
		}
		for name, err := range mutators(ro) {
			if !errors.Is(err, ErrReadOnly) {
				t.Errorf("read-only %s = %v, want ErrReadOnly", name, err)
			}
		}
		if err := w.Freeze(); err != nil {
			t.Fatal(err)
		}
		frozenAt := w.Current()
		for _, h := range []testWindow{w, ro} {
			h.base().ctl.clk.cur.Add(4) // the clock moves past the window
		}
		for name, err := range mutators(w) {
			if !errors.Is(err, ErrFrozen) {
				t.Errorf("frozen %s = %v, want ErrFrozen", name, err)
			}
		}
		for _, h := range []testWindow{w, ro} {
			if got, x := h.countString("k"), h.countString("x"); got != k.counts(7) || x != 0 || h.Current() != frozenAt {
				t.Errorf("frozen window: count(k) = %d, count(x) = %d at period %d, want %d, 0 at %d", got, x, h.Current(), k.counts(7), frozenAt)
			}
			if st := h.stats(); !st.frozen || st.current != frozenAt {
				t.Errorf("frozen window: Stats = %+v", st)
			}
		}
		if _, err := k.open(Path(path), win, exactCfgs); !errors.Is(err, ErrFrozen) {
			t.Errorf("read-write open of a frozen window = %v, want ErrFrozen", err)
		}
		h := w.handle()
		s := fmt.Sprintf("%v %+v %#v %s", h, h, h, w.String())
		if strings.Contains(s, fmt.Sprint(w.Seed())) || strings.Contains(s, fmt.Sprintf("%x", w.Seed())) || !strings.Contains(s, k.name) {
			t.Errorf("String = %q: want a description without the seed", s)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
		for name, err := range w.adds([]byte("k")) {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close = %v, want ErrClosed", name, err)
			}
		}
		if err := w.Rotate(); !errors.Is(err, ErrClosed) {
			t.Errorf("Rotate after Close = %v, want ErrClosed", err)
		}
		if got, gotS := w.count([]byte("never")), w.countString("never"); got != k.closedCount || gotS != k.closedCount {
			t.Errorf("count after Close = %d, %d (string), want %d", got, gotS, k.closedCount)
		}
		out := []uint64{0}
		if err := w.countBatch([][]byte{[]byte("never")}, out); !errors.Is(err, ErrClosed) || out[0] != k.closedCount {
			t.Errorf("countBatch after Close = %v, %d; want ErrClosed, %d", err, out[0], k.closedCount)
		}
		if st := w.stats(); !st.closed || !st.closedAnswers {
			t.Errorf("Stats after Close = %+v", st)
		}
	})
}

// TestWindows_ZeroValue: every method of the zero handles answers closed,
// without a panic; so do windows asked of the zero Arena.
func TestWindows_ZeroValue(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		w := k.zero()
		key := []byte("k")
		for name, err := range w.adds(key) {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s: %v", name, err)
			}
		}
		out := []uint64{7}
		if err := w.countBatch([][]byte{key}, out); !errors.Is(err, ErrClosed) || out[0] != k.closedCount {
			t.Errorf("countBatch: %v %v", out, err)
		}
		if w.count(key) != k.closedCount || w.count(nil) != k.closedCount || w.countString("k") != k.closedCount {
			t.Errorf("count of the zero value is not %d", k.closedCount)
		}
		if err := w.Rotate(); !errors.Is(err, ErrClosed) {
			t.Errorf("Rotate: %v", err)
		}
		if err := w.Freeze(); !errors.Is(err, ErrClosed) {
			t.Errorf("Freeze: %v", err)
		}
		if st := w.stats(); !st.closed || !st.closedAnswers {
			t.Errorf("Stats: %+v", st)
		}
		_ = w.StatsVar().String()
		_ = w.String()
		_ = w.config()
		if w.Current() != 0 {
			t.Errorf("Current: %d", w.Current())
		}
		if _, err := w.File(); !errors.Is(err, ErrClosed) {
			t.Errorf("File: %v", err)
		}
		if err := w.Sync(); !errors.Is(err, ErrClosed) {
			t.Errorf("Sync: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		var a Arena
		if _, err := k.open(a.Place("x"), Window{Keep: 2}, windowCfgs{CountMin: winCfg, Bloom: BloomConfig{Capacity: 100}}); !errors.Is(err, ErrClosed) {
			t.Errorf("a window of the zero Arena: %v", err)
		}
	})
	var a Arena
	if l := a.List(); len(l) != 0 {
		t.Errorf("List: %v", l)
	}
	if st := a.Stats(); !st.Closed {
		t.Errorf("Arena Stats: %+v", st)
	}
	if err := a.Freeze(); !errors.Is(err, ErrClosed) {
		t.Errorf("Arena Freeze: %v", err)
	}
	_ = a.String()
	if err := a.Close(); err != nil {
		t.Errorf("Arena Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Arena second Close: %v", err)
	}
}

// TestWindows_CloseWhileInUse: Close races every method from other
// goroutines; calls answer or report ErrClosed, nothing panics.
func TestWindows_CloseWhileInUse(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for range 20 {
			w, err := k.open(Path(tempPath(t, "win")), Window{Keep: 3}, windowCfgs{CountMin: CountMinConfig{Rows: 2, Width: 256}, Bloom: BloomConfig{Capacity: 256}})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range 5 {
				wg.Go(func() {
					<-start
					keys := [][]byte{[]byte("a"), []byte("b")}
					answers, out := make([]addAnswer, 2), make([]uint64, 2)
					for i := range 300 {
						var err error
						switch (g + i) % 5 {
						case 0:
							_, err = w.addN(keys[0], 1)
						case 1:
							err = w.addBatch(keys, answers)
						case 2:
							err = w.Rotate()
						case 3:
							err = w.countBatch(keys, out)
							_ = w.count(keys[1])
						case 4:
							_ = w.stats()
						}
						if err != nil && !errors.Is(err, ErrClosed) {
							t.Errorf("%v", err)
							return
						}
					}
				})
			}
			close(start)
			w.Close()
			w.Close()
			wg.Wait()
		}
	})
}

// damage is a file of a window, damaged.
type damage struct {
	name string
	edit func(b []byte)
	want error
}

// paramSet sets parameter i of the file's first entry to v, with the
// entry's checksum made good.
func paramSet(i int, v uint64) func(b []byte) {
	return func(b []byte) { native.PutUint64(b[otDirOff+entParams+8*i:], v); otResum(b) }
}

// checkDamaged makes a window of kind k, damages a copy of its file as
// each case says, and opens the copy by the zero Window and config and by
// the stored window: each open is refused with the case's sentinel,
// naming the file.
func checkDamaged(t *testing.T, k *windowKind, cases []damage) {
	t.Helper()
	src := tempPath(t, "win")
	win := Window{Keep: 2}
	w := mustOpenKind(t, k, Path(src), win, windowCfgs{CountMin: CountMinConfig{Rows: 2, Width: 8}, Bloom: BloomConfig{Capacity: 100, Seed: 3}, Distinct: DistinctConfig{Precision: 8, Seed: 3}})
	w.addN([]byte("a"), 1)
	w.Close()
	valid, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(valid)
			tc.edit(data)
			path := tempPath(t, "win")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, at := range []Window{{}, win} {
				if _, err := k.open(Path(path), at, windowCfgs{}); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
					t.Errorf("Open%s(%+v) = %v, want %v naming the file", k.name, at, err, tc.want)
				}
			}
		})
	}
}

// TestWindows_Corrupt: damaged window words of an entry are refused with
// the sentinel that says what is wrong, naming the file.
func TestWindows_Corrupt(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		checkDamaged(t, k, []damage{
			{"keep zero", paramSet(k.keepParam, 0), ErrCorrupt},
			{"keep too large", paramSet(k.keepParam, MaxWindowKeep+1), ErrCorrupt},
			{"keep of another region", paramSet(k.keepParam, 3), ErrCorrupt},
			{"period under a millisecond", paramSet(k.periodParam, 1000), ErrCorrupt},
			{"unknown parameter", paramSet(k.spareParam, 1), ErrCorrupt},
			{"entry checksum", func(b []byte) { b[otDirOff+entParams+8*k.keepParam] ^= 1 }, ErrChecksum},
		})
	})
}

// TestWindows_GarbageSlotWords: slot words that name periods far in the
// future (a damaged or crafted file) make adds fail with ErrCorrupt and
// reads answer, rather than loop.
func TestWindows_GarbageSlotWords(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		w := mustOpenKind(t, k, Path(tempPath(t, "win")), Window{Keep: 2}, exactCfgs)
		for s := range uint64(3) {
			atomic.StoreUint64(w.base().ctl.word(s), heldWord(maxPeriod))
		}
		for name, err := range w.adds([]byte("k")) {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s = %v, want ErrCorrupt", name, err)
			}
		}
		if got := w.countString("k"); got != 0 {
			t.Errorf("count = %d for a key never added, want 0", got)
		}
		out := []uint64{7}
		if err := w.countBatch([][]byte{[]byte("k")}, out); err != nil || out[0] != 0 {
			t.Errorf("countBatch = %v, %d for a key never added, want 0", err, out[0])
		}
	})
}

// TestWindows_DamagedEpoch: an epoch word no window can reach (damage, or
// a crafted file) makes Rotate and adds say the file is corrupt, rather
// than blame the caller's argument.
func TestWindows_DamagedEpoch(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		w := mustOpenKind(t, k, Path(tempPath(t, "win")), Window{Keep: 2}, windowCfgs{CountMin: winCfg, Bloom: BloomConfig{Capacity: 100}})
		atomic.StoreUint64(w.base().ctl.epochWord(), maxPeriod+5)
		if err := w.Rotate(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Rotate = %v, want ErrCorrupt", err)
		}
		for name, err := range w.adds([]byte("k")) {
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s = %v, want ErrCorrupt", name, err)
			}
		}
	})
}

// TestWindows_FreezeRacingRotate: a Rotate in another handle whose turn
// of the epoch lands just after Freeze recorded its period must not
// clear, ahead, a slot of a period the frozen window covers.
func TestWindows_FreezeRacingRotate(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		path := tempPath(t, "win")
		w := mustOpenKind(t, k, Path(path), Window{Keep: 2}, exactCfgs)
		r := mustOpenKind(t, k, Path(path), Window{}, windowCfgs{})
		w.addN([]byte("k"), 10) // period 0
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
		w.addN([]byte("k"), 10) // period 1: the window is periods 0 and 1
		if err := w.Freeze(); err != nil {
			t.Fatal(err)
		}
		// What the racing Rotate does after its checks: turn the epoch, then
		// clear the slot after the new current one, which holds period 0.
		ctl := &r.base().ctl
		atomic.AddUint64(ctl.epochWord(), 1)
		if err := ctl.prepare(ctl.current()+1, false); !errors.Is(err, ErrFrozen) {
			t.Errorf("a clear after the freeze: %v, want ErrFrozen", err)
		}
		if err := r.Rotate(); !errors.Is(err, ErrFrozen) {
			t.Errorf("Rotate of a frozen window: %v, want ErrFrozen", err)
		}
		for _, h := range []testWindow{w, r} {
			if got := h.countString("k"); got != k.counts(20) {
				t.Errorf("frozen window: count = %d, want %d (periods 0 and 1)", got, k.counts(20))
			}
		}
	})
}

// TestWindows_TakeOverDeadClearer: a slot left "clearing" under a token
// nobody holds (a dead process's) or under this handle's own id (a dead
// predecessor's) is cleared again by the next writer: what the
// half-cleared slot still held is gone, and the writer's key is new and
// the one add in the slot.
func TestWindows_TakeOverDeadClearer(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, own := range []bool{false, true} {
			t.Run(fmt.Sprintf("own=%v", own), func(t *testing.T) {
				w := mustOpenKind(t, k, Path(tempPath(t, "win")), Window{Keep: 2}, exactCfgs)
				w.addN([]byte("old"), 5) // period 0, slot 0
				for range 3 {
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
				// Period 3 uses slot 0, which Rotate cleared ahead; make it
				// look half cleared by a dead process.
				ctl := &w.base().ctl
				id := 4000
				if own {
					id = ctl.me
				}
				s := ctl.slotOf(3)
				atomic.StoreUint64(ctl.word(s), clearingWord(3, id))
				w.plant(s, "old", 5)
				start := time.Now()
				if got, err := w.addN([]byte("new"), 1); err != nil || got != (addAnswer{0, 1}) {
					t.Fatalf("Add after a dead clearer = %+v, %v; want new", got, err)
				}
				if got := w.countString("old"); got != 0 {
					t.Errorf("count(old) = %d, want 0: the slot was not cleared", got)
				}
				if got := atomic.LoadUint64(ctl.word(s)); got != heldWord(3) {
					t.Errorf("slot word %#x, want held(3)", got)
				}
				if st := w.stats().slots[s]; st.counted != 1 || st.seen != 0 {
					t.Errorf("slot %d %+v, want the one new add", s, st)
				}
				t.Logf("taken over in %v", time.Since(start))
			})
		}
	})
}

// TestWindows_WaitsForLiveClearer: a writer whose slot another live
// handle is clearing waits for it rather than adding into the clear.
func TestWindows_WaitsForLiveClearer(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		path := tempPath(t, "win")
		a := mustOpenKind(t, k, Path(path), Window{Keep: 2}, exactCfgs)
		b := mustOpenKind(t, k, Path(path), Window{Keep: 2}, exactCfgs)
		a.addN([]byte("k"), 1)
		a.Rotate()
		a.Rotate()
		// Rotate cleared period 3's slot ahead; period 4's (1) holds period
		// 1: a clear is due. b is its clearer, stopped inside the clear
		// until released.
		inside, release := make(chan struct{}), make(chan struct{})
		testHookWindowClear = func(s, p uint64) {
			if p == 4 {
				close(inside)
				<-release
			}
		}
		t.Cleanup(func() { testHookWindowClear = nil })
		go b.base().ctl.prepare(4, true)
		select {
		case <-inside:
		case <-time.After(patience):
			t.Fatal("the clear of period 4 did not start")
		}
		atomic.StoreUint64(a.base().ctl.epochWord(), 4) // turn without Rotate's own clear
		done := mustBlock(t, func() { a.addN([]byte("k"), 1) }, 30*time.Millisecond)
		close(release)
		<-done
		if got := a.countString("k"); got != 1 {
			t.Errorf("count(k) = %d after the wait, want 1", got)
		}
		if st := a.stats().slots[1]; st.period != 4 || st.counted != 1 {
			t.Errorf("slot 1 after the wait: %+v, want period 4 holding the one add", st)
		}
	})
}

// TestWindows_RotateWithLateTimer: in clock mode, a process whose timer
// has not fired yet follows the file's latest word (the period another
// process turned to by its clock). A Rotate through that process must
// still turn the period, for itself and for everyone: adds it makes after
// Rotate returned go to the new period, which every handle's answers
// cover (a Bloom window's Contains promises that a key added before it
// started is found). Here the handle whose timer is late is simulated by
// moving the other handle's clock one period ahead (its timer fired
// first), with a period of an hour so the real clock stays put.
func TestWindows_RotateWithLateTimer(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		path := tempPath(t, "win")
		win := Window{Period: time.Hour, Keep: 1}
		cfgs := windowCfgs{CountMin: winCfg, Bloom: BloomConfig{Capacity: 1000}}
		late := mustOpenKind(t, k, Path(path), win, cfgs)
		early := mustOpenKind(t, k, Path(path), win, cfgs)
		lateClk, earlyClk := late.base().ctl.clk, early.base().ctl.clk
		start := lateClk.cur.Load()
		earlyClk.cur.Add(1) // early's timer fired, late's has not yet
		if _, err := early.addN([]byte("before"), 1); err != nil {
			t.Fatal(err)
		}
		p := early.Current()
		if late.Current() != p {
			t.Fatalf("late handle at period %d, early at %d: latest should carry it", late.Current(), p)
		}
		if err := late.Rotate(); err != nil {
			t.Fatal(err)
		}
		if lateClk.cur.Load() != start {
			t.Skip("the hour turned during the test")
		}
		if got, want := late.Current(), p+1; got != want {
			t.Errorf("after its own Rotate, the rotating handle is at period %d, want %d (the other handle is at %d)", got, want, early.Current())
		}
		if late.Current() != early.Current() {
			t.Errorf("handles disagree on the period after Rotate: %d and %d", late.Current(), early.Current())
		}
		if _, err := late.addN([]byte("after"), 1); err != nil {
			t.Fatal(err)
		}
		// Keep 1: the window is the current period only, and the add was
		// made after Rotate returned.
		if got := early.countString("after"); got != 1 {
			t.Errorf("an add made after Rotate returned: count %d through the other handle, want 1", got)
		}
		lateClk.cur.Add(1) // late's timer fires at last
		if got := late.countString("after"); got != 1 {
			t.Errorf("an add made after Rotate returned: count %d through the rotating handle once its timer fired, want 1", got)
		}
	})
}

// seenBound bounds a test that runs until it has seen what it checks
// (periods turned, adds checked): only a machine that makes no progress
// at all gets near it.
const seenBound = time.Minute

// rotateRaceRef counts completed adds by the number of Rotate calls that
// had returned when each add started: such an add lands in that period or
// a later one.
type rotateRaceRef struct {
	rotDone atomic.Uint64
	done    [1 << 20]atomic.Uint64
}

// lowerInWindow returns a lower bound of what the window of period p
// holds, from a snapshot of done taken before p was read.
func lowerInWindow(snap map[uint64]uint64, first, p uint64) uint64 {
	var n uint64
	for r := first; r <= p; r++ {
		n += snap[r]
	}
	return n
}

// TestWindows_RotateRace: goroutines add one key through one handle while
// another handle turns a Rotate-only window as fast as it can; a third
// checks, through its own handle, that its answers one by one and in
// batches never tell less than the adds that certainly fall in the window
// (those started after the window's first period began and done before
// the read started): a Count-Min estimate is never below them, a key
// such an add put in a Bloom window is always found. Each add's own
// answer, while the period stays, meets the same bound.
func TestWindows_RotateRace(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, keep := range []int{1, 2, 3, 4, 5} {
			t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
				path := tempPath(t, "win")
				cfgs := windowCfgs{CountMin: CountMinConfig{Rows: 2, Width: 64}, Bloom: BloomConfig{Capacity: 64}}
				open := func() testWindow { return mustOpenKind(t, k, Path(path), Window{Keep: keep}, cfgs) }
				adder, rot, reader := open(), open(), open()
				ref := new(rotateRaceRef)
				key := []byte("hot")
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var failed atomic.Bool
				for g := range 2 {
					wg.Go(func() {
						for i := 0; ; i++ {
							select {
							case <-stop:
								return
							default:
							}
							c0 := adder.Current()
							first := adder.base().ctl.first(c0)
							var lower uint64
							for r := first; r <= c0; r++ {
								lower += ref.done[r].Load()
							}
							r := ref.rotDone.Load()
							batch := g == 1 && i%2 == 0
							var got addAnswer
							var err error
							if batch {
								out := make([]addAnswer, 1)
								err = adder.addBatch([][]byte{key}, out)
								got = out[0]
							} else {
								got, err = adder.addN(key, 1)
							}
							if err != nil {
								t.Error(err)
								return
							}
							ref.done[r].Add(1)
							if adder.Current() == c0 && (got.after < k.counts(lower+1) || got.before < k.counts(lower)) {
								failed.Store(true)
								t.Errorf("period %d: add (batch %v) answered %+v, but at least %d adds fall in periods %d..%d", c0, batch, got, lower+1, first, c0)
								return
							}
							// Leave periods without the key now and then.
							if i%64 == 0 {
								time.Sleep(50 * time.Microsecond)
							}
						}
					})
				}
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if ref.rotDone.Load() >= uint64(len(ref.done))-8 {
							return
						}
						if err := rot.Rotate(); err != nil {
							t.Error(err)
							return
						}
						ref.rotDone.Add(1)
					}
				})
				checks, bad := 0, 0
				deadline := time.Now().Add(700 * time.Millisecond)
				for time.Now().Before(deadline) && !failed.Load() {
					rd := ref.rotDone.Load()
					lo := uint64(0)
					if rd > uint64(keep)+3 {
						lo = rd - uint64(keep) - 3
					}
					hi := rd + 3
					snap := map[uint64]uint64{}
					for r := lo; r <= hi; r++ {
						snap[r] = ref.done[r].Load()
					}
					p0 := reader.Current()
					var got uint64
					batch := checks%2 == 1
					if batch {
						out := make([]uint64, 1)
						if err := reader.countBatch([][]byte{key}, out); err != nil {
							t.Fatal(err)
						}
						got = out[0]
					} else {
						got = reader.count(key)
					}
					p1 := reader.Current()
					first := reader.base().ctl.first(p0)
					if p0 != p1 || first < lo || p0 > hi {
						continue
					}
					checks++
					if n := lowerInWindow(snap, first, p0); got < k.counts(n) {
						bad++
						if bad <= 3 {
							t.Errorf("period %d (batch %v): count %d, but at least %d adds fall in periods %d..%d", p0, batch, got, n, first, p0)
						}
					}
				}
				close(stop)
				wg.Wait()
				t.Logf("%d checks, %d below the reference, %d rotations", checks, bad, ref.rotDone.Load())
			})
		}
	})
}

// Windows shared by real processes of both backends: periods turned by
// the clock and by Rotate from another process while everyone adds, and
// a clearer killed inside its clear.

const (
	envWinPeriod = "SKETCH_TEST_WIN_PERIOD_MS" // winadd: the window's period
	envWinKeep   = "SKETCH_TEST_WIN_KEEP"      // winadd: the window's keep
	envWinRun    = "SKETCH_TEST_WIN_RUN_MS"    // winadd: the longest it adds
	envWinStop   = "SKETCH_TEST_WIN_STOP"      // winadd: a file whose creation says stop
)

// winAdderRun bounds how long a child adder runs when its parent never
// tells it to stop (a parent that failed): within childTimeout.
const winAdderRun = 45 * time.Second

// winSampling bounds how long a parent samples the periods of its adders;
// they keep adding until it has seen what it must.
const winSampling = 30 * time.Second

// winStop tells a child adder when to stop: once the parent has created
// the file at envWinStop (looked for every 50 steps), or after envWinRun
// ms.
type winStop struct {
	path     string
	deadline time.Time
	stopped  bool
}

func newWinStop() *winStop {
	return &winStop{path: os.Getenv(envWinStop), deadline: time.Now().Add(time.Duration(envInt(envWinRun)) * time.Millisecond)}
}

// now reports whether the adder should stop before step.
func (s *winStop) now(step int) bool {
	if step%50 == 0 && !s.stopped {
		_, err := os.Stat(s.path)
		s.stopped = err == nil || time.Now().After(s.deadline)
	}
	return s.stopped
}

// winAdderEnv is the environment of child adder i of the window w at path,
// which stops once stopPath exists.
func winAdderEnv(path, stopPath string, i int, w Window) []string {
	return envs(envPath, path, envChild, i, envWinPeriod, w.Period.Milliseconds(), envWinKeep, w.Keep, envWinRun, winAdderRun.Milliseconds(), envWinStop, stopPath)
}

// stopAdders tells the adders started with stopPath to stop.
func stopAdders(t *testing.T, stopPath string) {
	t.Helper()
	if err := os.WriteFile(stopPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func envWindow() Window {
	return Window{Period: time.Duration(envInt(envWinPeriod)) * time.Millisecond, Keep: envInt(envWinKeep)}
}

// inChildWindow runs add, in child adder envChild, on the window of kind
// k at envPath (envWindow, procCfgs) once every child opened it, and
// closes the window.
func inChildWindow(k *windowKind, add func(w testWindow, me string) error) error {
	w, err := k.open(Path(os.Getenv(envPath)), envWindow(), procCfgs)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := childBarrier(); err != nil {
		return err
	}
	return add(w, os.Getenv(envChild))
}

// windowAdders starts children adders of kind k, alternating backends
// where both build; they add until stopAdders(t, stopPath).
func windowAdders(t *testing.T, k *windowKind, path, stopPath string, w Window, children int) []*helper {
	t.Helper()
	other := otherBackendExe(t)
	var specs []childSpec
	for i := range children {
		exe := ""
		if i%2 == 1 {
			exe = other
		}
		specs = append(specs, childSpec{exe: exe, name: fmt.Sprintf("adder %d", i), role: k.addRole, env: winAdderEnv(path, stopPath, i, w)})
	}
	return startGroup(t, childContext(t), specs)
}

// scanRefs calls parse with the fields after "ref" of each "ref" line of
// four fields that child c printed.
func scanRefs(t *testing.T, hs []*helper, parse func(c int, f []string) error) {
	t.Helper()
	for c, h := range hs {
		sc := bufio.NewScanner(bytes.NewReader(h.stdout.Bytes()))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "ref" {
				continue
			}
			if err := parse(c, f[1:]); err != nil {
				t.Fatalf("%s printed %q: %v", h.name, sc.Text(), err)
			}
		}
	}
}

// winSample is what a window's file shows at one moment: each slot's word
// and what it counted.
type winSample struct {
	epoch uint64
	words []uint64
	adds  []uint64
}

// grew reports whether any slot grew from sample a to b.
func grew(a, b winSample) bool {
	for i := range a.adds {
		if b.adds[i] > a.adds[i] {
			return true
		}
	}
	return false
}

// checkOneSlotGrew fails unless, between samples a and b taken inside
// period p, p's slot held p throughout and grew, and no other slot grew
// but those of earlier periods that held them throughout: an add that
// read its period before a turn may still land there.
func checkOneSlotGrew(t *testing.T, p uint64, a, b winSample) {
	t.Helper()
	n := uint64(len(a.words))
	s := p % n
	if a.words[s] != heldWord(p) || b.words[s] != heldWord(p) {
		t.Errorf("period %d: its slot %d held words %#x then %#x, want %#x", p, s, a.words[s], b.words[s], heldWord(p))
	}
	if b.adds[s] <= a.adds[s] {
		t.Errorf("period %d: its slot %d did not grow (%d then %d adds)", p, s, a.adds[s], b.adds[s])
	}
	for i := range a.adds {
		if uint64(i) == s || uint64(i) == (p+n-1)%n || b.adds[i] <= a.adds[i] {
			continue
		}
		// An add that found its slot holding its period lands there even
		// when the period turned twice since (its process lost the core
		// between the check and the add: a busy machine does it): a slot
		// of an earlier period of the window, unchanged between the
		// samples, may grow. The next period's slot, or one that changed,
		// may not.
		if st := decodeSlotWord(b.words[i]); a.words[i] == b.words[i] && !st.empty && !st.clearing && st.period < p {
			continue
		}
		t.Errorf("period %d: slot %d (word %#x) grew from %d to %d adds while slot %d serves", p, i, b.words[i], a.adds[i], b.adds[i], s)
	}
}

// sampleClockPeriods samples the file of the clock-turned window c twice
// inside each period of the clock, once the period is published and its
// slot holds it, and checks with checkOneSlotGrew each period in which
// the adders added between the samples. It returns how many periods it
// checked: want, unless an adder stopped or winSampling ran out first. A
// period in which this sampler ran late, or nobody added, gives no
// verdict: on a loaded machine either happens.
func sampleClockPeriods(t *testing.T, c *windowCtl, hs []*helper, want int, sample func() winSample) int {
	t.Helper()
	period := c.period
	deadline := time.Now().Add(winSampling)
	checked := 0
	for checked < want && !anyDone(hs) && time.Now().Before(deadline) {
		p := time.Now().UnixNano()/period + 1 // the next whole period
		end := p*period + period*85/100
		sleepUntil(p*period + period*4/10)
		// Until some adder published p and prepared its slot, a late
		// timer's adds still go to the period before.
		for !c.held(uint64(p)%c.n, uint64(p)) || atomic.LoadUint64(c.latestWord()) < uint64(p) {
			if time.Now().UnixNano() >= end {
				break
			}
			time.Sleep(time.Millisecond)
		}
		a := sample()
		sleepUntil(end)
		b := sample()
		if time.Now().UnixNano() >= (p+1)*period || !grew(a, b) {
			continue
		}
		checkOneSlotGrew(t, uint64(p), a, b)
		checked++
	}
	return checked
}

// sampleRotatedPeriods turns the Rotate-only window c with rotate, samples
// its file twice between turns, and checks with checkOneSlotGrew each
// period in which the adders added between the samples. It returns how
// many periods it checked, as sampleClockPeriods.
func sampleRotatedPeriods(t *testing.T, c *windowCtl, hs []*helper, want int, rotate func() error, sample func() winSample) int {
	t.Helper()
	deadline := time.Now().Add(winSampling)
	checked := 0
	for checked < want && !anyDone(hs) && time.Now().Before(deadline) {
		if err := rotate(); err != nil {
			t.Fatal(err)
		}
		p := c.epoch()
		time.Sleep(15 * time.Millisecond)
		a := sample()
		time.Sleep(45 * time.Millisecond)
		b := sample()
		if a.epoch != p || b.epoch != p {
			t.Fatalf("epoch moved from %d to %d/%d without a Rotate", p, a.epoch, b.epoch)
		}
		if !grew(a, b) {
			continue
		}
		checkOneSlotGrew(t, p, a, b)
		checked++
	}
	return checked
}

func anyDone(hs []*helper) bool {
	for _, h := range hs {
		select {
		case <-h.done:
			return true
		default:
		}
	}
	return false
}

// sleepUntil sleeps until the clock reads unix nanoseconds at.
func sleepUntil(at int64) { time.Sleep(time.Duration(at - time.Now().UnixNano())) }

// runWindowAdders creates the window of kind k at a new path, starts four
// children that add to it, lets sample check its periods (want of them),
// stops the children, and checks the kind's truth.
func runWindowAdders(t *testing.T, k *windowKind, win Window, want int, sample func(w testWindow, hs []*helper) int) {
	w := mustOpenKind(t, k, Path(tempPath(t, "win")), win, procCfgs) // creates it before the children race
	stopPath := w.Path() + ".stop"
	hs := windowAdders(t, k, w.Path(), stopPath, win, 4)
	checked := sample(w, hs)
	stopAdders(t, stopPath)
	for _, h := range hs {
		h.wait(t)
	}
	if checked < want {
		t.Errorf("checked %d periods in %v, want %d", checked, winSampling, want)
	}
	k.truth(t, w, hs, win.Period == 0)
	t.Logf("checked %d periods; stats %s", checked, w.StatsVar().String())
}

// TestWindows_ClockProcesses: four processes, of both backends, add
// through 100 ms periods of the clock until six periods were checked.
// Inside every period the file shows one slot growing, the period's own;
// every answer a child gets covers what it added itself in the periods
// the answer covers (checked in the child), and so do this process's
// answers once the children are done (the kind's truth). A Count-Min
// window of Keep 2 takes its short ways; a Bloom window's answers look
// through 4 periods.
func TestWindows_ClockProcesses(t *testing.T) {
	requireReexec(t)
	for _, tc := range []struct {
		k    *windowKind
		keep int
	}{{countMinWindowKind, 2}, {bloomWindowKind, 4}, {distinctWindowKind, 3}} {
		t.Run(tc.k.name, func(t *testing.T) {
			runWindowAdders(t, tc.k, Window{Period: 100 * time.Millisecond, Keep: tc.keep}, 6, func(w testWindow, hs []*helper) int {
				return sampleClockPeriods(t, &w.base().ctl, hs, 6, w.sample)
			})
		})
	}
}

// TestWindows_RotateProcesses: four processes, of both backends, add while
// this process turns a Rotate-only window about every 60 ms, until eight
// periods were checked. Between two turns the file shows one slot
// growing, the new period's, and the answers cover the children's adds as
// above.
func TestWindows_RotateProcesses(t *testing.T) {
	requireReexec(t)
	forEachKind(t, func(t *testing.T, k *windowKind) {
		runWindowAdders(t, k, Window{Keep: 3}, 8, func(w testWindow, hs []*helper) int {
			return sampleRotatedPeriods(t, &w.base().ctl, hs, 8, w.Rotate, w.sample)
		})
	})
}

// childWindowClear opens the Rotate-only window of kind k at envPath,
// stops inside the first clear it wins (saying "clearing SLOT PERIOD"),
// and waits there to be killed.
func childWindowClear(k *windowKind) error {
	w, err := k.open(Path(os.Getenv(envPath)), Window{Keep: 2}, procCfgs)
	if err != nil {
		return err
	}
	testHookWindowClear = func(s, p uint64) {
		fmt.Printf("clearing %d %d\n", s, p)
		time.Sleep(time.Hour) // (select{} would be a deadlock to the runtime)
	}
	return w.Rotate()
}

var (
	_ = role("winclear", childWinClear)
	_ = role("bwinclear", childBloomWinClear)
	_ = role("dwinclear", childDistinctWinClear)
)

func childWinClear() error         { return childWindowClear(countMinWindowKind) }
func childBloomWinClear() error    { return childWindowClear(bloomWindowKind) }
func childDistinctWinClear() error { return childWindowClear(distinctWindowKind) }

// TestWindows_KillClearer: a process killed with SIGKILL inside the clear
// of a slot is finished by the next process that needs the slot, whether
// it was already waiting or came after: the slot ends up holding the new
// period, empty of what it held before.
func TestWindows_KillClearer(t *testing.T) {
	requireReexec(t)
	other := otherBackendExe(t)
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, tc := range []struct {
			name   string
			exe    string
			parked bool
		}{
			{"parked", "", true},
			{"after/other backend", other, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				path := tempPath(t, "win")
				w := mustOpenKind(t, k, Path(path), Window{Keep: 2}, procCfgs)
				ctl := &w.base().ctl
				w.addN([]byte("old"), 5) // period 0, slot 0
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				w.addN([]byte("old-1"), 7) // period 1, slot 1
				// The child's Rotate turns to period 2 and clears slot 0
				// ahead for period 3; it stops inside that clear.
				exe := tc.exe
				if exe == "" {
					exe = selfExe(t)
				}
				child := startLockChildCmd(t, childContext(t), "clearer", k.clearRole, path, nil,
					[]string{exe, "-test.run=^TestHelperProcess$"})
				child.expect(t, "clearing 0 3")
				if got := decodeSlotWord(atomic.LoadUint64(ctl.word(0))); !got.clearing || got.period != 3 || got.id == ctl.me {
					t.Fatalf("slot 0 is %+v, want cleared for period 3 by the child", got)
				}
				// Period 3's turn needs slot 0.
				var done <-chan struct{}
				var rotErr error
				if tc.parked {
					done = mustBlock(t, func() { rotErr = w.Rotate() }, 50*time.Millisecond)
				}
				killed := time.Now()
				child.cmd.Process.Signal(syscall.SIGKILL)
				<-child.done
				if !tc.parked {
					ch := make(chan struct{})
					go func() { rotErr = w.Rotate(); close(ch) }()
					done = ch
				}
				select {
				case <-done:
				case <-time.After(patience):
					t.Fatalf("Rotate did not finish within %v of the clearer's death", patience)
				}
				if rotErr != nil {
					t.Fatal(rotErr)
				}
				t.Logf("finished %v after the SIGKILL", time.Since(killed))
				if p := w.Current(); p != 3 {
					t.Fatalf("Current() = %d, want 3", p)
				}
				if got := atomic.LoadUint64(ctl.word(0)); got != heldWord(3) {
					t.Errorf("slot 0 word %#x, want held(3)", got)
				}
				if st := w.stats().slots[0]; !st.empty || st.counted != 0 {
					t.Errorf("slot 0 of period 3 before any add: %+v, want it empty", st)
				}
				if old, old1 := w.countString("old"), w.countString("old-1"); old != 0 || old1 != 0 {
					t.Errorf("count(old), count(old-1) = %d, %d in periods 2..3, want 0: the slots of periods 0 and 1 left the window", old, old1)
				}
				if got, err := w.addN([]byte("new"), 1); got != (addAnswer{0, 1}) || err != nil {
					t.Errorf("Add(new) = %+v, %v; want new", got, err)
				}
				if st := w.stats().slots[0]; st.counted != 1 || st.seen != 0 || st.empty {
					t.Errorf("slot 0 %+v, want the one new add", st)
				}
			})
		}
	})
}

// TestWindowStats_FlatJSON: the three windows' Stats embed WindowStats,
// whose fields marshal flat beside the kind's own, as they did before they
// were shared.
func TestWindowStats_FlatJSON(t *testing.T) {
	win := Window{Period: time.Hour, Keep: 2}
	cm := mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: win, CountMin: CountMinConfig{Rows: 2, Width: 256}})
	bw := mustIn(t, OpenBloomWindow, Memory(), BloomWindowConfig{Window: win, Bloom: BloomConfig{Capacity: 100}})
	dw := mustIn(t, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: win})
	for name, v := range map[string]StatsVar{"CountMinWindow": cm.StatsVar(), "BloomWindow": bw.StatsVar(), "DistinctWindow": dw.StatsVar()} {
		var got map[string]any
		if err := json.Unmarshal([]byte(v.String()), &got); err != nil {
			t.Fatalf("%s: StatsVar().String() = %s: %v", name, v, err)
		}
		if _, ok := got["WindowStats"]; ok {
			t.Errorf("%s: stats JSON nests WindowStats: %s", name, v)
		}
		for _, k := range []string{"period", "keep", "current", "oldest", "start", "rotations", "turns", "bytes", "frozen"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: stats JSON has no %q: %s", name, k, v)
			}
		}
		if got["period"] != float64(time.Hour) || got["keep"] != float64(2) {
			t.Errorf("%s: period, keep = %v, %v; want %d, 2", name, got["period"], got["keep"], time.Hour)
		}
	}
}
