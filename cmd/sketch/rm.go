package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"strings"

	"github.com/shmsketch/sketch"
)

var rmCmd = &command{
	name:       "rm",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "remove a sketch file, or a structure from an arena; processes that have it open keep it",
	details: `
Rm removes the sketch file at FILE, an arena with every structure in it,
and only a valid sketch file (anything
else is left alone: remove it with rm(1) if you mean to). Processes that
have it open keep using it; new opens of the path create a new one. A file
that replaces it at the path while rm runs is never removed.

With FILE:NAME, rm removes the structure NAME from the arena FILE
(Arena.Remove): the name then opens a new structure, with any config and
of any kind, and a later create reuses its room once no process has it
open. Processes that have it open keep using its old bytes.`,
	example: `sketch rm /dev/shm/clients.cms
sketch rm /dev/shm/web.arena:clients`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		return func(args []string) error {
			if len(args) != 1 {
				return usageError("want one FILE[:NAME]")
			}
			t, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			if t.name != "" {
				return removeEntry(t)
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

// removeEntry removes the structure t names from its arena.
func removeEntry(t target) error {
	fi, err := sketch.Inspect(t.path)
	if err != nil {
		return fmt.Errorf("%w (not removed)", err)
	}
	if !fi.Arena {
		return &exitError{exitUsage, fmt.Errorf("%s: FILE:NAME addresses a structure in an arena; %s holds a %s, not an arena", t, t.path, fi.Entries[0].Description)}
	}
	a, err := sketch.OpenArena(sketch.Path(t.path), sketch.ArenaConfig{}, fileOpts(true)...)
	if err != nil {
		return fmt.Errorf("%w (not removed)", err)
	}
	defer a.Close()
	what := ""
	for _, e := range a.List() {
		if e.Name == t.name {
			what = fmt.Sprintf("%s, %d bytes", e.Kind, e.Bytes)
		}
	}
	if err := a.Remove(t.name); errors.Is(err, fs.ErrNotExist) {
		has := "it is empty"
		if names := arenaNames(a); len(names) > 0 {
			has = "it has " + strings.Join(names, ", ")
		}
		return fmt.Errorf("%s: the arena %s has no structure named %s (%s)", t, t.path, quoteName(t.name), has)
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s (%s); its room is reused once no process has it open\n", t, what)
	return nil
}
