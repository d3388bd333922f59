package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// dwSeed is the seed the window tests share with their models.
const dwSeed = 0xd15c0

// dwCfg is a distinct window of precision p that turns on Rotate only.
func dwCfg(p, keep int) DistinctWindowConfig {
	return DistinctWindowConfig{Window: Window{Keep: keep}, Distinct: DistinctConfig{Precision: p, Seed: dwSeed}}
}

// slotRegisters is slot s's register array, as the file holds it.
func slotRegisters(w *DistinctWindow, s int) []byte {
	return unsafe.Slice((*byte)(w.slots[s].Regs), w.slots[s].M())
}

// dwModel is the distinct count one process makes of the keys of the
// periods first .. last of added (period -> its key ranges).
func dwModel(t *testing.T, p int, added map[uint64][][2]int, first, last uint64) *Distinct {
	t.Helper()
	d := mustDistinct(t, DistinctConfig{Precision: p, Seed: dwSeed})
	for q := first; q <= last; q++ {
		for _, r := range added[q] {
			addRange(t, d, r[0], r[1])
		}
	}
	return d
}

// TestDistinctWindow_Periods: over turns by Rotate, the window's count is
// exactly (register for register) the count of the keys added in the
// periods it covers, keys shared between periods counting once; its
// snapshot and its Redis export hold those registers.
func TestDistinctWindow_Periods(t *testing.T) {
	const p, keep = 10, 3
	w := mustIn(t, OpenDistinctWindow, Path(filepath.Join(t.TempDir(), "dw")), dwCfg(p, keep))
	added := map[uint64][][2]int{}
	for round := range 8 {
		cur := w.Current()
		// Each period adds 300 keys, half of them the previous period's.
		r := [2]int{round * 150, 300}
		addRange(t, w, r[0], r[1])
		added[cur] = append(added[cur], r)
		first := uint64(0)
		if cur+1 > keep {
			first = cur + 1 - keep
		}
		want := dwModel(t, p, added, first, cur)
		n, per := w.CountCovered()
		if per != (Periods{Oldest: first, Current: cur}) {
			t.Fatalf("round %d: CountCovered periods = %+v, want %d..%d", round, per, first, cur)
		}
		if got := n; got != want.Count() {
			t.Errorf("round %d: Count() = %d, the model's %d", round, got, want.Count())
		}
		snap, sper, err := w.SnapshotCovered(Memory())
		if err != nil {
			t.Fatal(err)
		}
		if sper != per {
			t.Errorf("round %d: snapshot covers %+v, the count %+v", round, sper, per)
		}
		if !bytes.Equal(registersOf(snap), registersOf(want)) {
			t.Errorf("round %d: the snapshot's registers are not the model's", round)
		}
		if got := snap.Count(); got != n {
			t.Errorf("round %d: snapshot Count() = %d, the window's %d", round, got, n)
		}
		if err := snap.AddString("x"); !errors.Is(err, ErrReadOnly) && !errors.Is(err, ErrFrozen) {
			t.Errorf("Add to a snapshot = %v, want ErrReadOnly or ErrFrozen", err)
		}
		snap.Close()
		want.Close()
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	// Keep periods later, with no adds, nothing is left.
	for range keep {
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.Count(); got != 0 {
		t.Errorf("Count() = %d after every period left the window", got)
	}
}

// TestDistinctWindow_CountCached: Count walks the registers only when a
// register of a covered slot rose, in any handle, or the period turned;
// otherwise this handle's cached estimate stands.
func TestDistinctWindow_CountCached(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dw")
	w := mustIn(t, OpenDistinctWindow, Path(path), dwCfg(12, 2))
	other := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{})
	addRange(t, w, 0, 1000)
	n := w.Count()
	cached := w.cache.Load()
	if w.Count() != n || w.cache.Load() != cached {
		t.Fatal("a Count with nothing changed walked the registers again")
	}
	if err := other.AddString("client-0"); err != nil { // raises nothing
		t.Fatal(err)
	}
	if w.Count(); w.cache.Load() != cached {
		t.Error("an add that raised no register made Count walk again")
	}
	addRange(t, other, 1000, 1000)
	if got := w.Count(); got == n || w.cache.Load() == cached {
		t.Errorf("Count() = %d after another handle added 1000 keys, the cached %d", got, n)
	}
	cached = w.cache.Load()
	if err := other.Rotate(); err != nil {
		t.Fatal(err)
	}
	if w.Count(); w.cache.Load() == cached {
		t.Error("a turn by another handle left the cached estimate in place")
	}
	if got, want := w.Count(), other.Count(); got != want {
		t.Errorf("Count() = %d, the other handle's %d", got, want)
	}
}

// TestDistinctWindow_CacheAcrossHandles: a handle's cached Count
// always equals the Count of a handle that has none (opened afresh),
// whatever other handles on the file did since: adds that raise
// registers, adds that raise none, turns, turns by several periods at
// once (every slot cleared and reused), batches.
func TestDistinctWindow_CacheAcrossHandles(t *testing.T) {
	for _, keep := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("keep=%d", keep), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dw")
			w := mustIn(t, OpenDistinctWindow, Path(path), dwCfg(8, keep))
			other := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{})
			next := 0
			for round := range 40 {
				switch round % 5 {
				case 0, 1:
					addRange(t, other, next, 7+round)
					next += 7 + round
				case 2:
					addRange(t, other, 0, 3) // raises nothing after the first rounds
				case 3:
					for range round%(keep+2) + 1 {
						if err := other.Rotate(); err != nil {
							t.Fatal(err)
						}
					}
				case 4:
					addRange(t, w, next, 5)
					next += 5
				}
				fresh := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{}, WithReadOnly())
				wantN, wantP := fresh.CountCovered()
				fresh.Close()
				if n, p := w.CountCovered(); n != wantN || p != wantP {
					t.Fatalf("round %d: CountCovered() = %d, %+v; a handle without a cache: %d, %+v", round, n, p, wantN, wantP)
				}
				if n := w.Count(); n != wantN {
					t.Fatalf("round %d: the cached Count() = %d, want %d", round, n, wantN)
				}
			}
		})
	}
}

// TestDistinctWindow_ReadersRaceRotate: Count, CountCovered, Stats,
// ExportRedis and SnapshotCovered run while other goroutines add and turn
// the window, and while Close runs (with -race: no data race). Every
// answer covers Keep periods ending at a period the window was at; a
// snapshot's count is the window's for its periods once nothing adds;
// after Close every call is ErrClosed or zero.
func TestDistinctWindow_ReadersRaceRotate(t *testing.T) {
	const keep = 3
	path := filepath.Join(t.TempDir(), "dw")
	w := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{Window: Window{Keep: keep}, Distinct: DistinctConfig{Precision: 14}})
	other := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{})
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	wg.Add(2)
	go func() { // adds through the other handle
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			if err := other.AddString(fmt.Sprint("k", i)); err != nil {
				errs <- fmt.Errorf("AddString: %w", err)
				return
			}
		}
	}()
	go func() { // turns through the other handle
		defer wg.Done()
		for !stop.Load() {
			if err := other.Rotate(); err != nil {
				errs <- fmt.Errorf("Rotate: %w", err)
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	readers := func(h *DistinctWindow, closed *atomic.Bool) {
		for !stop.Load() {
			before := h.Current()
			_, p := h.CountCovered()
			if !closed.Load() && p != (Periods{}) && (p.Current < before || p.Current-p.Oldest+1 > keep) {
				errs <- fmt.Errorf("CountCovered covered %+v, the window was at %d before", p, before)
				return
			}
			h.Count()
			h.Stats()
			if _, _, err := h.ExportRedisCovered(); err != nil && !errors.Is(err, ErrClosed) {
				var turn *windowTurnError
				if !errors.As(err, &turn) {
					errs <- fmt.Errorf("ExportRedisCovered: %w", err)
					return
				}
			}
			if s, _, err := h.SnapshotCovered(Memory()); err == nil {
				s.Close()
			} else if !errors.Is(err, ErrClosed) {
				var turn *windowTurnError
				if !errors.As(err, &turn) {
					errs <- fmt.Errorf("SnapshotCovered: %w", err)
					return
				}
			}
		}
	}
	var never, closing atomic.Bool
	wg.Add(3)
	go func() { defer wg.Done(); readers(w, &never) }()
	go func() { defer wg.Done(); readers(w, &never) }()
	// A third handle that is closed while its reader runs.
	doomed := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{})
	go func() { defer wg.Done(); readers(doomed, &closing) }()
	time.Sleep(150 * time.Millisecond)
	closing.Store(true)
	if err := doomed.Close(); err != nil {
		t.Errorf("Close during the reads: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := doomed.Count(); n != 0 {
		t.Errorf("Count after Close = %d, want 0", n)
	}
	if _, err := doomed.ExportRedis(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportRedis after Close = %v, want ErrClosed", err)
	}
	if _, _, err := doomed.SnapshotCovered(Memory()); !errors.Is(err, ErrClosed) {
		t.Errorf("SnapshotCovered after Close = %v, want ErrClosed", err)
	}
	// Quiet now: the snapshot, the export and Count agree. One more add
	// after the turns: on a loaded machine the turner can run Keep turns
	// while the adder waits for a CPU, and leave the covered periods empty.
	if err := other.AddString("last"); err != nil {
		t.Fatal(err)
	}
	n, p := w.CountCovered()
	s, sp, err := w.SnapshotCovered(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if sp != p || s.Count() != n {
		t.Errorf("snapshot: %d over %+v; the window: %d over %+v", s.Count(), sp, n, p)
	}
	if n == 0 {
		t.Error("the window counts nothing after the adds")
	}
}

// TestDistinctWindow_Clock: with a Period, the clock turns the window in
// every handle: a period's keys count until Keep periods pass, then not.
func TestDistinctWindow_Clock(t *testing.T) {
	cfg := DistinctWindowConfig{Window: Window{Period: 100 * time.Millisecond, Keep: 2}, Distinct: DistinctConfig{Precision: 8}}
	deadline := time.Now().Add(patience)
	var w *DistinctWindow
	for {
		w = mustIn(t, OpenDistinctWindow, Memory(), cfg)
		p := w.Current()
		addRange(t, w, 0, 50)
		got := w.Count()
		if w.Current() <= p+1 {
			// The window still covers the period of every add.
			if got < 40 || got > 60 {
				t.Fatalf("Count() = %d just after adding 50 keys", got)
			}
			break
		}
		// A machine that stalled two periods gives no verdict: again.
		if time.Now().After(deadline) {
			t.Fatal("the machine never added 50 keys and counted them within a period")
		}
	}
	for w.Count() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Count() = %d seconds after the window's 200 ms passed (current %d)", w.Count(), w.Current())
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := w.Stats()
	if st.Start.IsZero() || st.Period != 100*time.Millisecond || st.Keep != 2 {
		t.Errorf("Stats() = %+v, want a clock window of 2 x 100ms with a start", st)
	}
}

// TestDistinctWindow_States: read-only views count and refuse adds;
// Freeze fixes the window; configs are checked; a closed handle counts 0.
func TestDistinctWindow_States(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dw")
	w := mustIn(t, OpenDistinctWindow, Path(path), dwCfg(8, 2))
	addRange(t, w, 0, 100)
	want := w.Count()
	ro := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{}, WithReadOnly())
	if err := ro.AddString("z"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Add = %v, want ErrReadOnly", err)
	}
	if got := ro.Count(); got != want {
		t.Errorf("read-only Count() = %d, want %d", got, want)
	}
	if got, wantCfg := ro.Config(), (DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 8}}); got != wantCfg {
		t.Errorf("Config() = %+v, want %+v", got, wantCfg)
	}
	for _, c := range []struct {
		cfg  DistinctWindowConfig
		want error
	}{
		{DistinctWindowConfig{Window: Window{Keep: 3}}, ErrIncompatible},
		{DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 9}}, ErrIncompatible},
		{DistinctWindowConfig{Distinct: DistinctConfig{Redis: true}}, ErrIncompatible},
		{DistinctWindowConfig{Window: Window{Keep: 0, Period: time.Second}}, ErrInvalidConfig},
		{DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 3}}, ErrInvalidConfig},
		{DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 12, Redis: true}}, ErrInvalidConfig},
	} {
		if _, err := OpenDistinctWindow(Path(path), c.cfg); !errors.Is(err, c.want) {
			t.Errorf("open with %+v = %v, want %v", c.cfg, err, c.want)
		}
	}
	if _, err := OpenDistinctWindow(Path(filepath.Join(t.TempDir(), "new")), DistinctWindowConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("create with the zero config = %v, want ErrInvalidConfig", err)
	}
	if _, err := OpenDistinct(Path(path), DistinctConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("a window opened as a plain count = %v, want ErrIncompatible", err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := w.AddString("z"); !errors.Is(err, ErrFrozen) {
		t.Errorf("Add after Freeze = %v, want ErrFrozen", err)
	}
	if err := w.Rotate(); !errors.Is(err, ErrFrozen) {
		t.Errorf("Rotate after Freeze = %v, want ErrFrozen", err)
	}
	if got := ro.Count(); got != want {
		t.Errorf("Count() of the frozen window = %d, want %d", got, want)
	}
	ro.Close()
	if err := ro.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got, per := ro.CountCovered(); got != 0 || per != (Periods{}) {
		t.Errorf("closed CountCovered() = %d, %+v", got, per)
	}
	if err := ro.AddString("z"); !errors.Is(err, ErrClosed) {
		t.Errorf("closed Add = %v, want ErrClosed", err)
	}
	if st := ro.Stats(); !st.Closed || st.Keep != 2 {
		t.Errorf("closed Stats() = %+v", st)
	}
	if _, err := ro.ExportRedis(); !errors.Is(err, ErrClosed) {
		t.Errorf("closed ExportRedis = %v, want ErrClosed", err)
	}
}

// TestDistinctWindow_ReadOnlyClock: a read-only handle on a clock
// window that nobody writes any more counts what the writer left while
// its periods are in the window and nothing once they have left, and
// writes nothing to the file (its mapping is read-only: a store would
// fault), whatever it is asked.
func TestDistinctWindow_ReadOnlyClock(t *testing.T) {
	for _, period := range []time.Duration{time.Hour, 20 * time.Millisecond} {
		t.Run(period.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dw")
			cfg := DistinctWindowConfig{Window: Window{Period: period, Keep: 2}, Distinct: DistinctConfig{Precision: 14}}
			w := mustIn(t, OpenDistinctWindow, Path(path), cfg)
			addRange(t, w, 0, 500)
			want := w.Count()
			w.Close()
			r := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{}, WithReadOnly())
			if period == time.Hour {
				if got := r.Count(); got != want {
					t.Errorf("the read-only Count() = %d, the writer's %d", got, want)
				}
			}
			deadline := time.Now().Add(patience)
			for period != time.Hour && r.Count() != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("Count() = %d long after the writer's periods left a window of 2 x %v", r.Count(), period)
				}
				r.Stats()
				time.Sleep(time.Millisecond)
			}
			if _, err := r.ExportRedis(); err != nil {
				t.Errorf("ExportRedis = %v", err)
			}
			s, _, err := r.SnapshotCovered(Memory())
			if err != nil {
				t.Fatalf("SnapshotCovered = %v", err)
			}
			defer s.Close()
			if got := s.Count(); got != r.Count() {
				t.Errorf("the snapshot counts %d, the read-only window %d", got, r.Count())
			}
			if err := r.AddString("x"); !errors.Is(err, ErrReadOnly) {
				t.Errorf("AddString on a read-only handle = %v, want ErrReadOnly", err)
			}
			if err := r.Rotate(); !errors.Is(err, ErrReadOnly) {
				t.Errorf("Rotate on a read-only handle = %v, want ErrReadOnly", err)
			}
		})
	}
}

// TestDistinctWindow_Stats: each slot's state, period and own count.
func TestDistinctWindow_Stats(t *testing.T) {
	w := mustIn(t, OpenDistinctWindow, Memory(), dwCfg(10, 2))
	addRange(t, w, 0, 200)
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	addRange(t, w, 1000, 100)
	st := w.Stats()
	if st.Current != 1 || st.Oldest != 0 || st.Rotations != 1 || st.Precision != 10 || st.Registers != 1024 {
		t.Fatalf("Stats() = %+v", st)
	}
	if d := st.Estimate - 300; d < -30 || d > 30 {
		t.Errorf("Estimate = %v, want about 300", st.Estimate)
	}
	states := map[string]float64{}
	for _, sl := range st.Slots {
		states[sl.State] = sl.Estimate
	}
	if e := states["window"]; e < 180 || e > 220 {
		t.Errorf("the older period's slot estimates %v, want about 200 (%+v)", e, st.Slots)
	}
	if e := states["current"]; e < 90 || e > 110 {
		t.Errorf("the current slot estimates %v, want about 100 (%+v)", e, st.Slots)
	}
	if !strings.Contains(w.String(), "DistinctWindow") || !strings.Contains(w.String(), "2^10 registers") {
		t.Errorf("String() = %q", w.String())
	}
}

// TestDistinctWindow_Arena: a window lives in an arena beside other
// kinds, attaches by name with the zero config, and is listed.
func TestDistinctWindow_Arena(t *testing.T) {
	a := mustOpenArena(t, filepath.Join(t.TempDir(), "arena"), 1<<20)
	w := mustIn(t, OpenDistinctWindow, a.Place("clients/min"), DistinctWindowConfig{Window: Window{Period: time.Minute, Keep: 5}})
	addRange(t, w, 0, 3000)
	again := mustIn(t, OpenDistinctWindow, a.Place("clients/min"), DistinctWindowConfig{})
	if got, want := again.Count(), w.Count(); got != want {
		t.Errorf("attached Count() = %d, want %d", got, want)
	}
	var found bool
	for _, e := range a.List() {
		if e.Name == "clients/min" {
			cfg, _ := e.Config.(DistinctWindowConfig)
			found = e.Kind == KindDistinctWindow && cfg.Window == (Window{Period: time.Minute, Keep: 5}) && cfg.Distinct.Precision == distinctDefaultP
		}
	}
	if !found {
		t.Errorf("List() = %+v, want clients/min as a %s of 5 x 1m", a.List(), KindDistinctWindow)
	}
}

// TestDistinctWindow_Check: a register past the largest rank, in any
// slot, is damage to Check, and a damaged file opens and counts without
// panicking.
func TestDistinctWindow_Check(t *testing.T) {
	w := mustIn(t, OpenDistinctWindow, Memory(), dwCfg(10, 2))
	addRange(t, w, 0, 3000)
	if err := w.Check(); err != nil {
		t.Fatalf("Check of a sound window: %v", err)
	}
	l := &w.slots[2]
	wd := l.Word(5)
	atomic.StoreUint64(wd, atomic.LoadUint64(wd)|uint64(0xc8)<<cells.RegShift(1))
	if err := w.Check(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "register 41 of slot 2 holds 200") {
		t.Errorf("Check with a register at 200: %v, want ErrCorrupt naming register 41 of slot 2", err)
	}
}

// TestDistinctWindow_AddsAllocateNothing: the hot paths allocate nothing,
// and a Count with nothing changed allocates nothing either.
func TestDistinctWindow_AddsAllocateNothing(t *testing.T) {
	w := mustIn(t, OpenDistinctWindow, Memory(), dwCfg(14, 3))
	key := []byte("key")
	keys := [][]byte{key, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e"), []byte("f"), []byte("g"), []byte("h")}
	w.AddBatch(keys)
	w.Count()
	for name, f := range map[string]func(){
		"Add":       func() { w.Add(key) },
		"AddString": func() { w.AddString("key") },
		"AddBatch":  func() { w.AddBatch(keys) },
		"Count":     func() { w.Count() },
	} {
		if allocs := testing.AllocsPerRun(100, f); allocs != 0 {
			t.Errorf("%s allocates %v times", name, allocs)
		}
	}
}

// TestMaxRegisters: the loop-free bytewise maximum agrees with the
// bytewise loop for every register value a sound file holds.
func TestMaxRegisters(t *testing.T) {
	for a := uint64(0); a <= 65; a++ {
		for b := uint64(0); b <= 65; b++ {
			x := a<<8 | b<<16 | 65<<56 | b
			y := b<<8 | a<<16 | 1<<56 | a
			if got, want := maxRegisters(x, y), cells.MaxBytes(x, y); got != want {
				t.Fatalf("maxRegisters(%#x, %#x) = %#x, want %#x", x, y, got, want)
			}
		}
	}
}

// TestDistinctWindow_MergePeriod: one host's periods, exported as Redis
// HyperLogLogs and merged into another host's window of the same config
// and seed, make it count the first host's keys as the first host does,
// register for register, and only while those periods stay in the window.
func TestDistinctWindow_MergePeriod(t *testing.T) {
	cfg := DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Seed: 0xd157}}
	a := mustIn(t, OpenDistinctWindow, Memory(), cfg)
	b := mustIn(t, OpenDistinctWindow, Memory(), cfg)
	addRange(t, a, 0, 1000)
	if err := a.Rotate(); err != nil {
		t.Fatal(err)
	}
	addRange(t, a, 1000, 1000)
	addRange(t, b, 1500, 1000) // b's own keys of period 0, half of them a's too
	exp, err := a.ExportPeriods()
	if err != nil || len(exp) != 2 {
		t.Fatalf("ExportPeriods = %v periods, %v", periodsOf(exp), err)
	}
	if err := b.Rotate(); err != nil {
		t.Fatal(err)
	}
	for _, e := range exp {
		if merged, err := b.MergePeriod(e.Period, e.Data); err != nil || !merged {
			t.Fatalf("MergePeriod(%d) = %v, %v", e.Period, merged, err)
		}
	}
	union := mustIn(t, OpenDistinctWindow, Memory(), cfg)
	addRange(t, union, 0, 1000)
	addRange(t, union, 1500, 1000)
	union.Rotate()
	addRange(t, union, 1000, 1000)
	if got, want := b.Count(), union.Count(); got != want {
		t.Errorf("Count() = %d after merging, a window fed both hosts' keys counts %d", got, want)
	}
	got, _ := b.ExportPeriods()
	want, _ := union.ExportPeriods()
	for i := range want {
		if i >= len(got) || got[i].Period != want[i].Period || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("period %d: the merged window's registers are not those of a window fed both hosts' keys", want[i].Period)
		}
	}
	b.Rotate()
	b.Rotate() // the window is 2-3: periods 0 and 1 left it
	if merged, err := b.MergePeriod(1, exp[0].Data); merged || err != nil {
		t.Errorf("MergePeriod of period 1, out of the window: %v, %v", merged, err)
	}
	if c := b.Count(); c != 0 {
		t.Errorf("Count() = %d once the merged periods left the window", c)
	}
	if _, err := b.MergePeriod(3, []byte("HYLL")); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("MergePeriod of a cut HyperLogLog = %v, want ErrInvalidArgument", err)
	}
	small := mustIn(t, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 10}})
	if _, err := small.ExportPeriods(); !errors.Is(err, ErrIncompatible) {
		t.Errorf("ExportPeriods of precision 10 = %v, want ErrIncompatible", err)
	}
}

// TestDistinctWindow_ChangesAcrossRotations: a distinct window's RegisterChanges
// is the sum of what each period's slot counted, kept through the clears.
func TestDistinctWindow_ChangesAcrossRotations(t *testing.T) {
	w := mustIn(t, OpenDistinctWindow, Path(tempPath(t, "dw")), dwCfg(8, 2))
	var want uint64
	for turn := range 30 {
		for i := range 20 + turn {
			if err := w.AddString(fmt.Sprintf("k%d-%d", turn, i)); err != nil {
				t.Fatal(err)
			}
		}
		// The current slot's own count, this process being the only one.
		want += atomic.LoadUint64(w.slots[w.ctl.slotOf(w.Current())].Changes)
		if got := w.Stats(); got.RegisterChanges != want || got.Turns != uint64(turn) {
			t.Fatalf("turn %d: RegisterChanges, Turns = %d, %d; want %d, %d", turn, got.RegisterChanges, got.Turns, want, turn)
		}
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if want < 30*20 {
		t.Errorf("only %d changes in 30 periods of at least 20 new keys", want)
	}
}
