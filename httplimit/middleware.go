package httplimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// Config is what a Middleware asks of each request.
type Config struct {
	// Key returns the key a request is limited by (a client address, a
	// token, an account). An error answers 400 Bad Request: the request
	// lacks what the key is drawn from. Any string is a key, the empty
	// one included; limiters hash it and it never reaches a header.
	// Required.
	Key func(r *http.Request) (string, error)
	// Limiters decide the request; every one must allow it. At least
	// one, none nil.
	//
	// What is counted: the limiters Window and GCRA return (not a
	// Limiter that wraps one) are decided first, together, as one
	// sketch.Limits: a request one of them refuses counts in none of
	// them, but for requests of the same key racing it in other
	// goroutines or processes, which can leave it counted in some, by its
	// cost at most (see sketch.Limits.Allow); no other limiter is asked.
	// When they all allow it, they have all counted it, and the other
	// limiters (Func's, or a Limiter of your own) are asked in the order
	// given, up to the first refusal: each one before it counted the
	// request as its rules say, the refusing one counts it or not by its
	// own rules, and those after it are not asked. So a refusal by one of
	// these others leaves the request counted in every Window and GCRA
	// limiter. The others come second because they cannot be asked
	// without counting, and the shared-memory limits are the cheap ones:
	// a request they refuse costs the others nothing, not even a call.
	// A limiter error stops the same way, with 503: an error of the
	// Window and GCRA limiters comes before any other is asked; an error
	// of another leaves the request counted as its refusal would.
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

	// The sketch-backed limiters, decided together by group (nil when
	// there are none): themselves and their indices in cfg.Limiters, in
	// the group's order, and what a group error names. others are the
	// indices of the rest, asked after, in order.
	group     *sketch.Limits
	sketched  []sketchLimiter
	grouped   []int
	groupName string
	others    []int
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
	if err := m.groupLimiters(); err != nil {
		return nil, err
	}
	return m, nil
}

// groupLimiters builds the sketch.Limits of the sketch-backed limiters,
// once, and sorts the others out.
func (m *Middleware) groupLimiters() error {
	var limits []sketch.Limit
	var names []string
	for i, l := range m.cfg.Limiters {
		s, ok := l.(sketchLimiter)
		if !ok {
			m.others = append(m.others, i)
			continue
		}
		m.sketched = append(m.sketched, s)
		m.grouped = append(m.grouped, i)
		limits = append(limits, s.limit())
		names = append(names, strconv.Quote(m.names[i]))
	}
	if len(limits) == 0 {
		return nil
	}
	group, err := sketch.NewLimits(limits...)
	if err != nil {
		return fmt.Errorf("httplimit: policies %s: %w", strings.Join(names, ", "), err)
	}
	m.group = group
	m.groupName = "policy " + names[0]
	if len(names) > 1 {
		m.groupName = "policies " + strings.Join(names, ", ")
	}
	return nil
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
	v, err := m.decide(r, key, cost)
	if err != nil {
		if m.cfg.OnError != nil {
			m.cfg.OnError(err, key, r)
		}
		m.deny(w, outcomeLimiterError, http.StatusServiceUnavailable, "service unavailable")
		return false
	}
	h := w.Header()
	h.Set("RateLimit-Policy", m.policy)
	h.Set("RateLimit", limitField(m.names[v.i], m.policies[v.i].Quota, v.res))
	if !v.res.Allowed {
		h.Set("Retry-After", strconv.FormatUint(retryAfter(v.res.RetryAfter), 10))
		m.deny(w, outcomeLimited, http.StatusTooManyRequests, "too many requests")
		return false
	}
	m.counts[outcomeAllowed].Add(1)
	return true
}

// verdict is a decision as the RateLimit field tells it: the limiter the
// item names (the refusing one, or the one nearest exhaustion) and the
// Result it is told from.
type verdict struct {
	i   int
	res Result
}

// consider takes limiter i's Result into v: a refusal always, else the
// Result nearest exhaustion.
func (v *verdict) consider(i int, got Result, policies []Policy) {
	if !got.Allowed || v.i < 0 || closer(got, v.res, policies[i].Quota, policies[v.i].Quota) {
		v.i, v.res = i, got
	}
}

// decide asks the sketch-backed limiters together, then, if they allow
// the request, the others in order, up to the first refusal.
func (m *Middleware) decide(r *http.Request, key string, cost uint64) (verdict, error) {
	v := verdict{i: -1}
	if m.group != nil {
		var err error
		if v, err = m.decideGroup(key, cost); err != nil || !v.res.Allowed {
			return v, err
		}
	}
	for _, i := range m.others {
		got, err := m.cfg.Limiters[i].Limit(r.Context(), key, cost)
		if err != nil {
			return v, fmt.Errorf("httplimit: policy %q: %w", m.names[i], err)
		}
		v.consider(i, got, m.policies)
		if !got.Allowed {
			break
		}
	}
	return v, nil
}

// decideGroup decides the sketch-backed limiters in one sketch.Limits
// decision. A refusal is told as the refusing limit's, with the group's
// RetryAfter (the longest of the refusing limits'); an allowed request
// reads each limit after, since the decision carries no Remaining.
func (m *Middleware) decideGroup(key string, cost uint64) (verdict, error) {
	for _, s := range m.sketched {
		if err := s.costErr(cost); err != nil {
			return verdict{}, err
		}
	}
	d, err := m.group.AllowString(key, cost)
	if err != nil {
		return verdict{}, fmt.Errorf("httplimit: %s: %w", m.groupName, err)
	}
	if !d.Allowed {
		i := m.grouped[d.Refused]
		return verdict{i: i, res: Result{Policy: m.policies[i], RetryAfter: d.RetryAfter}}, nil
	}
	v, now := verdict{i: -1}, time.Now()
	for j, s := range m.sketched {
		i := m.grouped[j]
		got, err := s.read(key, now)
		if err != nil {
			return verdict{}, fmt.Errorf("httplimit: policy %q: %w", m.names[i], err)
		}
		v.consider(i, got, m.policies)
	}
	return v, nil
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
