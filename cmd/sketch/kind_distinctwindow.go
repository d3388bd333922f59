package main

import (
	"fmt"
	"math"

	"github.com/shmsketch/sketch"
)

// distinctWindowKind is the distinct window's row of cliKinds.
var distinctWindowKind = cliKindOf(sketch.KindDistinctWindow, []string{"error", "precision", "redis", "postgresql", "period", "keep"},
	sketch.OpenDistinctWindow, newDistinctWindow,
	func(f createFlags) sketch.DistinctWindowConfig {
		return sketch.DistinctWindowConfig{Window: f.window, Distinct: f.distinctConfig()}
	},
	func(f createFlags) error {
		if f.window.Keep == 0 {
			return usageError("a distinct window needs --keep (and --period, or it turns only on sketch rotate)")
		}
		return nil
	})

// distinctWindow is a distinct window to the commands: a distinct count
// of the last Keep periods. Like a distinct count it answers no key:
// query prints its count.
type distinctWindow struct {
	*sketch.DistinctWindow
	window
}

func newDistinctWindow(w *sketch.DistinctWindow) structure {
	return &distinctWindow{w, window{"distinct window"}}
}

func (s *distinctWindow) kind() string { return string(sketch.KindDistinctWindow) }

func (s *distinctWindow) describe() string {
	cfg := s.Config()
	return fmt.Sprintf("distinct window, %s, %d registers a period, %s", windowText(cfg.Window), 1<<cfg.Distinct.Precision, hashName(cfg.Distinct.Redis, cfg.Distinct.PostgreSQL))
}

// add adds each key once: a weight changes nothing, as a key counts once.
func (s *distinctWindow) add(keys [][]byte, weights []uint64) error { return s.AddBatch(keys) }

func (s *distinctWindow) addKey(key []byte, n uint64) (answer, error) {
	if err := s.Add(key); err != nil {
		return nil, err
	}
	return distinctAdded{s.count()}, nil
}

// query has no answer for a key: the query command prints the count.
func (s *distinctWindow) query(keys [][]byte) []answer {
	out := make([]answer, len(keys))
	for i := range out {
		out[i] = s.count()
	}
	return out
}

// count is the count of the periods covered, with its 95% range.
func (s *distinctWindow) count() distinctAnswer {
	return distinctAnswerOf(s.Count(), s.StdError())
}

func (s *distinctWindow) state() (sketch.DistinctWindowStats, windowState) {
	st := s.Stats()
	return st, windowState{sketch.Window{Period: st.Period, Keep: st.Keep}, st.Oldest, st.Current, st.Rotations, st.Turns, st.RegisterChanges, "register changes since made", st.Bytes, st.Frozen}
}

func (s *distinctWindow) stats() ([][2]string, any) {
	st, ws := s.state()
	slots := make([]windowSlot, len(st.Slots))
	for i, sl := range st.Slots {
		slots[i] = windowSlot{sl.State, sl.Period, fmt.Sprintf("about %s distinct keys, %d zero registers", estimated(sl.Estimate), sl.Zero)}
	}
	a := distinctAnswerOf(uint64(math.Round(st.Estimate)), st.StdError)
	return s.rows(ws,
		[][2]string{
			{"registers", fmt.Sprintf("%d a period (precision %d), %d slots", st.Registers, st.Precision, len(st.Slots))},
			{"hash", hashRow(st.Redis, st.PostgreSQL)},
		},
		[][2]string{
			{"distinct keys", a.text() + " in the periods covered"},
			{"std error", percent(st.StdError) + " relative"},
		}, slots), st
}

func (s *distinctWindow) summary() string {
	st, ws := s.state()
	return ws.summary(distinctAnswerOf(uint64(math.Round(st.Estimate)), st.StdError).text())
}

func (s *distinctWindow) sample() sample {
	st := s.Stats()
	return windowSample(sample{Total: uint64(math.Round(st.Estimate)), Count: &st.Estimate, Frozen: st.Frozen, what: "distinct keys"},
		st.Oldest, st.Current, periodClock{st.Period, st.Rotations})
}
