package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The fuzz part runs every Fuzz target of the module's root package for a
// share of a fixed budget. It needs the module's source (-module) and the go
// tool.
type fuzzConfig struct {
	budget   time.Duration // for everything, the test binary's build included
	leastPer time.Duration // no target gets less, whatever the build took
	overhead time.Duration // a target's start and its seed corpus, beside its fuzzing
}

func fuzzConfigFor(short bool) fuzzConfig {
	if short {
		return fuzzConfig{budget: 25 * time.Second, leastPer: 4 * time.Second, overhead: time.Second}
	}
	return fuzzConfig{budget: 2 * time.Minute, leastPer: 3 * time.Second, overhead: time.Second}
}

// fuzzMinimize caps the minimisation of each new input: by default Go
// spends up to a minute on each, so a target whose inputs take milliseconds
// (each creates and opens a file) would run only tens of them.
const fuzzMinimize = "10x"

// fuzzInstrumentAlso are the packages outside the module compiled with
// coverage instrumentation besides the module's own: the hash, whose
// length classes FuzzHash128 explores. go test -fuzz would instrument the
// standard library too, a compile of minutes on a cold cache for guidance
// the module's own code does not need.
var fuzzInstrumentAlso = []string{"github.com/zeebo/xxh3"}

// A fuzzTarget is a Fuzz function of the module's tests.
type fuzzTarget struct {
	name, file string
}

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w*)\(`)

// findFuzzTargets lists the Fuzz functions of the _test.go files in dir,
// in file order.
func findFuzzTargets(dir string) ([]fuzzTarget, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var ts []fuzzTarget
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(src, -1) {
			ts = append(ts, fuzzTarget{name: string(m[1]), file: filepath.Base(f)})
		}
	}
	return ts, nil
}

// modulePath reads the module path from dir's go.mod.
func modulePath(dir string) (string, error) {
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(dir, "go.mod"))
}

const fuzzRowName = "fuzz targets of the module's tests"

// runFuzz builds the root package's test binary once, with cgo and
// coverage instrumentation, and fuzzes each target with it in turn.
func runFuzz(s setting, cfg fuzzConfig) ([]row, error) {
	began := time.Now()
	if s.module == "" {
		return []row{cannotRun(fuzzRowName, "no -module DIR given (the Makefile's torture targets give it)")}, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return []row{cannotRun(fuzzRowName, "no go tool on PATH")}, nil
	}
	targets, err := findFuzzTargets(s.module)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return []row{cannotRun(fuzzRowName, "no Fuzz functions in "+s.module+"/*_test.go")}, nil
	}
	mod, err := modulePath(s.module)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(s.dir, "fuzz.test")
	args := []string{"test", "-c", "-o", bin, "-gcflags=" + mod + "/...=-d=libfuzzer"}
	for _, p := range fuzzInstrumentAlso {
		args = append(args, "-gcflags="+p+"=-d=libfuzzer")
	}
	build := exec.Command(goTool, append(args, ".")...)
	build.Dir = s.module
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		return []row{cannotRun(fuzzRowName, fmt.Sprintf("go test -c with cgo failed (%v): %s", err, firstLines(string(out), 3)))}, nil
	}
	built := time.Since(began)
	fmt.Printf("torture: fuzz: test binary built in %s; %d targets\n", built.Round(time.Second), len(targets))

	listed, err := exec.Command(bin, "-test.list", "^Fuzz").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -test.list: %w", bin, err)
	}
	inBinary := map[string]bool{}
	for _, l := range strings.Fields(string(listed)) {
		inBinary[l] = true
	}
	per := max(cfg.leastPer, (cfg.budget-built)/time.Duration(len(targets))-cfg.overhead)
	cache := filepath.Join(s.dir, "fuzzcache")
	var rows []row
	for _, t := range targets {
		test := fmt.Sprintf("fuzz: %s (%s)", t.name, t.file)
		if !inBinary[t.name] {
			rows = append(rows, cannotRun(test, "not in the cgo test binary (build tags?)"))
			continue
		}
		out, took, err, hung := fuzzOne(bin, s.module, cache, t.name, per)
		o := parseFuzzOutput(out, err)
		if hung {
			o.failed, o.deadlineRace = true, false
			o.reason = fmt.Sprintf("still running %s past its budget: killed", fuzzGrace)
		}
		rows = append(rows, fuzzRow(test, o, per, took))
	}
	return rows, nil
}

// fuzzGrace is how long past its budget a target may take before it counts
// as hung: the seed corpus, minimising a failure, writing it out.
const fuzzGrace = time.Minute

// fuzzOne fuzzes one target for per, in the module's directory, so that the
// seed corpus is read from testdata/fuzz and a failing input is written
// there, as go test -fuzz does. hung reports a run killed past its grace.
func fuzzOne(bin, module, cache, name string, per time.Duration) (out string, took time.Duration, err error, hung bool) {
	ctx, cancel := context.WithTimeout(context.Background(), per+fuzzGrace)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"-test.run=^$",
		"-test.fuzz=^"+name+"$",
		"-test.fuzztime="+per.String(),
		"-test.fuzzminimizetime="+fuzzMinimize,
		"-test.fuzzcachedir="+cache,
		"-test.timeout="+(per+fuzzGrace).String())
	cmd.Dir = module
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	began := time.Now()
	err = cmd.Run()
	return b.String(), time.Since(began), err, ctx.Err() != nil
}

// fuzzOutcome is what a fuzz run's output says.
type fuzzOutcome struct {
	execs       int64  // the last execs count reported
	interesting int64  // new interesting inputs
	failed      bool   // a FAIL, or the run did not end well
	input       string // where the failing input was written
	reason      string // the first line saying why it failed
	// deadlineRace is a run that failed with nothing but the bare
	// "context deadline exceeded" of Go's fuzz coordinator and no input:
	// its -fuzztime deadline raced its workers' stop (golang/go issue 75804,
	// fixed in Go 1.27). Nothing failed; it is not counted as a failure.
	deadlineRace bool
}

var (
	fuzzExecs       = regexp.MustCompile(`execs: (\d+)`)
	fuzzInteresting = regexp.MustCompile(`new interesting: (\d+)`)
	fuzzInput       = regexp.MustCompile(`Failing input written to (\S+)`)
)

// parseFuzzOutput reads a test binary's output of one -test.fuzz run and
// the error it exited with.
func parseFuzzOutput(out string, exitErr error) fuzzOutcome {
	var o fuzzOutcome
	if m := fuzzExecs.FindAllStringSubmatch(out, -1); m != nil {
		o.execs, _ = strconv.ParseInt(m[len(m)-1][1], 10, 64)
	}
	if m := fuzzInteresting.FindAllStringSubmatch(out, -1); m != nil {
		o.interesting, _ = strconv.ParseInt(m[len(m)-1][1], 10, 64)
	}
	if m := fuzzInput.FindStringSubmatch(out); m != nil {
		o.input = m[1]
	}
	lines := strings.Split(out, "\n")
	failAt := -1
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "--- FAIL") || t == "FAIL" {
			o.failed = true
			if failAt < 0 {
				failAt = i
			}
		}
	}
	if exitErr != nil {
		o.failed = true
	}
	if !o.failed {
		return o
	}
	// The reason: the first line after the first FAIL that is not another
	// FAIL header, or what the run exited with.
	for i := failAt + 1; failAt >= 0 && i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t != "" && !strings.HasPrefix(t, "--- FAIL") && !strings.HasPrefix(t, "fuzz: elapsed") {
			o.reason = t
			break
		}
	}
	if o.reason == "" && exitErr != nil {
		o.reason = exitErr.Error()
		if l := lastLine(out); l != "" {
			o.reason += ": " + l
		}
	}
	if o.reason == "context deadline exceeded" && o.input == "" {
		o.failed, o.deadlineRace = false, true
	}
	return o
}

// fuzzRow is one target's row: a failure is a violation, with the input
// that failed (left in testdata/fuzz, where go test finds it again).
func fuzzRow(test string, o fuzzOutcome, per, took time.Duration) row {
	r := row{test: test, runs: fmt.Sprintf("%d execs", o.execs)}
	rate := float64(o.execs) / took.Seconds()
	r.figure = fmt.Sprintf("%s of fuzzing, %d inputs (%.0f/s), %d new interesting", per.Round(100*time.Millisecond), o.execs, rate, o.interesting)
	if o.execs == 0 {
		r.figure += "; no input fuzzed past the seed corpus"
	}
	if o.deadlineRace {
		r.figure += "; ended by the race of Go's -fuzztime deadline with its workers (golang/go issue 75804), no input failed"
	}
	if o.failed {
		r.violations = 1
		r.figure += "; FAILED: " + o.reason
		if o.input != "" {
			r.figure += "; failing input " + o.input + " (kept)"
		}
	}
	return r
}

func firstLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && len(out) < n {
			out = append(out, l)
		}
	}
	return strings.Join(out, " | ")
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(ls[len(ls)-1])
}
