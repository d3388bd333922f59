package httplimit

import (
	"context"
	"errors"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMiddleware_SecondLimiterRefuses(t *testing.T) {
	w := newWindow(t)
	burst := &recorder{Limiter: mustWindow(t, w, 2, "burst")}
	wide := &recorder{Limiter: mustWindow(t, newWindow(t), 10, "wide")}
	m, err := New(Config{Key: headerKey, Limiters: []Limiter{wide, burst}})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	const policy = `"wide";q=10;w=7200, "burst";q=2;w=7200`
	// Allowed by both: the field names the policy with less left.
	for i, want := range []uint64{1, 0} {
		a := get(t, srv, client, "k")
		if a.status != http.StatusOK || a.policy != policy {
			t.Fatalf("request %d: status %d, RateLimit-Policy %q; want 200, %q", i+1, a.status, a.policy, policy)
		}
		if it := only(t, a.limit); it.name != "burst" || it.params["r"] != want {
			t.Errorf("request %d: RateLimit %q, want burst with r=%d", i+1, a.limit, want)
		}
	}
	a := get(t, srv, client, "k")
	if a.status != http.StatusTooManyRequests || a.policy != policy {
		t.Fatalf("third request: status %d, RateLimit-Policy %q; want 429, %q", a.status, a.policy, policy)
	}
	if it := only(t, a.limit); it.name != "burst" || it.params["r"] != 0 {
		t.Errorf("third request: RateLimit %q, want burst with r=0", a.limit)
	}
	// The first limiter counted all three, the refusing one its two.
	if wide.last().Remaining != 7 {
		t.Errorf("wide: remaining %d after three requests, want 7", wide.last().Remaining)
	}
	if got := w.EstimateString("k"); got != 2 {
		t.Errorf("burst window: estimate %d, want 2 (a refused request is not counted)", got)
	}
	if got, want := m.Stats(), (Stats{Allowed: 2, Limited: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestMiddleware_FirstRefusalStopsTheRest(t *testing.T) {
	first := &recorder{Limiter: mustWindow(t, newWindow(t), 1, "first")}
	second := &recorder{Limiter: mustWindow(t, newWindow(t), 5, "second")}
	m, err := New(Config{Key: headerKey, Limiters: []Limiter{first, second}})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	for range 3 {
		get(t, srv, client, "k")
	}
	if first.asked() != 3 || second.asked() != 1 {
		t.Errorf("asked %d and %d times, want 3 and 1", first.asked(), second.asked())
	}
}

func TestMiddleware_LimiterErrorIs503(t *testing.T) {
	boom := errors.New("boom")
	failing, err := Func(Policy{Name: "remote", Quota: 10}, func(context.Context, string, uint64) (Result, error) {
		return Result{}, boom
	})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // OnError runs in the server's goroutines
	var heard []error
	m, err := New(Config{
		Key:      headerKey,
		Limiters: []Limiter{failing},
		OnError: func(err error, key string, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, err)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	if a := get(t, srv, client, "k"); a.status != http.StatusServiceUnavailable || a.retryAfter != "" {
		t.Fatalf("status %d, Retry-After %q; want 503 without", a.status, a.retryAfter)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || !errors.Is(heard[0], boom) || !strings.Contains(heard[0].Error(), `"remote"`) {
		t.Errorf("OnError heard %v, want one error wrapping %v that names the policy", heard, boom)
	}
	if got, want := m.Stats(), (Stats{LimiterErrors: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestMiddleware_KeyErrorIs400(t *testing.T) {
	m, err := New(Config{Key: headerKey, Limiters: []Limiter{mustWindow(t, newWindow(t), 1, "default")}})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	if a := get(t, srv, client, ""); a.status != http.StatusBadRequest {
		t.Fatalf("no key: status %d, want 400", a.status)
	}
	if got, want := m.Stats(), (Stats{KeyErrors: 1}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

// TestMiddleware_HostileKeysAreKeys: any string is a key of its own, and
// none reaches a header.
func TestMiddleware_HostileKeysAreKeys(t *testing.T) {
	keys := []string{"", "\x00", "é\u202e", "\xff\xfe", "a\r\nSet-Cookie: x=1", strings.Repeat("k", 1<<20)}
	w := newWindow(t)
	var i atomic.Int64
	m, err := New(Config{
		Key:      func(*http.Request) (string, error) { return keys[int(i.Add(1)-1)%len(keys)], nil },
		Limiters: []Limiter{mustWindow(t, w, 1, "default")},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	for round, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		for j := range keys {
			a := get(t, srv, client, "ignored")
			if a.status != want {
				t.Errorf("round %d, key %d: status %d, want %d", round, j, a.status, want)
			}
			if !strings.HasPrefix(a.limit, `"default";r=0;t=`) || strings.ContainsAny(a.limit, "\r\n\x00") {
				t.Errorf("round %d, key %d: RateLimit %q", round, j, a.limit)
			}
		}
	}
	for _, k := range keys {
		if got := w.EstimateString(k); got != 1 {
			t.Errorf("EstimateString(%.20q) = %d, want 1", k, got)
		}
	}
}

// TestMiddleware_OddResultsStayInRange: a limiter's retry time of 0,
// below 0 or huge, and a remaining quota past its quota, still make
// valid fields.
func TestMiddleware_OddResultsStayInRange(t *testing.T) {
	cases := []struct {
		name                string
		res                 Result
		retryAfter, ratelim string
	}{
		{"zero retry", Result{}, "1", `"odd";r=0;t=1`},
		{"negative retry", Result{RetryAfter: -time.Hour, ResetAfter: -time.Hour}, "1", `"odd";r=0;t=1`},
		{"huge retry", Result{RetryAfter: math.MaxInt64}, "9223372037", `"odd";r=0;t=9223372037`},
		{"fraction", Result{RetryAfter: 1500 * time.Millisecond}, "2", `"odd";r=0;t=2`},
		{"too much left", Result{Allowed: true, Remaining: math.MaxUint64, ResetAfter: math.MaxInt64}, "", `"odd";r=7;t=9223372037`},
		{"allowed, no reset", Result{Allowed: true, Remaining: 3}, "", `"odd";r=3`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			odd, err := Func(Policy{Name: "odd", Quota: 7, Window: time.Minute}, func(context.Context, string, uint64) (Result, error) {
				return c.res, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			m, err := New(Config{Key: headerKey, Limiters: []Limiter{odd}})
			if err != nil {
				t.Fatal(err)
			}
			srv, client := serve(t, m)
			a := get(t, srv, client, "k")
			if a.retryAfter != c.retryAfter || a.limit != c.ratelim {
				t.Errorf("Retry-After %q, RateLimit %q; want %q, %q", a.retryAfter, a.limit, c.retryAfter, c.ratelim)
			}
		})
	}
}

// TestMiddleware_CostReachesLimiters: a request's cost reaches a Func and
// the rate limiter (which counts it whole); a window, which counts one
// request at a time, answers a cost of 40 with ErrCost, before any other
// limiter is asked.
func TestMiddleware_CostReachesLimiters(t *testing.T) {
	var mu sync.Mutex // the function runs in the server's goroutines
	var costs []uint64
	f, err := Func(Policy{Name: "bytes", Quota: 1000}, func(_ context.Context, _ string, cost uint64) (Result, error) {
		mu.Lock()
		defer mu.Unlock()
		costs = append(costs, cost)
		return Result{Allowed: true, Remaining: 1000 - cost}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g := openGCRA(t, filepath.Join(t.TempDir(), "burst"), time.Hour, 99)
	burst := mustGCRA(t, g, "burst")
	w := mustWindow(t, newWindow(t), 5, "requests")
	cost := func(*http.Request) uint64 { return 40 }
	m, err := New(Config{Key: headerKey, Limiters: []Limiter{f, burst}, Cost: cost})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	if a := get(t, srv, client, "k"); a.status != http.StatusOK {
		t.Errorf("status %d, want 200", a.status)
	}
	m, err = New(Config{Key: headerKey, Limiters: []Limiter{f, burst, w}, Cost: cost})
	if err != nil {
		t.Fatal(err)
	}
	srv, client = serve(t, m)
	if a := get(t, srv, client, "k"); a.status != http.StatusServiceUnavailable {
		t.Errorf("with the window: status %d, want 503", a.status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(costs) != 1 || costs[0] != 40 {
		t.Errorf("costs %v, want [40]", costs)
	}
	if left := peek(t, g, "k").Remaining; left != 60 {
		t.Errorf("the rate limiter has %d left, want 60 (100 less one cost of 40)", left)
	}
	if _, err := w.Limit(context.Background(), "k", 2); !errors.Is(err, ErrCost) {
		t.Errorf("Window's Limit with cost 2: %v, want ErrCost", err)
	}
}
