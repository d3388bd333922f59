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

// covered sums the adds of the slots the window covers.
func covered(st sketch.BloomWindowStats) (added, seen uint64) {
	for _, sl := range st.Slots {
		if sl.State == "current" || sl.State == "window" {
			added += sl.Added
			seen += sl.Seen
		}
	}
	return added, seen
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
	added, seen := covered(st)
	slots := make([]windowSlot, len(st.Slots))
	for i, sl := range st.Slots {
		slots[i] = windowSlot{sl.State, sl.Period, fmt.Sprintf("fill %s, about %s keys, adds %d", percent(sl.Fill), estimated(sl.Estimated), sl.Added+sl.Seen)}
	}
	return s.rows(ws,
		[][2]string{
			{"capacity", fmt.Sprintf("%s a period", plural(st.Capacity, "key", "keys"))},
			{"fp rate", fmt.Sprintf("%g a period at capacity", st.FPRate)},
			{"shape", fmt.Sprintf("%d bits, %s a period, %d slots", st.Bits, plural(st.Hashes, "hash", "hashes"), len(st.Slots))},
		},
		[][2]string{
			{"check rate", fmt.Sprintf("%.6g (a key not added in the periods covered is found at this rate)", st.CheckRate)},
			{"added", fmt.Sprintf("%d (adds in the periods covered that set a bit)", added)},
			{"seen", fmt.Sprintf("%d (adds in the periods covered that found every bit set)", seen)},
		}, slots), st
}

func (s *bloomWindow) summary() string {
	st, ws := s.state()
	added, seen := covered(st)
	return ws.summary(fmt.Sprintf("%s, check rate %.3g", plural(added+seen, "add", "adds"), st.CheckRate))
}

// sample's total is the adds of the periods covered; its fill and count
// are the current period's (0 until its slot is first used).
func (s *bloomWindow) sample() sample {
	st := s.Stats()
	added, seen := covered(st)
	var fill, count float64
	if cur := currentSlot(st); cur != nil {
		fill, count = cur.Fill, cur.Estimated
	}
	return windowSample(sample{Total: added + seen, Adds: &st.Adds, Fill: &fill, Count: &count, Frozen: st.Frozen, what: "window adds"}, st.Oldest, st.Current, periodClock{st.Period, st.Rotations})
}
