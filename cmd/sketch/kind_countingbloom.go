package main

import (
	"fmt"
	"math"

	"github.com/shmsketch/sketch"
)

// countingBloomKind is the counting Bloom filter's row of cliKinds.
var countingBloomKind = cliKindOf(sketch.KindCountingBloom, []string{"capacity", "fp-rate", "fleet"},
	sketch.OpenCountingBloom, newCountingBloom,
	func(f createFlags) sketch.CountingBloomConfig {
		return sketch.CountingBloomConfig{Capacity: f.capacity, FPRate: f.fpRate, Seed: f.seed, Fleet: f.cms.Fleet}
	},
	func(f createFlags) error {
		if f.capacity == 0 {
			return usageError("a counting Bloom filter needs --capacity")
		}
		return nil
	})

// countingBloom is a counting Bloom filter to the commands.
type countingBloom struct{ *sketch.CountingBloom }

func newCountingBloom(b *sketch.CountingBloom) structure { return &countingBloom{b} }

func (s *countingBloom) kind() string { return string(sketch.KindCountingBloom) }

func (s *countingBloom) describe() string {
	d := fmt.Sprintf("counting Bloom filter, %d counters, %s", s.Counters(), plural(s.Hashes(), "hash", "hashes"))
	if s.Config().Fleet {
		d += ", a fleet part"
	}
	return d
}

// cbfSaturated is where a counter sticks: adding a key more often than
// that changes nothing.
const cbfSaturated = 15

func (s *countingBloom) add(keys [][]byte, weights []uint64) error {
	if weights == nil {
		return s.AddBatch(keys, nil)
	}
	for i, k := range keys {
		for n := min(weights[i], cbfSaturated); n > 0; n-- {
			if _, err := s.Add(k); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *countingBloom) addKey(key []byte, n uint64) (answer, error) {
	for n = min(n, cbfSaturated); n > 0; n-- {
		if _, err := s.Add(key); err != nil {
			return nil, err
		}
	}
	a := s.query([][]byte{key})[0].(cbfAnswer)
	a.afterAdd = true
	return a, nil
}

// cbfAnswer is how many times a key is in a counting Bloom filter (added
// minus removed; 15 means 15 or more); 0 is definitely absent.
type cbfAnswer struct {
	jsonKey
	Count    uint64 `json:"count"`
	Present  bool   `json:"present"` // probably present; false is exact
	afterAdd bool   // add's answer: the count alone
}

// text is a query's answer as a Bloom filter's, with the count:
// "probably present, count 2" or "definitely absent"; add's is the count.
func (a cbfAnswer) text() string {
	switch {
	case a.afterAdd:
		return fmt.Sprint(a.Count)
	case !a.Present:
		return "definitely absent"
	case a.Count >= cbfSaturated:
		return fmt.Sprintf("probably present, count %d or more", a.Count)
	}
	return fmt.Sprintf("probably present, count %d", a.Count)
}

func (a cbfAnswer) weight() uint64 { return a.Count }

func (s *countingBloom) query(keys [][]byte) []answer {
	out := make([]answer, len(keys))
	for i, k := range keys {
		n := s.Estimate(k)
		out[i] = cbfAnswer{jsonKey: keyOf(string(k)), Count: n, Present: n > 0}
	}
	return out
}

func (s *countingBloom) stats() ([][2]string, any) {
	st := s.Stats()
	count := fmt.Sprintf("%.0f", st.Estimated)
	if st.Set == st.Counters {
		count = "every counter is set: the filter is full"
	}
	rows := [][2]string{
		{"kind", "counting Bloom filter"},
		{"capacity", fmt.Sprint(st.Capacity)},
		{"fp rate", fmt.Sprintf("%g at capacity", st.FPRate)},
		{"shape", fmt.Sprintf("%d counters, %s", st.Counters, plural(st.Hashes, "hash", "hashes"))},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"counters set", fmt.Sprint(st.Set)},
		{"fill", percent(st.Fill)},
		{"items (estimated)", count},
		{"adds", fmt.Sprintf("%d (since made or reset)", st.Adds)},
	}
	if st.Fleet {
		rows = append(rows, [2]string{"fleet part", "yes (the rest of the fleet's counts, in every answer and the figures above)"})
	}
	return append(rows, [2]string{"frozen", yesNo(st.Frozen)}), st
}

func (s *countingBloom) summary() string {
	st := s.Stats()
	return fmt.Sprintf("about %s, fill %s", plural(uint64(math.Round(st.Estimated)), "item", "items"), percent(st.Fill))
}

func (s *countingBloom) sample() sample {
	st := s.Stats()
	return sample{Total: st.Adds, Fill: &st.Fill, Count: &st.Estimated, Frozen: st.Frozen, what: "adds"}
}

func (s *countingBloom) merge(src structure) error {
	o, ok := src.(*countingBloom)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a counting Bloom filter", src.describe())
	}
	return s.Merge(o.CountingBloom)
}
