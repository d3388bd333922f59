package httplimit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fixed is a Limiter that allows everything under its policy.
type fixed Policy

func (f fixed) Policy() Policy { return Policy(f) }

func (f fixed) Limit(context.Context, string, uint64) (Result, error) {
	return Result{Policy: Policy(f), Allowed: true, Remaining: f.Quota}, nil
}

func TestNew_RefusesWhatTheFieldsCannotCarry(t *testing.T) {
	ok := fixed{Name: "ok", Quota: 1}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no key", Config{Limiters: []Limiter{ok}}, "no Key"},
		{"nil limiters", Config{Key: RemoteIP}, "no limiters"},
		{"nil limiter", Config{Key: RemoteIP, Limiters: []Limiter{ok, nil}}, "limiter 1 is nil"},
		{"empty name", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Quota: 1}}}, "not an sf-token"},
		{"digit first", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Name: "1m", Quota: 1}}}, "not an sf-token"},
		{"space", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Name: "per minute", Quota: 1}}}, "not an sf-token"},
		{"quote", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Name: `a"b`, Quota: 1}}}, "not an sf-token"},
		{"comma", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Name: "a,b", Quota: 1}}}, "not an sf-token"},
		{"not ascii", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Name: "minüte", Quota: 1}}}, "not an sf-token"},
		{"quota", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Name: "big", Quota: maxInteger + 1}}}, "quota"},
		{"window", Config{Key: RemoteIP, Limiters: []Limiter{fixed{Name: "neg", Quota: 1, Window: -time.Second}}}, "negative window"},
		{"twice", Config{Key: RemoteIP, Limiters: []Limiter{ok, ok}}, `two policies named "ok"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: %v, %v; want an error saying %q", m, err, c.want)
			}
		})
	}
}

func TestNew_TakesTokens(t *testing.T) {
	names := []string{"a", "*", "perMinute", "tenant:42/read", "x!#$%&'*+-.^_`|~9"}
	var limiters []Limiter
	for _, n := range names {
		limiters = append(limiters, fixed{Name: n, Quota: 1, Window: 1500 * time.Millisecond})
	}
	m, err := New(Config{Key: RemoteIP, Limiters: limiters})
	if err != nil {
		t.Fatal(err)
	}
	want := `"a";q=1;w=2, "*";q=1;w=2, "perMinute";q=1;w=2, "tenant:42/read";q=1;w=2, "x!#$%&'*+-.^_` + "`|~9\";q=1;w=2"
	if m.policy != want {
		t.Errorf("RateLimit-Policy %q, want %q", m.policy, want)
	}
}

func TestWindow_RefusesBadArguments(t *testing.T) {
	w := newWindow(t)
	if _, err := Window(nil, 1, "a"); err == nil {
		t.Error("Window(nil, ...): no error")
	}
	if _, err := Window(w, 0, "a"); err == nil {
		t.Error("Window(w, 0, ...): no error")
	}
	if _, err := Window(w, maxInteger+1, "a"); err == nil {
		t.Error("Window(w, maxInteger+1, ...): no error")
	}
	if _, err := Func(Policy{Name: "a"}, nil); err == nil {
		t.Error("Func(p, nil): no error")
	}
	l := mustWindow(t, w, 100, "minute")
	if got, want := l.Policy(), (Policy{Name: "minute", Quota: 100, Window: 2 * testPeriod}); got != want {
		t.Errorf("Policy() = %+v, want %+v", got, want)
	}
}

func TestRemoteIP(t *testing.T) {
	for addr, want := range map[string]string{"192.0.2.1:4711": "192.0.2.1", "[2001:db8::1]:80": "2001:db8::1"} {
		if got, err := RemoteIP(&http.Request{RemoteAddr: addr}); err != nil || got != want {
			t.Errorf("RemoteIP(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := RemoteIP(&http.Request{RemoteAddr: "@"}); err == nil {
		t.Error(`RemoteIP("@"): no error`)
	}
}

// TestMetrics_CountEveryOutcome: one request of each outcome, read back
// through Stats, String (JSON) and the Prometheus text a scrape gets.
func TestMetrics_CountEveryOutcome(t *testing.T) {
	var calls atomic.Int64 // the function runs in the server's goroutines
	flaky, _ := Func(Policy{Name: "flaky", Quota: 1}, func(context.Context, string, uint64) (Result, error) {
		switch calls.Add(1) {
		case 1:
			return Result{Allowed: true}, nil
		case 2:
			return Result{}, nil
		}
		return Result{}, context.DeadlineExceeded
	})
	m, err := New(Config{
		Key:      headerKey,
		Limiters: []Limiter{flaky},
		Banned:   func(key string, _ *http.Request) bool { return key == "banned" },
		Replay:   func(key string, _ *http.Request) bool { return key == "replayed" },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, client := serve(t, m)
	for _, key := range []string{"k", "k", "k", "banned", "replayed", ""} {
		get(t, srv, client, key)
	}
	want := Stats{Allowed: 1, Limited: 1, Banned: 1, Replayed: 1, KeyErrors: 1, LimiterErrors: 1}
	if got := m.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	var fromJSON Stats
	if err := json.Unmarshal([]byte(m.String()), &fromJSON); err != nil || fromJSON != want {
		t.Errorf("String() = %s (%v), want the JSON of %+v", m.String(), err, want)
	}

	metrics := httptestServer(t, m.Metrics())
	resp, err := client.Get(metrics.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := new(strings.Builder)
	if _, err := io.Copy(body, resp.Body); err != nil {
		t.Fatal(err)
	}
	wantText := `# HELP sketch_http_decisions_total Requests the rate-limit middleware decided, by outcome: allowed (passed on), limited (429), banned (403), replayed (409), key_error (400), limiter_error (503).
# TYPE sketch_http_decisions_total counter
sketch_http_decisions_total{outcome="allowed"} 1
sketch_http_decisions_total{outcome="limited"} 1
sketch_http_decisions_total{outcome="banned"} 1
sketch_http_decisions_total{outcome="replayed"} 1
sketch_http_decisions_total{outcome="key_error"} 1
sketch_http_decisions_total{outcome="limiter_error"} 1
`
	if body.String() != wantText {
		t.Errorf("metrics:\n%s\nwant:\n%s", body, wantText)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format's", ct)
	}
	post, err := client.Post(metrics.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST to metrics: status %d, want 405", post.StatusCode)
	}
}

func httptestServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
