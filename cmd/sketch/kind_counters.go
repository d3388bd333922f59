package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shmsketch/sketch"
)

// countersKind is the exact counters' row of cliKinds. The names are
// its sizing: --names a,b,c and --name X (repeatable, for a name that
// holds a comma) give them, in the order given.
var countersKind = cliKindOf(sketch.KindCounters, []string{"names", "name"},
	sketch.OpenCounters, newCounters, createFlags.countersConfig,
	func(f createFlags) error {
		if len(f.names) == 0 {
			return usageError("a counters structure needs its names: --names 200,404,500, or --name X for each (a name may then hold a comma)")
		}
		return nil
	})

// counters is an exact counters structure to the commands. Its keys are
// its counters' names: add adds to the counters named, query prints
// their values (all of them when it names none), and a name it does not
// have is a bad argument (exit 2), refused before anything is added.
type counters struct{ *sketch.Counters }

func newCounters(c *sketch.Counters) structure { return &counters{c} }

func (s *counters) kind() string { return string(sketch.KindCounters) }

func (s *counters) describe() string {
	names := s.Names()
	return fmt.Sprintf("counters structure, %s (%s)", plural(len(names), "exact counter", "exact counters"), nameList(names, 8))
}

// nameList lists names, quoted as names are, comma-separated: the first
// most of them, then how many more there are.
func nameList(names []string, most int) string {
	q := quoteNames(names[:min(len(names), most)])
	if len(names) > most {
		q = append(q, fmt.Sprintf("and %d more", len(names)-most))
	}
	return strings.Join(q, ", ")
}

// quoteNames are names as quoteName prints each.
func quoteNames(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteName(n)
	}
	return q
}

// checkNames refuses, as a bad argument (exit 2) naming t, the first key
// that names no counter: add checks every name before it adds to any,
// so that a typo among the names adds nothing, and query before it
// prints any.
func (s *counters) checkNames(t target, keys [][]byte) error {
	for _, k := range keys {
		if _, err := s.Counter(string(k)); err != nil {
			if errors.Is(err, sketch.ErrInvalidArgument) {
				return &exitError{exitUsage, fmt.Errorf("%s has no counter named %s; its counters are %s", t, quoteName(string(k)), nameList(s.Names(), 16))}
			}
			return err
		}
	}
	return nil
}

// badName makes the library's refusal of a name it does not have
// (sketch.ErrInvalidArgument) a bad argument, with the names it has.
func (s *counters) badName(err error) error {
	if errors.Is(err, sketch.ErrInvalidArgument) {
		return &exitError{exitUsage, fmt.Errorf("%w; its counters are %s", err, nameList(s.Names(), 16))}
	}
	return err
}

// add adds 1 to each named counter, or weights[i] to the i-th. A batch
// of standard input that holds a name the structure does not have adds
// nothing (the batches before it stay added).
func (s *counters) add(keys [][]byte, weights []uint64) error {
	cs := make([]sketch.Counter, len(keys))
	for i, k := range keys {
		c, err := s.Counter(string(k))
		if err != nil {
			return s.badName(err)
		}
		cs[i] = c
	}
	for i, c := range cs {
		n := uint64(1)
		if weights != nil {
			n = weights[i]
		}
		if err := c.Add(n); err != nil {
			return err
		}
	}
	return nil
}

// addKey adds n to the counter named key and answers with its value
// just after, which holds the adds other processes made meanwhile too.
func (s *counters) addKey(key []byte, n uint64) (answer, error) {
	if err := s.Add(string(key), n); err != nil {
		return nil, s.badName(err)
	}
	return s.valueOf(string(key))
}

// valueOf is the answer for the counter named name.
func (s *counters) valueOf(name string) (answer, error) {
	v, err := s.Value(name)
	if err != nil {
		return nil, s.badName(err)
	}
	return counterAnswer{Name: name, Value: v}, nil
}

// peek answers each name with its counter's value; a name the structure
// does not have is a bad argument, and nothing is printed.
func (s *counters) peek(keys [][]byte) ([]answer, error) {
	out := make([]answer, len(keys))
	for i, k := range keys {
		a, err := s.valueOf(string(k))
		if err != nil {
			return nil, err
		}
		out[i] = a
	}
	return out, nil
}

// query is peek for the structure interface, whose answers carry no
// error: the query command calls peek.
func (s *counters) query(keys [][]byte) []answer {
	out := make([]answer, len(keys))
	for i, k := range keys {
		a, err := s.valueOf(string(k))
		if err != nil {
			a = counterAnswer{Name: string(k), Error: message(err)}
		}
		out[i] = a
	}
	return out
}

// allNames are the names, for a query that names none: it prints every
// counter, in the stored order.
func (s *counters) allNames() []string { return s.Names() }

// counterAnswer is one counter's value, and its JSON: the library's
// NamedValue.
type counterAnswer struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
	Error string `json:"error,omitempty"`
}

func (a counterAnswer) text() string {
	if a.Error != "" {
		return "unknown: " + a.Error
	}
	return fmt.Sprint(a.Value)
}

// weight orders counters for query --top: the largest first.
func (a counterAnswer) weight() uint64 { return a.Value }

func (s *counters) stats() ([][2]string, any) {
	st := s.Stats()
	rows := [][2]string{
		{"kind", "exact counters (named 64-bit counters, an atomic add each, wrapping at 2^64)"},
		{"counters", fmt.Sprintf("%d (names fixed at create)", st.Names)},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"total", fmt.Sprint(total(st.Counters))},
		{"frozen", yesNo(st.Frozen)},
	}
	for _, c := range st.Counters {
		rows = append(rows, [2]string{"  " + quoteName(c.Name), fmt.Sprint(c.Value)})
	}
	return rows, st
}

// total is the counters' sum, wrapping at 2^64 as they do.
func total(vs []sketch.NamedValue) uint64 {
	var t uint64
	for _, v := range vs {
		t += v.Value
	}
	return t
}

func (s *counters) summary() string {
	vs := s.Values()
	parts := make([]string, 0, min(len(vs), 4))
	for _, v := range vs[:min(len(vs), 4)] {
		parts = append(parts, fmt.Sprintf("%s=%d", quoteName(v.Name), v.Value))
	}
	if len(vs) > 4 {
		parts = append(parts, "...")
	}
	return fmt.Sprintf("%s, total %d: %s", plural(len(vs), "counter", "counters"), total(vs), strings.Join(parts, " "))
}

// sample's total is the counters' sum, so that watch's rate is counts a
// second; Counters has each counter, whose rate watch fills in.
func (s *counters) sample() sample {
	st := s.Stats()
	cs := make([]counterSample, len(st.Counters))
	for i, c := range st.Counters {
		cs[i] = counterSample{Name: c.Name, Value: c.Value}
	}
	return sample{Total: total(st.Counters), Counters: cs, Frozen: st.Frozen, what: "counts"}
}

// counterSample is one counter in watch: its value, and its rate since
// the sample before, when there was one.
type counterSample struct {
	Name      string   `json:"name"`
	Value     uint64   `json:"value"`
	PerSecond *float64 `json:"per_second,omitempty"`
}

// counterRates fills in cur's per-counter rates from prev, taken d
// before: a counter reset meanwhile reads 0.
func counterRates(prev, cur sample, d time.Duration) {
	if len(prev.Counters) != len(cur.Counters) {
		return
	}
	for i := range cur.Counters {
		r := perSecond(prev.Counters[i].Value, cur.Counters[i].Value, d)
		cur.Counters[i].PerSecond = &r
	}
}

func (s *counters) merge(src structure) error {
	o, ok := src.(*counters)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a counters structure", src.describe())
	}
	return s.Merge(o.Counters)
}

// counterText is a counter in watch: its value, and its rate when it
// has one.
func counterText(c counterSample) string {
	if c.PerSecond == nil {
		return count(c.Value)
	}
	return fmt.Sprintf("%s (%s/s)", count(c.Value), rate(*c.PerSecond))
}
