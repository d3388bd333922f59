package main

import (
	"flag"
	"fmt"

	"github.com/shmsketch/sketch"
)

var delCmd = &command{
	name:       "del",
	opensFiles: true,
	args:       "[FLAGS] FILE[:NAME] KEY...",
	takesKeys:  true,
	summary:    "take keys out of a counting Bloom filter (one copy each) or an exact set",
	details: `
Del takes one copy of each KEY out of a counting Bloom filter, under the
file's write lock, and prints the key with "removed" and its count after,
or "absent" when the filter did not contain it (nothing changes then). A
key stored with add --if-absent is stored once however often it was
asked for, so one del takes it out: a ban list banned twice is unbanned
once. Counters that reached 15 stay there, and a key that was never added
but shows as present (a false positive) should not be deleted: that lowers
counters other keys need. An exact set (set, setwindow) takes each KEY
out and prints "removed", or "absent" when it did not hold it; of any
number of processes removing one key at once exactly one is told
removed. To remove a whole structure from an arena, use
rm.`,
	example: `sketch add --if-absent /dev/shm/gateway.arena:banned key-7f3a
sketch del /dev/shm/gateway.arena:banned key-7f3a
sketch del /dev/shm/web.arena:nonces n-5d1e`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, `print JSON Lines: {"key", "removed", "count"} a key (a set's without "count")`)
		return func(args []string) error {
			if len(args) < 2 {
				return usageError("want FILE[:NAME] and at least one KEY")
			}
			s, t, err := openTargetArg(args[0], true)
			if err != nil {
				return err
			}
			defer s.Close()
			if e, ok := s.(exactKeys); ok {
				return delExact(e, args[1:], *jsonOut)
			}
			b, ok := s.(*countingBloom)
			if !ok {
				return fmt.Errorf("%s: %w", t, errNotSupported("del (only a countingbloom, set or setwindow takes keys out)", s.describe()))
			}
			for _, k := range args[1:] {
				removed, err := b.Remove([]byte(k))
				if err != nil {
					return err
				}
				printRemoved(b.CountingBloom, k, removed, *jsonOut)
			}
			return nil
		}
	},
}

// printRemoved prints what del did to key.
func printRemoved(b *sketch.CountingBloom, key string, removed, jsonOut bool) {
	count := b.EstimateString(key)
	if jsonOut {
		printJSON(stdout, struct {
			jsonKey
			Removed bool   `json:"removed"`
			Count   uint64 `json:"count"`
		}{keyOf(key), removed, count})
		return
	}
	if !removed {
		fmt.Fprintf(stdout, "%s\tabsent\n", quoteKey(key))
		return
	}
	fmt.Fprintf(stdout, "%s\tremoved\t%d\n", quoteKey(key), count)
}

// exactKeys is an exact set or set window: it adds a key once, takes keys
// out and lists them (keySet).
type exactKeys interface {
	addOnce(key []byte) (bool, error)
	remove(key []byte) (bool, error)
	keys() ([][]byte, error)
}

// delExact takes each key out of an exact set, printing "removed" or
// "absent" (it did not hold the key).
func delExact(e exactKeys, keys []string, jsonOut bool) error {
	for _, k := range keys {
		removed, err := e.remove([]byte(k))
		if err != nil {
			return err
		}
		if jsonOut {
			printJSON(stdout, struct {
				jsonKey
				Removed bool `json:"removed"`
			}{keyOf(k), removed})
			continue
		}
		what := "absent"
		if removed {
			what = "removed"
		}
		fmt.Fprintf(stdout, "%s\t%s\n", quoteKey(k), what)
	}
	return nil
}
