package main

import (
	"fmt"

	"github.com/shmsketch/sketch"
)

// countMinKind is the Count-Min sketch's row of cliKinds.
var countMinKind = cliKindOf(sketch.KindCountMin, []string{"error", "confidence", "rows", "width", "candidates", "candidate-key-bytes", "fleet", "lanes", "conservative"},
	sketch.OpenCountMin, newCountMin, func(f createFlags) sketch.CountMinConfig { return f.cms }, nil)

// countMin is a Count-Min sketch to the commands.
type countMin struct {
	*sketch.CountMin
	counts
}

func newCountMin(c *sketch.CountMin) structure { return &countMin{c, counts{c, c.ErrorBound}} }

func (s *countMin) kind() string { return string(sketch.KindCountMin) }

func (s *countMin) describe() string {
	cfg := s.Config()
	d := fmt.Sprintf("Count-Min sketch, %d x %d counters", cfg.Rows, cfg.Width)
	if cfg.Candidates != 0 {
		d += ", " + plural(cfg.Candidates, "candidate", "candidates")
	}
	if cfg.Fleet {
		d += ", a fleet part"
	}
	switch {
	case cfg.ConservativeUpdate:
		d += ", conservative update in " + plural(cfg.Lanes, "lane", "lanes") + " and a shared lane"
	case cfg.Lanes > 1:
		d += fmt.Sprintf(", %d lanes", cfg.Lanes)
	}
	return d
}

// counter is what a Count-Min sketch and a Count-Min window count alike.
type counter interface {
	AddN(key []byte, n uint64) (uint64, error)
	AddBatch(keys [][]byte, estimates []uint64) error
}

// counts is how the Count-Min kinds add: bound is the error bound of
// their answers.
type counts struct {
	c     counter
	bound func() uint64
}

func (s counts) add(keys [][]byte, weights []uint64) error {
	if weights == nil {
		return s.c.AddBatch(keys, nil)
	}
	for i, k := range keys {
		if _, err := s.c.AddN(k, weights[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s counts) addKey(key []byte, n uint64) (answer, error) {
	est, err := s.c.AddN(key, n)
	if err != nil {
		return nil, err
	}
	return newCMSAnswer(key, est, s.bound()), nil
}

// cmsAnswer is a Count-Min estimate with its error bar: the true count is
// between Low and Estimate, with the sketch's confidence.
type cmsAnswer struct {
	jsonKey
	Estimate uint64 `json:"estimate"`
	Low      uint64 `json:"low"`
}

func newCMSAnswer(key []byte, est, bound uint64) cmsAnswer {
	return cmsAnswer{jsonKey: keyOf(string(key)), Estimate: est, Low: est - min(est, bound)}
}

func (a cmsAnswer) text() string {
	return fmt.Sprintf("%d\tbetween %d and %d", a.Estimate, a.Low, a.Estimate)
}
func (a cmsAnswer) weight() uint64 { return a.Estimate }

func (s *countMin) query(keys [][]byte) []answer {
	est := make([]uint64, len(keys))
	s.EstimateBatch(keys, est) // a closed handle answers ClosedEstimate: never low
	bound := s.ErrorBound()
	out := make([]answer, len(keys))
	for i, k := range keys {
		out[i] = newCMSAnswer(k, est[i], bound)
	}
	return out
}

func (s *countMin) stats() ([][2]string, any) {
	st := s.Stats()
	rows := [][2]string{
		{"kind", "Count-Min sketch"},
		{"shape", fmt.Sprintf("%d x %d counters", st.Rows, st.Width)},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"total", fmt.Sprint(st.Total)},
		{"adds", fmt.Sprint(st.Adds)},
		{"error bound", fmt.Sprintf("%d (estimates are at most this high, with %s confidence)", st.ErrorBound, percent(st.Confidence))},
		{"error rate", fmt.Sprintf("%.6g of the total", st.ErrorRate)},
		{"confidence", percent(st.Confidence)},
		{"frozen", yesNo(st.Frozen)},
	}
	if st.Fleet {
		rows = append(rows, fleetRow(st.FleetTotal))
	}
	switch {
	case st.ConservativeUpdate:
		rows = append(rows, [2]string{"conservative update", fmt.Sprintf("in %s and a shared lane (an add raises the key's least counters in its process's lane; every answer sums the lanes)", plural(st.Lanes, "lane", "lanes"))})
	case st.Lanes > 1:
		rows = append(rows, [2]string{"lanes", fmt.Sprintf("%d (a grid for each writing process; every answer sums them)", st.Lanes)})
	}
	if st.Candidates != nil {
		rows = append(rows, candidateRow(st.Candidates))
	}
	return rows, st
}

// fleetRow describes a fleet part in stats: its total, when it has one.
func fleetRow(total uint64) [2]string {
	return [2]string{"fleet part", fmt.Sprintf("total %d (the rest of the fleet's counts, added to every answer)", total)}
}

func (s *countMin) summary() string {
	st := s.Stats()
	return fmt.Sprintf("total %d, error bound %d", st.Total, st.ErrorBound)
}

func (s *countMin) sample() sample {
	t := s.Total()
	b := s.ErrorBound()
	smp := sample{Total: t, ErrorBound: &b, Frozen: s.Frozen(), what: "adds"}
	if s.Config().Candidates != 0 {
		smp.Loudest, _ = s.Top(watchLoudest)
	}
	return smp
}

func (s *countMin) merge(src structure) error {
	o, ok := src.(*countMin)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a Count-Min sketch", src.describe())
	}
	return s.Merge(o.CountMin)
}
