package nginxtest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Request is one request of a trace: the key it is limited by, sent At
// this offset from the start of the replay.
type Request struct {
	Key string
	At  time.Duration
}

// GenerateTrace returns a trace of about a thousand requests over about
// 15 s from the seed (the same seed, the same trace), ordered by At. It
// mixes what a limiter has to get right, each on its own keys:
//
//   - burst: bursts of 25 to 45 requests at once, more than the Burst+1
//     a full key holds, separated by idle gaps of 1 to 4 s, so that each
//     burst is cut and the next begins on a partly refilled key;
//   - over: a stream at 12 to 15 requests a second, over the rate, so the
//     key fills and then refuses a few requests a second, letting one
//     through each Interval;
//   - edge: a burst that fills the key, then a stream just over the rate
//     (10.5 a second) with jitter: the key stays full, every request is
//     within tens of ms of the boundary, on either side, and about one
//     in 21 is refused;
//   - idle: small bursts of 2 to 8 after long gaps, nearly all allowed;
//   - mixed (three keys): random phases of bursts, streams at 5 to 20 a
//     second and idle gaps.
//
// Each key draws from its own random stream, so that changing how one
// key's requests are made leaves the others' as they were.
func GenerateTrace(seed uint64) []Request {
	g := &traceGen{span: 15 * time.Second}
	rng := func(key string) *rand.Rand {
		var h uint64 = 14695981039346656037 // FNV-1a of the key, a stream per key
		for _, b := range []byte(key) {
			h = (h ^ uint64(b)) * 1099511628211
		}
		return rand.New(rand.NewPCG(seed, h))
	}
	r := rng("burst")
	for at := 100 * time.Millisecond; at < g.span; at += time.Duration(1000+r.IntN(3000)) * time.Millisecond {
		g.burst("burst", at, 25+r.IntN(21))
	}
	r = rng("over")
	g.stream(r, "over", 200*time.Millisecond, g.span, 12+3*r.Float64())
	g.burst("edge", 300*time.Millisecond, Burst+1)
	g.stream(rng("edge"), "edge", 400*time.Millisecond, g.span, 10.5)
	r = rng("idle")
	for at := 500 * time.Millisecond; at < g.span; at += time.Duration(1500+r.IntN(3000)) * time.Millisecond {
		g.burst("idle", at, 2+r.IntN(7))
	}
	for i := range 3 {
		key := fmt.Sprintf("mixed%d", i)
		g.mixed(rng(key), key)
	}
	slices.SortStableFunc(g.tr, func(a, b Request) int { return cmp.Compare(a.At, b.At) })
	return g.tr
}

// traceGen collects the requests of a trace, up to span.
type traceGen struct {
	span time.Duration
	tr   []Request
}

// add adds a request at (from 0, and nothing from span on).
func (g *traceGen) add(key string, at time.Duration) {
	at = max(at, 0)
	if at < g.span {
		g.tr = append(g.tr, Request{Key: key, At: at})
	}
}

// burst adds n requests at once (the replay sends them back to back).
func (g *traceGen) burst(key string, at time.Duration, n int) {
	for range n {
		g.add(key, at)
	}
}

// stream adds one request every 1/perSecond s from at for d, each moved
// by up to a quarter of that either way.
func (g *traceGen) stream(r *rand.Rand, key string, at, d time.Duration, perSecond float64) {
	step := time.Duration(float64(time.Second) / perSecond)
	for t := time.Duration(0); t < d; t += step {
		g.add(key, at+t+time.Duration(r.Int64N(int64(step/2)))-step/4)
	}
}

// mixed adds random phases for one key until span: a burst of 5 to 40,
// a stream at 5 to 20 a second for 0.5 to 2.5 s, or an idle gap of 0.5
// to 3 s.
func (g *traceGen) mixed(r *rand.Rand, key string) {
	for at := time.Duration(r.IntN(500)) * time.Millisecond; at < g.span; {
		switch r.IntN(3) {
		case 0:
			g.burst(key, at, 5+r.IntN(36))
			at += time.Duration(r.IntN(300)) * time.Millisecond
		case 1:
			d := time.Duration(500+r.IntN(2000)) * time.Millisecond
			g.stream(r, key, at, d, 5+15*r.Float64())
			at += d
		default:
			at += time.Duration(500+r.IntN(2500)) * time.Millisecond
		}
	}
}
