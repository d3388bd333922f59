package main

import (
	"flag"
	"fmt"
)

var rmCmd = &command{
	name:    "rm",
	args:    "FILE",
	summary: "remove a sketch file; processes that have it open keep it",
	details: `
Rm removes the sketch file at FILE, and only a valid sketch file (anything
else is left alone: remove it with rm(1) if you mean to). Processes that
have it open keep using it; new opens of the path create a new one. A file
that replaces it at the path while rm runs is never removed.`,
	example: `sketch rm /dev/shm/clients.cms`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			if len(args) != 1 {
				return usageError("want one FILE")
			}
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if t.name != "" {
				return usageError("rm removes a whole file: give FILE, not %s", t)
			}
			s, err := openTarget(t, false)
			if err != nil {
				return fmt.Errorf("%w (not removed)", err)
			}
			defer s.Close()
			if err := s.unlink(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "removed %s (%s)\n", t.path, s.describe())
			return nil
		}
	},
}
