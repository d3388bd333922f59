package main

import (
	"fmt"
	"math"
	"time"

	"github.com/shmsketch/sketch"
)

// countMinWindow is a Count-Min window to the commands: a Count-Min
// sketch whose answers cover the last Keep periods.
type countMinWindow struct{ w *sketch.CountMinWindow }

// countMinWindow opens (or, with a window, makes) the Count-Min window at
// p.
func (p place) countMinWindow(cfg sketch.CountMinWindowConfig) (structure, error) {
	cw, err := sketch.OpenCountMinWindow(p.at, cfg, p.opts...)
	if err != nil {
		return nil, err
	}
	return &countMinWindow{cw}, nil
}

func (s *countMinWindow) Close() error { return s.w.Close() }
func (s *countMinWindow) kind() string { return string(sketch.KindCountMinWindow) }

func (s *countMinWindow) describe() string {
	return fmt.Sprintf("Count-Min window, %s, %d x %d counters a period", windowText(s.w.Config().Window), s.w.Config().CountMin.Rows, s.w.Config().CountMin.Width)
}

// windowText says how a window turns: "the last 3 periods of 1s".
func windowText(w sketch.Window) string {
	if w.Period == 0 {
		return fmt.Sprintf("the last %d periods, turned by rotate", w.Keep)
	}
	return fmt.Sprintf("the last %d periods of %v", w.Keep, w.Period)
}

func (s *countMinWindow) add(keys [][]byte, weights []uint64) error {
	if weights == nil {
		return s.w.AddBatch(keys, nil)
	}
	for i, k := range keys {
		if _, err := s.w.AddN(k, weights[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *countMinWindow) addKey(key []byte, n uint64) (answer, error) {
	est, err := s.w.AddN(key, n)
	if err != nil {
		return nil, err
	}
	return newCMSAnswer(key, est, s.w.Stats().ErrorBound), nil
}

// query answers over the window, with the bar of the window's total.
func (s *countMinWindow) query(keys [][]byte) []answer {
	bound := s.w.Stats().ErrorBound
	est := make([]uint64, len(keys))
	s.w.EstimateBatch(keys, est) // a closed handle answers ClosedEstimate: never low
	out := make([]answer, len(keys))
	for i, k := range keys {
		out[i] = newCMSAnswer(k, est[i], bound)
	}
	return out
}

func (s *countMinWindow) stats() ([][2]string, any) {
	st := s.w.Stats()
	rate := math.E / float64(st.Width)
	conf := 1 - math.Exp(-float64(st.Rows))
	rows := [][2]string{
		{"kind", "Count-Min window"},
		{"window", windowText(sketch.Window{Period: st.Period, Keep: st.Keep})},
		{"shape", fmt.Sprintf("%d x %d counters a period, %d slots", st.Rows, st.Width, len(st.Slots))},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"periods", fmt.Sprintf("%d to %d (current %d)", st.Oldest, st.Current, st.Current)},
	}
	if !st.Start.IsZero() {
		rows = append(rows, [2]string{"current since", st.Start.UTC().Format(time.RFC3339Nano)})
	}
	rows = append(rows,
		[2]string{"rotations", fmt.Sprint(st.Rotations)},
		[2]string{"total", fmt.Sprintf("%d (in the periods covered)", st.Total)},
		[2]string{"error bound", fmt.Sprintf("%d (estimates are at most this high, with %s confidence)", st.ErrorBound, percent(conf))},
		[2]string{"error rate", fmt.Sprintf("%.6g of the window's total", rate)},
		[2]string{"frozen", yesNo(st.Frozen)},
	)
	for i, sl := range st.Slots {
		what := fmt.Sprintf("%-8s period %d, total %d", sl.State, sl.Period, sl.Total)
		if sl.State == "empty" {
			what = "empty"
		}
		rows = append(rows, [2]string{fmt.Sprintf("slot %d", i), what})
	}
	return rows, st
}

func (s *countMinWindow) summary() string {
	st := s.w.Stats()
	return fmt.Sprintf("periods %d-%d: total %d, error bound %d", st.Oldest, st.Current, st.Total, st.ErrorBound)
}

func (s *countMinWindow) sample() sample {
	st := s.w.Stats()
	return sample{Total: st.Total, ErrorBound: &st.ErrorBound, Current: &st.Current, Oldest: &st.Oldest, Frozen: st.Frozen, what: "window adds"}
}

func (s *countMinWindow) rotate() error { return s.w.Rotate() }

// check has nothing to add to the open's validation, which reads every
// slot's word; the slots' rows are not compared, since a slot being
// cleared is torn on purpose.
func (s *countMinWindow) check() error  { return s.w.Check() }
func (s *countMinWindow) freeze() error { return s.w.Freeze() }
func (s *countMinWindow) unlink() error { return s.w.Unlink() }

func (s *countMinWindow) reset() error {
	return errNotSupported("reset (its periods leave the window by themselves; rotate turns one now)", "Count-Min window")
}

func (s *countMinWindow) merge(src structure) error {
	return errNotSupported("merge", "Count-Min window")
}
