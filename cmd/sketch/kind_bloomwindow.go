package main

import (
	"fmt"
	"time"

	"github.com/shmsketch/sketch"
)

// bloomWindow is a Bloom window to the commands: a Bloom filter whose
// answers cover the last Keep periods.
type bloomWindow struct{ w *sketch.BloomWindow }

// bloomWindow opens (or, with a window and a Capacity, makes) the Bloom
// window at p.
func (p place) bloomWindow(cfg sketch.BloomWindowConfig) (structure, error) {
	bw, err := sketch.OpenBloomWindow(p.at, cfg, p.opts...)
	if err != nil {
		return nil, err
	}
	return &bloomWindow{bw}, nil
}

func (s *bloomWindow) Close() error { return s.w.Close() }
func (s *bloomWindow) kind() string { return string(sketch.KindBloomWindow) }

func (s *bloomWindow) describe() string {
	return fmt.Sprintf("Bloom window, %s, %d bits, %d hashes a period", windowText(s.w.Config().Window), s.w.Bits(), s.w.Hashes())
}

// add adds each key to the current period; a weight changes nothing, since
// a set holds a key once.
func (s *bloomWindow) add(keys [][]byte, weights []uint64) error {
	return s.w.AddBatch(keys, nil)
}

// addKey's answer says whether the window had the key before: in the
// current period or an earlier one it covers.
func (s *bloomWindow) addKey(key []byte, n uint64) (answer, error) {
	already, err := s.w.Add(key)
	if err != nil {
		return nil, err
	}
	return bloomAnswer{Key: string(key), Present: true, Already: &already}, nil
}

// query answers over the window: false is exact for the periods covered.
func (s *bloomWindow) query(keys [][]byte) []answer {
	in := make([]bool, len(keys))
	s.w.ContainsBatch(keys, in) // a closed handle answers present: never a false "absent"
	out := make([]answer, len(keys))
	for i, k := range keys {
		out[i] = bloomAnswer{Key: string(k), Present: in[i]}
	}
	return out
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

func (s *bloomWindow) stats() ([][2]string, any) {
	st := s.w.Stats()
	added, seen := covered(st)
	rows := [][2]string{
		{"kind", "Bloom window"},
		{"window", windowText(sketch.Window{Period: st.Period, Keep: st.Keep})},
		{"capacity", fmt.Sprintf("%d keys a period", st.Capacity)},
		{"fp rate", fmt.Sprintf("%g a period at capacity", st.FPRate)},
		{"shape", fmt.Sprintf("%d bits, %d hashes a period, %d slots", st.Bits, st.Hashes, len(st.Slots))},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"periods", fmt.Sprintf("%d to %d (current %d)", st.Oldest, st.Current, st.Current)},
	}
	if !st.Start.IsZero() {
		rows = append(rows, [2]string{"current since", st.Start.UTC().Format(time.RFC3339Nano)})
	}
	rows = append(rows,
		[2]string{"rotations", fmt.Sprint(st.Rotations)},
		[2]string{"check rate", fmt.Sprintf("%.6g (a key not added in the periods covered is found at this rate)", st.CheckRate)},
		[2]string{"added", fmt.Sprintf("%d (adds in the periods covered that set a bit)", added)},
		[2]string{"seen", fmt.Sprintf("%d (adds in the periods covered that found every bit set)", seen)},
		[2]string{"frozen", yesNo(st.Frozen)},
	)
	for i, sl := range st.Slots {
		what := fmt.Sprintf("%-8s period %d, fill %s, about %s keys, adds %d", sl.State, sl.Period, percent(sl.Fill), estimated(sl.Estimated), sl.Added+sl.Seen)
		if sl.State == "empty" {
			what = "empty"
		}
		rows = append(rows, [2]string{fmt.Sprintf("slot %d", i), what})
	}
	return rows, st
}

func (s *bloomWindow) summary() string {
	st := s.w.Stats()
	added, seen := covered(st)
	return fmt.Sprintf("periods %d-%d: %d adds, check rate %.3g", st.Oldest, st.Current, added+seen, st.CheckRate)
}

// sample's total is the adds of the periods covered; its fill and count
// are the current period's (0 until its slot is first used).
func (s *bloomWindow) sample() sample {
	st := s.w.Stats()
	added, seen := covered(st)
	var fill, count float64
	if cur := currentSlot(st); cur != nil {
		fill, count = cur.Fill, cur.Estimated
	}
	return sample{Total: added + seen, Fill: &fill, Count: &count, Current: &st.Current, Oldest: &st.Oldest, Frozen: st.Frozen, what: "window adds"}
}

func (s *bloomWindow) rotate() error { return s.w.Rotate() }

// check has nothing to add to the open's validation, which reads every
// slot's word: any bit pattern is a valid filter.
func (s *bloomWindow) check() error  { return s.w.Check() }
func (s *bloomWindow) freeze() error { return s.w.Freeze() }
func (s *bloomWindow) unlink() error { return s.w.Unlink() }

func (s *bloomWindow) reset() error {
	return errNotSupported("reset (its periods leave the window by themselves; rotate turns one now)", "Bloom window")
}

func (s *bloomWindow) merge(src structure) error {
	return errNotSupported("merge", "Bloom window")
}
