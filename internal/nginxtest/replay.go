package nginxtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Result is nginx's answer to one request of a trace.
type Result struct {
	// Key is the request's key.
	Key string
	// MS is when nginx read the request, in Unix milliseconds of the wall
	// clock: $msec - $request_time, the time nginx's event loop read when
	// it woke up for the request. nginx decides on its monotonic clock
	// read at that same moment (see the package comment), so a model of
	// limit_req fed with MS agrees with it up to the 1 ms of the two
	// clocks' truncation.
	MS int64
	// Spread is nginx's $request_time in ms: how long after MS nginx
	// logged the request. It is 0 when nginx read, decided and answered
	// the request in one wake-up, as it does for a small request on
	// loopback; otherwise the decision was made somewhere in [MS,
	// MS+Spread], and a comparison should allow for that.
	Spread int64
	// Allowed is nginx's decision: it answered 200, not 429.
	Allowed bool
}

// Replay starts a fresh nginx (Start: it skips the test without nginx),
// sends it the trace and returns nginx's answer to each request, in the
// trace's order. See Server.Replay.
func Replay(t *testing.T, trace []Request) []Result {
	t.Helper()
	return Start(t).Replay(t, trace)
}

// Replay sends each request of the trace at its offset from now, in real
// time, one after the other on one keep-alive connection, and returns
// nginx's answer to each, in the trace's order, as its access log
// recorded it. A request that is due while an earlier one is still being
// answered is sent late; lateness moves the times nginx saw, which
// Result reports, and changes nothing else: a model is to be fed with
// Result.MS, not with the trace's offsets. The zone is not reset: a
// second replay on the same server starts from what the first left.
func (s *Server) Replay(t *testing.T, trace []Request) []Result {
	t.Helper()
	st, err := os.Stat(s.AccessLog)
	if err != nil {
		t.Fatalf("access log: %v", err)
	}
	logStart := st.Size()
	c := &http.Client{
		Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true},
		Timeout:   10 * time.Second,
	}
	defer c.CloseIdleConnections()
	var late, maxLate time.Duration
	start := time.Now()
	for i, req := range trace {
		if d := time.Until(start.Add(req.At)); d > 0 {
			time.Sleep(d)
		} else if -d > maxLate {
			maxLate = -d
		}
		if time.Since(start)-req.At > 5*time.Millisecond {
			late++
		}
		u := fmt.Sprintf("http://%s/ok.txt?k=%s&i=%d", s.Addr, url.QueryEscape(req.Key), i)
		resp, err := c.Get(u)
		if err != nil {
			t.Fatalf("request %d (%q at %v): %v", i, req.Key, req.At, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("request %d (%q at %v): %s, want 200 or 429", i, req.Key, req.At, resp.Status)
		}
	}
	t.Logf("replayed %d requests in %v; %d sent more than 5 ms late, the latest by %v",
		len(trace), time.Since(start).Round(time.Millisecond), late, maxLate.Round(time.Millisecond))
	return s.readResults(t, trace, logStart)
}

// readResults reads the access log from offset until it has a line for
// every request of the trace (nginx writes a line after it answered, so
// the last may come a moment after the last response), and parses them.
func (s *Server) readResults(t *testing.T, trace []Request, offset int64) []Result {
	t.Helper()
	var lines []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, err := os.ReadFile(s.AccessLog)
		if err != nil {
			t.Fatalf("access log: %v", err)
		}
		data = data[offset:]
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			lines = strings.Split(string(data[:i]), "\n")
		}
		if len(lines) >= len(trace) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(lines) != len(trace) {
		t.Fatalf("access log has %d lines for the %d requests sent", len(lines), len(trace))
	}
	res := make([]Result, len(trace))
	seen := make([]bool, len(trace))
	for _, line := range lines {
		i, r, err := parseLine(line)
		if err == nil && (i < 0 || i >= len(trace) || seen[i]) {
			err = fmt.Errorf("request index %d out of range or seen twice", i)
		}
		if err == nil && r.Key != trace[i].Key {
			err = fmt.Errorf("key %q, but request %d has key %q", r.Key, i, trace[i].Key)
		}
		if err != nil {
			t.Fatalf("access log line %q: %v", line, err)
		}
		res[i], seen[i] = r, true
	}
	return res
}

// parseLine parses an access log line "i k status msec request_time".
func parseLine(line string) (int, Result, error) {
	f := strings.Fields(line)
	if len(f) != 5 {
		return 0, Result{}, fmt.Errorf("%d fields, want 5", len(f))
	}
	i, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, Result{}, err
	}
	key, err := url.QueryUnescape(f[1])
	if err != nil {
		return 0, Result{}, err
	}
	var allowed bool
	switch f[2] {
	case "200":
		allowed = true
	case "429":
	default:
		return 0, Result{}, fmt.Errorf("status %s, want 200 or 429", f[2])
	}
	msec, err := parseMS(f[3])
	if err != nil {
		return 0, Result{}, err
	}
	spread, err := parseMS(f[4])
	if err != nil {
		return 0, Result{}, err
	}
	return i, Result{Key: key, MS: msec - spread, Spread: spread, Allowed: allowed}, nil
}

// parseMS parses nginx's "seconds.milliseconds" ("1700000000.123") into
// milliseconds.
func parseMS(s string) (int64, error) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 3 {
		return 0, fmt.Errorf("time %q is not seconds.milliseconds", s)
	}
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time %q: %v", s, err)
	}
	b, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time %q: %v", s, err)
	}
	return a*1000 + b, nil
}
