package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

var addCmd = &command{
	name:       "add",
	opensFiles: true,
	args:       "[FLAGS] FILE[:NAME] [KEY...]",
	takesKeys:  true,
	summary:    "count keys: from the arguments, or one a line from standard input",
	details: `
Add counts each KEY (-n times) in the structure and prints its new answer:
a Count-Min sketch's estimate with its error bar (a Count-Min window's
over the window), a counting Bloom filter's count, or whether a Bloom
filter or window had the key before ("added" or "probably present
before"; a window's in any period it covers; -n changes nothing in a
set), or a distinct count's count after the add (-n changes nothing
either). Exact counters (counters) take their counters' names as keys:
add adds 1 (or -n N) to each named counter and prints its value just
after (others' adds meanwhile included); a name the structure does not
have is a bad argument (exit 2), found before anything is added (from
standard input, before anything of its batch is). An exact set (set,
setwindow) adds each key it does not hold and prints "new", or
"present" when it held it (a window: in a period it covers); of any
number of processes adding one key at once exactly one is told new. A
new key when the set holds its capacity is refused (exit 1, "set is
full"): nothing is evicted, and the keys before it stay added. A rate limiter has no add: sketch allow decides its requests. With no KEY, or "-", it reads one key a line from standard
input, in batches (empty lines are skipped), and prints how many it added;
with --weighted, each line is KEY<TAB>N and counts KEY N times (a counting
Bloom filter adds it N times, up to the 15 where its counters stick).
While it reads, standard error shows keys, keys/s and the time elapsed,
when it is a terminal. An interrupt stops it after the batch in hand.

With --if-absent (a counting Bloom filter), each key is added only if the
filter does not contain it, as one step under the file's write lock, and
add prints "added" or "present": of any number of processes asking for one
key at once exactly one adds it, so a key banned twice is unbanned by one
del. A set or set window always adds this way, with or without it.`,
	example: `sketch add /dev/shm/clients.cms 192.0.2.1 192.0.2.7
sketch add /dev/shm/web.arena:seen req-81f3
cut -d' ' -f1 access.log | sketch add /dev/shm/clients.cms
printf 'alice\t5\nbob\t2\n' | sketch add --weighted /dev/shm/clients.cms
sketch add -n 3 /dev/shm/web.arena:status 404
sketch add --if-absent /dev/shm/gateway.arena:banned key-7f3a
sketch add /dev/shm/web.arena:nonces n-5d1e`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		n := fs.Uint64("n", 1, "count each KEY `N` times")
		weighted := fs.Bool("weighted", false, "standard input has KEY<TAB>N lines")
		jsonOut := fs.Bool("json", false, "print JSON: one object a key, or the summary")
		ifAbsent := fs.Bool("if-absent", false, "add each KEY only if the filter does not contain it (a counting Bloom filter; a set adds this way always)")
		return func(args []string) error {
			if len(args) == 0 {
				return usageError("missing FILE")
			}
			if *n == 0 {
				return usageError("-n must be at least 1")
			}
			keys := args[1:]
			fromStdin := len(keys) == 0 || (len(keys) == 1 && keys[0] == "-")
			if *weighted && !fromStdin {
				return usageError("--weighted reads KEY<TAB>N lines from standard input; give keys with -n instead")
			}
			if *ifAbsent && (*n != 1 || *weighted) {
				return usageError("--if-absent adds a key once: not with -n or --weighted")
			}
			s, t, err := openTargetArg(args[0], true)
			if err != nil {
				return err
			}
			defer s.Close()
			if _, ok := s.(*gcra); ok {
				return fmt.Errorf("%s: %w", t, errRateNoAdd) // before standard input is read
			}
			if _, ok := s.(exactKeys); ok && *weighted {
				return usageError("--weighted: %s holds a key once; give one key a line", t)
			}
			if e, ok := s.(exactKeys); ok && fromStdin {
				return addIfAbsentStdin(e.addOnce, t, *jsonOut) // a set adds a key once, flag or not
			}
			if _, ok := s.(exactKeys); *ifAbsent && !ok {
				b, ok := s.(*countingBloom)
				if !ok {
					return fmt.Errorf("%s: %w", t, errNotSupported("--if-absent (only a countingbloom, set or setwindow adds a key once)", s.describe()))
				}
				if fromStdin {
					return addIfAbsentStdin(b.AddIfAbsent, t, *jsonOut)
				}
				for _, k := range keys {
					added, err := b.AddIfAbsent([]byte(k))
					if err != nil {
						return err
					}
					printAddedOnce(k, added, *jsonOut)
				}
				return nil
			}
			if fromStdin {
				return addStdin(s, t, *weighted, *jsonOut)
			}
			if c, ok := s.(*counters); ok {
				if err := c.checkNames(t, byteKeys(keys)); err != nil {
					return err // before anything is added
				}
			}
			for _, k := range keys {
				a, err := s.addKey([]byte(k), *n)
				if err != nil {
					return err
				}
				printAnswer(a, k, *jsonOut)
			}
			return nil
		}
	},
}

// addStdin counts the keys of standard input, a batch at a time.
func addStdin(s structure, t target, weighted, jsonOut bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kr := newKeyReader(os.Stdin, weighted)
	p := startProgress()
	var added uint64
	var err error
	for ctx.Err() == nil {
		var keys [][]byte
		var weights []uint64
		keys, weights, err = kr.next()
		if err != nil {
			break
		}
		if err = s.add(keys, weights); err != nil {
			break
		}
		added += uint64(len(keys))
		p.keys.Store(added)
	}
	p.end()
	el := time.Since(p.start)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted after %s (they stay counted)", plural(added, "key", "keys"))
	}
	if err != nil {
		return err
	}
	sm := s.sample()
	total := sm.Total
	if jsonOut {
		return printJSON(stdout, struct {
			File          string  `json:"file"`
			Keys          uint64  `json:"keys"`
			Total         uint64  `json:"total"`
			Seconds       float64 `json:"seconds"`
			KeysPerSecond float64 `json:"keys_per_second"`
		}{t.arg(), added, total, el.Seconds(), float64(added) / el.Seconds()})
	}
	fmt.Fprintf(stdout, "added %s to %s in %v (%s keys/s); %s in all: %d\n", plural(added, "key", "keys"), t, el.Round(time.Millisecond), rate(float64(added)/el.Seconds()), sm.what, total)
	return nil
}

// printAddedOnce prints what add --if-absent did to key.
func printAddedOnce(key string, added, jsonOut bool) {
	if jsonOut {
		printJSON(stdout, struct {
			jsonKey
			Added bool `json:"added"`
		}{keyOf(key), added})
		return
	}
	what := "present"
	if added {
		what = "added"
	}
	fmt.Fprintf(stdout, "%s\t%s\n", quoteKey(key), what)
}

// addIfAbsentStdin adds each key of standard input that the structure
// does not hold (addOnce: a counting Bloom filter's AddIfAbsent, a set's
// Add), and prints how many it added.
func addIfAbsentStdin(addOnce func(key []byte) (bool, error), t target, jsonOut bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kr := newKeyReader(os.Stdin, false)
	var keys, added uint64
	var err error
	for ctx.Err() == nil && err == nil {
		var batch [][]byte
		if batch, _, err = kr.next(); err != nil {
			break
		}
		for _, k := range batch {
			var ok bool
			if ok, err = addOnce(k); err != nil {
				break
			}
			keys++
			if ok {
				added++
			}
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted after %s (%d added stay added)", plural(keys, "key", "keys"), added)
	}
	if err != nil {
		return err
	}
	if jsonOut {
		return printJSON(stdout, struct {
			File  string `json:"file"`
			Keys  uint64 `json:"keys"`
			Added uint64 `json:"added"`
		}{t.arg(), keys, added})
	}
	fmt.Fprintf(stdout, "added %d of %s to %s (the others were present)\n", added, plural(keys, "key", "keys"), t)
	return nil
}
