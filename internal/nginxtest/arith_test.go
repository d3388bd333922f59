package nginxtest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// limitReqArith is ngx_http_limit_req_lookup's arithmetic (nginx 1.22)
// for one zone with nodelay, in Go: per key the ms of its last update
// and its excess in milli-requests; rate is in milli-requests a second
// (10000 for 10r/s) and burst in milli-requests (burst=20: 20000).
type limitReqArith struct {
	rate, burst int64
	last        map[string]int64
	excess      map[string]int64
}

// lookup decides a request on key at now (ms) as nginx does.
func (a *limitReqArith) lookup(key string, now int64) bool {
	last, ok := a.last[key]
	if !ok { // a new node: excess 0, last = now, let through
		a.last[key], a.excess[key] = now, 0
		return true
	}
	ms := now - last
	if ms < -60000 {
		ms = 1
	} else if ms < 0 {
		ms = 0
	}
	excess := a.excess[key] - a.rate*ms/1000 + 1000
	if excess < 0 {
		excess = 0
	}
	if excess > a.burst {
		return false
	}
	a.excess[key] = excess
	if ms != 0 {
		a.last[key] = now
	}
	return true
}

// TestLimitReqArith_IsGCRA checks the package comment's claim without
// nginx: nginx's arithmetic and gcraModel, fed the same ms times, decide
// every request alike (no clock slack here: one clock for both).
func TestLimitReqArith_IsGCRA(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			a := &limitReqArith{rate: 10000, burst: Burst * 1000, last: map[string]int64{}, excess: map[string]int64{}}
			m := newGCRAModel(Interval, Burst)
			now := int64(1_700_000_000_000)
			refused, step := 0, int64(1)
			for i := range 20000 {
				// Phases of 100 requests, each after an idle gap of up to
				// 3 s: bursts (steps of 0 to 2 ms), about the rate on
				// each of the 3 keys (0 to 60 ms) or under it (0 to 200
				// ms).
				if i%100 == 0 {
					now += r.Int64N(3000)
					step = []int64{3, 61, 201}[r.IntN(3)]
				}
				now += r.Int64N(step)
				key := fmt.Sprint(r.IntN(3))
				got, want := a.lookup(key, now), m.decide(key, now*int64(time.Millisecond), 1)
				if got != want {
					t.Fatalf("request %d on %q at %d ms: nginx's arithmetic allowed = %v, gcraModel = %v", i, key, now, got, want)
				}
				if !got {
					refused++
				}
			}
			if refused < 2000 || refused > 18000 {
				t.Fatalf("%d of 20000 requests refused, want 2000 to 18000: the sequence does not test both decisions", refused)
			}
		})
	}
}
