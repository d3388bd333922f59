package httplimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/shmsketch/sketch"
)

// Policy is what a limiter promises every key: at most Quota requests
// over Window. Name identifies it in the RateLimit header fields: an
// sf-token (see the package documentation). A Window of 0 says the
// window is not a length of time (a window turned only by Rotate): the
// fields then leave it out.
type Policy struct {
	Name   string
	Quota  uint64
	Window time.Duration
}

// Result is a limiter's decision on one request.
type Result struct {
	// Policy is the policy the request was decided under, as the
	// limiter's Policy method returns it. The middleware names the
	// request's RateLimit item after the limiter's Policy, checked when
	// it was made, and reads only the fields below from a Result.
	Policy
	// Allowed reports whether the request is within the quota.
	Allowed bool
	// Remaining is how much of the quota the key has left after this
	// request (0 when refused).
	Remaining uint64
	// ResetAfter is the time until the key's quota is whole again if it
	// sends nothing more; 0 when the limiter cannot tell.
	ResetAfter time.Duration
	// RetryAfter, when refused, is the time until a request of the key
	// would be allowed again (unless more arrive meanwhile); 0 when the
	// limiter cannot tell, which the middleware answers as one second.
	RetryAfter time.Duration
}

// Limiter decides requests under one policy. Limit decides one request
// of key that costs cost units of the quota (1 for a plain request) and
// counts it as the limiter's own rules say. Implementations are safe for
// concurrent use, and Policy returns the same value on every call.
type Limiter interface {
	Policy() Policy
	Limit(ctx context.Context, key string, cost uint64) (Result, error)
}

// ErrCost is the error of a limiter asked for a cost it cannot count.
var ErrCost = errors.New("httplimit: cost not supported")

var (
	_ sketchLimiter = (*windowLimiter)(nil)
	_ sketchLimiter = (*gcraLimiter)(nil)
)

// sketchLimiter is a limiter backed by one of the package sketch's
// limits (Window's and GCRA's): the middleware decides these together
// through a sketch.Limits, so that a request one refuses counts in none,
// and reads each one's Result after the decision, since a
// sketch.LimitsDecision carries none.
type sketchLimiter interface {
	Limiter
	// limit is what the sketch.Limits decides.
	limit() sketch.Limit
	// costErr is the error of a cost the limit cannot count, or nil:
	// checked before the decision, so that it names its policy.
	costErr(cost uint64) error
	// read is the key's Result after a decision that allowed it, at now.
	read(key string, now time.Time) (Result, error)
}

// funcLimiter is Func's Limiter.
type funcLimiter struct {
	p Policy
	f func(ctx context.Context, key string, cost uint64) (Result, error)
}

// Func makes a Limiter of a function that decides under policy p. The
// Results it returns carry p as their Policy. A nil f is an error.
func Func(p Policy, f func(ctx context.Context, key string, cost uint64) (Result, error)) (Limiter, error) {
	if f == nil {
		return nil, fmt.Errorf("httplimit: policy %q: nil function", p.Name)
	}
	return &funcLimiter{p: p, f: f}, nil
}

func (l *funcLimiter) Policy() Policy { return l.p }

func (l *funcLimiter) Limit(ctx context.Context, key string, cost uint64) (Result, error) {
	res, err := l.f(ctx, key, cost)
	res.Policy = l.p
	return res, err
}

// windowLimiter is Window's Limiter.
type windowLimiter struct {
	w      *sketch.CountMinWindow
	p      Policy
	period time.Duration
	keep   int
}

// Window makes a Limiter of a Count-Min window: at most limit requests a
// key over the periods the window covers, decided by w's AllowString
// without counting refused requests (a client that keeps knocking is not
// kept out longer), so every process that shares w's file shares the
// quota. A Middleware decides it together with its other Window and GCRA
// limiters, by the same rules (see Config.Limiters).
//
// The policy's Quota is limit and its Window the window's length, Period
// times Keep (0 on a window that turns only by Rotate). A Result's
// Remaining is limit less the decision's Estimate (0 past it): never more
// than the key has left, since estimates are never low. RetryAfter is the
// decision's RetryAfter. ResetAfter is the time until every period the
// window covers now has left it, by the clock: the rest of the current
// period plus Keep-1 periods (Rotate can only bring it sooner), at least
// RetryAfter; 0 on a window that turns only by Rotate. A Middleware
// reads Remaining from the estimate after its decision, and a refusal's
// RetryAfter from the decision.
//
// The window counts one request at a time: Limit returns ErrCost for any
// other cost. A nil w, a limit of 0 and a limit past the largest quota the
// header fields carry (999999999999999) are errors.
func Window(w *sketch.CountMinWindow, limit uint64, name string) (Limiter, error) {
	switch {
	case w == nil:
		return nil, fmt.Errorf("httplimit: policy %q: nil window", name)
	case limit == 0 || limit > maxInteger:
		return nil, fmt.Errorf("httplimit: policy %q: limit %d not in 1..%d", name, limit, uint64(maxInteger))
	}
	win := w.Config().Window
	l := &windowLimiter{w: w, period: win.Period, keep: win.Keep}
	l.p = Policy{Name: name, Quota: limit}
	if win.Period > 0 && win.Keep > 0 {
		l.p.Window = mulDuration(win.Period, win.Keep)
	}
	return l, nil
}

func (l *windowLimiter) Policy() Policy { return l.p }

func (l *windowLimiter) Limit(_ context.Context, key string, cost uint64) (Result, error) {
	if err := l.costErr(cost); err != nil {
		return Result{}, err
	}
	d, err := l.w.AllowString(key, l.p.Quota, false)
	if err != nil {
		return Result{}, err
	}
	res := Result{Policy: l.p, Allowed: d.Allowed(), ResetAfter: l.resetAfter(time.Now())}
	if est := d.Estimate(); est < l.p.Quota {
		res.Remaining = l.p.Quota - est
	}
	if !res.Allowed {
		res.RetryAfter = d.RetryAfter()
		res.ResetAfter = max(res.ResetAfter, res.RetryAfter)
	}
	return res, nil
}

func (l *windowLimiter) limit() sketch.Limit {
	return sketch.WindowLimit{Window: l.w, Limit: l.p.Quota}
}

func (l *windowLimiter) costErr(cost uint64) error {
	if cost != 1 {
		return fmt.Errorf("%w: policy %q counts one request at a time, not %d", ErrCost, l.p.Name, cost)
	}
	return nil
}

// read is the key's Result as Limit gives it for an allowed request, from
// the estimate after the decision: requests counted since can only lower
// Remaining, which stays no more than the key has left.
func (l *windowLimiter) read(key string, now time.Time) (Result, error) {
	res := Result{Policy: l.p, Allowed: true, ResetAfter: l.resetAfter(now)}
	if est := l.w.EstimateString(key); est < l.p.Quota {
		res.Remaining = l.p.Quota - est
	}
	return res, nil
}

// resetAfter is the time from now until the periods the window covers
// now have all left it: the rest of the current period, then Keep-1 more.
func (l *windowLimiter) resetAfter(now time.Time) time.Duration {
	if l.period <= 0 || l.keep <= 0 {
		return 0
	}
	rest := l.period - time.Duration(now.UnixNano()%int64(l.period))
	return addDuration(rest, mulDuration(l.period, l.keep-1))
}

// mulDuration is d times n (both at least 0), at most the largest
// Duration.
func mulDuration(d time.Duration, n int) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return d * time.Duration(n)
}

// addDuration is a+b (both at least 0), at most the largest Duration.
func addDuration(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// gcraLimiter is GCRA's Limiter.
type gcraLimiter struct {
	g *sketch.GCRA
	p Policy
}

// GCRA makes a Limiter of a rate limiter with a burst (sketch.GCRA):
// requests of a key pass at its Rate, with Burst more at once, decided
// by g's AllowString, so every process that shares g's file shares each
// key's budget. A refused request counts nothing. A Middleware decides it
// together with its other Window and GCRA limiters, by the same rules (see
// Config.Limiters).
//
// The policy's Quota is Burst+1, what an idle key may send at once, and
// its Window the time that quota takes to come back, (Burst+1) times
// the rate's interval: the draft's "q requests in w seconds" holds over
// any such span. A Result's Remaining, RetryAfter and ResetAfter are the
// decision's (a Middleware peeks at the key after its decision for
// Remaining and ResetAfter). A cost is passed on: a cost of 0 peeks
// (counts nothing, answered as a cost of 1 would be), one past Burst+1 is
// an error wrapping sketch.ErrInvalidArgument. A nil g is an error.
func GCRA(g *sketch.GCRA, name string) (Limiter, error) {
	if g == nil {
		return nil, fmt.Errorf("httplimit: policy %q: nil rate limiter", name)
	}
	cfg := g.Config()
	quota := cfg.Burst + 1
	if quota > maxInteger {
		return nil, fmt.Errorf("httplimit: policy %q: a burst of %d is past the largest quota the fields carry (%d)", name, cfg.Burst, uint64(maxInteger))
	}
	return &gcraLimiter{g: g, p: Policy{Name: name, Quota: quota, Window: mulDuration(cfg.Rate.Interval(), int(quota))}}, nil
}

func (l *gcraLimiter) Policy() Policy { return l.p }

func (l *gcraLimiter) Limit(_ context.Context, key string, cost uint64) (Result, error) {
	d, err := l.g.AllowString(key, cost)
	if err != nil {
		return Result{}, err
	}
	return Result{Policy: l.p, Allowed: d.Allowed, Remaining: d.Remaining, ResetAfter: d.ResetAfter, RetryAfter: d.RetryAfter}, nil
}

func (l *gcraLimiter) limit() sketch.Limit { return l.g }

// costErr refuses a cost past Burst+1, which the limiter could never
// allow, with the limiter's own sentinel and ErrCost.
func (l *gcraLimiter) costErr(cost uint64) error {
	if cost > l.p.Quota {
		return fmt.Errorf("%w: policy %q: a cost of %d is past the %d an idle key may send at once (%w)", ErrCost, l.p.Name, cost, l.p.Quota, sketch.ErrInvalidArgument)
	}
	return nil
}

// read peeks at the key (a cost of 0 counts nothing): its Remaining and
// ResetAfter as the decision left them, with what time gave back since.
func (l *gcraLimiter) read(key string, _ time.Time) (Result, error) {
	d, err := l.g.AllowString(key, 0)
	if err != nil {
		return Result{}, err
	}
	return Result{Policy: l.p, Allowed: true, Remaining: d.Remaining, ResetAfter: d.ResetAfter}, nil
}
