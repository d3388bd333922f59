package bench

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/internal/nginxtest"
	"golang.org/x/time/rate"
)

// The rate limiter beside golang.org/x/time/rate: a token bucket of
// Burst+1 tokens refilled at the rate is the same algorithm as GCRA, so
// a Limiter per key (AllowN at the trace's times) and the shared-memory
// limiter (AllowAt at the same times) must decide alike. x/time/rate
// counts its tokens in float64, which can put a request that lands
// exactly on a refill boundary a rounding error to either side: a
// request within a microsecond of the boundary is ambiguous, and is
// decided at a time moved by that microsecond towards x/time/rate's
// answer, so that the two keep one state.

// gcraState is the algorithm for one key, in integer ns: its TAT.
type gcraState map[string]int64

// margin is how far past the limit a request of key at now would be
// (allowed iff <= 0), and its new TAT.
func (s gcraState) margin(key string, now, interval int64, burst int) (next, margin int64) {
	next = max(s[key], now) + interval
	return next, next - now - int64(burst+1)*interval
}

// TestXTimeRate_DecidesAsGCRA replays the trace of the nginx comparison
// (its own times, no server) through a rate.Limiter per key and through
// the limiter: every request that is not within a microsecond of a
// boundary is decided alike.
func TestXTimeRate_DecidesAsGCRA(t *testing.T) {
	trace := nginxtest.GenerateTrace(1)
	interval, burst := nginxtest.Interval, nginxtest.Burst
	g, err := sketch.OpenGCRA(sketch.Memory(), sketch.GCRAConfig{
		Rate: sketch.Rate{Count: uint64(time.Second / interval), Per: time.Second}, Burst: uint64(burst), Rows: 4, Width: 1 << 16,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	start := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	limiters := map[string]*rate.Limiter{}
	state := gcraState{}
	allowed, ambiguous := 0, 0
	for i, r := range trace {
		at := start.Add(r.At)
		l := limiters[r.Key]
		if l == nil {
			l = rate.NewLimiter(rate.Every(interval), burst+1)
			limiters[r.Key] = l
		}
		want := l.AllowN(at, 1)
		now := at.UnixNano()
		next, margin := state.margin(r.Key, now, int64(interval), burst)
		if margin >= -int64(time.Microsecond) && margin <= int64(time.Microsecond) {
			ambiguous++
			if want {
				now += int64(time.Microsecond)
			} else {
				now -= int64(time.Microsecond)
			}
		}
		d, err := g.AllowAt([]byte(r.Key), 1, time.Unix(0, now))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != want {
			t.Errorf("request %d (%q at %v): x/time/rate allowed = %v, the limiter %v (margin %v)", i, r.Key, r.At, want, d.Allowed, time.Duration(margin))
		}
		if d.Allowed {
			allowed++
			state[r.Key] = next
		}
	}
	t.Logf("%d requests, %d allowed, %d refused, %d within a microsecond of a boundary", len(trace), allowed, len(trace)-allowed, ambiguous)
	if allowed == 0 || allowed == len(trace) {
		t.Errorf("the trace was all allowed or all refused: it tests nothing")
	}
}

// BenchmarkRateLimit: a decision of the shared-memory limiter (AllowAt,
// no clock read; Allow, with one) beside x/time/rate's Limiter per key
// in a map behind a RWMutex (what a process without shared memory
// keeps), on 4096 keys that mostly pass.
func BenchmarkRateLimit(b *testing.B) {
	keys := make([][]byte, 4096)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("client-%d", i))
	}
	g, err := sketch.OpenGCRA(sketch.Memory(), sketch.GCRAConfig{Rate: sketch.Rate{Count: 1e6, Per: time.Second}, Burst: 1000})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	at := time.Now()
	b.Run("sketch.GCRA.AllowAt", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			g.AllowAt(keys[i&4095], 1, at)
		}
	})
	b.Run("sketch.GCRA.Allow", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			g.Allow(keys[i&4095], 1)
		}
	})
	var mu sync.RWMutex
	m := map[string]*rate.Limiter{}
	b.Run("x-time-rate.AllowN", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			k := keys[i&4095]
			mu.RLock()
			l := m[string(k)]
			mu.RUnlock()
			if l == nil {
				mu.Lock()
				if l = m[string(k)]; l == nil {
					l = rate.NewLimiter(1e6, 1001)
					m[string(k)] = l
				}
				mu.Unlock()
			}
			l.AllowN(at, 1)
		}
	})
}
