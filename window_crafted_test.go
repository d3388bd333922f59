//go:build linux

package sketch

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// mustNotPanic runs f and reports a panic as a test error.
func mustNotPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	f()
}

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
			h, err := OpenCountMinWindow(path, Window{}, CountMinConfig{}, ReadOnly())
			if err != nil {
				return // refused: fine
			}
			defer h.Close()
			k := [][]byte{[]byte("k")}
			out := make([]uint64, 1)
			mustNotPanic(t, "Estimate", func() { h.Estimate(k[0]) })
			mustNotPanic(t, "EstimateBatch", func() { h.EstimateBatch(k, out) })
			mustNotPanic(t, "Stats", func() { h.Stats() })
			h2, err := OpenCountMinWindow(path, Window{}, CountMinConfig{})
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
			w, err := OpenBloomWindow(path, Window{Keep: keep}, BloomConfig{Capacity: 1000})
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
			h, err := OpenBloomWindow(path, Window{}, BloomConfig{}, ReadOnly())
			if err != nil {
				return
			}
			defer h.Close()
			k := [][]byte{[]byte("k")}
			mustNotPanic(t, "Check", func() { h.Check(k[0]) })
			mustNotPanic(t, "CheckBatch", func() { h.CheckBatch(k, make([]bool, 1)) })
			mustNotPanic(t, "Stats", func() { h.Stats() })
		})
	}
}
