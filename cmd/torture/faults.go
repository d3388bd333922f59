package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/shmsketch/sketch"
)

// A fault is one way the machine fails under the library: a full
// filesystem, a stopped lock holder, a read-only filesystem, no file
// descriptors left. Each runs on its own and gives one row; one that cannot
// run here (not root, not Linux, a mount refused) gives a row that says why.
type fault struct {
	test string
	run  func(setting) (row, error)
}

var faults = []fault{
	{"full tmpfs: creates fail with ErrNoSpace, leave nothing; earlier files exact", runSpaceFault},
	{"SIGSTOPped lock holder: the waiter waits, SIGCONT lets it in", runStopFault},
	{"read-only filesystem: read-only opens exact; mutators, creates refused", runReadOnlyFault},
	{"out of descriptors: EMFILE naming the file, nothing leaked; open handles work", runFdsFault},
}

// runFaults is the part: one row per fault.
func runFaults(s setting) ([]row, error) {
	var rows []row
	for _, f := range faults {
		r, err := f.run(s)
		var sk skipped
		switch {
		case errors.As(err, &sk):
			r = cannotRun(f.test, sk.why)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", f.test, err)
		}
		r.test = f.test
		rows = append(rows, r)
	}
	return rows, nil
}

// skipped is the error of a fault that cannot run on this machine.
type skipped struct{ why string }

func (s skipped) Error() string { return "skipped: " + s.why }

// A faultReport is what one process found under a fault: the answers it
// compared with a reference, the calls that failed as they had to (by
// error), other counts the row shows, and the broken promises.
type faultReport struct {
	Backend  string         `json:"backend"`
	Checked  int            `json:"checked"`
	Outcomes map[string]int `json:"outcomes"`
	Counts   map[string]int `json:"counts"`
	Bad      int            `json:"bad"`
	Problems []string       `json:"problems"` // the first few in full
	Notes    []string       `json:"notes"`    // what the row shows but does not count
}

func newFaultReport() *faultReport {
	return &faultReport{Backend: sketch.Backend, Outcomes: map[string]int{}, Counts: map[string]int{}}
}

// maxProblems is how many broken promises a report keeps in full.
const maxProblems = 5

func (r *faultReport) problem(format string, args ...any) {
	r.Bad++
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// refused counts a call that failed as it had to, by its error's class.
func (r *faultReport) refused(err error) { r.Outcomes[errorClass(err)]++ }

// systemErrors name what a fault may meet that no sentinel of the library
// wraps.
var systemErrors = []struct {
	name   string
	target error
}{
	{"EROFS", syscall.EROFS},
	{"EMFILE", syscall.EMFILE},
	{"ENFILE", syscall.ENFILE},
	{"ENOSPC", syscall.ENOSPC},
	{"not exist", fs.ErrNotExist},
}

// errorClass names err by the library's sentinel it wraps (sentinelName),
// else by the system's error, else "other".
func errorClass(err error) string {
	if name := sentinelName(err); name != unclassified {
		return name
	}
	for _, c := range systemErrors {
		if errors.Is(err, c.target) {
			return c.name
		}
	}
	return "other"
}

// each is a count of every report, in order: "22/22".
func each(reps []faultReport, key string) string {
	var vs []string
	for _, r := range reps {
		vs = append(vs, fmt.Sprint(r.Counts[key]))
	}
	return strings.Join(vs, "/")
}

// firstNote is the first note of any report.
func firstNote(reps []faultReport) string {
	for _, r := range reps {
		if len(r.Notes) > 0 {
			return r.Notes[0]
		}
	}
	return ""
}

// merged adds up reports of several processes.
func merged(reps []faultReport) faultReport {
	m := faultReport{Outcomes: map[string]int{}, Counts: map[string]int{}}
	var backends []string
	for _, r := range reps {
		backends = append(backends, r.Backend)
		m.Checked += r.Checked
		m.Bad += r.Bad
		for k, v := range r.Outcomes {
			m.Outcomes[k] += v
		}
		for k, v := range r.Counts {
			m.Counts[k] += v
		}
		for _, p := range r.Problems {
			if len(m.Problems) < maxProblems {
				m.Problems = append(m.Problems, r.Backend+": "+p)
			}
		}
	}
	m.Backend = strings.Join(backends, "+")
	return m
}

// faultRow is a fault's row from its processes' reports and the failures of
// processes that did not report (a panic, a hang, an exit): each broken
// promise and each such failure is a violation.
func faultRow(runs string, reps []faultReport, failures []string, figure string) row {
	m := merged(reps)
	r := row{runs: runs, violations: m.Bad + len(failures), figure: figure}
	first := ""
	if len(failures) > 0 {
		first = failures[0]
	} else if len(m.Problems) > 0 {
		first = m.Problems[0]
	}
	r.figure += note(first)
	return r
}

// childLimit is how long a fault's child may run before it counts as hung.
const childLimit = 2 * time.Minute

// runReport runs a fault role in a child of b and decodes the report it
// prints. A child that fails, dies or hangs breaks a promise of the fault
// (no panic, no hang): that is the returned failure, not an error of the run.
func runReport(b build, args ...string) (faultReport, string) {
	var out bytes.Buffer
	c, err := startChild(b, nil, &out, append([]string{"fault"}, args...)...)
	if err != nil {
		return faultReport{}, fmt.Sprintf("%s child: %v", b.backend, err)
	}
	select {
	case c.err = <-c.done:
		c.gone = true
	case <-time.After(childLimit):
		c.kill()
		return faultReport{}, fmt.Sprintf("%s child %s hung for %s", b.backend, args[0], childLimit)
	}
	if c.err != nil {
		return faultReport{}, fmt.Sprintf("%s child %s: %v", b.backend, args[0], c.err)
	}
	var r faultReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return faultReport{}, fmt.Sprintf("%s child %s: report: %v", b.backend, args[0], err)
	}
	return r, ""
}

// runFaultRole is the "fault" role: the child side of a fault, which prints
// its report as JSON.
func runFaultRole(args []string) error {
	if len(args) == 0 || faultRoles[args[0]] == nil {
		return fmt.Errorf("fault: want one of %s", faultRoleNames())
	}
	r, err := faultRoles[args[0]](args[1:])
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func faultRoleNames() string {
	var names []string
	for n := range faultRoles {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
