package main

import (
	"fmt"
	"math"

	"github.com/shmsketch/sketch"
)

// distinctKind is the distinct count's row of cliKinds.
var distinctKind = cliKindOf(sketch.KindDistinct, []string{"error", "precision", "redis", "postgresql"},
	sketch.OpenDistinct, newDistinct, createFlags.distinctConfig, nil)

// distinct is a distinct count to the commands. It answers no key: query
// prints its count (countLine), and add says what the count is after.
type distinct struct{ *sketch.Distinct }

func newDistinct(d *sketch.Distinct) structure { return &distinct{d} }

func (s *distinct) kind() string { return string(sketch.KindDistinct) }

func (s *distinct) describe() string {
	cfg := s.Config()
	return fmt.Sprintf("distinct count, %d registers, %s", 1<<cfg.Precision, hashName(cfg.Redis, cfg.PostgreSQL))
}

// add adds each key once: a weight changes nothing, as a key counts once.
func (s *distinct) add(keys [][]byte, weights []uint64) error { return s.AddBatch(keys) }

func (s *distinct) addKey(key []byte, n uint64) (answer, error) {
	if err := s.Add(key); err != nil {
		return nil, err
	}
	return distinctAdded{s.count()}, nil
}

// distinctAdded is add's answer: the count after the add. Whether the key
// was new a distinct count cannot say.
type distinctAdded struct{ distinctAnswer }

func (a distinctAdded) text() string { return "added; " + a.distinctAnswer.text() }

// query has no answer for a key: the query command prints the count
// instead (countLine) and never asks.
func (s *distinct) query(keys [][]byte) []answer {
	out := make([]answer, len(keys))
	for i := range out {
		out[i] = s.count()
	}
	return out
}

// count is the count with its error bar: Count ± 2 standard errors, where
// the true count is 95% of the time.
func (s *distinct) count() distinctAnswer { return distinctAnswerOf(s.Count(), s.StdError()) }

// hashName names a distinct count's hash in its description.
func hashName(redis, postgresql bool) string {
	switch {
	case redis:
		return "Redis's hash"
	case postgresql:
		return "PostgreSQL's hll hash"
	}
	return "seeded hash"
}

// hashRow is the hash row of a distinct count's stats.
func hashRow(redis, postgresql bool) string {
	switch {
	case redis:
		return "Redis's MurmurHash64A (public: crafted keys can aim at it)"
	case postgresql:
		return "PostgreSQL's hll_hash_bytea, MurmurHash3 (public: crafted keys can aim at it)"
	}
	return "seeded XXH3"
}

// distinctAnswerOf is count n with relative standard error e and its 95%
// range.
func distinctAnswerOf(n uint64, e float64) distinctAnswer {
	return distinctAnswer{Count: n, StdError: e,
		Low:  uint64(math.Round(float64(n) * (1 - 2*e))),
		High: uint64(math.Round(float64(n) * (1 + 2*e)))}
}

// distinctAnswer is a distinct count and its 95% range.
type distinctAnswer struct {
	Count    uint64  `json:"count"`
	StdError float64 `json:"std_error"` // relative
	Low      uint64  `json:"low"`       // Count·(1 - 2·StdError)
	High     uint64  `json:"high"`      // Count·(1 + 2·StdError)
}

func (a distinctAnswer) text() string {
	return fmt.Sprintf("about %d distinct keys (between %d and %d, 95%%: ±%s)", a.Count, a.Low, a.High, percent(2*a.StdError))
}

func (a distinctAnswer) weight() uint64 { return a.Count }

func (s *distinct) stats() ([][2]string, any) {
	st := s.Stats()
	a := s.count()
	return [][2]string{
		{"kind", "distinct count (HyperLogLog, Ertl's estimator)"},
		{"registers", fmt.Sprintf("%d (precision %d)", st.Registers, st.Precision)},
		{"hash", hashRow(st.Redis, st.PostgreSQL)},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"distinct keys", a.text()},
		{"std error", percent(st.StdError) + " relative"},
		{"zero registers", fmt.Sprint(st.Zero)},
		{"register changes", fmt.Sprintf("%d (adds and merges that raised a register; not adds, which a distinct count does not count)", st.RegisterChanges)},
		{"frozen", yesNo(st.Frozen)},
	}, st
}

func (s *distinct) summary() string { return s.count().text() }

func (s *distinct) sample() sample {
	st := s.Stats()
	return sample{Total: uint64(math.Round(st.Estimate)), Count: &st.Estimate, Frozen: st.Frozen, what: "distinct keys"}
}

func (s *distinct) merge(src structure) error {
	o, ok := src.(*distinct)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a distinct count", src.describe())
	}
	return s.Merge(o.Distinct)
}
