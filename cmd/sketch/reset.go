package main

import (
	"flag"
	"fmt"
)

var resetCmd = &command{
	name:       "reset",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "forget everything a structure counted",
	details: `
Reset forgets everything, in every process: a Count-Min sketch's Reset
(not atomic: adds racing it may survive in some rows, which check
reports), a Bloom filter's Reset (not atomic either), a counting Bloom
filter's Clear (under its write lock), a rate limiter's Reset (every key
has its whole burst again; not atomic either). A Count-Min or Bloom window has
none: its periods leave it by themselves, and rotate turns one now. An
arena is reset a structure at a time (FILE:NAME).`,
	example: `sketch reset /dev/shm/clients.cms`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return onOne(true, func(s structure, t target) error {
			if err := s.Reset(); err != nil {
				return nameTarget(t, err)
			}
			fmt.Fprintf(stdout, "reset %s (%s)\n", t, s.describe())
			return nil
		})
	},
}
