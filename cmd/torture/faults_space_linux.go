package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/shmsketch/sketch"
)

// spaceTmpfs is the size of the full-tmpfs fault's filesystem: room for
// the structures that fit and little more.
const spaceTmpfs = 2 << 20

// spaceFits are the structures made while there is room, by kind and
// size; they stay on the filesystem, and must keep answering, through
// every create that does not fit and while it is full to the last block.
var spaceFits = []struct {
	kind string
	size uint64
}{{"cm", 128 << 10}, {"bloom", 64 << 10}, {"cbf", 64 << 10}, {"arena", 256 << 10}}

// runSpaceFault mounts a small tmpfs for each build in turn and runs the
// creating side there in a child of that build.
func runSpaceFault(s setting) (row, error) {
	var reps []faultReport
	var failures []string
	for _, b := range s.builds {
		rep, failure, err := spaceOnce(s.dir, b)
		if err != nil {
			return row{}, err
		}
		if failure != "" {
			failures = append(failures, failure)
			continue
		}
		reps = append(reps, rep)
	}
	m := merged(reps)
	figure := fmt.Sprintf("%s: %d creates refused (%s), %d of them with the %d KiB tmpfs full to the last block (filler KiB: %s, bytes left: %s); in an arena: %d ErrArenaFull; %d answers exact; free space the same after each refused create",
		m.Backend, m.Counts["creates"], countsOf(m.Outcomes), m.Counts["creates when full"], spaceTmpfs>>10, each(reps, "filler KiB"), each(reps, "free when full"), m.Counts["arena full"], m.Checked)
	figure += fmt.Sprintf("; out of inodes: %d creates refused with ErrNoSpace", m.Counts["inode ErrNoSpace"])
	return faultRow(fmt.Sprintf("%d creates", m.Counts["creates"]), reps, failures, figure), nil
}

// spaceInodes is the inodes of the second tmpfs, which runs out of inodes
// rather than blocks: its root and a few files.
const spaceInodes = 8

// spaceOnce runs one build's child on a tmpfs of its own, and one short of
// inodes, which it unmounts whatever happens, and checks that the child
// left only the structures that fit.
func spaceOnce(dir string, b build) (faultReport, string, error) {
	mnt := filepath.Join(dir, "space-"+b.backend)
	unmount, err := mountTmpfs(mnt, spaceTmpfs)
	if err != nil {
		return faultReport{}, "", err
	}
	inodes := filepath.Join(dir, "inodes-"+b.backend)
	unmountInodes, err := mountTmpfs(inodes, spaceTmpfs, fmt.Sprintf("nr_inodes=%d", spaceInodes))
	if err != nil {
		unmount()
		return faultReport{}, "", err
	}
	rep, failure := runReport(b, "space", "-dir", mnt, "-inodes", inodes)
	if err := unmountInodes(); err != nil {
		unmount()
		return faultReport{}, "", err
	}
	if failure == "" {
		var want []string
		for _, f := range spaceFits {
			want = append(want, f.kind)
		}
		slices.Sort(want)
		if got, err := listDir(mnt); err != nil || !slices.Equal(got, want) {
			rep.problem("the filesystem holds %v after the child, want %v (err %v)", got, want, err)
		}
	}
	if err := unmount(); err != nil {
		return faultReport{}, "", err
	}
	return rep, failure, nil
}

// spaceRole is the child side: make the structures that fit, then creates
// that do not (each kind, past the free space and past the whole
// filesystem), then fill the filesystem with a plain file and try again.
func spaceRole(args []string) (*faultReport, error) {
	fl := flag.NewFlagSet("space", flag.ExitOnError)
	dir := fl.String("dir", "", "")
	inodes := fl.String("inodes", "", "a tmpfs with few inodes")
	fl.Parse(args)
	r := newFaultReport()
	if err := noInodes(r, *inodes); err != nil {
		return nil, err
	}

	fits := &fitted{r: r}
	defer fits.close()
	if err := fits.make(*dir); err != nil {
		return nil, err
	}
	fits.verify()
	kept, err := listDir(*dir)
	if err != nil {
		return nil, err
	}
	if err := refusePastFree(r, *dir, kept); err != nil {
		return nil, err
	}
	arenaFull(r, filepath.Join(*dir, "arena"))
	fits.verify()
	if err := fits.onFullFilesystem(*dir, kept); err != nil {
		return nil, err
	}
	// With room again the same creates work: what failed was the space.
	for _, k := range faultKinds {
		path := filepath.Join(*dir, "nospace."+k.name)
		h, err := k.open(path, 128<<10)
		if err != nil {
			r.problem("create %s with room again: %v", k.name, err)
			continue
		}
		h.close()
		os.Remove(path)
	}
	fits.verify()
	return r, nil
}

// fitted are the structures of the space fault that fit, with what
// each must answer.
type fitted struct {
	r  *faultReport
	hs []*faultHandle
	ts []reference
}

// make creates the structures that fit, with adds.
func (s *fitted) make(dir string) error {
	for _, f := range spaceFits {
		h, err := faultKindNamed(f.kind).open(filepath.Join(dir, f.kind), f.size)
		if err != nil {
			return fmt.Errorf("a create that fits: %w", err)
		}
		s.hs = append(s.hs, h)
		s.ts = append(s.ts, reference{})
		if err := addKeys(h, s.ts[len(s.ts)-1], "fit", 100); err != nil {
			return err
		}
	}
	return nil
}

func (s *fitted) verify() {
	for i, h := range s.hs {
		verify(s.r, h, s.ts[i])
	}
}

func (s *fitted) close() {
	for _, h := range s.hs {
		h.close()
	}
}

// refusePastFree asks for a structure of each kind past the free space
// and past the whole filesystem: each create must be refused.
func refusePastFree(r *faultReport, dir string, kept []string) error {
	free, err := freeBytes(dir)
	if err != nil {
		return err
	}
	for _, k := range faultKinds {
		for _, size := range []uint64{free + free/4, 2 * spaceTmpfs} {
			if k.most != 0 && size > k.most {
				// No structure of the kind is that large: it is asked
				// for on the full filesystem below.
				r.Counts["creates larger than the kind makes"]++
				continue
			}
			refuseCreate(r, dir, k, size, kept)
		}
	}
	return nil
}

// onFullFilesystem fills the filesystem with a plain file: the structures
// still take adds (their blocks were reserved at create), and a small
// create of each kind is refused. It removes the file again.
func (s *fitted) onFullFilesystem(dir string, kept []string) error {
	r := s.r
	filler := filepath.Join(dir, "filler")
	n, err := fill(filler)
	if err != nil {
		return err
	}
	r.Counts["filler KiB"] = int(n >> 10)
	left, _ := freeBytes(dir)
	r.Counts["free when full"] = int(left)
	for i, h := range s.hs {
		if err := addKeys(h, s.ts[i], "full", 50); err != nil {
			r.problem("add to %s on a full filesystem: %v", filepath.Base(h.path), err)
		}
	}
	s.verify()
	full := append(slices.Clone(kept), "filler")
	slices.Sort(full)
	for _, k := range faultKinds {
		refuseCreate(r, dir, k, 16<<10, full)
		r.Counts["creates when full"]++
	}
	return os.Remove(filler)
}

// refuseCreate tries a create of kind k, size bytes, that must not fit:
// it must fail with ErrNoSpace naming the file, leave the directory as it
// was (want) and give back every block it took.
func refuseCreate(r *faultReport, dir string, k faultKind, size uint64, want []string) {
	path := filepath.Join(dir, "nospace."+k.name)
	before, _ := freeBytes(dir)
	r.Counts["creates"]++
	h, err := k.open(path, size)
	if err == nil {
		r.problem("create %s of %d bytes with %d free: no error", k.name, size, before)
		h.close()
		os.Remove(path)
		return
	}
	r.refused(err)
	if !errors.Is(err, sketch.ErrNoSpace) {
		r.problem("create %s of %d bytes with %d free: %v, want ErrNoSpace", k.name, size, before, err)
	}
	if !namesFile(err, path) {
		r.problem("create %s: the error does not name the file: %v", k.name, err)
	}
	if got, err := listDir(dir); err != nil || !slices.Equal(got, want) {
		r.problem("create %s of %d bytes left the directory %v, want %v (err %v)", k.name, size, got, want, err)
	}
	if after, _ := freeBytes(dir); after != before {
		r.problem("create %s of %d bytes: %d bytes free before, %d after", k.name, size, before, after)
	}
}

// arenaFull asks the arena for a structure larger than it: the arena's
// blocks are its own, so that is ErrArenaFull, whatever the filesystem has.
func arenaFull(r *faultReport, path string) {
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{})
	if err != nil {
		r.problem("attach %s: %v", filepath.Base(path), err)
		return
	}
	defer a.Close()
	_, err = sketch.OpenCountMin(a.Place("too-big"), sketch.CountMinConfig{Rows: 4, Width: 1 << 16})
	switch {
	case errors.Is(err, sketch.ErrArenaFull):
		r.Counts["arena full"]++
	case err == nil:
		r.problem("a 2 MiB Count-Min sketch in a 256 KiB arena: no error")
	default:
		r.problem("a 2 MiB Count-Min sketch in a 256 KiB arena: %v, want ErrArenaFull", err)
	}
}

// fill writes zeros to a new file at path until the filesystem is full
// and returns how many bytes it took.
func fill(path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for _, chunk := range []int{64 << 10, 4 << 10, 512} {
		buf := make([]byte, chunk)
		for {
			w, err := f.Write(buf)
			n += int64(w)
			if err != nil {
				break
			}
		}
	}
	return n, nil
}

// noInodes fills the tmpfs at dir with empty files until it has no inode
// left, then tries a small create of each kind: it must fail naming the
// file with ErrNoSpace, as a create out of blocks does, and leave the
// directory as it was.
func noInodes(r *faultReport, dir string) error {
	for i := 0; ; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("inode-%d", i)), nil, 0o600); err != nil {
			break
		}
	}
	want, err := listDir(dir)
	if err != nil {
		return err
	}
	for _, k := range faultKinds {
		path := filepath.Join(dir, "nospace."+k.name)
		r.Counts["inode creates"]++
		h, err := k.open(path, 16<<10)
		switch {
		case err == nil:
			h.close()
			r.Counts["inode creates made"]++ // room for one more inode: not a fault
			os.Remove(path)
			continue
		case errors.Is(err, sketch.ErrNoSpace):
			r.Counts["inode ErrNoSpace"]++
		default:
			r.problem("create %s with no inode left: %v, want ErrNoSpace", k.name, err)
		}
		if !namesFile(err, path) {
			r.problem("create %s with no inode left: the error does not name the file: %v", k.name, err)
		}
		if got, err := listDir(dir); err != nil || !slices.Equal(got, want) {
			r.problem("create %s with no inode left left the directory %v, want %v (err %v)", k.name, got, want, err)
		}
	}
	return nil
}
