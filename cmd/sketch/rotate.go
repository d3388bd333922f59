package main

import (
	"flag"
	"fmt"
)

var rotateCmd = &command{
	name:       "rotate",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "turn a window's period now: the oldest period leaves it",
	details: `
Rotate turns a windowed structure's period now, in every process: adds go
to a new, empty period and the oldest one leaves the window. A window with
--period 0 turns only this way; one with a period keeps turning by the
clock as well, each rotate moving every later period one ahead. It prints
the periods the window covers afterwards.`,
	example: `sketch rotate /dev/shm/web.arena:clients`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return onOne(true, func(s structure, t target) error {
			r, ok := s.(rotator)
			if !ok {
				return fmt.Errorf("%s holds a %s, which has no periods to rotate", t, s.describe())
			}
			if err := r.Rotate(); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "rotated %s (%s)", t, s.describe())
			if sm := s.sample(); sm.Oldest != nil && sm.Current != nil {
				fmt.Fprintf(stdout, ": it covers periods %d to %d", *sm.Oldest, *sm.Current)
			}
			fmt.Fprintln(stdout)
			return nil
		})
	},
}
