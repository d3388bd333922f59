package main

import (
	"flag"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/shmsketch/sketch"
)

var topCmd = &command{
	name:       "top",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "list the loudest keys of a sketch's candidate table",
	details: `
Top lists the loudest keys of a Count-Min sketch or window created with
--candidates, loudest first: rank, key, estimate and its error bar
("between LOW and ESTIMATE": the true count is in that range with the
sketch's confidence, and never above it; a window's over the periods it
covers). The estimates are read from the counters now; the table only
names the keys. A key longer than the table keeps is shown as its prefix
and its length. Keys no louder than the sketch's total over its width
are left out: their counts are not told apart from collisions. It opens
the file read-only.`,
	example: `sketch top /dev/shm/clients.cms
sketch top -n 5 /dev/shm/web.arena:clients
sketch top --json /dev/shm/clients.cms | jq -r .key`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		n := fs.Int("n", 10, "list at most `N` keys (0: every key the table lists)")
		jsonOut := fs.Bool("json", false, `print JSON Lines: {"rank", "key", "length", "estimate", "low"} a key`)
		return onOne(false, func(s structure, t target) error {
			if *n < 0 {
				return usageError("-n must be 0 or more")
			}
			l, ok := s.(lister)
			if !ok {
				return fmt.Errorf("%s: %w", t, errNotSupported("candidate table", s.describe()))
			}
			hs, err := l.Top(*n)
			if err != nil {
				return err
			}
			printTop(hs, *jsonOut)
			return nil
		})
	},
}

// watchLoudest is how many of a table's loudest keys watch shows.
const watchLoudest = 5

// lister is a structure with a candidate table.
type lister interface {
	Top(n int) ([]sketch.HeavyHitter, error)
}

// topLine is top --json's line.
type topLine struct {
	Rank int `json:"rank"`
	sketch.HeavyHitter
	// Base64 is the key's bytes when "key" cannot carry them (see jsonKey).
	Base64 []byte `json:"key_base64,omitempty"`
}

// printTop prints a listing, one key a line.
func printTop(hs []sketch.HeavyHitter, jsonOut bool) {
	for i, h := range hs {
		if jsonOut {
			printJSON(stdout, topLine{i + 1, h, keyOf(h.Key).Base64})
			continue
		}
		fmt.Fprintf(stdout, "%d\t%s\t%d\tbetween %d and %d\n", i+1, keyText(h), h.Estimate, h.Low, h.Estimate)
	}
}

// keyText shows a listed key: as it is when it is printable text, quoted
// otherwise, and a prefix with its whole length.
func keyText(h sketch.HeavyHitter) string {
	k := quoteKey(h.Key)
	if h.Length > len(h.Key) {
		k += fmt.Sprintf("... (%d bytes)", h.Length)
	}
	return k
}

// quoteKey is a key as the commands print it: as it is when it is
// printable text without spaces, quoted in Go syntax otherwise. Keys come
// from clients (log lines, request headers): printed raw, an escape
// sequence in one would reach the terminal, and a tab or a newline would
// break the columns.
func quoteKey(k string) string {
	if printable(k) {
		return k
	}
	return strconv.Quote(k)
}

func printable(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) || r == ' ' || r == '\t' {
			return false
		}
	}
	return true
}

// candidateRow is the stats row of a candidate table.
func candidateRow(c *sketch.CandidateStats) [2]string {
	return [2]string{"candidates", fmt.Sprintf("%d listed at most; %d of %d ways hold a key (%d key bytes), floor %d, %d admissions", c.Capacity, c.Held, c.Ways, c.KeyBytes, c.Floor, c.Admissions)}
}
