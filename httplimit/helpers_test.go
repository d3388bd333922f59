package httplimit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// The windows of these tests are two periods of an hour: a test that
// crosses a turn still counts every request it made (the period before
// stays in the window), so counts and statuses are exact.
const testPeriod = time.Hour

// newWindow opens a Count-Min window in memory for one test.
func newWindow(t *testing.T) *sketch.CountMinWindow {
	t.Helper()
	w, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{
		Window:   sketch.Window{Period: testPeriod, Keep: 2},
		CountMin: sketch.CountMinConfig{ErrorRate: 0.001},
	})
	if err != nil {
		t.Fatalf("OpenCountMinWindow: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// mustWindow is Window for a test.
func mustWindow(t *testing.T, w *sketch.CountMinWindow, limit uint64, name string) Limiter {
	t.Helper()
	l, err := Window(w, limit, name)
	if err != nil {
		t.Fatalf("Window(%d, %q): %v", limit, name, err)
	}
	return l
}

// openWindow opens the Count-Min window in the file at path, creating it:
// a test's handles on one path share its counts, as processes would.
func openWindow(t *testing.T, path string) *sketch.CountMinWindow {
	t.Helper()
	w, err := sketch.OpenCountMinWindow(sketch.Path(path), sketch.CountMinWindowConfig{
		Window:   sketch.Window{Period: testPeriod, Keep: 2},
		CountMin: sketch.CountMinConfig{ErrorRate: 0.001},
	})
	if err != nil {
		t.Fatalf("OpenCountMinWindow(%s): %v", path, err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// openGCRA opens the rate limiter in the file at path, creating it: one
// request per per, burst more at once. A per of an hour or more gives
// nothing back while a test runs, so counts are exact.
func openGCRA(t *testing.T, path string, per time.Duration, burst uint64) *sketch.GCRA {
	t.Helper()
	g, err := sketch.OpenGCRA(sketch.Path(path), sketch.GCRAConfig{Rate: sketch.Rate{Count: 1, Per: per}, Burst: burst, Rows: 4, Width: 64})
	if err != nil {
		t.Fatalf("OpenGCRA(%s): %v", path, err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// mustGCRA is GCRA for a test.
func mustGCRA(t *testing.T, g *sketch.GCRA, name string) Limiter {
	t.Helper()
	l, err := GCRA(g, name)
	if err != nil {
		t.Fatalf("GCRA(%q): %v", name, err)
	}
	return l
}

// peek is what g has left for key, read without counting (a cost of 0).
func peek(t *testing.T, g *sketch.GCRA, key string) sketch.RateDecision {
	t.Helper()
	d, err := g.AllowString(key, 0)
	if err != nil {
		t.Fatalf("peek %q: %v", key, err)
	}
	return d
}

// mustNew is New for a test, keyed by keyHeader.
func mustNew(t *testing.T, limiters ...Limiter) *Middleware {
	t.Helper()
	m, err := New(Config{Key: headerKey, Limiters: limiters})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// recorder is a Limiter that passes every request to another and keeps
// what it answered, so that a test can check the headers against the
// decisions behind them.
type recorder struct {
	Limiter
	mu      sync.Mutex
	results []Result
}

func (r *recorder) Limit(ctx context.Context, key string, cost uint64) (Result, error) {
	res, err := r.Limiter.Limit(ctx, key, cost)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.results = append(r.results, res)
	}
	return res, err
}

// asked is how many decisions the limiter behind r made.
func (r *recorder) asked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.results)
}

func (r *recorder) last() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[len(r.results)-1]
}

// keyHeader carries a test request's key; a request without it has no
// key (400).
const keyHeader = "X-Client"

func headerKey(r *http.Request) (string, error) {
	if k := r.Header.Get(keyHeader); k != "" {
		return k, nil
	}
	return "", errors.New("no " + keyHeader)
}

// serve starts a loopback server with next behind m, and a client whose
// requests give up after a generous deadline.
func serve(t *testing.T, m *Middleware) (*httptest.Server, *http.Client) {
	t.Helper()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	srv := httptest.NewServer(m.Wrap(ok))
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.Timeout = 30 * time.Second
	return srv, client
}

// answer is what a test reads of a response.
type answer struct {
	status     int
	policy     string // RateLimit-Policy
	limit      string // RateLimit
	retryAfter string
}

// get asks srv for / with key (none when key is "") and reads the answer.
func get(t *testing.T, srv *httptest.Server, client *http.Client, key string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set(keyHeader, key)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET with key %q: %v", key, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return answer{resp.StatusCode, resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"), resp.Header.Get("Retry-After")}
}

// item is one member of a RateLimit or RateLimit-Policy field: its
// policy name and integer parameters.
type item struct {
	name   string
	params map[string]uint64
}

// parseField parses a List of String items with Integer parameters, as
// both fields are, failing the test on anything else.
func parseField(t *testing.T, field string) []item {
	t.Helper()
	var items []item
	for _, member := range strings.Split(field, ",") {
		parts := strings.Split(strings.TrimSpace(member), ";")
		name, err := strconv.Unquote(parts[0])
		if err != nil || !strings.HasPrefix(parts[0], `"`) {
			t.Fatalf("field %q: item %q is not a String", field, parts[0])
		}
		it := item{name: name, params: map[string]uint64{}}
		for _, p := range parts[1:] {
			k, v, ok := strings.Cut(p, "=")
			n, err := strconv.ParseUint(v, 10, 64)
			if !ok || err != nil || n > maxInteger {
				t.Fatalf("field %q: parameter %q is not an Integer", field, p)
			}
			it.params[k] = n
		}
		items = append(items, it)
	}
	return items
}

// only parses a field of one item.
func only(t *testing.T, field string) item {
	t.Helper()
	items := parseField(t, field)
	if len(items) != 1 {
		t.Fatalf("field %q: %d items, want 1", field, len(items))
	}
	return items[0]
}
