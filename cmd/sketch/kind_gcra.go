package main

import (
	"fmt"
	"time"

	"github.com/shmsketch/sketch"
)

// gcraKind is the rate limiter's row of cliKinds.
var gcraKind = cliKindOf(sketch.KindGCRA, []string{"rate", "burst", "keys", "rows", "width"},
	sketch.OpenGCRA, newGCRA, createFlags.gcraConfig,
	func(f createFlags) error {
		if f.rate == (sketch.Rate{}) {
			return usageError("a rate limiter needs --rate, the requests a key may make in the long run, as nginx writes it: 10/s, 10r/s, 30r/m, 1/h")
		}
		return nil
	})

// gcra is a rate limiter to the commands. It counts nothing by add:
// allow decides requests, and query peeks at keys (kind_gcra.go's
// decide and peek).
type gcra struct{ *sketch.GCRA }

func newGCRA(g *sketch.GCRA) structure { return &gcra{g} }

func (s *gcra) kind() string { return string(sketch.KindGCRA) }

func (s *gcra) describe() string {
	cfg := s.Config()
	return fmt.Sprintf("rate limiter (GCRA), %v burst %d, %d x %d times", cfg.Rate, cfg.Burst, cfg.Rows, cfg.Width)
}

// errRateNoAdd is add's refusal: a rate limiter counts the requests it
// allows, which allow decides.
var errRateNoAdd = errNotSupported("add: sketch allow decides a request a key, and counts those it allows", "rate limiter")

func (s *gcra) add(keys [][]byte, weights []uint64) error { return errRateNoAdd }

func (s *gcra) addKey(key []byte, n uint64) (answer, error) { return nil, errRateNoAdd }

// decide decides a request of cost for each key, in order, at one
// moment (the library's AllowBatch); a cost of 0 peeks at each, counting
// nothing.
func (s *gcra) decide(keys [][]byte, cost uint64) ([]rateAnswer, error) {
	ds := make([]sketch.RateDecision, len(keys))
	if err := s.AllowBatch(keys, cost, ds); err != nil {
		return nil, err
	}
	out := make([]rateAnswer, len(keys))
	for i, d := range ds {
		out[i] = rateAnswer{jsonKey: keyOf(string(keys[i])), Allowed: d.Allowed, Cost: cost,
			Remaining: d.Remaining, RetryAfter: d.RetryAfter, ResetAfter: d.ResetAfter}
	}
	return out, nil
}

// peek answers each key as a request of cost 1 would be answered now,
// counting nothing: the library's Allow with cost 0, which a read-only
// handle answers too.
func (s *gcra) peek(keys [][]byte) ([]answer, error) {
	ds, err := s.decide(keys, 0)
	if err != nil {
		return nil, err
	}
	out := make([]answer, len(ds))
	for i := range ds {
		out[i] = ds[i]
	}
	return out, nil
}

// query is peek for the structure interface, whose answers carry no
// error: the query command calls peek, and a peek that fails (a
// read-only handle, a frozen file) answers each key with why.
func (s *gcra) query(keys [][]byte) []answer {
	out, err := s.peek(keys)
	if err == nil {
		return out
	}
	out = make([]answer, len(keys))
	for i, k := range keys {
		out[i] = rateAnswer{jsonKey: keyOf(string(k)), Error: message(err)}
	}
	return out
}

// rateAnswer is a rate limiter's decision for one key (allow) or what it
// would decide (a peek: query, Cost 0), and its JSON; the durations are
// in nanoseconds.
type rateAnswer struct {
	jsonKey
	Allowed    bool          `json:"allowed"`
	Cost       uint64        `json:"cost"`
	Remaining  uint64        `json:"remaining"`
	RetryAfter time.Duration `json:"retry_after"`
	ResetAfter time.Duration `json:"reset_after"`
	Error      string        `json:"error,omitempty"`
}

// text is the decision's line after the key, in fixed columns: the
// verdict, then remaining, retry after and reset after, the durations
// rounded up (retrying after what it says is never too early).
func (a rateAnswer) text() string {
	if a.Error != "" {
		return "unknown: " + a.Error
	}
	verdict := "refused"
	switch {
	case a.Cost == 0 && a.Allowed:
		verdict = "would be allowed"
	case a.Cost == 0:
		verdict = "would be refused"
	case a.Allowed:
		verdict = "allowed"
	}
	return fmt.Sprintf("%s\tremaining %d\tretry after %v\treset after %v", verdict, a.Remaining, ceilDuration(a.RetryAfter), ceilDuration(a.ResetAfter))
}

// weight orders peeks for query --top: the busiest key, the one whose
// burst is furthest from back, is the loudest.
func (a rateAnswer) weight() uint64 { return uint64(a.ResetAfter) }

// ceilDuration rounds d up to a millisecond, or to a second from a
// minute on.
func ceilDuration(d time.Duration) time.Duration {
	unit := time.Millisecond
	if d >= time.Minute {
		unit = time.Second
	}
	if r := d % unit; r != 0 {
		d += unit - r
	}
	return d
}

func (s *gcra) stats() ([][2]string, any) {
	st := s.Stats()
	return [][2]string{
		{"kind", "rate limiter (GCRA, as nginx's limit_req with nodelay)"},
		{"rate", fmt.Sprintf("%v (a request every %v in the long run)", st.Rate, st.Rate.Interval())},
		{"burst", fmt.Sprintf("%d (an idle key is allowed %d at once)", st.Burst, st.Burst+1)},
		{"shape", fmt.Sprintf("%d x %d times", st.Rows, st.Width)},
		{"bytes", fmt.Sprint(st.Bytes)},
		{"allowed", fmt.Sprintf("%d (costing %d)", st.Allowed, st.Cost)},
		{"refused", fmt.Sprint(st.Refused)},
		{"busy", fmt.Sprintf("%d cells, %s (keys there are not allowed their whole burst now)", st.Busy, percent(st.BusyRate))},
		{"frozen", yesNo(st.Frozen)},
	}, st
}

func (s *gcra) summary() string {
	st := s.Stats()
	return fmt.Sprintf("%v burst %d: %d allowed, %d refused, %s of cells busy", st.Rate, st.Burst, st.Allowed, st.Refused, percent(st.BusyRate))
}

// sample's total is the decisions, so that watch's rate is decisions a
// second.
func (s *gcra) sample() sample {
	st := s.Stats()
	return sample{Total: st.Allowed + st.Refused, Refused: &st.Refused, Busy: &st.BusyRate, Frozen: st.Frozen, what: "decisions"}
}

func (s *gcra) merge(src structure) error {
	o, ok := src.(*gcra)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a rate limiter", src.describe())
	}
	return s.Merge(o.GCRA)
}
