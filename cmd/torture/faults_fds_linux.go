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
	r := newFaultReport()
	base := func(k faultKind) string { return filepath.Join(*dir, "base."+k.name) }
	for _, k := range faultKinds {
		h, err := k.open(base(k), fdsSize)
		if err != nil {
			return nil, err
		}
		err = addKeys(h, reference{}, "fd", fdsKeys)
		h.close()
		if err != nil {
			return nil, err
		}
	}
	tallies := map[string]reference{} // by path
	for _, k := range faultKinds {
		t := reference{}
		for i := 0; i < fdsKeys; i++ {
			t[string(faultKey("fd", i))] = faultWeight(i)
		}
		tallies[base(k)] = t
	}

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		return nil, err
	}
	// Count with room to spare: the limit is not lowered yet. The limit
	// leaves exactly fdsHeadroom free numbers below it (an inherited
	// descriptor may sit above it: it stays open, and counts in neither).
	scan := int(min(old.Cur, 1<<16))
	before := openFds(scan)
	limit := 0
	for free := 0; free < fdsHeadroom; limit++ {
		if !fdOpen(limit) {
			free++
		}
	}
	lowered := syscall.Rlimit{Cur: uint64(limit), Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		return nil, err
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)

	var open []fdsOpen
	var left []string           // files failed creates left
	failed := map[string]bool{} // kinds whose open failed
	// try opens path (a create when it is new) and judges a failure: EMFILE
	// naming the file, no descriptor kept.
	try := func(k faultKind, path string, create bool) bool {
		n := openFds(limit)
		h, err := k.open(path, fdsSize)
		if err == nil {
			if tallies[path] == nil {
				tallies[path] = reference{}
			}
			open = append(open, fdsOpen{h, tallies[path]})
			return true
		}
		failed[k.name] = true
		r.Counts["failed opens"]++
		r.refused(err)
		if !errors.Is(err, syscall.EMFILE) {
			r.problem("open %s with no descriptor left: %v, want EMFILE", filepath.Base(path), err)
		}
		if !namesFile(err, path) {
			r.problem("open %s: the error does not name the file: %v", filepath.Base(path), err)
		}
		if m := openFds(limit); m != n {
			r.problem("a failed open of %s left %d descriptors open, %d before", filepath.Base(path), m, n)
		}
		if create {
			r.Counts["failed creates"]++
			if _, err := os.Lstat(path); err == nil {
				left = append(left, path)
			}
		}
		return false
	}
	newPath := func(i int, k faultKind) string {
		return filepath.Join(*dir, fmt.Sprintf("new-%03d.%s", i, k.name))
	}
	for i := 0; len(failed) < len(faultKinds) && i < 10*limit; i++ {
		k := faultKinds[i%len(faultKinds)]
		create := i%3 == 2
		path := base(k)
		if create {
			path = newPath(i, k)
		}
		if !try(k, path, create) && r.Counts["open at the limit"] == 0 {
			r.Counts["open at the limit"] = len(open)
		}
	}
	if len(failed) == 0 {
		r.problem("%d opens under a limit of %d descriptors never failed", 10*limit, limit)
	}
	// One descriptor free: close a Count-Min handle (one descriptor). A
	// kind that locks wants a second one for its lock token; without it
	// the library takes the token on the file's own descriptor, so every
	// open works, and gives its descriptor back when closed.
	for i, o := range open {
		if filepath.Ext(o.h.path) != ".cm" {
			continue
		}
		o.h.close()
		open = slices.Delete(open, i, i+1)
		for j, k := range faultKinds {
			for _, path := range []string{base(k), newPath(10*limit+j, k)} {
				r.Counts["one free"]++
				if try(k, path, path != base(k)) {
					r.Counts["one free opened"]++
					last := open[len(open)-1]
					verify(r, last.h, last.t)
					last.h.close()
					open = open[:len(open)-1]
				}
			}
		}
		break
	}
	if names, err := listDir(*dir); err == nil {
		for _, n := range names {
			if strings.HasPrefix(n, ".") {
				r.problem("a temporary file was left: %s", n)
			}
		}
	}

	// The handles that were open keep working.
	for _, o := range open {
		if err := addKeys(o.h, o.t, "more", 10); err != nil {
			r.problem("add to %s at the limit: %v", filepath.Base(o.h.path), err)
		}
		verify(r, o.h, o.t)
	}
	// Close every other handle: opens work again, and so do the rest.
	var kept []fdsOpen
	for i, o := range open {
		if i%2 == 0 {
			o.h.close()
		} else {
			kept = append(kept, o)
		}
	}
	for _, k := range faultKinds {
		if !failed[k.name] {
			continue
		}
		h, err := k.open(base(k), fdsSize)
		if err != nil {
			r.problem("open %s after closing handles: %v", k.name, err)
			continue
		}
		r.Counts["reopened"]++
		verify(r, h, tallies[base(k)])
		h.close()
	}
	// A complete file left by a failed create is no harm (the next open
	// attaches to it); a partial one is.
	for _, path := range left {
		r.Counts["complete file left"]++
		if _, err := sketch.Inspect(path); err != nil {
			r.problem("a failed create left %s, which does not inspect: %v", filepath.Base(path), err)
		}
	}
	for _, o := range kept {
		verify(r, o.h, o.t)
		o.h.close()
	}
	if after := openFds(scan); after != before {
		r.problem("%d descriptors open after closing every handle, %d before the first", after, before)
	}
	return r, nil
}
