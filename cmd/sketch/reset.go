package main

import (
	"flag"
	"fmt"
)

var resetCmd = &command{
	name:    "reset",
	args:    "FILE[:NAME]",
	summary: "forget everything a structure counted",
	details: `
Reset forgets everything, in every process: a Count-Min sketch's Reset (not
atomic: adds racing it may survive in some rows, which check reports), a
counting Bloom filter's Clear (under its write lock).`,
	example: `sketch reset /dev/shm/clients.cms`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			if len(args) != 1 {
				return usageError("want one FILE[:NAME]")
			}
			s, t, err := openTargetArg(args[0], true)
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.reset(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "reset %s (%s)\n", t, s.describe())
			return nil
		}
	},
}
