package main

import (
	"flag"
	"fmt"
)

var rmCmd = &command{
	name:       "rm",
	opensFiles: true,
	args:       "FILE",
	summary:    "remove a sketch file; processes that have it open keep it",
	details: `
Rm removes the sketch file at FILE, an arena with every structure in it,
and only a valid sketch file (anything
else is left alone: remove it with rm(1) if you mean to). Processes that
have it open keep using it; new opens of the path create a new one. A file
that replaces it at the path while rm runs is never removed.`,
	example: `sketch rm /dev/shm/clients.cms`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			t, err := oneFile(args, "rm removes")
			if err != nil {
				return err
			}
			s, a, err := openWhole(t, false)
			if err != nil {
				return fmt.Errorf("%w (not removed)", err)
			}
			what := ""
			if a != nil {
				defer a.Close()
				err, what = a.Unlink(), arenaDescription(a.Stats())
			} else {
				defer s.Close()
				err, what = s.Unlink(), s.describe()
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "removed %s (%s)\n", t.path, what)
			return nil
		}
	},
}
