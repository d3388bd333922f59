package main

import (
	"flag"
	"fmt"
)

var freezeCmd = &command{
	name:    "freeze",
	args:    "FILE[:NAME]",
	summary: "seal a file for good: every writer stops, readers go on",
	details: `
Freeze seals the file: from then on every mutator of every process that has
it open fails, read-write opens are refused, and read-only opens (query,
stats, check) work, here or on a copy shipped to a host of the same byte
order. A file already frozen is left as it is. Count-Min adds take no lock,
so an add another process started just before may still land: freeze once
the writers have stopped when the copy must be exact.`,
	example: `sketch freeze /dev/shm/clients.cms && cp /dev/shm/clients.cms /srv/archive/`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			if len(args) != 1 {
				return usageError("want one FILE[:NAME]")
			}
			s, t, err := openTargetArg(args[0], true)
			if isFrozen(err) {
				fmt.Fprintf(stdout, "%s was frozen already\n", args[0])
				return nil
			}
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.freeze(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "froze %s (%s)\n", t, s.describe())
			return nil
		}
	},
}
