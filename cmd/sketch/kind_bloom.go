package main

import (
	"fmt"
	"math"

	"github.com/shmsketch/sketch"
)

// bloomKind is the Bloom filter's row of cliKinds.
var bloomKind = cliKindOf(sketch.KindBloom, []string{"capacity", "fp-rate"},
	sketch.OpenBloom, newBloom, func(f createFlags) sketch.BloomConfig { return f.bloom() },
	func(f createFlags) error {
		if f.capacity == 0 {
			return usageError("a Bloom filter needs --capacity")
		}
		return nil
	})

// bloom is a Bloom filter to the commands.
type bloom struct {
	*sketch.Bloom
	set
}

func newBloom(b *sketch.Bloom) structure { return &bloom{b, set{b}} }

func (s *bloom) kind() string { return string(sketch.KindBloom) }

func (s *bloom) describe() string {
	return fmt.Sprintf("Bloom filter, %d bits, %s", s.Bits(), plural(s.Hashes(), "hash", "hashes"))
}

// setFilter is what a Bloom filter and a Bloom window do alike.
type setFilter interface {
	Add(key []byte) (already bool, err error)
	AddBatch(keys [][]byte, already []bool) error
	ContainsBatch(keys [][]byte, out []bool) error
}

// set is how the Bloom kinds add and answer.
type set struct{ f setFilter }

// add adds each key (a window's to its current period); a weight changes
// nothing, since a set holds a key once.
func (s set) add(keys [][]byte, weights []uint64) error {
	return s.f.AddBatch(keys, nil)
}

// addKey's answer says whether the filter had the key before (a window:
// in the current period or an earlier one it covers).
func (s set) addKey(key []byte, n uint64) (answer, error) {
	already, err := s.f.Add(key)
	if err != nil {
		return nil, err
	}
	return bloomAnswer{jsonKey: keyOf(string(key)), Present: true, Already: &already}, nil
}

// query's false is exact (a window's for the periods it covers).
func (s set) query(keys [][]byte) []answer {
	in := make([]bool, len(keys))
	s.f.ContainsBatch(keys, in) // a closed handle answers present: never a false "absent"
	out := make([]answer, len(keys))
	for i, k := range keys {
		out[i] = bloomAnswer{jsonKey: keyOf(string(k)), Present: in[i]}
	}
	return out
}

// bloomAnswer is whether a key is in a Bloom filter: false is exact, true
// probable. Add's answer says too whether the key was there before it.
type bloomAnswer struct {
	jsonKey
	Present bool `json:"present"`
	// Already is add's: every bit of the key was set before (probably
	// added before); false means this add was its first.
	Already *bool `json:"already,omitempty"`
}

func (a bloomAnswer) text() string {
	switch {
	case a.Already != nil && *a.Already:
		return "probably present before"
	case a.Already != nil:
		return "added"
	case a.Present:
		return "probably present"
	}
	return "definitely absent"
}

func (a bloomAnswer) weight() uint64 {
	if a.Present {
		return 1
	}
	return 0
}

func (s *bloom) stats() ([][2]string, any) {
	st := s.Stats()
	return [][2]string{
		{"kind", "Bloom filter"},
		{"capacity", fmt.Sprint(st.Capacity)},
		{"fp rate", fmt.Sprintf("%g at capacity", st.FPRate)},
		{"shape", fmt.Sprintf("%d bits, %s", st.Bits, plural(st.Hashes, "hash", "hashes"))},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"bits set", fmt.Sprint(st.Set)},
		{"fill", percent(st.Fill) + " (about 50% at capacity)"},
		{"keys (estimated)", estimated(st.Estimated)},
		{"adds", fmt.Sprintf("%d (since made or reset)", st.Adds)},
		{"adds present", fmt.Sprintf("%d (of them, adds that found every bit set: repeats or false positives)", st.AddsPresent)},
		{"frozen", yesNo(st.Frozen)},
	}, st
}

// estimated formats an estimated key count; a saturated filter's is
// MaxFloat64.
func estimated(n float64) string {
	if n > 1e18 {
		return "every bit is set: the filter is full"
	}
	return fmt.Sprintf("%.0f", n)
}

func (s *bloom) summary() string {
	st := s.Stats()
	if st.Estimated > 1e18 {
		return fmt.Sprintf("%s, fill %s", estimated(st.Estimated), percent(st.Fill))
	}
	return fmt.Sprintf("about %s, fill %s", plural(uint64(math.Round(st.Estimated)), "key", "keys"), percent(st.Fill))
}

func (s *bloom) sample() sample {
	st := s.Stats()
	return sample{Total: st.Adds, Fill: &st.Fill, Count: &st.Estimated, Frozen: st.Frozen, what: "adds"}
}

func (s *bloom) merge(src structure) error {
	o, ok := src.(*bloom)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a Bloom filter", src.describe())
	}
	return s.Merge(o.Bloom)
}
