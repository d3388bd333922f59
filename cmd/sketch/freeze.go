package main

import (
	"flag"
	"fmt"
)

var freezeCmd = &command{
	name:       "freeze",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "seal a file for good: every writer stops, readers go on",
	details: `
Freeze seals the file: from then on every mutator of every process that
has it open fails, read-write opens are refused, and read-only opens
(query, stats, check) work, here or on a copy shipped to a host of the
same byte order. An arena is sealed whole, whether FILE or FILE:NAME names
it. A Count-Min or Bloom window named is fixed at its current period; one
in an arena frozen through another name, or through FILE, is not, and its
answers empty as its periods pass: freeze a window by its own name. A file
already frozen is left as it is. Count-Min and Bloom adds take no lock, so
an add another process started just before may still land: freeze once the
writers have stopped when the copy must be exact.`,
	example: `sketch freeze /dev/shm/clients.cms && cp /dev/shm/clients.cms /srv/archive/`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			s, a, err := openWhole(t, true)
			if isFrozen(err) {
				fmt.Fprintf(stdout, "%s was frozen already\n", args[0])
				return nil
			}
			if err != nil {
				return err
			}
			if a != nil {
				defer a.Close()
				if err := a.Freeze(); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "froze %s (%s)\n", t, arenaDescription(a.Stats()))
				return nil
			}
			defer s.Close()
			if err := s.Freeze(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "froze %s (%s)\n", t, s.describe())
			if t.name != "" {
				fmt.Fprintf(stdout, "the whole arena %s is sealed: every structure in it\n", t.path)
			}
			return nil
		}
	},
}
