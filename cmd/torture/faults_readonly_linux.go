package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/shmsketch/sketch"
)

const (
	readOnlyTmpfs = 16 << 20
	readOnlySize  = 512 << 10 // each structure's bytes
	readOnlyKeys  = 100
)

var readOnlyStates = []string{"live", "frozen"}

// runReadOnlyFault makes a live and a frozen file of every kind on a tmpfs
// of its own, remounts it read-only, and runs the reading side in a child
// of each build.
func runReadOnlyFault(s setting) (row, error) {
	mnt := filepath.Join(s.dir, "readonly")
	unmount, err := mountTmpfs(mnt, readOnlyTmpfs)
	if err != nil {
		return row{}, err
	}
	r, err := readOnlyOn(mnt, s.builds)
	if uerr := unmount(); err == nil && uerr != nil {
		err = uerr
	}
	return r, err
}

func readOnlyOn(mnt string, builds []build) (row, error) {
	for _, k := range faultKinds {
		for _, state := range readOnlyStates {
			h, err := k.open(filepath.Join(mnt, k.name+"."+state), readOnlySize)
			if err != nil {
				return row{}, err
			}
			err = addKeys(h, reference{}, "ro", readOnlyKeys)
			if err == nil && state == "frozen" {
				err = h.freeze()
			}
			if cerr := h.close(); err == nil {
				err = cerr
			}
			if err != nil {
				return row{}, err
			}
		}
	}
	if err := remountReadOnly(mnt); err != nil {
		return row{}, err
	}
	if err := os.WriteFile(filepath.Join(mnt, "probe"), nil, 0o600); err == nil {
		return row{}, fmt.Errorf("%s: a write after the read-only remount worked", mnt)
	}
	var reps []faultReport
	var failures []string
	for _, b := range builds {
		rep, failure := runReport(b, "readonly", "-dir", mnt)
		if failure != "" {
			failures = append(failures, failure)
			continue
		}
		reps = append(reps, rep)
	}
	m := merged(reps)
	calls := m.Counts["mutator calls"] + m.Counts["read-write opens"] + m.Counts["creates"]
	figure := fmt.Sprintf("%s: %d read-only opens (a live and a frozen file of each of %d kinds) answered %d times exactly, before and after; refused, each naming its file: %d mutator calls, %d read-write opens, %d creates (%s)",
		m.Backend, m.Counts["read-only opens"], len(faultKinds), m.Checked, m.Counts["mutator calls"], m.Counts["read-write opens"], m.Counts["creates"], countsOf(m.Outcomes))
	return faultRow(fmt.Sprintf("%d calls", calls), reps, failures, figure), nil
}

// readOnlyRole is the child side: every file opens with WithReadOnly and
// answers exactly; every mutator, read-write open and create fails.
func readOnlyRole(args []string) (*faultReport, error) {
	fl := flag.NewFlagSet("readonly", flag.ExitOnError)
	dir := fl.String("dir", "", "")
	fl.Parse(args)
	r := newFaultReport()
	want := reference{}
	for i := 0; i < readOnlyKeys; i++ {
		want[string(faultKey("ro", i))] = faultWeight(i)
	}
	for _, k := range faultKinds {
		for _, state := range readOnlyStates {
			path := filepath.Join(*dir, k.name+"."+state)
			h, err := k.open(path, readOnlySize, sketch.WithReadOnly())
			if err != nil {
				r.problem("read-only open of %s: %v", filepath.Base(path), err)
				continue
			}
			r.Counts["read-only opens"]++
			verify(r, h, want)
			for _, m := range h.mutators {
				r.Counts["mutator calls"]++
				mustRefuse(r, path, k.name+"."+state+" "+m.name, guarded(m.call))
			}
			verify(r, h, want)
			h.close()

			r.Counts["read-write opens"]++
			err = guarded(func() error {
				h, err := k.open(path, readOnlySize)
				if err == nil {
					h.close()
				}
				return err
			})
			mustRefuse(r, path, "read-write open of "+filepath.Base(path), err)
		}
		path := filepath.Join(*dir, "new."+k.name)
		r.Counts["creates"]++
		err := guarded(func() error {
			h, err := k.open(path, readOnlySize)
			if err == nil {
				h.close()
			}
			return err
		})
		mustRefuse(r, path, "create "+k.name, err)
		if _, err := os.Lstat(path); err == nil {
			r.problem("create %s on a read-only filesystem left %s", k.name, filepath.Base(path))
		}
	}
	return r, nil
}

// mustRefuse judges a call that must fail: with an error, not a panic,
// naming the file.
func mustRefuse(r *faultReport, path, what string, err error) {
	switch {
	case err == nil:
		r.problem("%s on a read-only filesystem: no error", what)
	case errors.Is(err, errPanic):
		r.problem("%s: %v", what, err)
	default:
		r.refused(err)
		if !namesFile(err, path) {
			r.problem("%s: the error does not name the file: %v", what, err)
		}
	}
}
