package main

import (
	"fmt"

	"github.com/shmsketch/sketch"
)

// countMin is a Count-Min sketch to the commands.
type countMin struct{ c *sketch.CountMin }

// countMin opens (or, with an explicit cfg, makes) the Count-Min sketch at p.
func (p place) countMin(cfg sketch.CountMinConfig) (structure, error) {
	c, err := sketch.OpenCountMin(p.at, cfg, p.opts...)
	if err != nil {
		return nil, err
	}
	return &countMin{c}, nil
}

func (s *countMin) Close() error { return s.c.Close() }
func (s *countMin) kind() string { return "countmin" }

func (s *countMin) describe() string {
	return fmt.Sprintf("Count-Min sketch, %d x %d counters", s.c.Config().Rows, s.c.Config().Width)
}

func (s *countMin) add(keys [][]byte, weights []uint64) error {
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

func (s *countMin) addKey(key []byte, n uint64) (answer, error) {
	est, err := s.c.AddN(key, n)
	if err != nil {
		return nil, err
	}
	return newCMSAnswer(key, est, s.c.ErrorBound()), nil
}

// cmsAnswer is a Count-Min estimate with its error bar: the true count is
// between Low and Estimate, with the sketch's confidence.
type cmsAnswer struct {
	Key      string `json:"key"`
	Estimate uint64 `json:"estimate"`
	Low      uint64 `json:"low"`
}

func newCMSAnswer(key []byte, est, bound uint64) cmsAnswer {
	return cmsAnswer{Key: string(key), Estimate: est, Low: est - min(est, bound)}
}

func (a cmsAnswer) text() string {
	return fmt.Sprintf("%d\tbetween %d and %d", a.Estimate, a.Low, a.Estimate)
}
func (a cmsAnswer) weight() uint64 { return a.Estimate }

func (s *countMin) query(keys [][]byte) []answer {
	est := make([]uint64, len(keys))
	s.c.EstimateBatch(keys, est) // a closed handle answers ClosedEstimate: never low
	bound := s.c.ErrorBound()
	out := make([]answer, len(keys))
	for i, k := range keys {
		out[i] = newCMSAnswer(k, est[i], bound)
	}
	return out
}

func (s *countMin) stats() ([][2]string, any) {
	st := s.c.Stats()
	return [][2]string{
		{"kind", "Count-Min sketch"},
		{"shape", fmt.Sprintf("%d x %d counters", st.Rows, st.Width)},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"total", fmt.Sprint(st.Total)},
		{"adds", fmt.Sprint(st.Adds)},
		{"error bound", fmt.Sprintf("%d (estimates are at most this high, with %s confidence)", st.ErrorBound, percent(st.Confidence))},
		{"error rate", fmt.Sprintf("%.6g of the total", st.ErrorRate)},
		{"confidence", percent(st.Confidence)},
		{"frozen", yesNo(st.Frozen)},
	}, st
}

func (s *countMin) summary() string {
	st := s.c.Stats()
	return fmt.Sprintf("total %d, error bound %d", st.Total, st.ErrorBound)
}

func (s *countMin) sample() sample {
	t := s.c.Total()
	b := s.c.ErrorBound()
	return sample{Total: t, ErrorBound: &b, Frozen: s.c.Frozen(), what: "adds"}
}

func (s *countMin) check() error  { return s.c.Check() }
func (s *countMin) reset() error  { return s.c.Reset() }
func (s *countMin) freeze() error { return s.c.Freeze() }
func (s *countMin) unlink() error { return s.c.Unlink() }

func (s *countMin) merge(src structure) error {
	o, ok := src.(*countMin)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a Count-Min sketch", src.describe())
	}
	return s.c.Merge(o.c)
}
