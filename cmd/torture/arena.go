package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// The arena part: processes of both builds race to create the same names
// in shared arenas while they are killed (racing creates), fill small
// arenas until ErrArenaFull (arena full), and the first opener of a new
// arena file is killed inside its create (interrupted new arena). Checkers
// of both builds then read every arena against the workers' records.

// arenaSizes is the part's shape, short or default.
type arenaSizes struct {
	workers, names, large, raceArenas, fillArenas, rounds int
	every                                                 time.Duration // per racing arena
	newArena                                              int64         // bytes of each interrupted new arena
}

func arenaSizesFor(short bool) arenaSizes {
	if short {
		return arenaSizes{workers: 4, names: 120, large: 2, raceArenas: 16, every: 150 * time.Millisecond,
			fillArenas: 4, rounds: 16, newArena: 32 << 20}
	}
	return arenaSizes{workers: 6, names: 300, large: 3, raceArenas: 120, every: 250 * time.Millisecond,
		fillArenas: 12, rounds: 100, newArena: 64 << 20}
}

// fillBound is the longest the fill phase stays on one arena: its workers
// ask for 40 names once each, in milliseconds.
const fillBound = 5 * time.Second

// openerTimeout is the wait timeout the interrupted rounds' openers give
// OpenArena: a prepared file whose adopter was killed must not hold them.
const openerTimeout = 3 * time.Second

func runArenaPart(s setting) ([]row, error) {
	z := arenaSizesFor(s.short)
	gap := s.storm.gap
	plan, err := racePlan(s.seed, z.names, z.large, z.raceArenas)
	if err != nil {
		return nil, err
	}
	race, err := runArenaPhase(s.dir, s.builds, phaseConfig{phase: phaseRace, workers: z.workers, gap: gap, every: z.every, seed: s.seed}, plan)
	if err != nil {
		return nil, fmt.Errorf("racing creates: %w", err)
	}
	fill, err := runArenaPhase(s.dir, s.builds, phaseConfig{phase: phaseFill, workers: z.workers, gap: gap, every: fillBound, seed: s.seed + 1}, fillPlan(s.seed, z.fillArenas))
	if err != nil {
		return nil, fmt.Errorf("arena full: %w", err)
	}
	intr, err := runInterrupted(s.dir, s.builds, interruptConfig{rounds: z.rounds, size: z.newArena, timeout: openerTimeout, seed: s.seed})
	if err != nil {
		return nil, fmt.Errorf("interrupted new arena: %w", err)
	}
	return arenaRows(race, fill, intr), nil
}

// arenaRows turns the phases into rows: racing creates, conflicting
// configs, arena full, interrupted new arena, counts never low.
func arenaRows(race, fill phaseResult, intr interruptResult) []row {
	rc := sumChecks(race.checkers)
	fc := sumChecks(fill.checkers)
	return []row{raceRow(race, rc), conflictRow(race, rc), fillRow(fill, fc), interruptRow(intr), neverLowRow(race, fill, rc, fc)}
}

// raceRow is the racing creates' row.
func raceRow(race phaseResult, rc arenaCheckResult) row {
	var backends []string
	for _, c := range race.checkers {
		backends = append(backends, c.Backend)
	}
	raceBad := race.failures + rc.List.Dups + rc.List.Unknown + rc.List.BadConfig + rc.List.Lost + rc.OpenErrs + rc.InspectErrs + int(race.full)
	if race.slowest > slowOpen {
		raceBad++
	}
	if race.opened == 0 {
		raceBad++ // nothing returned: the workers never got anywhere
	}
	return row{
		test: fmt.Sprintf("arena racing creates: %d processes (%s), %d names of %d kinds (%d large) in each of %d arenas, a SIGKILL after each %s-%s pause",
			race.cfg.workers, strings.Join(backends, "+"), len(race.plan.Sets[0]), len(specKinds), countLarge(race.plan), race.arenas, race.cfg.gap/2, race.cfg.gap*3/2),
		runs:       fmt.Sprintf("%d kills", race.kills),
		violations: raceBad,
		figure: fmt.Sprintf("%d creates killed mid-way (in an open of a name not yet listed; %d kills inside any open); %d opens returned; %d of %d names listed, each once with its spec; slowest open %s; %d ErrArenaFull, %d Inspect errors%s",
			race.inCreate, race.inOpen, race.opened, rc.List.Listed/max(1, len(race.checkers)), race.arenas*len(race.plan.Sets[0]), race.slowest.Round(time.Millisecond/10), race.full, rc.InspectErrs, note(firstOf(race.firstFailure, rc.FirstProblem))),
	}
}

// conflictRow is the row of the names also asked for with a conflicting
// spec.
func conflictRow(race phaseResult, rc arenaCheckResult) row {
	conflicts := 0
	for _, n := range race.plan.Sets[0] {
		if n.Conflict != nil {
			conflicts++
		}
	}
	return row{
		test:       fmt.Sprintf("arena conflicting configs: %d names also asked for with another kind or shape get ErrIncompatible", conflicts),
		runs:       fmt.Sprintf("%d opens", race.incompatible+race.conflictOpen),
		violations: int(race.conflictOpen+race.wantRefused) + rc.ConflictOpened,
		figure: fmt.Sprintf("%d ErrIncompatible, %d conflicting opens returned a structure, %d opens with the name's own config refused; checkers: %d listed names opened with the conflicting config",
			race.incompatible, race.conflictOpen, race.wantRefused, rc.ConflictOpened),
	}
}

// fillRow is the arena-full phase's row: it must have seen ErrArenaFull.
func fillRow(fill phaseResult, fc arenaCheckResult) row {
	fullBad := fill.failures + fc.List.violations() + fc.OpenErrs + fc.InspectErrs + fc.FullNowFits + int(fill.wantRefused)
	noFull := ""
	if fill.full == 0 {
		fullBad++
		noFull = "; no ErrArenaFull seen: the arenas never filled"
	}
	return row{
		test:       fmt.Sprintf("arena full: %d processes race to fill small arenas (by space, by directory entries)", fill.cfg.workers),
		runs:       fmt.Sprintf("%d arenas, %d kills", fill.arenas, fill.kills),
		violations: fullBad,
		figure: fmt.Sprintf("ErrArenaFull seen %d times; %d entries listed per checker, every returned name among them, no refused name listed nor admitted later%s%s",
			fill.full, fc.List.Listed/max(1, len(fill.checkers)), noFull, note(firstOf(fill.firstFailure, fc.FirstProblem))),
	}
}

// interruptRow is the interrupted new arenas' row.
func interruptRow(intr interruptResult) row {
	return row{
		test:       fmt.Sprintf("interrupted new arena: the creator of a new %d MiB arena killed inside OpenArena, an opener of each build", intr.cfg.size>>20),
		runs:       fmt.Sprintf("%d rounds", intr.rounds),
		violations: intr.violations,
		figure: fmt.Sprintf("opens: %s; killed creators left (openers after the kill): %s; creator's open had returned in %d rounds; a create takes %s, slowest open %s; %d temporary files left%s",
			countsOf(intr.outcomes), countsOf(intr.left), intr.afterReturn, intr.calibration.Round(time.Millisecond/10), intr.slowest.Round(time.Millisecond/10), intr.debris, note(intr.first)),
	}
}

// neverLowRow is the row of both phases' answers and negative controls,
// per checker and kind.
func neverLowRow(race, fill phaseResult, rc, fc arenaCheckResult) row {
	lowBad, asked := 0, 0
	var caught []string
	for i := range race.checkers {
		c := race.checkers[i]
		var f arenaCheckResult
		if i < len(fill.checkers) {
			f = fill.checkers[i]
		}
		var per []string
		for k := range specKinds {
			lowBad += c.Low[k] + f.Low[k]
			asked += c.Asked[k] + f.Asked[k]
			got, of := c.Caught[k]+f.Caught[k], c.Claimed[k]+f.Claimed[k]
			if got == 0 {
				lowBad++ // a checker blind to the control, or one that never asked
			}
			per = append(per, fmt.Sprintf("%d/%d", got, of))
		}
		caught = append(caught, c.Backend+" "+strings.Join(per, " "))
	}
	lowBad += rc.CheckOther + fc.CheckOther
	var shorts []string
	for _, k := range specKinds {
		shorts = append(shorts, structKindOf(k).short)
	}
	return row{
		test:       "arena counts never low: Count-Min (and window) estimate >= recorded adds, no Bloom (counting, window) or exact set (window) false negative, no rate limiter key idle once decided",
		runs:       fmt.Sprintf("%d answers", asked),
		violations: lowBad,
		figure: fmt.Sprintf("Count-Min Check: %d clean, %d ErrTornAdd, %d other; negative control caught (%s): %s%s",
			rc.CheckClean+fc.CheckClean, rc.CheckTorn+fc.CheckTorn, rc.CheckOther+fc.CheckOther, strings.Join(shorts, " "), strings.Join(caught, ", "), note(firstOf(rc.FirstProblem, fc.FirstProblem))),
	}
}

// sumChecks adds up the checkers' results (their violations count once per
// checker that found them).
func sumChecks(cs []arenaCheckResult) arenaCheckResult {
	var t arenaCheckResult
	for _, c := range cs {
		t.add(c)
	}
	return t
}

func countLarge(p *arenaPlan) int {
	n := 0
	for _, a := range p.Sets[0] {
		if b, err := a.Want.bytes(); err == nil && b >= 1<<20 {
			n++
		}
	}
	return n
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// runArenaRole runs one of the arena part's processes: "worker", "check",
// "creator" or "opener".
func runArenaRole(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("arena: which role?")
	}
	fs := flag.NewFlagSet("arena "+args[0], flag.ExitOnError)
	dir := fs.String("dir", "", "")
	phase := fs.String("phase", "", "")
	slot := fs.Int("slot", 0, "")
	slots := fs.Int("slots", 0, "")
	seed := fs.Uint64("seed", 0, "")
	path := fs.String("path", "", "")
	size := fs.Int64("size", 0, "")
	fs.Parse(args[1:])
	switch args[0] {
	case "worker":
		return runArenaWorker(*dir, *phase, *slot, *seed)
	case "check":
		return runArenaChecker(*dir, *phase, *slots)
	case "creator":
		return runArenaCreator(*path, *size)
	case "opener":
		return runArenaOpener()
	}
	return fmt.Errorf("arena: no role %q", args[0])
}
