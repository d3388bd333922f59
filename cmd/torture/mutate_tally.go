package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// mutateTally is one build's count of the pass.
type mutateTally struct {
	backend  string
	keep     string // where files that broke a promise are copied
	files    int
	opens    int
	opened   int
	calls    int
	errs     map[string]int
	callErrs map[string]int
	// Violations, by kind: recovered panics, hangs, deaths by signal,
	// other crashes (an unrecovered panic counts as a panic).
	panics, hangs, signals, crashes int
	first                           string
	kept                            int
	odd                             int // open errors that wrap no sentinel
	firstOdd                        string
	slowest                         time.Duration
	slowestWhat                     string
}

func newMutateTally(backend, keep string) *mutateTally {
	return &mutateTally{backend: backend, keep: keep, errs: map[string]int{}, callErrs: map[string]int{}}
}

func (t *mutateTally) add(r hostileResult, m mutant) {
	t.files++
	t.opens += r.Opens
	t.opened += r.Opened
	t.calls += r.Calls
	for k, n := range r.Errs {
		t.errs[k] += n
	}
	for k, n := range r.CallErrs {
		t.callErrs[k] += n
	}
	if n := r.Errs[unclassified]; n > 0 {
		t.odd += n
		if t.firstOdd == "" {
			t.firstOdd = fmt.Sprintf("#%d (%s): %s", m.index, m.what, r.Odd)
		}
	}
	if d := time.Duration(r.Micros) * time.Microsecond; d > t.slowest {
		t.slowest, t.slowestWhat = d, fmt.Sprintf("#%d", m.index)
	}
	for _, p := range r.Panics {
		t.panics++
		t.noteViolation(m, "panic in "+p)
	}
}

// violation counts a file that ended its child.
func (t *mutateTally) violation(e childExit, m mutant) {
	t.files++
	switch e.kind {
	case "hang":
		t.hangs++
	case "signal":
		t.signals++
	case "panic":
		t.panics++
	default:
		t.crashes++
	}
	t.noteViolation(m, e.kind+": "+e.name)
}

// noteViolation names the first violation and keeps a copy of the file,
// with what was done to it, for whoever reproduces it.
func (t *mutateTally) noteViolation(m mutant, what string) {
	where := ""
	if t.keep != "" {
		if data, err := os.ReadFile(m.path); err == nil && os.MkdirAll(t.keep, 0o755) == nil {
			name := filepath.Join(t.keep, fmt.Sprintf("%06d", m.index))
			if os.WriteFile(name, data, 0o600) == nil {
				os.WriteFile(name+".txt", []byte(fmt.Sprintf("%s\n%s build: %s\n", m.what, t.backend, what)), 0o600)
				where = ", kept as " + name
				t.kept++
			}
		}
	}
	if t.first == "" {
		t.first = fmt.Sprintf("#%d (%s): %s%s", m.index, m.what, what, where)
	}
}

func (t *mutateTally) violations() int { return t.panics + t.hangs + t.signals + t.crashes }

// mutateRows is a row per build: files tried, opens that succeeded, the
// errors the others returned, and the violations.
func mutateRows(ts []*mutateTally, specimens int, took time.Duration, stopped string) []row {
	var rows []row
	for _, t := range ts {
		rows = append(rows, row{
			test:       fmt.Sprintf("hostile files: mutated copies of %d valid files opened every way (%s build)", specimens, t.backend),
			runs:       fmt.Sprintf("%d files", t.files),
			violations: t.violations(),
			figure: fmt.Sprintf("%d of %d opens succeeded; failed opens: %s; %d calls on what opened (errors: %s); panics %d, hangs %d, signals %d, crashes %d; slowest file %s (%s), pass %s%s%s%s",
				t.opened, t.opens, countsOf(t.errs), t.calls, countsOf(t.callErrs),
				t.panics, t.hangs, t.signals, t.crashes, t.slowest.Round(time.Millisecond), t.slowestWhat,
				took.Round(time.Second), stopped, oddNote(t), note(t.first)),
		})
	}
	return rows
}

func oddNote(t *mutateTally) string {
	if t.odd == 0 {
		return ""
	}
	return fmt.Sprintf("; %d open errors wrap no sentinel, first %s", t.odd, t.firstOdd)
}
