package main

import (
	"fmt"

	"github.com/shmsketch/sketch"
)

// bloomWindowKind is the Bloom window's row of cliKinds.
var bloomWindowKind = cliKindOf(sketch.KindBloomWindow, []string{"capacity", "fp-rate", "period", "keep"},
	sketch.OpenBloomWindow, newBloomWindow,
	func(f createFlags) sketch.BloomWindowConfig {
		return sketch.BloomWindowConfig{Window: f.window, Bloom: f.bloom()}
	},
	func(f createFlags) error {
		if f.capacity == 0 || f.window.Keep == 0 {
			return usageError("a Bloom window needs --capacity and --keep (and --period, or it turns only on sketch rotate)")
		}
		return nil
	})

// bloomWindow is a Bloom window to the commands: a Bloom filter whose
// answers cover the last Keep periods.
type bloomWindow struct {
	*sketch.BloomWindow
	set
	window
}

func newBloomWindow(w *sketch.BloomWindow) structure {
	return &bloomWindow{w, set{w}, window{"Bloom window"}}
}

func (s *bloomWindow) kind() string { return string(sketch.KindBloomWindow) }

func (s *bloomWindow) describe() string {
	return fmt.Sprintf("Bloom window, %s, %d bits, %s a period", windowText(s.Config().Window), s.Bits(), plural(s.Hashes(), "hash", "hashes"))
}

// covered sums the adds of the slots the window covers, and the part of
// them that found their key present.
func covered(st sketch.BloomWindowStats) (adds, present uint64) {
	for _, sl := range st.Slots {
		if sl.State == "current" || sl.State == "window" {
			adds += sl.Adds
			present += sl.AddsPresent
		}
	}
	return adds, present
}

// currentSlot is the slot adds go to now; nil on a closed handle.
func currentSlot(st sketch.BloomWindowStats) *sketch.BloomWindowSlotStats {
	for i := range st.Slots {
		if st.Slots[i].State == "current" {
			return &st.Slots[i]
		}
	}
	return nil
}

func (s *bloomWindow) state() (sketch.BloomWindowStats, windowState) {
	st := s.Stats()
	return st, windowState{sketch.Window{Period: st.Period, Keep: st.Keep}, st.Oldest, st.Current, st.Rotations, st.Turns, st.Adds, "adds since made", st.Bytes, st.Frozen}
}

func (s *bloomWindow) stats() ([][2]string, any) {
	st, ws := s.state()
	adds, present := covered(st)
	slots := make([]windowSlot, len(st.Slots))
	for i, sl := range st.Slots {
		slots[i] = windowSlot{sl.State, sl.Period, fmt.Sprintf("fill %s, about %s keys, adds %d", percent(sl.Fill), estimated(sl.Estimated), sl.Adds)}
	}
	return s.rows(ws,
		[][2]string{
			{"capacity", fmt.Sprintf("%s a period", plural(st.Capacity, "key", "keys"))},
			{"fp rate", fmt.Sprintf("%g a period at capacity", st.FPRate)},
			{"shape", fmt.Sprintf("%d bits, %s a period, %d slots", st.Bits, plural(st.Hashes, "hash", "hashes"), len(st.Slots))},
		},
		[][2]string{
			{"fp rate now", fmt.Sprintf("%.6g (a key not added in the periods covered is found at this rate)", st.FPRateNow)},
			{"adds covered", fmt.Sprintf("%d (adds in the periods covered)", adds)},
			{"adds present", fmt.Sprintf("%d (of them, adds that found every bit set)", present)},
		}, slots), st
}

func (s *bloomWindow) summary() string {
	st, ws := s.state()
	adds, _ := covered(st)
	return ws.summary(fmt.Sprintf("%s, fp rate now %.3g", plural(adds, "add", "adds"), st.FPRateNow))
}

// sample's total is the adds of the periods covered; its fill and count
// are the current period's (0 until its slot is first used).
func (s *bloomWindow) sample() sample {
	st := s.Stats()
	adds, _ := covered(st)
	var fill, count float64
	if cur := currentSlot(st); cur != nil {
		fill, count = cur.Fill, cur.Estimated
	}
	return windowSample(sample{Total: adds, Adds: &st.Adds, Fill: &fill, Count: &count, Frozen: st.Frozen, what: "window adds"}, st.Oldest, st.Current, periodClock{st.Period, st.Rotations})
}
