package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/shmsketch/sketch"
)

var snapshotCmd = &command{
	name:       "snapshot",
	opensFiles: true,
	args:       "SRC DST",
	summary:    "copy a live structure into a new frozen file, while writers go on",
	details: `
Snapshot copies SRC (FILE, FILE:NAME, or a whole arena as FILE) into the
new file DST, which must not exist, and seals it, as freeze would seal a
copy, while every process keeps writing SRC. The copy has SRC's shape and
seed, so the snapshots of several hosts merge (sketch merge) and ship to a
collector like frozen files. A Count-Min sketch's copy estimates every key
at least as high as the adds that returned before the command started;
a Bloom or counting Bloom filter's copy finds every key added before (and,
for a counting filter, not removed before). A Count-Min or Bloom window
becomes ONE plain sketch or filter of the periods it covers (the sums of
its periods' counters, the union of their filters), so that it merges;
an arena is copied whole, each window in it fixed at the periods it
covered. SRC is opened read-only: a counting filter is then copied
without its lock, so a remove running at that moment may show in part.
A Count-Min copy holds the adds that ran during it in some rows and not
others, so check may exit 3 on it (a torn add, which needs no repair).
DST appears complete, or not at all.`,
	example: `sketch snapshot /dev/shm/clients.cms /srv/ship/clients-$(date +%s).cms
sketch snapshot /dev/shm/web.arena:clients /srv/ship/clients.cms   # a window: one sketch of its periods
sketch merge total.cms host1-clients.cms host2-clients.cms`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		mode := fs.String("mode", "0600", "permission bits of DST, in octal")
		jsonOut := fs.Bool("json", false, `print JSON: {"file", "source", "kind", "description", "bytes", "seconds", and "oldest" and "current" for a window's periods}`)
		return func(args []string) error {
			if len(args) != 2 {
				return usageError("want SRC and DST")
			}
			perm, err := strconv.ParseUint(*mode, 8, 32)
			if err != nil {
				return usageError("--mode %q is not an octal mode", *mode)
			}
			src, err := parseTarget(args[0])
			if err != nil {
				return err
			}
			dst := args[1]
			if _, err := os.Lstat(dst); err == nil {
				return fmt.Errorf("%s exists: a snapshot is a new file (remove it, or name another)", dst)
			}
			if d, err := parseTarget(dst); err == nil && d.name != "" {
				if fi, err := sketch.Inspect(d.path); err == nil && fi.Arena {
					return usageError("DST %s names a structure in the arena %s: a snapshot is a file of its own", dst, d.path)
				}
			}
			opts := []sketch.Option{sketch.WithMode(os.FileMode(perm))}
			s, a, err := openWhole(src, false)
			if err != nil {
				return err
			}
			start := time.Now()
			var out snapshotJSON
			if a != nil {
				defer a.Close()
				cp, err := a.Snapshot(sketch.Path(dst), opts...)
				if err != nil {
					return err
				}
				st := cp.Stats()
				out = snapshotJSON{Kind: "arena", Description: arenaDescription(st), Bytes: st.Bytes}
				cp.Close()
			} else {
				defer s.Close()
				cp, periods, err := snapshotOf(s, sketch.Path(dst), opts)
				if err != nil {
					return nameTarget(src, err)
				}
				out = snapshotJSON{Kind: cp.kind(), Description: cp.describe(), Periods: periods}
				if fi, err := os.Stat(dst); err == nil {
					out.Bytes = uint64(fi.Size())
				}
				cp.Close()
			}
			out.File, out.Source, out.Seconds = dst, src.arg(), time.Since(start).Seconds()
			if *jsonOut {
				return printJSON(stdout, out)
			}
			of := src.String()
			if out.Periods != nil {
				of += fmt.Sprintf(", periods %d-%d", out.Periods.Oldest, out.Periods.Current)
			}
			fmt.Fprintf(stdout, "snapshot of %s in %s: %s, %d bytes, frozen (%v)\n", of, dst, out.Description, out.Bytes, time.Since(start).Round(time.Microsecond))
			return nil
		}
	},
}

// snapshotJSON is snapshot --json.
type snapshotJSON struct {
	File        string  `json:"file"`
	Source      string  `json:"source"`
	Kind        string  `json:"kind"`
	Description string  `json:"description"`
	Bytes       uint64  `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	*sketch.Periods
}

// snapshotOf takes the library's snapshot of s at a place and gives it to
// the commands as the structure it is (a window's: the plain kind it is
// made of, with the periods it covers).
func snapshotOf(s structure, at sketch.Place, opts []sketch.Option) (structure, *sketch.Periods, error) {
	switch s := s.(type) {
	case *countMin:
		c, err := s.Snapshot(at, opts...)
		return adaptSnapshot(c, err, newCountMin, nil)
	case *bloom:
		b, err := s.Snapshot(at, opts...)
		return adaptSnapshot(b, err, newBloom, nil)
	case *countingBloom:
		b, err := s.Snapshot(at, opts...)
		return adaptSnapshot(b, err, newCountingBloom, nil)
	case *countMinWindow:
		c, p, err := s.SnapshotCovered(at, opts...)
		return adaptSnapshot(c, err, newCountMin, &p)
	case *bloomWindow:
		b, p, err := s.SnapshotCovered(at, opts...)
		return adaptSnapshot(b, err, newBloom, &p)
	case *distinct:
		d, err := s.Snapshot(at, opts...)
		return adaptSnapshot(d, err, newDistinct, nil)
	case *distinctWindow:
		d, p, err := s.SnapshotCovered(at, opts...)
		return adaptSnapshot(d, err, newDistinct, &p)
	case *gcra:
		g, err := s.Snapshot(at, opts...)
		return adaptSnapshot(g, err, newGCRA, nil)
	case *counters:
		c, err := s.Snapshot(at, opts...)
		return adaptSnapshot(c, err, newCounters, nil)
	case *exactSet:
		c, err := s.Snapshot(at, opts...)
		return adaptSnapshot(c, err, newExactSet, nil)
	case *exactSetWindow:
		w, err := s.Snapshot(at, opts...)
		return adaptSnapshot(w, err, newExactSetWindow, nil)
	}
	return nil, nil, errNotSupported("snapshot", s.describe())
}

func adaptSnapshot[S any](s S, err error, adapt func(S) structure, p *sketch.Periods) (structure, *sketch.Periods, error) {
	if err != nil {
		return nil, nil, err
	}
	return adapt(s), p, nil
}
