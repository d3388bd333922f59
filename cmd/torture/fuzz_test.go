package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Outputs of a test binary's -test.fuzz run, as Go 1.26 prints them.
const (
	fuzzPassed = `fuzz: elapsed: 0s, gathering baseline coverage: 0/9 completed
fuzz: elapsed: 1s, gathering baseline coverage: 9/9 completed, now fuzzing with 2 workers
fuzz: elapsed: 3s, execs: 116 (39/sec), new interesting: 2 (total: 11)
fuzz: elapsed: 6s, execs: 1237 (257/sec), new interesting: 6 (total: 15)
PASS
`
	fuzzFoundInput = `fuzz: elapsed: 0s, gathering baseline coverage: 0/3 completed
fuzz: elapsed: 0s, gathering baseline coverage: 3/3 completed, now fuzzing with 2 workers
fuzz: elapsed: 3s, execs: 4521 (1507/sec), new interesting: 4 (total: 7)
fuzz: minimizing 42-byte failing input file
fuzz: elapsed: 4s, minimizing
--- FAIL: FuzzOpen (4.21s)
    --- FAIL: FuzzOpen (0.00s)
        open_test.go:1301: unclassified error: sketch: open x: mmap: invalid argument
    
    Failing input written to testdata/fuzz/FuzzOpen/6de0857e42c00932
    To re-run:
    go test -run=FuzzOpen/6de0857e42c00932
FAIL
`
	fuzzSeedFailed = `--- FAIL: FuzzOpenArena (0.02s)
    --- FAIL: FuzzOpenArena/seed#3 (0.00s)
        arena_file_test.go:231: unclassified error: boom
FAIL
`
	fuzzDeadlineRace = `fuzz: elapsed: 0s, gathering baseline coverage: 132/132 completed, now fuzzing with 2 workers
fuzz: elapsed: 1s, execs: 135 (90/sec), new interesting: 0 (total: 132)
--- FAIL: FuzzOpen (1.62s)
    context deadline exceeded
FAIL
`
)

func TestParseFuzzOutput(t *testing.T) {
	exit1 := errors.New("exit status 1")
	tests := []struct {
		name string
		out  string
		err  error
		want fuzzOutcome
	}{
		{"passed", fuzzPassed, nil, fuzzOutcome{execs: 1237, interesting: 6}},
		{"found an input", fuzzFoundInput, exit1, fuzzOutcome{execs: 4521, interesting: 4, failed: true,
			input:  "testdata/fuzz/FuzzOpen/6de0857e42c00932",
			reason: "open_test.go:1301: unclassified error: sketch: open x: mmap: invalid argument"}},
		{"a seed failed", fuzzSeedFailed, exit1, fuzzOutcome{failed: true, reason: "arena_file_test.go:231: unclassified error: boom"}},
		{"deadline race", fuzzDeadlineRace, exit1, fuzzOutcome{execs: 135, reason: "context deadline exceeded", deadlineRace: true}},
		{"died without a FAIL", "fuzz: elapsed: 3s, execs: 10 (3/sec), new interesting: 0 (total: 3)\nfatal error: fault\n", errors.New("exit status 2"),
			fuzzOutcome{execs: 10, failed: true, reason: "exit status 2: fatal error: fault"}},
		{"FAIL but exit 0", "--- FAIL: FuzzX (0.00s)\n    x_test.go:1: no\nFAIL\n", nil, fuzzOutcome{failed: true, reason: "x_test.go:1: no"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseFuzzOutput(tt.out, tt.err)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(fuzzOutcome{})); diff != "" {
				t.Errorf("parseFuzzOutput (-want +got):\n%s", diff)
			}
		})
	}
}

// A failing target is a violation whose figure names the input left in
// testdata/fuzz; the coordinator's deadline race is not.
func TestFuzzRow_Verdict(t *testing.T) {
	tests := []struct {
		name       string
		out        string
		err        error
		violations int
		figure     string
	}{
		{"passed", fuzzPassed, nil, 0, "1237 inputs"},
		{"found an input", fuzzFoundInput, errors.New("exit status 1"), 1, "failing input testdata/fuzz/FuzzOpen/6de0857e42c00932 (kept)"},
		{"a seed failed", fuzzSeedFailed, errors.New("exit status 1"), 1, "FAILED: arena_file_test.go:231"},
		{"deadline race", fuzzDeadlineRace, errors.New("exit status 1"), 0, "golang/go issue 75804"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fuzzRow("fuzz: FuzzX", parseFuzzOutput(tt.out, tt.err), 2*time.Second, 3*time.Second)
			var out strings.Builder
			if got := printSummary(&out, []row{r}); got != tt.violations {
				t.Errorf("violations = %d, want %d; table:\n%s", got, tt.violations, out.String())
			}
			if !strings.Contains(r.figure, tt.figure) {
				t.Errorf("figure %q lacks %q", r.figure, tt.figure)
			}
		})
	}
}

func TestFindFuzzTargets(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"b_test.go":     "package x\n\nfunc FuzzB(f *testing.F) {}\n\nfunc FuzzA2(f *testing.F) {}\n",
		"a_test.go":     "package x\n\nfunc FuzzA(f *testing.F) {}\n// func FuzzCommented(f *testing.F) {}\nfunc helperFuzz() {}\n",
		"c.go":          "package x\n\nfunc FuzzNotATest(f *testing.F) {}\n",
		"sub/d_test.go": "package y\n\nfunc FuzzElsewhere(f *testing.F) {}\n",
	}
	for name, src := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := findFuzzTargets(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []fuzzTarget{{"FuzzA", "a_test.go"}, {"FuzzB", "b_test.go"}, {"FuzzA2", "b_test.go"}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(fuzzTarget{})); diff != "" {
		t.Errorf("findFuzzTargets (-want +got):\n%s", diff)
	}
}

// The module's own targets are found where the Makefile points -module.
func TestFindFuzzTargets_Module(t *testing.T) {
	got, err := findFuzzTargets("../..")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, ft := range got {
		names[ft.name] = true
	}
	for _, want := range []string{"FuzzOpen", "FuzzParity_CountMin", "FuzzParity_Bloom", "FuzzParity_CountingBloom"} {
		if !names[want] {
			t.Errorf("findFuzzTargets(module) lacks %s: %v", want, got)
		}
	}
	if mod, err := modulePath("../.."); err != nil || mod != "github.com/shmsketch/sketch" {
		t.Errorf(`modulePath = %q, %v; want "github.com/shmsketch/sketch"`, mod, err)
	}
}

func TestRunFuzz_NoModuleIsSkipped(t *testing.T) {
	t.Setenv("CI", "")
	rows, err := runFuzz(setting{dir: t.TempDir()}, fuzzConfigFor(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].violations != 0 || !strings.Contains(rows[0].figure, "-module") {
		t.Errorf("rows = %+v, want one skip naming -module", rows)
	}
}
