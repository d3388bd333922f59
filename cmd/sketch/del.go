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
	summary:    "take keys out of a counting Bloom filter, one copy each",
	details: `
Del takes one copy of each KEY out of a counting Bloom filter, under the
file's write lock, and prints the key with "removed" and its count after,
or "absent" when the filter did not contain it (nothing changes then). A
key stored with add --if-absent is stored once however often it was
asked for, so one del takes it out: a ban list banned twice is unbanned
once. Counters that reached 15 stay there, and a key that was never added
but shows as present (a false positive) should not be deleted: that lowers
counters other keys need. To remove a whole structure from an arena, use
rm.`,
	example: `sketch add --if-absent /dev/shm/gateway.arena:banned key-7f3a
sketch del /dev/shm/gateway.arena:banned key-7f3a`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, `print JSON Lines: {"key", "removed", "count"} a key`)
		return func(args []string) error {
			if len(args) < 2 {
				return usageError("want FILE[:NAME] and at least one KEY")
			}
			s, t, err := openTargetArg(args[0], true)
			if err != nil {
				return err
			}
			defer s.Close()
			b, ok := s.(*countingBloom)
			if !ok {
				return fmt.Errorf("%s: %w", t, errNotSupported("del (only a countingbloom takes keys out)", s.describe()))
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
