package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/shmsketch/sketch"
)

const (
	fdsSize     = 256 << 10 // each structure's bytes
	fdsHeadroom = 40        // descriptors above those open when the limit drops
	fdsKeys     = 50
)

// runFdsFault runs the descriptor-starved side in a child of each build,
// each in a directory of its own. It needs no root: a process may lower
// its own limit.
func runFdsFault(s setting) (row, error) {
	var reps []faultReport
	var failures []string
	for _, b := range s.builds {
		dir := filepath.Join(s.dir, "fds-"+b.backend)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return row{}, err
		}
		rep, failure := runReport(b, "fds", "-dir", dir)
		if failure != "" {
			failures = append(failures, failure)
			continue
		}
		reps = append(reps, rep)
	}
	m := merged(reps)
	figure := fmt.Sprintf("%s: limit %d descriptors above those open; handles open when the first open failed: %s; %d failed opens (%d of them creates; %s), each naming its file, keeping no descriptor and leaving no file; with one descriptor free %d of %d opens and creates worked (a lock token falls back to the file's descriptor); %d answers exact from the handles kept; after closing half, %d opens again",
		m.Backend, fdsHeadroom, each(reps, "open at the limit"), m.Counts["failed opens"], m.Counts["failed creates"], countsOf(m.Outcomes), m.Counts["one free opened"], m.Counts["one free"], m.Checked, m.Counts["reopened"])
	if n := m.Counts["complete file left"]; n > 0 {
		figure += fmt.Sprintf("; %d failed creates left a complete file, which attaches (only a partial one would be a violation)", n)
	}
	return faultRow(fmt.Sprintf("%d failed opens", m.Counts["failed opens"]), reps, failures, figure), nil
}

// An fdsOpen is a handle the fds fault keeps, with what it must answer.
type fdsOpen struct {
	h *faultHandle
	t reference
}

// fdsRole is the child side: make a file of each kind, lower the limit on
// descriptors to just above what is open, then open (attach to those, and
// create new ones) until opens fail.
func fdsRole(args []string) (*faultReport, error) {
	fl := flag.NewFlagSet("fds", flag.ExitOnError)
	dir := fl.String("dir", "", "")
	fl.Parse(args)
	f := &fdsRun{r: newFaultReport(), dir: *dir, tallies: map[string]reference{}, failed: map[string]bool{}}
	if err := f.makeBases(); err != nil {
		return nil, err
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		return nil, err
	}
	// Count with room to spare: the limit is not lowered yet.
	scan := int(min(old.Cur, 1<<16))
	before := openFds(scan)
	if err := f.lowerLimit(old); err != nil {
		return nil, err
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)

	f.openUntilRefused()
	f.openWithOneFree()
	f.noTemporaryFiles()
	kept := f.afterTheLimit()
	for _, o := range kept {
		verify(f.r, o.h, o.t)
		o.h.close()
	}
	if after := openFds(scan); after != before {
		f.r.problem("%d descriptors open after closing every handle, %d before the first", after, before)
	}
	return f.r, nil
}

// An fdsRun is the child side of the fds fault while it runs.
type fdsRun struct {
	r       *faultReport
	dir     string
	tallies map[string]reference // by path
	limit   int                  // the lowered limit on descriptors
	open    []fdsOpen
	left    []string        // files failed creates left
	failed  map[string]bool // kinds whose open failed
}

// base is the file of kind k made before the limit drops.
func (f *fdsRun) base(k faultKind) string { return filepath.Join(f.dir, "base."+k.name) }

// newPath is the i-th file a create under the limit asks for.
func (f *fdsRun) newPath(i int, k faultKind) string {
	return filepath.Join(f.dir, fmt.Sprintf("new-%03d.%s", i, k.name))
}

// makeBases makes a file of each kind with the known keys, and their
// tallies, while descriptors are plenty.
func (f *fdsRun) makeBases() error {
	for _, k := range faultKinds {
		h, err := k.open(f.base(k), fdsSize)
		if err != nil {
			return err
		}
		err = addKeys(h, reference{}, "fd", fdsKeys)
		h.close()
		if err != nil {
			return err
		}
	}
	for _, k := range faultKinds {
		t := reference{}
		for i := 0; i < fdsKeys; i++ {
			t[string(faultKey("fd", i))] = faultWeight(i)
		}
		f.tallies[f.base(k)] = t
	}
	return nil
}

// lowerLimit lowers the limit so that it leaves exactly fdsHeadroom free
// numbers below it (an inherited descriptor may sit above it: it stays
// open, and counts in neither).
func (f *fdsRun) lowerLimit(old syscall.Rlimit) error {
	limit := 0
	for free := 0; free < fdsHeadroom; limit++ {
		if !fdOpen(limit) {
			free++
		}
	}
	f.limit = limit
	lowered := syscall.Rlimit{Cur: uint64(limit), Max: old.Max}
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered)
}

// try opens path (a create when it is new) and judges a failure: EMFILE
// naming the file, no descriptor kept.
func (f *fdsRun) try(k faultKind, path string, create bool) bool {
	r := f.r
	n := openFds(f.limit)
	h, err := k.open(path, fdsSize)
	if err == nil {
		if f.tallies[path] == nil {
			f.tallies[path] = reference{}
		}
		f.open = append(f.open, fdsOpen{h, f.tallies[path]})
		return true
	}
	f.failed[k.name] = true
	r.Counts["failed opens"]++
	r.refused(err)
	if !errors.Is(err, syscall.EMFILE) {
		r.problem("open %s with no descriptor left: %v, want EMFILE", filepath.Base(path), err)
	}
	if !namesFile(err, path) {
		r.problem("open %s: the error does not name the file: %v", filepath.Base(path), err)
	}
	if m := openFds(f.limit); m != n {
		r.problem("a failed open of %s left %d descriptors open, %d before", filepath.Base(path), m, n)
	}
	if create {
		r.Counts["failed creates"]++
		if _, err := os.Lstat(path); err == nil {
			f.left = append(f.left, path)
		}
	}
	return false
}

// openUntilRefused attaches to the bases and creates new files, every
// kind in turn, until each kind's open has failed.
func (f *fdsRun) openUntilRefused() {
	limit := f.limit
	for i := 0; len(f.failed) < len(faultKinds) && i < 10*limit; i++ {
		k := faultKinds[i%len(faultKinds)]
		create := i%3 == 2
		path := f.base(k)
		if create {
			path = f.newPath(i, k)
		}
		if !f.try(k, path, create) && f.r.Counts["open at the limit"] == 0 {
			f.r.Counts["open at the limit"] = len(f.open)
		}
	}
	if len(f.failed) == 0 {
		f.r.problem("%d opens under a limit of %d descriptors never failed", 10*limit, limit)
	}
}

// openWithOneFree closes a Count-Min handle (one descriptor) and opens
// every kind with that one free. A kind that locks wants a second one for
// its lock token; without it the library takes the token on the file's
// own descriptor, so every open works, and gives its descriptor back when
// closed.
func (f *fdsRun) openWithOneFree() {
	for i, o := range f.open {
		if filepath.Ext(o.h.path) != ".cm" {
			continue
		}
		o.h.close()
		f.open = slices.Delete(f.open, i, i+1)
		for j, k := range faultKinds {
			for _, path := range []string{f.base(k), f.newPath(10*f.limit+j, k)} {
				f.r.Counts["one free"]++
				if f.try(k, path, path != f.base(k)) {
					f.r.Counts["one free opened"]++
					last := f.open[len(f.open)-1]
					verify(f.r, last.h, last.t)
					last.h.close()
					f.open = f.open[:len(f.open)-1]
				}
			}
		}
		break
	}
}

// noTemporaryFiles reports a temporary file a refused create left.
func (f *fdsRun) noTemporaryFiles() {
	if names, err := listDir(f.dir); err == nil {
		for _, n := range names {
			if strings.HasPrefix(n, ".") {
				f.r.problem("a temporary file was left: %s", n)
			}
		}
	}
}

// afterTheLimit checks that the handles that were open keep working, then
// closes every other one: opens work again, and so do the rest, which it
// returns.
func (f *fdsRun) afterTheLimit() []fdsOpen {
	r := f.r
	for _, o := range f.open {
		if err := addKeys(o.h, o.t, "more", 10); err != nil {
			r.problem("add to %s at the limit: %v", filepath.Base(o.h.path), err)
		}
		verify(r, o.h, o.t)
	}
	var kept []fdsOpen
	for i, o := range f.open {
		if i%2 == 0 {
			o.h.close()
		} else {
			kept = append(kept, o)
		}
	}
	for _, k := range faultKinds {
		if !f.failed[k.name] {
			continue
		}
		h, err := k.open(f.base(k), fdsSize)
		if err != nil {
			r.problem("open %s after closing handles: %v", k.name, err)
			continue
		}
		r.Counts["reopened"]++
		verify(r, h, f.tallies[f.base(k)])
		h.close()
	}
	// A complete file left by a failed create is no harm (the next open
	// attaches to it); a partial one is.
	for _, path := range f.left {
		r.Counts["complete file left"]++
		if _, err := sketch.Inspect(path); err != nil {
			r.problem("a failed create left %s, which does not inspect: %v", filepath.Base(path), err)
		}
	}
	return kept
}
