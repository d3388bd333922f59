package httplimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Config is what a Middleware asks of each request.
type Config struct {
	// Key returns the key a request is limited by (a client address, a
	// token, an account). An error answers 400 Bad Request: the request
	// lacks what the key is drawn from. Any string is a key, the empty
	// one included; limiters hash it and it never reaches a header.
	// Required.
	Key func(r *http.Request) (string, error)
	// Limiters decide the request in order; every one must allow it. At
	// least one, none nil.
	//
	// What is counted: the middleware asks them one after the other and
	// stops at the first refusal. Each limiter that allowed the request
	// before it counted the request, as its rules say (Window's counts
	// it); the refusing one counts it or not by its own rules (Window's
	// does not, unless processes raced it past the limit: see
	// sketch.Decision.Counted); the limiters after it are not asked and
	// count nothing. A limiter error stops the same way: the limiters
	// before it counted the request.
	Limiters []Limiter
	// Cost returns how many units of each quota the request takes; nil
	// means 1 for every request.
	Cost func(r *http.Request) uint64
	// Banned, when set, is asked first: true answers 403 Forbidden, and
	// no limiter is asked.
	Banned func(key string, r *http.Request) bool
	// Replay, when set, is asked after Banned: true (the request was seen
	// before, as a Bloom filter of request ids says) answers 409 Conflict,
	// and no limiter is asked. Whatever Replay records is its own.
	Replay func(key string, r *http.Request) (seen bool)
	// OnError, when set, hears every limiter error, with the request and
	// its key, before the middleware answers 503 Service Unavailable.
	OnError func(err error, key string, r *http.Request)
}

// Middleware limits requests as its Config says and counts its
// decisions by outcome. Make one with New; it is safe for concurrent
// use.
type Middleware struct {
	cfg      Config
	policies []Policy
	names    []string // policies' names, checked
	policy   string   // the RateLimit-Policy value, the same on every answer
	counts   [numOutcomes]atomic.Uint64
}

// New checks cfg and returns its Middleware: a nil Key, no limiters, a
// nil limiter, a policy whose name is not an sf-token, whose quota is
// past 999999999999999 or whose window is negative, and two policies of
// one name are errors.
func New(cfg Config) (*Middleware, error) {
	if cfg.Key == nil {
		return nil, errors.New("httplimit: no Key function")
	}
	if len(cfg.Limiters) == 0 {
		return nil, errors.New("httplimit: no limiters")
	}
	m := &Middleware{cfg: cfg}
	m.cfg.Limiters = append([]Limiter(nil), cfg.Limiters...)
	seen := map[string]bool{}
	for i, l := range m.cfg.Limiters {
		if l == nil {
			return nil, fmt.Errorf("httplimit: limiter %d is nil", i)
		}
		p := l.Policy()
		if err := checkPolicy(p); err != nil {
			return nil, err
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("httplimit: two policies named %q", p.Name)
		}
		seen[p.Name] = true
		m.policies = append(m.policies, p)
		m.names = append(m.names, p.Name)
	}
	m.policy = policyField(m.policies)
	return m, nil
}

// Wrap returns next behind the limits: a request every limiter allows
// reaches next with its RateLimit-Policy and RateLimit fields set; the
// others are answered as the package documentation says.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.admit(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// admit decides r and answers it unless it may go on.
func (m *Middleware) admit(w http.ResponseWriter, r *http.Request) bool {
	key, err := m.cfg.Key(r)
	switch {
	case err != nil:
		m.deny(w, outcomeKeyError, http.StatusBadRequest, "bad request: no key")
		return false
	case m.cfg.Banned != nil && m.cfg.Banned(key, r):
		m.deny(w, outcomeBanned, http.StatusForbidden, "forbidden")
		return false
	case m.cfg.Replay != nil && m.cfg.Replay(key, r):
		m.deny(w, outcomeReplayed, http.StatusConflict, "conflict: request seen before")
		return false
	}
	cost := uint64(1)
	if m.cfg.Cost != nil {
		cost = m.cfg.Cost(r)
	}
	closest, res := -1, Result{}
	for i, l := range m.cfg.Limiters {
		got, err := l.Limit(r.Context(), key, cost)
		if err != nil {
			if m.cfg.OnError != nil {
				m.cfg.OnError(fmt.Errorf("httplimit: policy %q: %w", m.names[i], err), key, r)
			}
			m.deny(w, outcomeLimiterError, http.StatusServiceUnavailable, "service unavailable")
			return false
		}
		if !got.Allowed || closest < 0 || closer(got, res, m.policies[i].Quota, m.policies[closest].Quota) {
			closest, res = i, got
		}
		if !got.Allowed {
			break
		}
	}
	h := w.Header()
	h.Set("RateLimit-Policy", m.policy)
	h.Set("RateLimit", limitField(m.names[closest], m.policies[closest].Quota, res))
	if !res.Allowed {
		h.Set("Retry-After", strconv.FormatUint(retryAfter(res.RetryAfter), 10))
		m.deny(w, outcomeLimited, http.StatusTooManyRequests, "too many requests")
		return false
	}
	m.counts[outcomeAllowed].Add(1)
	return true
}

// closer reports whether a, under a policy of quota qa, is closer to
// exhaustion than b, under one of quota qb: less remaining, or as little
// for longer.
func closer(a, b Result, qa, qb uint64) bool {
	ra, rb := min(a.Remaining, qa), min(b.Remaining, qb)
	if ra != rb {
		return ra < rb
	}
	return a.ResetAfter > b.ResetAfter
}

// deny counts outcome o and answers status with a one-line body.
func (m *Middleware) deny(w http.ResponseWriter, o outcome, status int, msg string) {
	m.counts[o].Add(1)
	http.Error(w, msg, status)
}

// RemoteIP is a Key function: the address the request came from,
// without its port (r.RemoteAddr as the server set it; behind a proxy,
// key by what the proxy vouches for instead).
func RemoteIP(r *http.Request) (string, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return "", fmt.Errorf("httplimit: remote address %q: %w", r.RemoteAddr, err)
	}
	return host, nil
}
