package httplimit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// outcome is what the middleware did with a request: an index into its
// counts.
type outcome int

const (
	outcomeAllowed outcome = iota
	outcomeLimited
	outcomeBanned
	outcomeReplayed
	outcomeKeyError
	outcomeLimiterError
	numOutcomes
)

// outcomeNames are the outcomes' label values, in their order.
var outcomeNames = [numOutcomes]string{"allowed", "limited", "banned", "replayed", "key_error", "limiter_error"}

// Stats counts a Middleware's decisions by outcome since it was made.
// Each request is counted once, under the first answer it got.
type Stats struct {
	// Allowed requests reached the next handler.
	Allowed uint64 `json:"allowed"`
	// Limited requests were refused by a limiter: 429.
	Limited uint64 `json:"limited"`
	// Banned requests were refused by Banned: 403.
	Banned uint64 `json:"banned"`
	// Replayed requests were refused by Replay: 409.
	Replayed uint64 `json:"replayed"`
	// KeyErrors are requests whose Key function failed: 400.
	KeyErrors uint64 `json:"key_errors"`
	// LimiterErrors are requests a limiter failed to decide: 503.
	LimiterErrors uint64 `json:"limiter_errors"`
}

// Stats returns the counts. Each is read atomically, the set of them at
// no single moment.
func (m *Middleware) Stats() Stats {
	return Stats{
		Allowed:       m.counts[outcomeAllowed].Load(),
		Limited:       m.counts[outcomeLimited].Load(),
		Banned:        m.counts[outcomeBanned].Load(),
		Replayed:      m.counts[outcomeReplayed].Load(),
		KeyErrors:     m.counts[outcomeKeyError].Load(),
		LimiterErrors: m.counts[outcomeLimiterError].Load(),
	}
}

// String returns Stats as JSON, which makes a Middleware an expvar.Var:
//
//	expvar.Publish("ratelimit", mw)
func (m *Middleware) String() string {
	b, err := json.Marshal(m.Stats())
	if err != nil {
		return fmt.Sprintf("%q", err.Error())
	}
	return string(b)
}

// WriteMetrics writes the counts in Prometheus's text format (0.0.4),
// one counter family with a sample for every outcome:
//
//	sketch_http_decisions_total{outcome="allowed|limited|banned|replayed|key_error|limiter_error"}
func (m *Middleware) WriteMetrics(out io.Writer) error {
	w := bufio.NewWriter(out)
	const name = "sketch_http_decisions_total"
	fmt.Fprintf(w, "# HELP %s Requests the rate-limit middleware decided, by outcome: allowed (passed on), limited (429), banned (403), replayed (409), key_error (400), limiter_error (503).\n", name)
	fmt.Fprintf(w, "# TYPE %s counter\n", name)
	for o, label := range outcomeNames {
		fmt.Fprintf(w, "%s{outcome=%q} %d\n", name, label, m.counts[o].Load())
	}
	return w.Flush()
}

// Metrics returns an http.Handler that serves WriteMetrics, for a
// Prometheus scrape:
//
//	http.Handle("/metrics", mw.Metrics())
func (m *Middleware) Metrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "httplimit: metrics: only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WriteMetrics(w)
	})
}
