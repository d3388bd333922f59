package main

import "strings"

// A part is one section of the run: it gets the run's setting, with a fresh
// directory of its own, and returns its rows of the summary. An error is a
// run that could not be made (exit 2); a broken promise is a row's
// violations (exit 1).
type part struct {
	name string
	run  func(setting) ([]row, error)
}

// setting is what every part gets.
type setting struct {
	dir    string  // a directory of the part's own, removed with the run's
	builds []build // this (pure-Go) build first, then the cgo build
	short  bool    // the short run: a minute or two in all
	seed   uint64  // the run's seed: a part draws from it, so -seed replays it
	storm  stormConfig
	kills  int    // kills per lock-recovery case
	module string // the module's source (-module), for the fuzz part; "" when not given
	// cross is this program's pure-Go build for each GOARCH, "" when not given
	cross map[string]string
}

// parts run in this order; -only picks some of them by name.
var parts = []part{
	{"storm", func(s setting) ([]row, error) {
		r, err := runStorm(s.dir, s.builds, s.storm)
		if err != nil {
			return nil, err
		}
		return stormRows(r), nil
	}},
	{"locks", func(s setting) ([]row, error) {
		r, err := runLockRecovery(s.dir, s.builds, s.kills)
		if err != nil {
			return nil, err
		}
		return lockRows(r), nil
	}},
	{"topkill", func(s setting) ([]row, error) {
		r, err := runTopKill(s, hhConfigFor(s))
		if err != nil {
			return nil, err
		}
		return topKillRows(r), nil
	}},
	{"arena", runArenaPart},
	{"faults", runFaults},
	{"arch", runArch},
	{"mutate", func(s setting) ([]row, error) { return runMutate(s, mutateConfigFor(s.short)) }},
	{"metrics", func(s setting) ([]row, error) { return runMetrics(s, metricsConfigFor(s.short)) }},
	{"fuzz", func(s setting) ([]row, error) { return runFuzz(s, fuzzConfigFor(s.short)) }},
}

func partByName(name string) *part {
	for i := range parts {
		if parts[i].name == name {
			return &parts[i]
		}
	}
	return nil
}

func partNames() string {
	var names []string
	for _, p := range parts {
		names = append(names, p.name)
	}
	return strings.Join(names, ",")
}
