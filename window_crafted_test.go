//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

// hugeCraftedPeriod is a period number a crafted file can hold in its
// epoch, latest or frozen word: 2^55-1, the period the empty slot cache
// of a new handle (all ones) names once shifted.
const hugeCraftedPeriod = uint64(1)<<55 - 1

// TestCountMinWindow_CraftedPeriodWords: a file whose epoch, latest
// or frozen word holds a huge period must be refused or answered, never
// make a new handle panic.
func TestCountMinWindow_CraftedPeriodWords(t *testing.T) {
	type craft struct {
		name   string
		window Window
		word   func(c *windowCtl) *uint64
		value  uint64
	}
	var crafts []craft
	for _, keep := range []int{1, 2, 3} {
		crafts = append(crafts,
			craft{fmt.Sprintf("epoch keep=%d", keep), Window{Keep: keep}, (*windowCtl).epochWord, hugeCraftedPeriod},
			craft{fmt.Sprintf("frozen keep=%d", keep), Window{Keep: keep}, (*windowCtl).frozenWord, hugeCraftedPeriod + 1},
			craft{fmt.Sprintf("latest keep=%d", keep), Window{Period: time.Hour, Keep: keep}, (*windowCtl).latestWord, hugeCraftedPeriod},
		)
	}
	for _, c := range crafts {
		t.Run(c.name, func(t *testing.T) {
			path := tempPath(t, "win")
			w := mustOpenWindow(t, path, c.window, winCfg)
			w.AddString("k")
			atomic.StoreUint64(c.word(&w.ctl), c.value)
			w.Close()
			h, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{}, CountMin: CountMinConfig{}}, WithReadOnly())
			if err != nil {
				return // refused: fine
			}
			defer h.Close()
			k := [][]byte{[]byte("k")}
			out := make([]uint64, 1)
			mustNotPanic(t, "Estimate", func() { h.Estimate(k[0]) })
			mustNotPanic(t, "EstimateBatch", func() { h.EstimateBatch(k, out) })
			mustNotPanic(t, "Stats", func() { h.Stats() })
			h2, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{}, CountMin: CountMinConfig{}})
			if err != nil {
				return
			}
			defer h2.Close()
			mustNotPanic(t, "Add", func() { h2.Add(k[0]) })
			mustNotPanic(t, "AddBatch", func() { h2.AddBatch(k, out) })
			mustNotPanic(t, "Rotate", func() { h2.Rotate() })
		})
	}
}

// TestBloomWindow_CraftedPeriodWords: the same for a Bloom window,
// whose reads index a slot only when the word they load names the period
// they expect: a crafted file provides that word too.
func TestBloomWindow_CraftedPeriodWords(t *testing.T) {
	for _, keep := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("epoch keep=%d", keep), func(t *testing.T) {
			path := tempPath(t, "bwin")
			w, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: Window{Keep: keep}, Bloom: BloomConfig{Capacity: 1000}})
			if err != nil {
				t.Fatal(err)
			}
			w.AddString("k")
			atomic.StoreUint64(w.ctl.epochWord(), hugeCraftedPeriod)
			// The word a new handle's cache sends it to, 511 words past the
			// first slot word: in slot 0's unused stripe bytes, which no
			// check covers.
			atomic.StoreUint64(w.ctl.word(511), heldWord(hugeCraftedPeriod))
			w.Close()
			h, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: Window{}, Bloom: BloomConfig{}}, WithReadOnly())
			if err != nil {
				return
			}
			defer h.Close()
			k := [][]byte{[]byte("k")}
			mustNotPanic(t, "Check", func() { h.Contains(k[0]) })
			mustNotPanic(t, "CheckBatch", func() { h.ContainsBatch(k, make([]bool, 1)) })
			mustNotPanic(t, "Stats", func() { h.Stats() })
		})
	}
}

// craftedWindow is a window handle of either kind, for tests that craft
// its control words.
type craftedWindow struct {
	ctl    *windowCtl
	add    func() error
	rotate func() error
}

func openCraftedWindows(t *testing.T, path string) map[string]func() craftedWindow {
	return map[string]func() craftedWindow{
		"countmin": func() craftedWindow {
			w := mustOpenWindow(t, path+".cm", Window{Keep: 2}, winCfg)
			return craftedWindow{&w.ctl, func() error { _, err := w.AddString("k"); return err }, w.Rotate}
		},
		"bloom": func() craftedWindow {
			w, err := OpenBloomWindow(Path(path+".bloom"), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{Capacity: 100}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			return craftedWindow{&w.ctl, func() error { _, err := w.AddString("k"); return err }, w.Rotate}
		},
	}
}

// TestWindow_FrozenDeadClearer: a window frozen (its frozen word set)
// whose file's seal is missing, and whose current slot a dead process was
// clearing, refuses an add at once with ErrFrozen: nothing is cleared once
// frozen, so waiting for the clear to be taken over could only time out.
func TestWindow_FrozenDeadClearer(t *testing.T) {
	old := windowWait
	windowWait = 300 * time.Millisecond // only bounds the wait this test must not make
	t.Cleanup(func() { windowWait = old })
	for kind, open := range openCraftedWindows(t, tempPath(t, "win")) {
		t.Run(kind, func(t *testing.T) {
			w := open()
			for range 2 {
				if err := w.rotate(); err != nil {
					t.Fatal(err)
				}
			}
			p := w.ctl.current()
			const dead = 77 // a token id no handle holds
			atomic.StoreUint64(w.ctl.frozenWord(), p+1)
			atomic.StoreUint64(w.ctl.word(w.ctl.slotOf(p)), clearingWord(p, dead))
			if err := w.add(); !errors.Is(err, ErrFrozen) {
				t.Errorf("add in frozen period %d, whose slot token %d left half cleared: %v, want ErrFrozen", p, dead, err)
			}
		})
	}
}

// TestWindow_ClearWaitTimeout: a writer that waited its limit for a live
// process's clear says what it waited for: the slot, the period and the
// clearer's token, as ErrTimeout.
func TestWindow_ClearWaitTimeout(t *testing.T) {
	old := windowWait
	windowWait = 50 * time.Millisecond
	t.Cleanup(func() { windowWait = old })
	path := tempPath(t, "win")
	for kind, open := range openCraftedWindows(t, path) {
		t.Run(kind, func(t *testing.T) {
			w := open()
			other := open() // alive, and clearing nothing
			for range 2 {
				if err := w.rotate(); err != nil {
					t.Fatal(err)
				}
			}
			p := w.ctl.current()
			s := w.ctl.slotOf(p)
			atomic.StoreUint64(w.ctl.word(s), clearingWord(p, other.ctl.me))
			err := w.add()
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("add while live token %d holds slot %d: %v, want ErrTimeout", other.ctl.me, s, err)
			}
			for _, want := range []string{fmt.Sprintf("slot %d", s), fmt.Sprintf("period %d", p), fmt.Sprintf("token %d", other.ctl.me)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "initialised") {
				t.Errorf("error %q speaks of a file's initialisation", err)
			}
		})
	}
}

// TestDistinctWindow_Crafted: a file whose control words or
// registers were written by hand (a slot word naming a period ahead of
// the epoch, a clear under a token that does not exist, registers past
// the largest rank, huge epoch, latest and frozen words) makes no call
// panic or hang; an add past the largest period a window holds is
// ErrCorrupt, and so is an add in a Rotate window whose current slot
// names a later period (it went, with no error, to the period after the
// epoch's, which no read covers until a Rotate); Check finds registers
// past the largest rank.
func TestDistinctWindow_Crafted(t *testing.T) {
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
