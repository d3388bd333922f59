package main

import (
	"container/heap"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

var queryCmd = &command{
	name:       "query",
	opensFiles: true,
	args:       "[FLAGS] FILE[:NAME] [KEY...]",
	takesKeys:  true,
	summary:    "answer keys: estimates with error bars, presence, counts",
	details: `
Query prints one line a key: KEY, then a Count-Min sketch's estimate and
its error bar ("between LOW and ESTIMATE": the true count is in that range
with the sketch's confidence, and never above it; a Count-Min window's
over the periods it covers), a Bloom filter's "probably present" or
"definitely absent" (a Bloom window's over the periods it covers), or a
counting Bloom filter's "probably present, count N" (added minus removed;
15 means 15 or more) or "definitely absent". A distinct count answers no
key: query FILE prints its count of distinct keys with its 95% range (two
standard errors either side). Exact counters (counters) take their
counters' names as keys and print each one's value, exact: NAME, a tab,
the value (JSON: {"name", "value"}); query FILE alone prints every
counter, in the order create gave them, and a name the structure does
not have is a bad argument (exit 2), printing nothing. An exact set
(set, setwindow) answers "present" or "absent", exact both ways (a
window: for the periods it covers); sketch list prints every key it
holds. A rate limiter (gcra) peeks: it prints
what allow would decide for a request of cost 1 now ("would be allowed"
or "would be refused", remaining, retry after, reset after) and counts
nothing (the library's Allow of cost 0, which a read-only handle and a
frozen file answer too). --top N prints the N busiest
of the keys given, the furthest from their whole burst. With no KEY, or "-", the keys come one a
line from standard input (empty lines are skipped); input that holds no
key is a usage error (exit 2), as no KEY is to del and allow, since a
query of nothing answers nothing. --top N reads candidate keys (a sketch
stores none) and prints the N loudest, loudest first. It opens the file
read-only.`,
	example: `sketch query /dev/shm/clients.cms 192.0.2.1 192.0.2.7
sketch query /dev/shm/web.arena:seen req-81f3
sketch query /dev/shm/web.arena:clients-distinct
sketch query /dev/shm/gateway.arena:per-client 192.0.2.7
sketch query /dev/shm/web.arena:status
sketch query --json /dev/shm/web.arena:status 404 500
cut -d' ' -f1 access.log | sort -u | sketch query --top 10 /dev/shm/clients.cms`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		top := fs.Int("top", 0, "print the `N` loudest of the candidate keys")
		jsonOut := fs.Bool("json", false, "print JSON Lines: one object a key")
		return func(args []string) error {
			if len(args) == 0 {
				return usageError("missing FILE")
			}
			if *top < 0 {
				return usageError("--top must be positive")
			}
			s, t, err := openTargetArg(args[0], false)
			if err != nil {
				return err
			}
			defer s.Close()
			ask := func(b [][]byte) ([]answer, error) { return s.query(b), nil }
			if p, ok := s.(peeker); ok {
				ask = p.peek
			}
			keys := args[1:]
			if c, ok := s.(counting); ok {
				if len(keys) > 0 || *top > 0 {
					return usageError("a distinct count answers no key: sketch query %s prints its count", args[0])
				}
				a := c.count()
				if *jsonOut {
					return printJSON(stdout, a)
				}
				fmt.Fprintln(stdout, a.text())
				return nil
			}
			if c, ok := s.(*counters); ok {
				if len(keys) == 0 {
					keys = c.allNames()
				} else if !(len(keys) == 1 && keys[0] == "-") {
					if err := c.checkNames(t, byteKeys(keys)); err != nil {
						return err // before anything is printed
					}
				}
			}
			fromStdin := len(keys) == 0 || (len(keys) == 1 && keys[0] == "-")
			next := argBatches(keys)
			if fromStdin {
				kr := newKeyReader(os.Stdin, false)
				next = func() ([][]byte, error) {
					k, _, err := kr.next()
					return k, err
				}
			}
			var n int
			if *top > 0 {
				n, err = queryTop(ask, next, *top, *jsonOut)
			} else {
				n, err = queryAll(ask, next, *jsonOut)
			}
			if err == nil && n == 0 {
				return usageError("no KEY: give keys after FILE, or one a line on standard input, which held none")
			}
			return err
		}
	},
}

// queryAll prints the answer of every key next serves, and returns how
// many there were.
func queryAll(ask func([][]byte) ([]answer, error), next func() ([][]byte, error), jsonOut bool) (int, error) {
	n := 0
	for {
		batch, err := next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n += len(batch)
		as, err := ask(batch)
		if err != nil {
			return n, err
		}
		for i, a := range as {
			printAnswer(a, string(batch[i]), jsonOut)
		}
	}
}

// peeker is a structure whose answers are a peek that can fail: a rate
// limiter, whose peek is Allow with cost 0 (which counts nothing).
type peeker interface {
	peek(keys [][]byte) ([]answer, error)
}

// counting is a structure that answers with one count, not a key at a
// time: a distinct count.
type counting interface{ count() distinctAnswer }

// argBatches serves keys from the arguments as one batch.
func argBatches(keys []string) func() ([][]byte, error) {
	done := false
	return func() ([][]byte, error) {
		if done || len(keys) == 0 {
			return nil, io.EOF
		}
		done = true
		return byteKeys(keys), nil
	}
}

// byteKeys are keys as the structures take them.
func byteKeys(keys []string) [][]byte {
	b := make([][]byte, len(keys))
	for i, k := range keys {
		b[i] = []byte(k)
	}
	return b
}

// printAnswer prints one key's answer: KEY<TAB>answer, or its JSON.
func printAnswer(a answer, key string, jsonOut bool) {
	if jsonOut {
		printJSON(stdout, a)
		return
	}
	fmt.Fprintf(stdout, "%s\t%s\n", quoteKey(key), a.text())
}

// queryTop prints the n loudest distinct candidates, loudest first; ties
// in key order. It returns how many candidates next served.
func queryTop(ask func([][]byte) ([]answer, error), next func() ([][]byte, error), n int, jsonOut bool) (int, error) {
	seen := map[string]bool{}
	h := &topHeap{}
	keys := 0
	for {
		batch, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return keys, err
		}
		keys += len(batch)
		fresh := batch[:0]
		for _, k := range batch {
			if !seen[string(k)] {
				seen[string(k)] = true
				fresh = append(fresh, k)
			}
		}
		as, err := ask(fresh)
		if err != nil {
			return keys, err
		}
		for i, a := range as {
			e := topEntry{key: string(fresh[i]), a: a}
			if h.Len() < n {
				heap.Push(h, e)
			} else if louder(e, (*h)[0]) {
				(*h)[0] = e
				heap.Fix(h, 0)
			}
		}
	}
	out := []topEntry(*h)
	sort.Slice(out, func(i, j int) bool { return louder(out[i], out[j]) })
	for _, e := range out {
		printAnswer(e.a, e.key, jsonOut)
	}
	return keys, nil
}

type topEntry struct {
	key string
	a   answer
}

func louder(x, y topEntry) bool {
	if x.a.weight() != y.a.weight() {
		return x.a.weight() > y.a.weight()
	}
	return x.key < y.key
}

// topHeap is a min-heap: its root is the quietest of the loudest so far.
type topHeap []topEntry

func (h topHeap) Len() int           { return len(h) }
func (h topHeap) Less(i, j int) bool { return louder(h[j], h[i]) }
func (h topHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)        { *h = append(*h, x.(topEntry)) }
func (h *topHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
