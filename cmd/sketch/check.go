package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/shmsketch/sketch"
)

var checkCmd = &command{
	name:       "check",
	opensFiles: true,
	args:       "FILE",
	summary:    "verify a file: exit 0 sound, 1 corrupt, 3 an add cut short, 5 damaged counters",
	details: `
Check verifies the whole file without changing it: the header and its
checksum, the directory, every structure's parameters and place (each of
an arena's), and what each structure can check of its counters (a
Count-Min sketch's rows must all sum to the same total). It exits 0 when the file is sound; 1 when it
is corrupt or cannot be read; 3 when the only findings are operations cut
short, which are not damage and need no repair: an add torn by a killed
writer (some rows counted it, the rest not), adds that raced a reset, or
a process killed while it held the file's lock (the next contender
recovers it); 5 when counters hold what no add cut short can leave, which is
damage (the header is sound, the values are not: a Count-Min row above
its add count by more than 2^28 adds of the largest weight the file
recorded, a counter far past saturation, a distinct count's register past
the largest rank): estimates may be wrong either way, merges and Redis
exports refuse the structure, and it must be recreated or restored. It
opens the file read-only and takes no lock.`,
	example: `sketch check /dev/shm/clients.cms; echo "exit $?"`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		jsonOut := fs.Bool("json", false, `print JSON: {"file", "status": "ok"|"interrupted"|"corrupt"|"damaged", "findings", "exit_code"}`)
		return func(args []string) error {
			t, err := oneFile(args, "check verifies")
			if err != nil {
				return err
			}
			r := checkFile(t.path)
			if *jsonOut {
				printJSON(stdout, r)
			} else if r.err == nil {
				fmt.Fprintf(stdout, "%s: %s\n", t.path, r.what)
				for _, f := range r.Findings {
					fmt.Fprintf(stdout, "  %s\n", f)
				}
				if r.Status == "ok" {
					fmt.Fprintln(stdout, "ok")
				}
			}
			switch {
			case r.err != nil:
				return r.err
			case r.ExitCode != exitOK:
				return &exitError{r.ExitCode, errReported}
			}
			return nil
		}
	},
}

// checkResult is what check found, and its JSON.
type checkResult struct {
	File     string   `json:"file"`
	Status   string   `json:"status"` // "ok", "interrupted" (exit 3), "damaged" (exit 5) or "corrupt" (exit 1, also for a file that cannot be read)
	Findings []string `json:"findings"`
	ExitCode int      `json:"exit_code"`
	what     string
	err      error
}

func checkFile(path string) checkResult {
	r := checkResult{File: path, Status: "ok", Findings: []string{}}
	fail := func(err error) checkResult {
		r.Status, r.ExitCode, r.err = "corrupt", exitFailure, err
		r.Findings = append(r.Findings, message(err))
		return r
	}
	fi, err := sketch.Inspect(path)
	if err != nil {
		return fail(err)
	}
	interrupted := func(msg string) {
		if r.ExitCode != exitDamaged {
			r.Status, r.ExitCode = "interrupted", exitTorn
		}
		r.Findings = append(r.Findings, msg)
	}
	// Every structure: the one of a standalone file, or each of an arena's.
	places := []place{filePlace(path, fileOpts(false))}
	if fi.Arena {
		a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{}, fileOpts(false)...)
		if err != nil {
			return fail(err)
		}
		defer a.Close()
		r.what = arenaDescription(a.Stats())
		places = places[:0]
		for _, e := range fi.Entries {
			places = append(places, entryPlace(a, path, e.Name))
		}
	}
	for i, p := range places {
		s, err := openEntry(p, fi.Entries[i].Kind)
		if err != nil {
			return fail(err)
		}
		if !fi.Arena {
			r.what = s.describe()
		}
		err = s.Check()
		s.Close()
		if err == nil {
			continue
		}
		if errors.Is(err, sketch.ErrDamaged) {
			// Damage of the values, not of the file: every structure is
			// still checked, and the worst finding decides.
			r.Status, r.ExitCode = "damaged", exitDamaged
			r.Findings = append(r.Findings, message(err))
			continue
		}
		if !errors.Is(err, sketch.ErrInconsistent) {
			return fail(err)
		}
		what := "counters that disagree, left by adds that raced a reset"
		if errors.Is(err, sketch.ErrTornAdd) {
			what = "a torn add: a writer was killed (or closed) part way through an add"
		}
		if fi.Arena {
			what = quoteName(p.entry) + ": " + what
		}
		interrupted(fmt.Sprintf("%s, which is not damage and needs no repair (%v)", what, err))
	}
	l := fi.Lock
	switch {
	case l.Writer && l.WriterToken < 0:
		interrupted("the lock is marked held with no owner (a damaged lock word); the next contender clears it")
	case l.Writer && !l.WriterAlive:
		interrupted(fmt.Sprintf("the lock is held by handle %d, which is dead: a writer was killed holding it; the next contender recovers it", l.WriterToken))
	}
	if l.DeadReaderSlots > 0 {
		interrupted(fmt.Sprintf("%d reader slots belong to dead readers: processes killed holding the read lock; the next writer clears them", l.DeadReaderSlots))
	}
	return r
}
