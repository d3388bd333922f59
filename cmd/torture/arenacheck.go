package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/shmsketch/sketch"
)

// An arenaCheckResult is what one arena checker reports, as one JSON line,
// for every arena of a phase. Kinds are indexed as specKinds.
type arenaCheckResult struct {
	Backend string       `json:"backend"`
	Arenas  int          `json:"arenas"`  // arena files checked
	Missing int          `json:"missing"` // arena files nobody published (their records must be empty)
	List    listFindings `json:"list"`
	// OpenErrs are arenas, or listed entries, that do not open with their
	// own kind and config.
	OpenErrs int `json:"open_errs"`
	// ConflictOpened are conflicting specs a listed name opened with.
	ConflictOpened int `json:"conflict_opened"`
	// FullNowFits are names refused with ErrArenaFull that a create now
	// admits, or that fail otherwise than ErrArenaFull.
	FullNowFits int          `json:"full_now_fits"`
	InspectErrs int          `json:"inspect_errs"`
	Asked       perArenaKind `json:"asked"`
	Low         perArenaKind `json:"low"`
	// Caught are control keys answered below their claim (must be > 0 per
	// kind); Claimed how many were claimed.
	Caught  perArenaKind `json:"caught"`
	Claimed perArenaKind `json:"claimed"`
	// Count-Min Check calls: clean, ErrTornAdd, anything else (a violation).
	CheckClean   int    `json:"check_clean"`
	CheckTorn    int    `json:"check_torn"`
	CheckOther   int    `json:"check_other"`
	FirstProblem string `json:"first_problem,omitempty"`
	answered     int    // arenas summed into this result, for the supervisor
}

// arenaKindCount is how many kinds the arena phases take (len(specKinds),
// which TestSpecKinds_FitArenaCheckResult holds it to): the checkers'
// counts per kind are arrays, so that every copy of a result is its own.
const arenaKindCount = 9

// perArenaKind is one count per kind of the arena phases.
type perArenaKind [arenaKindCount]int

func (r *arenaCheckResult) problem(format string, args ...any) {
	if r.FirstProblem == "" {
		r.FirstProblem = fmt.Sprintf(format, args...)
		fmt.Fprintf(os.Stderr, "torture: arena checker (%s): %s\n", sketch.Backend, r.FirstProblem)
	}
}

// add sums o into r; r keeps its first problem.
func (r *arenaCheckResult) add(o arenaCheckResult) {
	r.Arenas += o.Arenas
	r.Missing += o.Missing
	r.List.Listed += o.List.Listed
	r.List.Dups += o.List.Dups
	r.List.Unknown += o.List.Unknown
	r.List.BadConfig += o.List.BadConfig
	r.List.Lost += o.List.Lost
	r.List.FullListed += o.List.FullListed
	r.OpenErrs += o.OpenErrs
	r.ConflictOpened += o.ConflictOpened
	r.FullNowFits += o.FullNowFits
	r.InspectErrs += o.InspectErrs
	r.CheckClean += o.CheckClean
	r.CheckTorn += o.CheckTorn
	r.CheckOther += o.CheckOther
	for k := range r.Low {
		r.Asked[k] += o.Asked[k]
		r.Low[k] += o.Low[k]
		r.Caught[k] += o.Caught[k]
		r.Claimed[k] += o.Claimed[k]
	}
	if r.FirstProblem == "" {
		r.FirstProblem = o.FirstProblem
	}
}

// violations are the result's broken promises, the control aside.
func (r *arenaCheckResult) violations() int {
	low := 0
	for _, n := range r.Low {
		low += n
	}
	return r.List.violations() + r.OpenErrs + r.ConflictOpened + r.FullNowFits + r.InspectErrs + r.CheckOther + low
}

// runArenaChecker checks the arenas of a phase its standard input names,
// one index a line, each once no worker is on it any more, and answers
// each with its result as a JSON line.
func runArenaChecker(dir, phase string, slots int) error {
	p, err := readPlan(planPath(dir, phase))
	if err != nil {
		return err
	}
	var recs []*arenaRecord
	for slot := range slots {
		r, err := openArenaRecord(arenaRecordPath(dir, phase, slot), p)
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		k, err := strconv.Atoi(in.Text())
		if err != nil || k < 0 || k >= len(p.Arenas) {
			return fmt.Errorf("arena checker: bad request %q", in.Text())
		}
		t := newArenaTally(len(p.names(k)))
		for _, r := range recs {
			t.add(r, k, p.names(k))
		}
		res := arenaCheckResult{Backend: sketch.Backend}
		checkArena(&res, arenaFilePath(dir, phase, k), p.names(k), t)
		if err := out.Encode(res); err != nil {
			return err
		}
	}
	return in.Err()
}

// checkArena checks one arena against its tally: its listing, each entry
// opened with its own config and with the name's conflicting one, names
// refused as full still refused, Inspect, every key's answer against the
// records, the negative control, and Count-Min Check.
func checkArena(res *arenaCheckResult, path string, set []arenaName, t *arenaTally) {
	var list []sketch.ArenaEntry
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{}, sketch.WithoutCreate())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Missing++ // no worker's create was published; the records must say nothing returned
	case err != nil:
		res.OpenErrs++
		res.problem("open %s: %v", path, err)
		return
	default:
		defer a.Close()
		res.Arenas++
		list = a.List()
	}
	f, index := judgeList(set, list, t)
	res.addList(f, path)
	if a == nil {
		return
	}
	if fi, err := sketch.Inspect(path); err != nil {
		res.InspectErrs++
		res.problem("Inspect %s: %v", path, err)
	} else if len(fi.Entries) != len(list) {
		res.InspectErrs++
		res.problem("Inspect %s: %d entries, List %d", path, len(fi.Entries), len(list))
	}

	controlled := map[sketch.Kind]bool{}
	for i, n := range set {
		at, listed := index[i]
		if !listed {
			if t.full[i] > 0 {
				checkStillFull(res, a, n)
			}
			continue
		}
		if !res.checkOpens(a, path, n, list[at]) {
			continue
		}
		s, err := n.Want.open(a, n.Name)
		if err != nil {
			continue // counted by judgeList as a config that is not the name's
		}
		res.checkAnswers(path, n, s, t.keys[i][:], controlled)
		if cm, ok := s.h.(*sketch.CountMin); ok {
			res.checkCountMin(path, n.Name, cm)
		}
		s.close()
	}
}

// addList adds a listing's findings.
func (r *arenaCheckResult) addList(f listFindings, path string) {
	r.List.Listed += f.Listed
	r.List.Dups += f.Dups
	r.List.Unknown += f.Unknown
	r.List.BadConfig += f.BadConfig
	r.List.Lost += f.Lost
	r.List.FullListed += f.FullListed
	if f.First != "" {
		r.problem("%s: %s", path, f.First)
	}
}

// checkOpens opens a listed name with the config its entry lists, which
// must work, and with the name's conflicting spec, which must be
// ErrIncompatible; false when the entry's own config did not open.
func (r *arenaCheckResult) checkOpens(a *sketch.Arena, path string, n arenaName, e sketch.ArenaEntry) bool {
	if own, ok := specOfEntry(e); ok {
		s, err := own.open(a, n.Name)
		if err != nil {
			r.OpenErrs++
			r.problem("%s: %q does not open with its own config: %v", path, n.Name, err)
			return false
		}
		s.close()
	}
	if n.Conflict != nil {
		if s, err := n.Conflict.open(a, n.Name); err == nil {
			s.close()
			r.ConflictOpened++
			r.problem("%s: %q opened with the conflicting %+v", path, n.Name, *n.Conflict)
		} else if !errors.Is(err, sketch.ErrIncompatible) {
			r.ConflictOpened++
			r.problem("%s: %q with the conflicting %+v: %v, want ErrIncompatible", path, n.Name, *n.Conflict, err)
		}
	}
	return true
}

// checkAnswers asks s about the name's keys, none of which may answer
// below its record, and, for the first name of each kind, about the
// control keys, which must answer below their claim.
func (r *arenaCheckResult) checkAnswers(path string, n arenaName, s *arenaStruct, recorded []uint64, controlled map[sketch.Kind]bool) {
	kind := kindIndex(n.Want.Kind)
	keys := nameKeys(n.Name)
	for k := range keysPerName {
		ans := s.ask(keys[k])
		r.Asked[kind]++
		if lowAnswer(n.Want.Kind, recorded[k], ans) {
			r.Low[kind]++
			r.problem("%s: %q key %q answers %d, recorded %d", path, n.Name, keys[k], ans, recorded[k])
		}
	}
	if !controlled[n.Want.Kind] {
		controlled[n.Want.Kind] = true
		claim := controlClaim(n.Want.Kind)
		for _, key := range keys[keysPerName:] {
			r.Claimed[kind]++
			if lowAnswer(n.Want.Kind, claim, s.ask(key)) {
				r.Caught[kind]++
			}
		}
	}
}

// checkCountMin counts a Count-Min sketch's Check: clean, a torn add (a
// worker killed inside one), or anything else, a violation.
func (r *arenaCheckResult) checkCountMin(path, name string, cm *sketch.CountMin) {
	switch err := cm.Check(); {
	case err == nil:
		r.CheckClean++
	case errors.Is(err, sketch.ErrTornAdd):
		r.CheckTorn++
	default:
		r.CheckOther++
		r.problem("%s: %q Check: %v", path, name, err)
	}
}

// checkStillFull asks again for a name an arena refused as full: the room
// it lacked has not come back, so it must still be ErrArenaFull.
func checkStillFull(res *arenaCheckResult, a *sketch.Arena, n arenaName) {
	s, err := n.Want.open(a, n.Name)
	if err == nil {
		s.close()
		res.FullNowFits++
		res.problem("%q was refused with ErrArenaFull, yet a create now admits it", n.Name)
	} else if !errors.Is(err, sketch.ErrArenaFull) {
		res.FullNowFits++
		res.problem("%q was refused with ErrArenaFull, now: %v", n.Name, err)
	}
}
