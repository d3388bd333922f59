package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// TestMiddleware_RefusalCountsInNone: a rate limiter and a window on one
// key, the one that refuses listed last, where deciding one by one would
// already have counted each refused request in the first. A window of 3
// before a burst of 5: after the window refuses, the rate limiter still
// has 2 left. A burst of 5 before a window of 10: after the rate limiter
// refuses, the window's estimate is the 5 allowed requests.
func TestMiddleware_RefusalCountsInNone(t *testing.T) {
	const key = "203.0.113.9"
	t.Run("window refuses", func(t *testing.T) {
		dir := t.TempDir()
		g := openGCRA(t, filepath.Join(dir, "burst"), time.Hour, 4)
		w := openWindow(t, filepath.Join(dir, "hourly"))
		srv, client := serve(t, mustNew(t, mustGCRA(t, g, "burst"), mustWindow(t, w, 3, "hourly")))
		for i := range 6 {
			if a, want := get(t, srv, client, key), statusFor(i < 3); a.status != want {
				t.Fatalf("request %d: status %d, want %d", i+1, a.status, want)
			}
		}
		if got := peek(t, g, key).Remaining; got != 2 {
			t.Errorf("the rate limiter has %d left, want 2 (5 less the 3 allowed): refused requests counted in it", got)
		}
		if s := g.Stats(); s.Allowed != 3 || s.Refused != 0 {
			t.Errorf("the rate limiter decided %d allowed, %d refused; want 3 and 0", s.Allowed, s.Refused)
		}
		if got := w.EstimateString(key); got != 3 {
			t.Errorf("the window counted %d, want 3", got)
		}
	})
	t.Run("rate limiter refuses", func(t *testing.T) {
		dir := t.TempDir()
		w := openWindow(t, filepath.Join(dir, "hourly"))
		g := openGCRA(t, filepath.Join(dir, "burst"), time.Hour, 4)
		srv, client := serve(t, mustNew(t, mustWindow(t, w, 10, "hourly"), mustGCRA(t, g, "burst")))
		for i := range 8 {
			if a, want := get(t, srv, client, key), statusFor(i < 5); a.status != want {
				t.Fatalf("request %d: status %d, want %d", i+1, a.status, want)
			}
		}
		if got := w.EstimateString(key); got != 5 {
			t.Errorf("the window counted %d, want the 5 allowed: refused requests counted in it", got)
		}
		if got := peek(t, g, key).Remaining; got != 0 {
			t.Errorf("the rate limiter has %d left, want 0", got)
		}
	})
}

// statusFor is the status of an allowed or a refused request.
func statusFor(allowed bool) int {
	if allowed {
		return http.StatusOK
	}
	return http.StatusTooManyRequests
}

// TestMiddleware_FieldsNameNearestAndLongestRetry: a window of 4 an hour
// and a rate limiter of 3 at once, one back every 10 hours, parsed back
// from the fields. RateLimit-Policy lists both, in order. While allowed,
// RateLimit names the rate limiter, nearer exhaustion, with what it has
// left and when its burst is whole again. When another process then
// takes the window's last request, both refuse: Retry-After is the rate
// limiter's 10 hours, the longer wait (the window's is at most its two
// hours), not the first refusing window's, and RateLimit names the
// window, the first to refuse, with t the Retry-After value.
func TestMiddleware_FieldsNameNearestAndLongestRetry(t *testing.T) {
	const key, interval = "198.51.100.20", 10 * time.Hour
	dir := t.TempDir()
	w := openWindow(t, filepath.Join(dir, "hourly"))
	g := openGCRA(t, filepath.Join(dir, "burst"), interval, 2)
	srv, client := serve(t, mustNew(t, mustWindow(t, w, 4, "hourly"), mustGCRA(t, g, "burst")))
	wantPolicies := []item{
		{"hourly", map[string]uint64{"q": 4, "w": 7200}},
		{"burst", map[string]uint64{"q": 3, "w": 3 * 36000}},
	}
	for i := range 3 {
		a := get(t, srv, client, key)
		if a.status != http.StatusOK || a.retryAfter != "" {
			t.Fatalf("request %d: status %d, Retry-After %q; want 200 without", i+1, a.status, a.retryAfter)
		}
		if got := parseField(t, a.policy); fmt.Sprint(got) != fmt.Sprint(wantPolicies) {
			t.Errorf("request %d: RateLimit-Policy %v, want %v", i+1, got, wantPolicies)
		}
		// The middleware read the rate limiter before this peek, so its
		// ResetAfter was no shorter than the peek's, and no longer than
		// the 10 hours of each request allowed so far.
		after := seconds(peek(t, g, key).ResetAfter)
		it := only(t, a.limit)
		if it.name != "burst" || len(it.params) != 2 || it.params["r"] != uint64(2-i) {
			t.Errorf("request %d: RateLimit %q, want burst with r=%d and t", i+1, a.limit, 2-i)
		}
		if tt := it.params["t"]; tt < after || tt > uint64(i+1)*36000 {
			t.Errorf("request %d: RateLimit %q: t=%d, want %d..%d", i+1, a.limit, tt, after, (i+1)*36000)
		}
	}
	if _, err := w.AddString(key); err != nil { // another process's request
		t.Fatal(err)
	}
	a := get(t, srv, client, key)
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("request 4: status %d, want 429", a.status)
	}
	ra, err := strconv.ParseUint(a.retryAfter, 10, 64)
	if err != nil {
		t.Fatalf("request 4: Retry-After %q: %v", a.retryAfter, err)
	}
	if least := seconds(peek(t, g, key).RetryAfter); ra < least || ra > 36000 {
		t.Errorf("request 4: Retry-After %d, want the rate limiter's %d..36000 (the window's is at most 7200)", ra, least)
	}
	it := only(t, a.limit)
	if it.name != "hourly" || len(it.params) != 2 || it.params["r"] != 0 || it.params["t"] != ra {
		t.Errorf("request 4: RateLimit %q, want hourly with r=0 and t=%d", a.limit, ra)
	}
	if got := parseField(t, a.policy); fmt.Sprint(got) != fmt.Sprint(wantPolicies) {
		t.Errorf("request 4: RateLimit-Policy %v, want %v", got, wantPolicies)
	}
	if s := g.Stats(); s.Allowed != 3 || s.Refused != 0 {
		t.Errorf("the rate limiter decided %d allowed, %d refused; want 3 and 0", s.Allowed, s.Refused)
	}
}

// TestMiddleware_FuncLimitersComeAfter: a Func listed first is still
// asked after the window and the rate limiter, and only when both allow:
// its refusal leaves the request counted in both (and in the Func before
// it, not in the one after); their refusal reaches no Func.
func TestMiddleware_FuncLimitersComeAfter(t *testing.T) {
	const key = "192.0.2.55"
	var refuse atomic.Bool
	var remoteCalls, auditCalls atomic.Int64 // the functions run in the server's goroutines
	remote, err := Func(Policy{Name: "remote", Quota: 100}, func(context.Context, string, uint64) (Result, error) {
		remoteCalls.Add(1)
		if refuse.Load() {
			return Result{RetryAfter: 30 * time.Second}, nil
		}
		return Result{Allowed: true, Remaining: 50}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	audit, err := Func(Policy{Name: "audit", Quota: 100}, func(context.Context, string, uint64) (Result, error) {
		auditCalls.Add(1)
		return Result{Allowed: true, Remaining: 100}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := openWindow(t, filepath.Join(dir, "hourly"))
	g := openGCRA(t, filepath.Join(dir, "burst"), time.Hour, 9)
	srv, client := serve(t, mustNew(t, remote, mustWindow(t, w, 3, "hourly"), audit, mustGCRA(t, g, "burst")))
	steps := []struct {
		refuse             bool
		status             int
		names              string // RateLimit's policy
		remote, audit, est uint64 // calls so far, and the window's count
	}{
		{false, http.StatusOK, "hourly", 1, 1, 1},
		{true, http.StatusTooManyRequests, "remote", 2, 1, 2}, // counted in the window and the rate limiter
		{false, http.StatusOK, "hourly", 3, 2, 3},
		{false, http.StatusTooManyRequests, "hourly", 3, 2, 3}, // the window refuses: no Func asked
	}
	for i, s := range steps {
		refuse.Store(s.refuse)
		a := get(t, srv, client, key)
		if a.status != s.status || only(t, a.limit).name != s.names {
			t.Errorf("request %d: status %d, RateLimit %q; want %d naming %s", i+1, a.status, a.limit, s.status, s.names)
		}
		if s.names == "remote" && a.retryAfter != "30" {
			t.Errorf("request %d: Retry-After %q, want the Func's 30", i+1, a.retryAfter)
		}
		if r, au := remoteCalls.Load(), auditCalls.Load(); r != int64(s.remote) || au != int64(s.audit) {
			t.Errorf("request %d: remote asked %d times, audit %d; want %d and %d", i+1, r, au, s.remote, s.audit)
		}
		if est := w.EstimateString(key); est != s.est {
			t.Errorf("request %d: the window counted %d, want %d", i+1, est, s.est)
		}
	}
	if got := peek(t, g, key).Remaining; got != 7 {
		t.Errorf("the rate limiter has %d left, want 7 (10 less the 3 the window allowed, the Func's refusal among them)", got)
	}
}

// TestMiddleware_RacingMiddlewaresNeverPastEither: goroutines send one
// key's 200 requests to two servers whose middlewares hold their own
// handles on the same two files, as two processes would; the tighter
// limit is listed last, where deciding one by one would count every
// request in the looser one. Never more are allowed than either limit,
// and the rate limiter counted exactly the allowed requests. A tighter
// rate limiter allows exactly its burst, and the window counted exactly
// the allowed requests; a tighter window counted at least those.
func TestMiddleware_RacingMiddlewaresNeverPastEither(t *testing.T) {
	const key, goroutines, each = "2001:db8::7", 8, 25
	cases := []struct {
		name        string
		windowLimit uint64
		burst       uint64 // the rate limiter lets burst+1 through at once
		windowFirst bool
	}{
		{"rate limiter tighter", 40, 19, true},
		{"window tighter", 20, 39, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var gs [2]*sketch.GCRA
			var ws [2]*sketch.CountMinWindow
			var ms [2]*Middleware
			var srvs [2]string
			var clients [2]*http.Client
			for i := range 2 {
				ws[i] = openWindow(t, filepath.Join(dir, "hourly"))
				gs[i] = openGCRA(t, filepath.Join(dir, "burst"), time.Hour, c.burst)
				win, burst := mustWindow(t, ws[i], c.windowLimit, "hourly"), mustGCRA(t, gs[i], "burst")
				ms[i] = mustNew(t, burst, win)
				if c.windowFirst {
					ms[i] = mustNew(t, win, burst)
				}
				srv, client := serve(t, ms[i])
				srvs[i], clients[i] = srv.URL, client
			}
			n, refused := race(t, clients, srvs, key, goroutines, each)
			if most := min(c.windowLimit, c.burst+1); n == 0 || n > most || n+refused != goroutines*each {
				t.Fatalf("%d allowed, %d refused of %d; want 1..%d allowed, the rest refused", n, refused, goroutines*each, most)
			}
			if s0, s1 := ms[0].Stats(), ms[1].Stats(); s0.Allowed+s1.Allowed != n {
				t.Errorf("the middlewares counted %d and %d allowed, want %d in all", s0.Allowed, s1.Allowed, n)
			}
			// Tighter, the rate limiter decided them itself; looser, it was
			// counted in only after the window allowed.
			if s := gs[0].Stats(); s.Allowed != n {
				t.Errorf("the rate limiter allowed %d, want the %d allowed", s.Allowed, n)
			}
			if left := peek(t, gs[1], key).Remaining; left != c.burst+1-n {
				t.Errorf("the rate limiter has %d left, want %d", left, c.burst+1-n)
			}
			est := ws[1].EstimateString(key)
			switch {
			case c.windowLimit > c.burst+1 && est != n:
				t.Errorf("the window counted %d, want the %d allowed", est, n)
			case c.windowLimit <= c.burst+1 && est < n:
				t.Errorf("the window counted %d, fewer than the %d allowed", est, n)
			}
			if c.windowLimit > c.burst+1 && n != c.burst+1 {
				t.Errorf("%d allowed, want the rate limiter's %d exactly (it refuses nothing early)", n, c.burst+1)
			}
			t.Logf("%d allowed, the window counted %d", n, est)
		})
	}
}

// race sends each requests of key from each of goroutines goroutines,
// to the servers in turn, and counts the answers of 200 and 429 (any
// other status fails the test).
func race(t *testing.T, clients [2]*http.Client, urls [2]string, key string, goroutines, each int) (allowed, refused uint64) {
	var ok, limited atomic.Uint64
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			for range each {
				switch status := getStatus(t, clients[i%2], urls[i%2], key); status {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				default:
					t.Errorf("status %d, want 200 or 429", status)
				}
			}
		})
	}
	wg.Wait()
	return ok.Load(), limited.Load()
}

// getStatus asks url for / with key and returns the status.
func getStatus(t *testing.T, client *http.Client, url, key string) int {
	req, err := http.NewRequest(http.MethodGet, url+"/", nil)
	if err != nil {
		t.Error(err)
		return 0
	}
	req.Header.Set(keyHeader, key)
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("GET: %v", err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMiddleware_SketchLimiterErrorsNamePolicy: an error of the window
// or the rate limiter answers 503 and reaches OnError naming the policy
// when it can be told (a cost one of them cannot count), and both
// policies otherwise (a closed handle); no Func is asked.
func TestMiddleware_SketchLimiterErrorsNamePolicy(t *testing.T) {
	dir := t.TempDir()
	w := openWindow(t, filepath.Join(dir, "hourly"))
	g := openGCRA(t, filepath.Join(dir, "burst"), time.Hour, 4)
	var asked atomic.Int64
	after, err := Func(Policy{Name: "after", Quota: 1}, func(context.Context, string, uint64) (Result, error) {
		asked.Add(1)
		return Result{Allowed: true}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		limits []Limiter
		cost   uint64
		closed bool
		is     []error
		names  string
	}{
		{"window cost", []Limiter{mustGCRA(t, g, "burst"), mustWindow(t, w, 3, "hourly"), after}, 2, false, []error{ErrCost}, `policy "hourly"`},
		{"burst cost", []Limiter{mustGCRA(t, g, "burst"), after}, 6, false, []error{ErrCost, sketch.ErrInvalidArgument}, `policy "burst"`},
		{"closed", []Limiter{mustWindow(t, w, 3, "hourly"), after, mustGCRA(t, g, "burst")}, 1, true, []error{sketch.ErrClosed}, `policies "hourly", "burst"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex // OnError runs in the server's goroutines
			var heard []error
			m, err := New(Config{
				Key:      headerKey,
				Limiters: c.limits,
				Cost:     func(*http.Request) uint64 { return c.cost },
				OnError: func(err error, _ string, _ *http.Request) {
					mu.Lock()
					defer mu.Unlock()
					heard = append(heard, err)
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.closed {
				g.Close()
			}
			srv, client := serve(t, m)
			if a := get(t, srv, client, "k"); a.status != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503", a.status)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(heard) != 1 || !strings.Contains(heard[0].Error(), c.names) {
				t.Fatalf("OnError heard %v, want one error naming %s", heard, c.names)
			}
			for _, target := range c.is {
				if !errors.Is(heard[0], target) {
					t.Errorf("OnError heard %v, not %v", heard[0], target)
				}
			}
			if asked.Load() != 0 {
				t.Errorf("the Func was asked %d times, want 0", asked.Load())
			}
		})
	}
}
