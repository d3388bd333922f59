// Package httplimit turns rate limiters' decisions into HTTP answers: a
// middleware that keys each request, asks one or more limiters, and
// answers 429 Too Many Requests with Retry-After and the RateLimit header
// fields when one refuses, or passes the request on with those fields set
// when every limiter allows it.
//
// # Limiters
//
// A Limiter decides one request for a key under a named Policy (a quota
// of requests over a window). Window adapts a *sketch.CountMinWindow and
// GCRA a *sketch.GCRA (rate and burst, with quota burst+1 and window
// (burst+1) times the emission interval), each shared by every process
// that opens its file; Func adapts any function.
//
// The middleware decides its Window and GCRA limiters first, together,
// as one sketch.Limits: a request one of them refuses counts in none of
// them (but for requests of the same key racing it), and no other
// limiter is asked. Only a request they all allow, and count, goes on to
// the other limiters, in order, up to the first refusal, which leaves it
// counted in every Window and GCRA limiter and in the others before the
// refusing one. Config.Limiters says it in full.
//
// # Header fields
//
// The fields follow draft-ietf-httpapi-ratelimit-headers-11 ("RateLimit
// header fields for HTTP", May 2026), which makes both Lists of Structured
// Fields (RFC 9651) whose items are Strings naming a policy:
//
//	RateLimit-Policy: "perminute";q=100;w=60, "perday";q=5000;w=86400
//	RateLimit: "perminute";r=0;t=17
//
// RateLimit-Policy lists every policy of the middleware, in order, on
// every response it sets fields on. RateLimit carries one item: the
// policy closest to exhaustion among those that decided the request (the
// refusing one on a 429; otherwise the least remaining quota), as the
// draft's example with several windows does. Its r is the Result's
// Remaining (at most the quota, 0 on a refusal) and its t, in whole
// seconds rounded up, the Retry-After value on a refusal (the draft wants
// no Retry-After before the effective window ends) and the Result's
// ResetAfter otherwise, left out when that is 0. Retry-After is the
// Result's RetryAfter in whole seconds, rounded up, at least 1. Integers
// are capped at 999999999999999, the largest a structured field carries.
// Policy names must be
// sf-tokens (a letter or "*", then letters, digits and !#$%&'*+-.^_`|~:/),
// so that they need no escaping in a String and would read the same in
// the drafts that made them Tokens.
//
// A sketch.Limits decision tells which limit refused and when to retry,
// nothing more: for the Window and GCRA limiters, the middleware reads
// each one's Remaining and ResetAfter after a decision that allowed the
// request (the window's estimate, a peek at the rate limiter). When
// several of them refuse, the item names the first in the order given,
// and Retry-After is the longest of their retry times, when the request
// would pass them all.
//
// # Answers
//
// In the order the middleware checks:
//
//	400 Bad Request          the Key function returned an error
//	403 Forbidden            Banned says so
//	409 Conflict             Replay says the request was seen before
//	503 Service Unavailable  a limiter returned an error (OnError hears it)
//	429 Too Many Requests    a limiter refused
//
// and otherwise the next handler. Stats counts each outcome; WriteMetrics
// and Metrics give the counts in Prometheus's text format, and String as
// JSON (an expvar.Var).
package httplimit
