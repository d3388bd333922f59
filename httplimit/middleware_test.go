package httplimit

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestMiddleware_AllowsLimitThenRefuses(t *testing.T) {
	const limit = 3
	m, err := New(Config{Key: headerKey, Limiters: []Limiter{mustWindow(t, newWindow(t), limit, "perhour")}})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	for i := range limit {
		a := get(t, srv, client, "192.0.2.1")
		if a.status != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200", i+1, a.status)
		}
		if a.policy != `"perhour";q=3;w=7200` {
			t.Errorf("request %d: RateLimit-Policy %q, want %q", i+1, a.policy, `"perhour";q=3;w=7200`)
		}
		it := only(t, a.limit)
		if it.name != "perhour" || it.params["r"] != uint64(limit-1-i) {
			t.Errorf("request %d: RateLimit %q, want perhour with r=%d", i+1, a.limit, limit-1-i)
		}
		// Every count now in the window leaves it within two periods.
		if tt := it.params["t"]; tt <= 3600 || tt > 7200 {
			t.Errorf("request %d: RateLimit %q: t=%d, want 3601..7200", i+1, a.limit, tt)
		}
		if a.retryAfter != "" {
			t.Errorf("request %d: allowed with Retry-After %q", i+1, a.retryAfter)
		}
	}
	for i := range 2 {
		a := get(t, srv, client, "192.0.2.1")
		if a.status != http.StatusTooManyRequests {
			t.Fatalf("request %d: status %d, want 429", limit+1+i, a.status)
		}
		if it := only(t, a.limit); it.name != "perhour" || it.params["r"] != 0 {
			t.Errorf("request %d: RateLimit %q, want perhour with r=0", limit+1+i, a.limit)
		}
	}
	// Another key has its own quota.
	if a := get(t, srv, client, "192.0.2.2"); a.status != http.StatusOK {
		t.Errorf("another key: status %d, want 200", a.status)
	}
	if got, want := m.Stats(), (Stats{Allowed: limit + 1, Limited: 2}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestMiddleware_RefusedHasRetryAfter(t *testing.T) {
	rec := &recorder{Limiter: mustWindow(t, newWindow(t), 1, "perhour")}
	m, err := New(Config{Key: headerKey, Limiters: []Limiter{rec}})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	if a := get(t, srv, client, "k"); a.status != http.StatusOK {
		t.Fatalf("first request: status %d, want 200", a.status)
	}
	a := get(t, srv, client, "k")
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("second request: status %d, want 429", a.status)
	}
	res := rec.last()
	if res.Allowed || res.RetryAfter <= 0 {
		t.Fatalf("decision %+v: want a refusal with a retry time", res)
	}
	want := uint64(res.RetryAfter / time.Second)
	if res.RetryAfter%time.Second != 0 {
		want++
	}
	got, err := strconv.ParseUint(a.retryAfter, 10, 64)
	if err != nil || got != want || got < 1 {
		t.Fatalf("Retry-After %q, want %d (the decision's %v rounded up)", a.retryAfter, want, res.RetryAfter)
	}
	// The key's one request leaves the window when its period does: one
	// to two periods from now.
	if got <= 3600 || got > 7200 {
		t.Errorf("Retry-After %d, want 3601..7200", got)
	}
	// The effective window of a refusal ends when the retry time does.
	if it := only(t, a.limit); it.params["r"] != 0 || it.params["t"] != got {
		t.Errorf("RateLimit %q, want r=0;t=%d", a.limit, got)
	}
}

func TestMiddleware_BannedIs403WithoutCounting(t *testing.T) {
	rec := &recorder{Limiter: mustWindow(t, newWindow(t), 5, "default")}
	m, err := New(Config{
		Key:      headerKey,
		Limiters: []Limiter{rec},
		Banned:   func(key string, r *http.Request) bool { return key == "bad" },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	for range 3 {
		if a := get(t, srv, client, "bad"); a.status != http.StatusForbidden || a.limit != "" {
			t.Fatalf("banned key: status %d, RateLimit %q; want 403 without fields", a.status, a.limit)
		}
	}
	if a := get(t, srv, client, "good"); a.status != http.StatusOK {
		t.Fatalf("good key: status %d, want 200", a.status)
	}
	if rec.asked() != 1 {
		t.Errorf("limiter asked %d times, want 1 (never for a banned key)", rec.asked())
	}
	if got, want := m.Stats(), (Stats{Allowed: 1, Banned: 3}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestMiddleware_ReplayIs409WithoutCounting(t *testing.T) {
	rec := &recorder{Limiter: mustWindow(t, newWindow(t), 5, "default")}
	var seen sync.Map
	m, err := New(Config{
		Key:      headerKey,
		Limiters: []Limiter{rec},
		Replay: func(key string, r *http.Request) bool {
			_, dup := seen.LoadOrStore(r.Header.Get("X-Request-Id"), true)
			return dup
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	statuses := []int{}
	for _, id := range []string{"a", "b", "a", "a", "c"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set(keyHeader, "k")
		req.Header.Set("X-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	want := []int{200, 200, 409, 409, 200}
	if fmt.Sprint(statuses) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	if rec.asked() != 3 {
		t.Errorf("limiter asked %d times, want 3 (never for a replay)", rec.asked())
	}
	if got, want := m.Stats(), (Stats{Allowed: 3, Replayed: 2}); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}
