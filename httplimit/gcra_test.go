package httplimit

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// TestMiddleware_GCRABurstThenRetryAfter: through a rate limiter of 1 a
// minute with a burst of 2, a key gets 3 answers of 200 with r going 2,
// 1, 0, then 429 with Retry-After the decision's, rounded up to seconds;
// the policy is q=3 over the 180 seconds the quota takes to come back.
func TestMiddleware_GCRABurstThenRetryAfter(t *testing.T) {
	g, err := sketch.OpenGCRA(sketch.Memory(), sketch.GCRAConfig{Rate: sketch.Rate{Count: 1, Per: time.Minute}, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	l, err := GCRA(g, "burst")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Limiter: l}
	m, err := New(Config{Key: headerKey, Limiters: []Limiter{rec}})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	for i := range 3 {
		a := get(t, srv, client, "198.51.100.7")
		if a.status != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200", i+1, a.status)
		}
		if a.policy != `"burst";q=3;w=180` {
			t.Errorf("request %d: RateLimit-Policy %q", i+1, a.policy)
		}
		if it := only(t, a.limit); it.params["r"] != uint64(2-i) {
			t.Errorf("request %d: RateLimit %q, want r=%d", i+1, a.limit, 2-i)
		}
	}
	a := get(t, srv, client, "198.51.100.7")
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("request 4: status %d, want 429", a.status)
	}
	res := rec.last()
	want := (res.RetryAfter + time.Second - 1) / time.Second
	if a.retryAfter != strconv.FormatInt(int64(want), 10) || res.RetryAfter <= 0 || res.RetryAfter > time.Minute {
		t.Errorf("Retry-After %q for a decision's %v (want %d, in (0, 60] s)", a.retryAfter, res.RetryAfter, want)
	}
	if s := g.Stats(); s.Allowed != 3 || s.Refused != 1 {
		t.Errorf("the limiter counted %d allowed, %d refused; want 3 and 1", s.Allowed, s.Refused)
	}
}

// TestGCRA_RefusesNil: a nil limiter is an error, not a panic later.
func TestGCRA_RefusesNil(t *testing.T) {
	if _, err := GCRA(nil, "x"); err == nil {
		t.Error("GCRA(nil) succeeded")
	}
}
