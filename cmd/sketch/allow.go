package main

import (
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
	summary:    "decide requests against a rate limit on a Count-Min window",
	details: `
Allow counts a request for each KEY in a Count-Min window and decides it
against --limit, the most requests a key may make in the periods the
window covers, as the library's CountMinWindow.Allow does, in every
process that shares the file: a key is never allowed past its limit, and
is refused early only by what its estimate exceeds its count (at most the
window's error bound, with the sketch's confidence). Without
--count-refused a refused request is not counted; with it every request
counts, so a client that keeps knocking stays refused.

It prints a line a key: the key, "allowed" or "refused", the key's
estimate over the window (this request included when it was counted) and
its low end; a refusal adds when to retry: the turns of the period until
one more request fits, and on a window that follows the clock the time
until then. The exit status is 0 when every key was allowed and 4 when one
was refused, so that a script can branch on it.`,
	example: `sketch allow --limit 100 /dev/shm/gateway.arena:per-client 192.0.2.7
if sketch allow --limit 5 /dev/shm/logins.cmw "$USER" >/dev/null; then login; fi
sketch allow --limit 100 --json /dev/shm/rate.cmw 192.0.2.7 | jq .retry_after`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		limit := fs.Uint64("limit", 0, "allow at most `N` requests a key over the window (required)")
		countRefused := fs.Bool("count-refused", false, "count refused requests too")
		jsonOut := fs.Bool("json", false, `print JSON Lines: {"key", "allowed", "counted", "estimate", "low", "turns", "retry_after", "period"} a key (retry_after in nanoseconds)`)
		return func(args []string) error {
			if len(args) < 2 {
				return usageError("want FILE[:NAME] and at least one KEY")
			}
			if *limit == 0 {
				return usageError("--limit must be given, at least 1")
			}
			s, t, err := openTargetArg(args[0], true)
			if err != nil {
				return err
			}
			defer s.Close()
			a, ok := s.(allower)
			if !ok {
				return fmt.Errorf("%s: %w", t, errNotSupported("rate-limit decision (create a countminwindow)", s.describe()))
			}
			refused := false
			for _, k := range args[1:] {
				d, err := a.Allow([]byte(k), *limit, *countRefused)
				if err != nil {
					return err
				}
				refused = refused || !d.Allowed()
				printDecision(k, d, *jsonOut)
			}
			if refused {
				stdout.Flush()
				return &exitError{exitRefused, errReported}
			}
			return nil
		}
	},
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
