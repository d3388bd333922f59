package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/shmsketch/sketch"
)

var allowCmd = &command{
	name:       "allow",
	opensFiles: true,
	args:       "[FLAGS] FILE[:NAME] KEY...",
	takesKeys:  true,
	summary:    "decide requests against a rate limiter (gcra) or a limit on a Count-Min window",
	details: `
Allow decides a request for each KEY, in every process that shares the
file, on a rate limiter or a Count-Min window, and prints a line a key.
The exit status is 0 when every key was allowed and 4 when one was
refused, so that a script can branch on it.

On a rate limiter (create --kind gcra), each request costs --cost
(default 1) and is decided against the rate and burst in the file, as the
library's GCRA.AllowBatch decides (nginx's limit_req with burst and
nodelay): a key is allowed at most burst+1 at once and the rate in the
long run, and a refused request counts nothing. The keys are decided in
order at one moment. The line is the key, "allowed" or "refused", the
requests of cost 1 the key may still make at once ("remaining"), how long
until the same request would be allowed ("retry after", 0s when allowed)
and until the key's whole burst is back ("reset after"), rounded up. A
cost above burst+1, which could never be allowed, is a bad argument (exit
2); sketch query peeks at a key without counting.

On a Count-Min window, allow counts a request for each KEY and decides it
against --limit, the most requests a key may make in the periods the
window covers, as the library's CountMinWindow.Allow does: a key is never
allowed past its limit, and is refused early only by what its estimate
exceeds its count (at most the window's error bound, with the sketch's
confidence). Without --count-refused a refused request is not counted;
with it every request counts, so a client that keeps knocking stays
refused. The line is the key, "allowed" or "refused", the key's estimate
over the window (this request included when it was counted) and its low
end; a refusal adds when to retry: the turns of the period until one more
request fits, and on a window that follows the clock the time until
then.`,
	example: `sketch create /dev/shm/gateway.arena:per-client --kind gcra --rate 10r/s --burst 20
sketch allow /dev/shm/gateway.arena:per-client 192.0.2.7
sketch allow --cost 5 --json /dev/shm/gateway.arena:per-client 192.0.2.7 | jq .retry_after
sketch allow --limit 100 /dev/shm/gateway.arena:per-client-window 192.0.2.7
if sketch allow --limit 5 /dev/shm/logins.cmw "$USER" >/dev/null; then login; fi`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		limit := fs.Uint64("limit", 0, "a Count-Min window: allow at most `N` requests a key over the window (required there)")
		countRefused := fs.Bool("count-refused", false, "a Count-Min window: count refused requests too")
		cost := fs.Uint64("cost", 1, "a rate limiter: what each request costs, `N` requests of cost 1, at least 1 and at most its burst+1")
		jsonOut := fs.Bool("json", false, `print JSON Lines, a key: a rate limiter's {"key", "allowed", "cost", "remaining", "retry_after", "reset_after"}, a window's {"key", "allowed", "counted", "estimate", "low", "turns", "retry_after", "period"} (durations in nanoseconds)`)
		return func(args []string) error {
			if len(args) < 2 {
				return usageError("want FILE[:NAME] and at least one KEY")
			}
			if *cost == 0 {
				return usageError("--cost must be at least 1 (sketch query peeks at a key without counting)")
			}
			given := map[string]bool{}
			fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
			s, t, err := openTargetArg(args[0], true)
			if err != nil {
				return err
			}
			defer s.Close()
			var refused bool
			switch a := s.(type) {
			case *gcra:
				if given["limit"] || given["count-refused"] {
					return usageError("--limit and --count-refused are a Count-Min window's: %s is a %s, whose rate and burst are in its file (sketch stats shows them)", t, s.describe())
				}
				refused, err = allowRate(a, args[1:], *cost, *jsonOut)
			case allower:
				if given["cost"] {
					return usageError("--cost is a rate limiter's (--kind gcra): %s is a %s, which counts one request a key", t, s.describe())
				}
				if *limit == 0 {
					return usageError("--limit must be given, at least 1")
				}
				refused, err = allowWindow(a, args[1:], *limit, *countRefused, *jsonOut)
			default:
				return fmt.Errorf("%s: %w", t, errNotSupported("rate-limit decision (create a gcra, or a countminwindow)", s.describe()))
			}
			if err != nil {
				return err
			}
			if refused {
				stdout.Flush()
				return &exitError{exitRefused, errReported}
			}
			return nil
		}
	},
}

// allowRate decides a request of cost for each key on a rate limiter and
// prints the decisions; refused reports whether one was refused. A cost
// the limiter could never allow is a bad argument.
func allowRate(g *gcra, keys []string, cost uint64, jsonOut bool) (refused bool, err error) {
	b := make([][]byte, len(keys))
	for i, k := range keys {
		b[i] = []byte(k)
	}
	ds, err := g.decide(b, cost)
	if errors.Is(err, sketch.ErrInvalidArgument) {
		return false, &exitError{exitUsage, err}
	}
	if err != nil {
		return false, err
	}
	for i, d := range ds {
		refused = refused || !d.Allowed
		printAnswer(d, keys[i], jsonOut)
	}
	return refused, nil
}

// allowWindow decides a request for each key against limit on a
// Count-Min window and prints the decisions; refused reports whether one
// was refused.
func allowWindow(a allower, keys []string, limit uint64, countRefused, jsonOut bool) (refused bool, err error) {
	for _, k := range keys {
		d, err := a.Allow([]byte(k), limit, countRefused)
		if err != nil {
			return refused, err
		}
		refused = refused || !d.Allowed()
		printDecision(k, d, jsonOut)
	}
	return refused, nil
}

// allower is a structure that decides requests against a limit.
type allower interface {
	Allow(key []byte, limit uint64, countRefused bool) (sketch.Decision, error)
}

// allowLine is allow --json's line: the key, then the decision as the
// library marshals it.
type allowLine struct {
	jsonKey
	Allowed    bool          `json:"allowed"`
	Counted    bool          `json:"counted"`
	Estimate   uint64        `json:"estimate"`
	Low        uint64        `json:"low"`
	Turns      int           `json:"turns"`
	RetryAfter time.Duration `json:"retry_after"`
	Period     uint64        `json:"period"`
}

// printDecision prints one key's decision.
func printDecision(key string, d sketch.Decision, jsonOut bool) {
	if jsonOut {
		printJSON(stdout, allowLine{keyOf(key), d.Allowed(), d.Counted(), d.Estimate(), d.Low(), d.Turns(), d.RetryAfter(), d.Period()})
		return
	}
	if d.Allowed() {
		fmt.Fprintf(stdout, "%s\tallowed\t%d (at least %d)\n", quoteKey(key), d.Estimate(), d.Low())
		return
	}
	counted := "not counted"
	if d.Counted() {
		counted = "counted"
	}
	retry := fmt.Sprintf("retry in %d turns", d.Turns())
	if d.Turns() == 1 {
		retry = "retry in 1 turn"
	}
	if d.RetryAfter() > 0 {
		retry += fmt.Sprintf(" (%v)", d.RetryAfter().Round(time.Millisecond))
	}
	fmt.Fprintf(stdout, "%s\trefused (%s)\t%d (at least %d)\t%s\n", quoteKey(key), counted, d.Estimate(), d.Low(), retry)
}
