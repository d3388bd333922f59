//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

// TestReview_DistinctWindowCacheAcrossHandles: a handle's cached Count
// always equals the Count of a handle that has none (opened afresh),
// whatever other handles on the file did since: adds that raise
// registers, adds that raise none, turns, turns by several periods at
// once (every slot cleared and reused), batches.
func TestReview_DistinctWindowCacheAcrossHandles(t *testing.T) {
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

// TestReview_DistinctWindowCrafted: a file whose control words or
// registers were written by hand (a slot word naming a period ahead of
// the epoch, a clear under a token that does not exist, registers past
// the largest rank, huge epoch, latest and frozen words) makes no call
// panic or hang; an add past the largest period a window holds is
// ErrCorrupt, and so is an add in a Rotate window whose current slot
// names a later period (it went, with no error, to the period after the
// epoch's, which no read covers until a Rotate); Check finds registers
// past the largest rank.
func TestReview_DistinctWindowCrafted(t *testing.T) {
	type craft struct {
		name    string
		window  Window
		poke    func(w *DistinctWindow)
		addErr  error // what an add returns, nil: anything but a panic
		checkEr error
	}
	crafts := []craft{
		{"slot ahead", Window{Keep: 2}, func(w *DistinctWindow) {
			atomic.StoreUint64(w.ctl.word(w.ctl.slotOf(w.ctl.current())), heldWord(w.ctl.current()+6))
		}, ErrCorrupt, nil},
		{"clearing by no token", Window{Keep: 2}, func(w *DistinctWindow) {
			atomic.StoreUint64(w.ctl.word(w.ctl.slotOf(w.ctl.current())), clearingWord(w.ctl.current(), wsIDMask))
		}, nil, nil},
		{"registers past the top", Window{Keep: 1}, func(w *DistinctWindow) {
			s := w.ctl.slotOf(w.ctl.current())
			for i := range uint64(16) {
				atomic.StoreUint64(w.slots[s].Word(i), 0xffffffffffffffff)
			}
		}, nil, ErrCorrupt},
		{"epoch huge", Window{Keep: 2}, func(w *DistinctWindow) { atomic.StoreUint64(w.ctl.epochWord(), hugeCraftedPeriod) }, ErrCorrupt, nil},
		{"latest huge", Window{Period: time.Hour, Keep: 2}, func(w *DistinctWindow) { atomic.StoreUint64(w.ctl.latestWord(), hugeCraftedPeriod) }, ErrCorrupt, nil},
		{"frozen huge", Window{Keep: 2}, func(w *DistinctWindow) { atomic.StoreUint64(w.ctl.frozenWord(), hugeCraftedPeriod+1) }, nil, nil},
	}
	for _, c := range crafts {
		t.Run(c.name, func(t *testing.T) {
			path := tempPath(t, "dw")
			cfg := DistinctWindowConfig{Window: c.window, Distinct: DistinctConfig{Precision: 14}}
			w := mustIn(t, OpenDistinctWindow, Path(path), cfg)
			addRange(t, w, 0, 100)
			c.poke(w)
			w.Close()
			h, err := OpenDistinctWindow(Path(path), DistinctWindowConfig{})
			if err != nil {
				return // refused at open: fine
			}
			defer h.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				mustNotPanic(t, "Check", func() {
					err := h.Check()
					if c.checkEr != nil && !errors.Is(err, c.checkEr) {
						t.Errorf("Check = %v, want %v", err, c.checkEr)
					}
				})
				mustNotPanic(t, "Count", func() { h.Count() })
				mustNotPanic(t, "Stats", func() { h.Stats() })
				mustNotPanic(t, "ExportRedis", func() {
					if b, err := h.ExportRedis(); err == nil {
						regs := b[redisHLLHeader:]
						for j := 0; j < 1<<cells.RedisHLLP; j++ {
							bit := j * redisHLLBits
							v := (uint(regs[bit/8]) | uint(regs[min(bit/8+1, len(regs)-1)])<<8) >> (bit % 8) & 63
							if v > 64-cells.RedisHLLP+1 {
								t.Errorf("ExportRedis: register %d is %d, past the largest rank %d", j, v, 64-cells.RedisHLLP+1)
								return
							}
						}
					}
				})
				mustNotPanic(t, "SnapshotCovered", func() {
					if s, _, err := h.SnapshotCovered(Memory()); err == nil {
						s.Count()
						s.Close()
					}
				})
				mustNotPanic(t, "Add", func() {
					err := h.AddString("k")
					if c.addErr != nil && !errors.Is(err, c.addErr) {
						t.Errorf("AddString = %v, want %v", err, c.addErr)
					}
				})
				mustNotPanic(t, "Rotate", func() { h.Rotate() })
			}()
			select {
			case <-done:
			case <-time.After(patience):
				t.Fatalf("a call on the crafted window did not return in %v", patience)
			}
		})
	}
}

// TestReview_DistinctWindowReadersRaceRotate: Count, CountCovered, Stats,
// ExportRedis and SnapshotCovered run while other goroutines add and turn
// the window, and while Close runs (with -race: no data race). Every
// answer covers Keep periods ending at a period the window was at; a
// snapshot's count is the window's for its periods once nothing adds;
// after Close every call is ErrClosed or zero.
func TestReview_DistinctWindowReadersRaceRotate(t *testing.T) {
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

// TestReview_DistinctWindowReadOnlyClock: a read-only handle on a clock
// window that nobody writes any more counts what the writer left while
// its periods are in the window and nothing once they have left, and
// writes nothing to the file (its mapping is read-only: a store would
// fault), whatever it is asked.
func TestReview_DistinctWindowReadOnlyClock(t *testing.T) {
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

// TestReview_DistinctWindowCacheOtherProcess: a handle's cached Count
// follows what another process did since (adds, then a turn, then adds
// again): after each step it equals the Count of a handle opened afresh.
func TestReview_DistinctWindowCacheOtherProcess(t *testing.T) {
	if step := os.Getenv("SKETCH_REVIEW_DW_STEP"); step != "" {
		reviewDistinctWindowChild(step)
		return
	}
	exe := selfExe(t)
	path := filepath.Join(t.TempDir(), "dw")
	w := mustIn(t, OpenDistinctWindow, Path(path), dwCfg(10, 2))
	addRange(t, w, 0, 100)
	for _, step := range []string{"add", "rotate", "add", "rotate", "rotate", "add"} {
		before := w.Count() // cached from here
		cmd := exec.CommandContext(childContext(t), exe, "-test.run=^TestReview_DistinctWindowCacheOtherProcess$")
		cmd.Env = append(os.Environ(), "SKETCH_REVIEW_DW_STEP="+step, envPath+"="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child %s: %v\n%s", step, err, out)
		}
		fresh := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{}, WithReadOnly())
		want, wantP := fresh.CountCovered()
		fresh.Close()
		if got, p := w.CountCovered(); got != want || p != wantP {
			t.Fatalf("after another process's %s: CountCovered() = %d, %+v (was %d); a fresh handle: %d, %+v", step, got, p, before, want, wantP)
		}
		if got := w.Count(); step == "add" && got <= before {
			t.Fatalf("after another process added 300 new keys, Count() = %d, was %d", got, before)
		}
	}
}

// reviewDistinctWindowChild adds 300 new keys to the window, or turns it.
func reviewDistinctWindowChild(step string) {
	w, err := OpenDistinctWindow(Path(os.Getenv(envPath)), DistinctWindowConfig{})
	if err == nil {
		if step == "rotate" {
			err = w.Rotate()
		} else {
			err = distinctAddKeys(w, 1000+int(w.Current())*300, 300)
		}
		w.Close()
	}
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	os.Exit(0)
}
