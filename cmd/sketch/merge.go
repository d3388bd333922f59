package main

import (
	"flag"
	"fmt"
)

var mergeCmd = &command{
	name:       "merge",
	opensFiles: true,
	args:       "DST SRC...",
	summary:    "add structures into another of the same kind, shape and seed",
	details: `
Merge adds each SRC into DST: afterwards DST answers as if it had seen
everything each SRC saw. They must be of one kind, shape and seed (create
each with --seed-from one of them, or with the same --seed-file). The SRC
files are opened read-only, so frozen copies shipped from other hosts
merge too. Count-Min sketches add counter by counter (DST then answers
the sum), Bloom filters OR their bits (the union), counting Bloom filters
add counter by counter, saturating at 15, distinct counts keep each
register's largest value (the count of the union), rate limiters of one
rate and burst keep each cell's latest time (DST then refuses what any of
them would; their decision counts are not merged); Count-Min and Bloom
windows do not merge. Structures in arenas are FILE:NAME.`,
	example: `sketch create total.cbf --kind countingbloom --capacity 1000000 --seed-from host1.cbf
sketch merge total.cbf host1.cbf host2.cbf
sketch merge total.cms host1.arena:clients host2.arena:clients`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			if len(args) < 2 {
				return usageError("want DST and at least one SRC")
			}
			dst, dt, err := openTargetArg(args[0], true)
			if err != nil {
				return err
			}
			defer dst.Close()
			for _, arg := range args[1:] {
				src, st, err := openTargetArg(arg, false)
				if err != nil {
					return err
				}
				err = dst.merge(src)
				src.Close()
				if err != nil {
					return fmt.Errorf("merge %s into %s: %w", st, dt, err)
				}
			}
			fmt.Fprintf(stdout, "merged %d into %s (%s)\n", len(args)-1, dt, dst.describe())
			return nil
		}
	},
}
