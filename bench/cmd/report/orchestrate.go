package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"time"
)

// plan is what a run measures and how.
type plan struct {
	bins   map[string]string // build -> binary
	dir    string
	rounds int
	target time.Duration
	filter *regexp.Regexp
}

// results holds every subject's samples, one per round (NaN where it did
// not run), and the subjects that failed.
type results struct {
	Subjects []subject
	Samples  map[string][]float64 // by ID
	Ops      map[string]int
	GCs      map[string]uint64 // collections during the samples
	Errors   map[string]string
	Builds   []string // builds that ran
}

// owner is the build whose worker runs s: its own, or for subjects of no
// build the pure-Go worker when there is one.
func (p plan) owner(s subject) string {
	if s.Build != "" {
		return s.Build
	}
	if _, ok := p.bins["purego"]; ok {
		return "purego"
	}
	return "cgo"
}

// subjects is the table for the builds at hand, filtered.
func (p plan) subjects() []subject {
	var builds []string
	for _, b := range allBuilds {
		if _, ok := p.bins[b]; ok {
			builds = append(builds, b)
		}
	}
	var out []subject
	for _, s := range table(builds) {
		if s.Build != "" && p.bins[s.Build] == "" {
			continue
		}
		if p.filter != nil && !p.filter.MatchString(s.ID()) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// measures reports whether the plan measures any subject of a structure
// (Key.Struct), whose figures measured apart then go with them.
func (p plan) measures(structure string) bool {
	for _, s := range p.subjects() {
		if s.Struct == structure {
			return true
		}
	}
	return false
}

// measure runs the plan: every subject is opened and calibrated first (so
// no setup runs between timed samples), then each round visits every
// subject once, in an order shuffled per round, one sample at a time
// across all workers.
func (p plan) measure() (*results, error) {
	subjects := p.subjects()
	res := &results{Subjects: subjects, Samples: map[string][]float64{}, Ops: map[string]int{}, GCs: map[string]uint64{}, Errors: map[string]string{}}
	workers := map[string]*workerProc{}
	defer func() {
		for _, w := range workers {
			w.close()
		}
	}()
	for _, b := range allBuilds {
		if bin := p.bins[b]; bin != "" {
			w, err := startWorker(b, bin, p.dir)
			if err != nil {
				return nil, err
			}
			workers[b] = w
			res.Builds = append(res.Builds, b)
		}
	}
	est := time.Duration(len(subjects)) * p.target * time.Duration(p.rounds+2)
	progress("%d subjects, %d rounds of %v each: about %v", len(subjects), p.rounds, p.target, est.Round(time.Second))
	start := time.Now()
	for i, s := range subjects {
		resp, err := workers[p.owner(s)].do(request{ID: s.ID(), Target: p.target, Setup: true})
		if err != nil {
			return nil, err
		}
		if resp.Err != "" {
			res.Errors[s.ID()] = resp.Err
			progress("%s: %s", s.ID(), resp.Err)
		}
		if time.Since(start) > 10*time.Second && i%20 == 0 {
			progress("setup %d/%d", i, len(subjects))
		}
	}
	for _, w := range workers {
		if _, err := w.do(request{GC: true}); err != nil {
			return nil, err
		}
	}
	progress("setup took %v", time.Since(start).Round(time.Millisecond))
	for _, s := range subjects {
		res.Samples[s.ID()] = nanSlice(p.rounds)
	}
	last := time.Now()
	for r := range p.rounds {
		order := rand.New(rand.NewPCG(uint64(r), 0x5eed)).Perm(len(subjects))
		for j, i := range order {
			s := subjects[i]
			if res.Errors[s.ID()] != "" {
				continue
			}
			resp, err := workers[p.owner(s)].do(request{ID: s.ID(), Target: p.target})
			if err != nil {
				return nil, err
			}
			if resp.Err != "" {
				res.Errors[s.ID()] = resp.Err
				continue
			}
			res.Samples[s.ID()][r] = resp.NsPerOp
			res.Ops[s.ID()] = resp.Ops
			res.GCs[s.ID()] += resp.GCs
			if time.Since(last) > 15*time.Second {
				last = time.Now()
				progress("round %d/%d: %d/%d (%v)", r+1, p.rounds, j+1, len(subjects), time.Since(start).Round(time.Second))
			}
		}
	}
	progress("measured in %v", time.Since(start).Round(time.Second))
	return res, nil
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// progressOut is where the orchestrator says what it is doing.
var progressOut io.Writer = os.Stderr

func progress(format string, args ...any) {
	fmt.Fprintf(progressOut, "report: "+format+"\n", args...)
}
