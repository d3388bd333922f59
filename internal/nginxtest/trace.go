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
//   - edge: a burst that fills the key, then a stream at the rate with
//     jitter, so that requests fall on both sides of the boundary;
//   - idle: small bursts of 2 to 8 after long gaps, nearly all allowed;
//   - mixed (two keys): random phases of bursts, streams at 5 to 20 a
//     second and idle gaps.
func GenerateTrace(seed uint64) []Request {
	r := rand.New(rand.NewPCG(seed, 0x6e67696e78))
	const span = 15 * time.Second
	var tr []Request
	add := func(key string, at time.Duration) {
		at = max(at, 0)
		if at < span {
			tr = append(tr, Request{Key: key, At: at})
		}
	}
	// A burst: n requests at once (the replay sends them back to back).
	burst := func(key string, at time.Duration, n int) {
		for range n {
			add(key, at)
		}
	}
	// A stream: one request every 1/perSecond s, jittered by up to a
	// quarter of that, from at for d.
	stream := func(key string, at, d time.Duration, perSecond float64) {
		step := time.Duration(float64(time.Second) / perSecond)
		for t := time.Duration(0); t < d; t += step {
			add(key, at+t+time.Duration(r.Int64N(int64(step/2)))-step/4)
		}
	}
	for at := 100 * time.Millisecond; at < span; at += time.Duration(1000+r.IntN(3000)) * time.Millisecond {
		burst("burst", at, 25+r.IntN(21))
	}
	stream("over", 200*time.Millisecond, span, 12+3*r.Float64())
	burst("edge", 300*time.Millisecond, Burst+1)
	stream("edge", 400*time.Millisecond, span, 10)
	for at := 500 * time.Millisecond; at < span; at += time.Duration(1500+r.IntN(3000)) * time.Millisecond {
		burst("idle", at, 2+r.IntN(7))
	}
	for i := range 2 {
		mixed(r, fmt.Sprintf("mixed%d", i), span, burst, stream)
	}
	slices.SortStableFunc(tr, func(a, b Request) int { return cmp.Compare(a.At, b.At) })
	return tr
}

// mixed adds random phases for one key until span: a burst of 5 to 40,
// a stream at 5 to 20 a second for 0.5 to 2.5 s, or an idle gap of 0.5
// to 3 s.
func mixed(r *rand.Rand, key string, span time.Duration,
	burst func(string, time.Duration, int), stream func(string, time.Duration, time.Duration, float64)) {
	for at := time.Duration(r.IntN(500)) * time.Millisecond; at < span; {
		switch r.IntN(3) {
		case 0:
			burst(key, at, 5+r.IntN(36))
			at += time.Duration(r.IntN(300)) * time.Millisecond
		case 1:
			d := time.Duration(500+r.IntN(2000)) * time.Millisecond
			stream(key, at, d, 5+15*r.Float64())
			at += d
		default:
			at += time.Duration(500+r.IntN(2500)) * time.Millisecond
		}
	}
}
