package nginxtest

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// gcraModel is the GCRA decision that the package comment shows nginx's
// limit_req to be: for each key its theoretical arrival time tat (0 for
// a new key), in integer ns; a request of cost n at now has newTat =
// max(tat, now) + n*T and is allowed iff newTat-now <= (b+1)*T, and only
// an allowed request moves tat to newTat.
type gcraModel struct {
	t, b int64 // emission interval (ns) and burst
	tat  map[string]int64
}

func newGCRAModel(interval time.Duration, burst int) *gcraModel {
	return &gcraModel{t: int64(interval), b: int64(burst), tat: make(map[string]int64)}
}

// margin is newTat-now-(b+1)*T for a request of cost n on key at now
// (ns), and newTat: the request is allowed iff margin <= 0.
func (m *gcraModel) margin(key string, now, n int64) (newTat, margin int64) {
	newTat = max(m.tat[key], now) + n*m.t
	return newTat, newTat - now - (m.b+1)*m.t
}

// decide decides a request as the model does, and records the decision.
func (m *gcraModel) decide(key string, now, n int64) bool {
	newTat, margin := m.margin(key, now, n)
	if margin <= 0 {
		m.tat[key] = newTat
	}
	return margin <= 0
}

// follow records a decision taken elsewhere: allowed moves tat to newTat.
func (m *gcraModel) follow(key string, newTat int64, allowed bool) {
	if allowed {
		m.tat[key] = newTat
	}
}

func TestGCRAModel_Burst(t *testing.T) {
	m := newGCRAModel(100*time.Millisecond, 20)
	ms := int64(time.Millisecond)
	for i := range 21 {
		if !m.decide("a", 1000*ms, 1) {
			t.Fatalf("request %d of a burst at once refused, want the first 21 allowed", i)
		}
	}
	if m.decide("a", 1000*ms, 1) {
		t.Fatalf("22nd request of a burst at once allowed, want refused")
	}
	if m.decide("a", 1099*ms, 1) {
		t.Fatalf("request 99 ms after a full burst allowed, want refused")
	}
	if !m.decide("a", 1100*ms, 1) {
		t.Fatalf("request 100 ms after a full burst refused, want allowed")
	}
	if !m.decide("b", 1100*ms, 21) || m.decide("b", 1100*ms, 1) {
		t.Fatalf("cost 21 on a new key then 1 more: want allowed, refused")
	}
}

// counts are what TestNginx_LimitReqMatchesGCRA reports.
type counts struct {
	total, allowed, refused      int
	afterRefusal, afterIdle      int // allowed right after a refusal of the key, after >= 1 s idle
	ambiguous, ambiguousDiffered int
	widened                      int // ambiguity window widened by nginx's $request_time
	mismatches                   int
	perKey                       map[string]*[2]int // allowed, refused
	last                         map[string]Result  // each key's last request
}

// add counts nginx's decision on r.
func (c *counts) add(r Result) {
	if c.perKey == nil {
		c.perKey, c.last = make(map[string]*[2]int), make(map[string]Result)
	}
	if c.perKey[r.Key] == nil {
		c.perKey[r.Key] = new([2]int)
	}
	c.total++
	p, seen := c.last[r.Key]
	if r.Allowed {
		c.allowed++
		c.perKey[r.Key][0]++
		if seen && !p.Allowed {
			c.afterRefusal++
		}
		if seen && r.MS-p.MS >= 1000 {
			c.afterIdle++
		}
	} else {
		c.refused++
		c.perKey[r.Key][1]++
	}
	c.last[r.Key] = r
}

// String is the report: the totals, then allowed/refused for each key.
func (c *counts) String() string {
	s := fmt.Sprintf("%d requests: %d allowed (%d right after a refusal of their key, %d after 1 s idle), %d refused; "+
		"%d ambiguous (within 2 ms of a boundary; %d of them decided otherwise by nginx; %d with a window widened by $request_time); %d mismatches; allowed/refused by key:",
		c.total, c.allowed, c.afterRefusal, c.afterIdle, c.refused, c.ambiguous, c.ambiguousDiffered, c.widened, c.mismatches)
	for _, k := range slices.Sorted(maps.Keys(c.perKey)) {
		s += fmt.Sprintf(" %s %d/%d", k, c.perKey[k][0], c.perKey[k][1])
	}
	return s
}

// TestNginx_LimitReqMatchesGCRA replays a seeded trace through a real
// nginx (limit_req rate=10r/s burst=20 nodelay) and through gcraModel
// fed with the times nginx logged, and requires the same decision for
// every request that is not within the clocks' slack of a boundary.
//
// A request is ambiguous when the model's margin is within 2 ms of 0:
// nginx decides on its monotonic ms clock and logs the wall clock, each
// truncated on its own, which puts nginx's margin up to 1 ms off the
// model's; 2 ms leaves room to spare. When nginx took longer than its
// ms to answer a request of the key (Result.Spread), the window grows by
// that. After each request the model takes nginx's decision, so that an
// ambiguous one that went the other way cannot make later ones differ.
// A late replay (a busy machine) only moves the times both sides see.
func TestNginx_LimitReqMatchesGCRA(t *testing.T) {
	trace := GenerateTrace(1)
	res := Replay(t, trace)
	m := newGCRAModel(Interval, Burst)
	ms := int64(time.Millisecond)
	var c counts
	spread := make(map[string]int64) // the largest Spread seen on each key
	for i, r := range res {
		c.add(r)
		newTat, margin := m.margin(r.Key, r.MS*ms, 1)
		want := margin <= 0
		spread[r.Key] = max(spread[r.Key], r.Spread)
		slack := (2 + spread[r.Key]) * ms
		switch {
		case -slack <= margin && margin <= slack:
			c.ambiguous++
			if spread[r.Key] > 0 {
				c.widened++
			}
			if want != r.Allowed {
				c.ambiguousDiffered++
			}
		case want != r.Allowed:
			c.mismatches++
			if c.mismatches <= 20 {
				t.Errorf("request %d (%q at %d ms, %v into the trace): nginx allowed = %v, model allowed = %v (margin %v)",
					i, r.Key, r.MS, trace[i].At, r.Allowed, want, time.Duration(margin))
			}
		}
		m.follow(r.Key, newTat, r.Allowed)
	}
	t.Log(c.String())
	if c.refused == 0 || c.afterRefusal == 0 || c.afterIdle == 0 {
		t.Errorf("the trace did not exercise refusals, recovery after them and idle keys: %s", c.String())
	}
}
