package main

import (
	"fmt"
	"math"

	"github.com/shmsketch/sketch"
)

// countMinWindowKind is the Count-Min window's row of cliKinds.
var countMinWindowKind = cliKindOf(sketch.KindCountMinWindow, []string{"error", "confidence", "rows", "width", "period", "keep", "candidates", "candidate-key-bytes", "fleet", "lanes"},
	sketch.OpenCountMinWindow, newCountMinWindow,
	func(f createFlags) sketch.CountMinWindowConfig {
		return sketch.CountMinWindowConfig{Window: f.window, CountMin: f.cms}
	},
	func(f createFlags) error {
		if f.window.Keep == 0 {
			return usageError("a Count-Min window needs --keep (and --period, or it turns only on sketch rotate)")
		}
		return nil
	})

// countMinWindow is a Count-Min window to the commands: a Count-Min
// sketch whose answers cover the last Keep periods.
type countMinWindow struct {
	*sketch.CountMinWindow
	counts
	window
}

// newCountMinWindow's answers carry the bar of the window's total.
func newCountMinWindow(w *sketch.CountMinWindow) structure {
	return &countMinWindow{w, counts{w, w.ErrorBound}, window{"Count-Min window"}}
}

func (s *countMinWindow) kind() string { return string(sketch.KindCountMinWindow) }

func (s *countMinWindow) describe() string {
	cfg := s.Config()
	d := fmt.Sprintf("Count-Min window, %s, %d x %d counters a period", windowText(cfg.Window), cfg.CountMin.Rows, cfg.CountMin.Width)
	if cfg.CountMin.Candidates != 0 {
		d += ", " + plural(cfg.CountMin.Candidates, "candidate", "candidates")
	}
	if cfg.CountMin.Fleet {
		d += ", a fleet part"
	}
	if cfg.CountMin.Lanes > 1 {
		d += fmt.Sprintf(", %d lanes", cfg.CountMin.Lanes)
	}
	return d
}

// query answers over the window, with the bar of the window's total.
func (s *countMinWindow) query(keys [][]byte) []answer {
	bound := s.bound()
	est := make([]uint64, len(keys))
	s.EstimateBatch(keys, est) // a closed handle answers ClosedEstimate: never low
	out := make([]answer, len(keys))
	for i, k := range keys {
		out[i] = newCMSAnswer(k, est[i], bound)
	}
	return out
}

func (s *countMinWindow) state() (sketch.CountMinWindowStats, windowState) {
	st := s.Stats()
	return st, windowState{sketch.Window{Period: st.Period, Keep: st.Keep}, st.Oldest, st.Current, st.Rotations, st.Turns, st.Adds, "adds since made", st.Bytes, st.Frozen}
}

func (s *countMinWindow) stats() ([][2]string, any) {
	st, ws := s.state()
	rate := math.E / float64(st.Width)
	conf := 1 - math.Exp(-float64(st.Rows))
	slots := make([]windowSlot, len(st.Slots))
	for i, sl := range st.Slots {
		slots[i] = windowSlot{sl.State, sl.Period, fmt.Sprintf("total %d", sl.Total)}
	}
	figures := [][2]string{
		{"total", fmt.Sprintf("%d (in the periods covered)", st.Total)},
		{"error bound", fmt.Sprintf("%d (estimates are at most this high, with %s confidence)", st.ErrorBound, percent(conf))},
		{"error rate", fmt.Sprintf("%.6g of the window's total", rate)},
	}
	if st.Fleet {
		figures = append(figures, [2]string{"fleet part", "yes (the rest of the fleet's counts of each period, added to every answer)"})
	}
	if st.Lanes > 1 {
		figures = append(figures, [2]string{"lanes", fmt.Sprintf("%d in every slot (a grid for each writing process; every answer sums them)", st.Lanes)})
	}
	if st.Candidates != nil {
		figures = append(figures, candidateRow(st.Candidates))
	}
	return s.rows(ws,
		[][2]string{{"shape", fmt.Sprintf("%d x %d counters a period, %d slots", st.Rows, st.Width, len(st.Slots))}},
		figures, slots), st
}

func (s *countMinWindow) summary() string {
	st, ws := s.state()
	return ws.summary(fmt.Sprintf("total %d, error bound %d", st.Total, st.ErrorBound))
}

func (s *countMinWindow) sample() sample {
	st := s.Stats()
	smp := sample{Total: st.Total, Adds: &st.Adds, ErrorBound: &st.ErrorBound, Frozen: st.Frozen, what: "window adds"}
	if st.Candidates != nil {
		smp.Loudest = st.Candidates.Loudest[:min(watchLoudest, len(st.Candidates.Loudest))]
	}
	return windowSample(smp, st.Oldest, st.Current, periodClock{st.Period, st.Rotations})
}
