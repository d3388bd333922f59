package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/shmsketch/sketch"
)

// Byte order: a build makes a file of every kind, standalone and in an
// arena, adds known keys and reads them back exactly; the builds of the
// other byte order must refuse every one with ErrByteOrder, through every
// kind's open, read-write and read-only, and Inspect, and leave it as it
// was. Small shapes: the s390x build creates them under qemu.
var (
	boCountMin       = sketch.CountMinConfig{Rows: 4, Width: 1 << 12}
	boBloom          = sketch.BloomConfig{Capacity: 4096, FPRate: 0.01}
	boCountingBloom  = sketch.CountingBloomConfig{Capacity: 4096, FPRate: 0.01}
	boWindow         = sketch.Window{Keep: 3}
	boWindowCountMin = sketch.CountMinConfig{Rows: 4, Width: 1 << 10}
	boWindowBloom    = sketch.BloomConfig{Capacity: 1024, FPRate: 0.01}
)

const (
	boArenaSize = 4 << 20
	boKeys      = 64
)

// boKinds are the kinds' opens, by the name Inspect gives the kind: the
// rows of structKinds with a byte-order config, plus the arena's.
var boKinds = func() []string {
	var ks []string
	for _, k := range kindsWith(func(k *structKind) bool { return k.byteOrder != nil }) {
		ks = append(ks, string(k))
	}
	return append(ks, "arena")
}()

// boFiles are the files a make leaves, each with the kind it holds.
var boFiles = []struct{ name, kind string }{
	{"bo.cms", "countmin"}, {"bo.bloom", "bloom"}, {"bo.cbf", "countingbloom"},
	{"bo.cmw", "countminwindow"}, {"bo.bloomw", "bloomwindow"}, {"bo.arena", "arena"},
}

// openAs opens path through kind's open, with the part's configs, and
// closes what opened.
func openAs(kind, path string, opts ...sketch.Option) error {
	if kind == "arena" {
		a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{}, opts...)
		if err == nil {
			a.Close()
		}
		return err
	}
	k := structKindOf(sketch.Kind(kind))
	if k == nil || k.byteOrder == nil {
		return fmt.Errorf("no kind %q", kind)
	}
	h, err := k.open(sketch.Path(path), k.byteOrder, opts...)
	if err == nil {
		h.(handle).Close()
	}
	return err
}

// boSet is one structure of each kind.
type boSet struct {
	cms *sketch.CountMin
	bf  *sketch.Bloom
	cbf *sketch.CountingBloom
	cmw *sketch.CountMinWindow
	bw  *sketch.BloomWindow
}

// openBoSets opens the standalone files and the arena's structures of dir,
// and returns them with a function closing everything.
func openBoSets(dir string, opts ...sketch.Option) (sets []boSet, closeAll func(), err error) {
	var closers []io.Closer
	closeAll = func() {
		for _, c := range closers {
			c.Close()
		}
	}
	keep := func(c io.Closer, e error) bool {
		if e != nil {
			err = e
			closeAll()
			return false
		}
		closers = append(closers, c)
		return true
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	var alone, in boSet
	var a *sketch.Arena
	alone.cms, err = sketch.OpenCountMin(sketch.Path(p("bo.cms")), boCountMin, opts...)
	if !keep(alone.cms, err) {
		return nil, nil, err
	}
	alone.bf, err = sketch.OpenBloom(sketch.Path(p("bo.bloom")), boBloom, opts...)
	if !keep(alone.bf, err) {
		return nil, nil, err
	}
	alone.cbf, err = sketch.OpenCountingBloom(sketch.Path(p("bo.cbf")), boCountingBloom, opts...)
	if !keep(alone.cbf, err) {
		return nil, nil, err
	}
	alone.cmw, err = sketch.OpenCountMinWindow(sketch.Path(p("bo.cmw")), sketch.CountMinWindowConfig{Window: boWindow, CountMin: boWindowCountMin}, opts...)
	if !keep(alone.cmw, err) {
		return nil, nil, err
	}
	alone.bw, err = sketch.OpenBloomWindow(sketch.Path(p("bo.bloomw")), sketch.BloomWindowConfig{Window: boWindow, Bloom: boWindowBloom}, opts...)
	if !keep(alone.bw, err) {
		return nil, nil, err
	}
	a, err = sketch.OpenArena(sketch.Path(p("bo.arena")), sketch.ArenaConfig{Size: boArenaSize}, opts...)
	if !keep(a, err) {
		return nil, nil, err
	}
	in.cms, err = sketch.OpenCountMin(a.Place("cm"), boCountMin)
	if !keep(in.cms, err) {
		return nil, nil, err
	}
	in.bf, err = sketch.OpenBloom(a.Place("bloom"), boBloom)
	if !keep(in.bf, err) {
		return nil, nil, err
	}
	in.cbf, err = sketch.OpenCountingBloom(a.Place("cbf"), boCountingBloom)
	if !keep(in.cbf, err) {
		return nil, nil, err
	}
	in.cmw, err = sketch.OpenCountMinWindow(a.Place("cmw"), sketch.CountMinWindowConfig{Window: boWindow, CountMin: boWindowCountMin})
	if !keep(in.cmw, err) {
		return nil, nil, err
	}
	in.bw, err = sketch.OpenBloomWindow(a.Place("bw"), sketch.BloomWindowConfig{Window: boWindow, Bloom: boWindowBloom})
	if !keep(in.bw, err) {
		return nil, nil, err
	}
	return []boSet{alone, in}, closeAll, nil
}

func boKey(u int) []byte          { return fmt.Appendf(nil, "byte-order-%02d", u) }
func boWeight(u int) uint64       { return 1 + uint64(u%5) }
func boCountingAdds(u int) uint64 { return 1 + uint64(u%3) }

// boMakeResult is what a build made of its own files: it read them back
// (fresh handles after the creating ones closed) and opened them through
// every kind, the control for the refusals.
type boMakeResult struct {
	Read boReadResult
	Own  boOpensResult
}

// roleByteOrderMake creates the files in -dir, adds the known keys (the
// windows get the first half, turn once, and get the second half), closes
// them, and reads them back.
func roleByteOrderMake(fs *flag.FlagSet, args []string) error {
	dir := fs.String("dir", "", "")
	fs.Parse(args)
	if err := makeBoFiles(*dir); err != nil {
		return err
	}
	read, err := readBoFiles(*dir)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(boMakeResult{Read: read, Own: opensOf(*dir, false)})
}

func makeBoFiles(dir string) error {
	sets, closeAll, err := openBoSets(dir)
	if err != nil {
		return err
	}
	defer closeAll()
	for _, s := range sets {
		for u := 0; u < boKeys; u++ {
			k := boKey(u)
			if u == boKeys/2 {
				if err := errors.Join(s.cmw.Rotate(), s.bw.Rotate()); err != nil {
					return err
				}
			}
			_, err1 := s.cms.AddN(k, boWeight(u))
			_, err2 := s.bf.Add(k)
			_, err3 := s.cmw.AddN(k, boWeight(u))
			_, err4 := s.bw.Add(k)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				return err
			}
			for i := uint64(0); i < boCountingAdds(u); i++ {
				if _, err := s.cbf.Add(k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// boReadResult is what a build read back from files of its own order.
type boReadResult struct {
	Arch      string
	Backend   string
	Checked   int // answers compared with the known adds
	Wrong     int
	First     string
	ByteOrder string // what Inspect says of the files
}

// readBoFiles reads the known keys back from the files in dir, exactly
// (the shapes are wide enough for 64 keys to collide nowhere), and
// Inspects every file.
func readBoFiles(dir string) (boReadResult, error) {
	res := boReadResult{Arch: runtime.GOARCH, Backend: sketch.Backend}
	wrong := func(format string, a ...any) {
		res.Wrong++
		if res.First == "" {
			res.First = fmt.Sprintf(format, a...)
		}
	}
	sets, closeAll, err := openBoSets(dir, sketch.WithoutCreate())
	if err != nil {
		return res, err
	}
	defer closeAll()
	for _, s := range sets {
		for u := 0; u < boKeys; u++ {
			k := boKey(u)
			res.Checked += 5
			if got := s.cms.Estimate(k); got != boWeight(u) {
				wrong("Count-Min Estimate(%q) = %d, want %d", k, got, boWeight(u))
			}
			if got := s.cmw.Estimate(k); got != boWeight(u) {
				wrong("Count-Min window Estimate(%q) = %d, want %d", k, got, boWeight(u))
			}
			if got := s.cbf.Estimate(k); got != boCountingAdds(u) {
				wrong("counting Bloom Estimate(%q) = %d, want %d", k, got, boCountingAdds(u))
			}
			if !s.bf.Contains(k) {
				wrong("Bloom Check(%q) = false", k)
			}
			if !s.bw.Contains(k) {
				wrong("Bloom window Check(%q) = false", k)
			}
		}
		res.Checked += 2
		if err := s.cms.Check(); err != nil {
			wrong("Count-Min Check: %v", err)
		}
		if s.cmw.Current() != 1 || s.bw.Current() != 1 {
			wrong("windows in periods %d and %d, want 1 (one Rotate)", s.cmw.Current(), s.bw.Current())
		}
	}
	for _, f := range boFiles {
		fi, err := sketch.Inspect(filepath.Join(dir, f.name))
		res.Checked++
		if err != nil {
			wrong("Inspect: %v", err)
			continue
		}
		res.ByteOrder = fi.ByteOrder
	}
	return res, nil
}

// boOpensResult is what a build's opens of one directory's files gave.
type boOpensResult struct {
	Arch      string
	Attempts  int
	Right     int
	First     string // the first wrong answer
	Refusal   string // one ErrByteOrder message of an open, as users see it
	Inspected string // and of Inspect
}

// roleByteOrderOpens opens the files of each directory named through
// every kind's open, read-write and read-only, and Inspects them: each
// must be ErrByteOrder.
func roleByteOrderOpens(fs *flag.FlagSet, args []string) error {
	fs.Parse(args)
	var out []boOpensResult
	for _, dir := range fs.Args() {
		out = append(out, opensOf(dir, true))
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// opensOf opens every file of dir through every kind's open, read-write
// and read-only, and Inspects it. Files of the other byte order (foreign)
// must give ErrByteOrder every time; otherwise the file's own kind must
// open and the other kinds be ErrIncompatible. Messages name files
// without their directory.
func opensOf(dir string, foreign bool) boOpensResult {
	res := boOpensResult{Arch: runtime.GOARCH}
	short := func(err error) string { return strings.ReplaceAll(fmt.Sprint(err), dir+string(filepath.Separator), "") }
	judge := func(what string, err error, want error) {
		res.Attempts++
		if errors.Is(err, want) || err == nil && want == nil {
			res.Right++
		} else if res.First == "" {
			res.First = fmt.Sprintf("%s: %s, want %v", what, short(err), want)
		}
	}
	for _, f := range boFiles {
		path := filepath.Join(dir, f.name)
		for _, ro := range []bool{false, true} {
			opts := []sketch.Option{sketch.WithoutCreate()}
			mode := "read-write"
			if ro {
				opts, mode = append(opts, sketch.WithReadOnly()), "read-only"
			}
			for _, kind := range boKinds {
				var want error = sketch.ErrByteOrder
				if !foreign {
					want = sketch.ErrIncompatible
					if kind == f.kind {
						want = nil
					}
				}
				err := openAs(kind, path, opts...)
				if errors.Is(err, sketch.ErrByteOrder) && res.Refusal == "" {
					res.Refusal = short(err)
				}
				judge(fmt.Sprintf("open %s %s as %s", f.name, mode, kind), err, want)
			}
		}
		_, err := sketch.Inspect(path)
		var want error
		if foreign {
			want = sketch.ErrByteOrder
			res.Inspected = short(err)
		}
		judge("Inspect "+f.name, err, want)
	}
	return res
}

// snapshot reads every file of dir, to tell that refusals changed nothing.
func snapshot(dir string) (map[string][]byte, error) {
	m := map[string][]byte{}
	for _, f := range boFiles {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return nil, err
		}
		m[f.name] = b
	}
	return m, nil
}

// changedFiles names the files of before that differ in after.
func changedFiles(before, after map[string][]byte) []string {
	var changed []string
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			changed = append(changed, name)
		}
	}
	return changed
}

func decodeJSON[T any](out []byte, err error) (T, error) {
	var v T
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return v, fmt.Errorf("result %q: %w", out, err)
	}
	return v, nil
}

// runByteOrder makes files with each build (s390x under qemu, and both
// native ones), reads each back with the build that made it, and has each
// byte order refuse the other's.
func runByteOrder(s setting) ([]row, error) {
	natives := []runner{nativeRunner(s.builds[0]), nativeRunner(s.builds[1])}
	s390x, why := findCross(s.cross, "s390x")
	makers := natives
	if why == "" {
		makers = append(makers, s390x)
	}
	dirOf := func(r runner) string { return filepath.Join(s.dir, "byteorder-"+r.name) }

	own := row{test: "byte order: each build reads its own files back exactly (5 kinds, standalone and in an arena)"}
	var figures []string
	var first string
	answers := 0
	for _, r := range makers {
		if err := os.MkdirAll(dirOf(r), 0o755); err != nil {
			return nil, err
		}
	}
	made, err := outputsAtOnce(makers, func(r runner) ([]string, func([]byte) (boMakeResult, error)) {
		return []string{"arch", "make", "-dir", dirOf(r)}, func(b []byte) (boMakeResult, error) { return decodeJSON[boMakeResult](b, nil) }
	})
	if err != nil {
		return nil, err
	}
	for i, r := range makers {
		m := made[i]
		answers += m.Read.Checked + m.Own.Attempts
		own.violations += m.Read.Wrong + m.Own.Attempts - m.Own.Right
		figures = append(figures, fmt.Sprintf("%s-%s (%s) %d/%d", m.Read.Arch, m.Read.Backend, m.Read.ByteOrder,
			m.Read.Checked-m.Read.Wrong+m.Own.Right, m.Read.Checked+m.Own.Attempts))
		if f := m.Read.First + m.Own.First; first == "" && f != "" {
			first = r.name + ": " + f
		}
	}
	own.runs = fmt.Sprintf("%d answers", answers)
	own.figure = "right (counts, Check, window periods, Inspect; own kind opens, others ErrIncompatible): " + strings.Join(figures, ", ") + note(first)
	if why != "" {
		own.figure += "; s390x not run: " + why
	}
	rows := []row{own}

	nativeTest := "byte order: native builds refuse the s390x build's files (ErrByteOrder), leaving them unchanged"
	crossTest := "byte order: the s390x build refuses native files (ErrByteOrder), leaving them unchanged"
	if why != "" {
		return append(rows, cannotRun(nativeTest, why), cannotRun(crossTest, why)), nil
	}
	r1, err := refusals(nativeTest, natives, []runner{s390x}, dirOf)
	if err != nil {
		return nil, err
	}
	r2, err := refusals(crossTest, []runner{s390x}, natives, dirOf)
	if err != nil {
		return nil, err
	}
	return append(rows, r1, r2), nil
}

// refusals has each opener open the files every maker made, and compares
// the files byte for byte before and after.
func refusals(test string, openers, makers []runner, dirOf func(runner) string) (row, error) {
	var dirs []string
	before := map[string]map[string][]byte{}
	for _, m := range makers {
		dirs = append(dirs, dirOf(m))
		snap, err := snapshot(dirOf(m))
		if err != nil {
			return row{}, err
		}
		before[m.name] = snap
	}
	attempts, right, changed := 0, 0, 0
	var per []string
	var first, refusal, inspected string
	for _, o := range openers {
		results, err := decodeJSON[[]boOpensResult](o.output(append([]string{"arch", "opens"}, dirs...)...))
		if err != nil {
			return row{}, err
		}
		for i, res := range results {
			attempts += res.Attempts
			right += res.Right
			per = append(per, fmt.Sprintf("%s of %s %d/%d", o.name, makers[i].name, res.Right, res.Attempts))
			if first == "" && res.First != "" {
				first = o.name + ": " + res.First
			}
			refusal, inspected = res.Refusal, res.Inspected
		}
	}
	for _, m := range makers {
		after, err := snapshot(dirOf(m))
		if err != nil {
			return row{}, err
		}
		if c := changedFiles(before[m.name], after); len(c) > 0 {
			changed += len(c)
			if first == "" {
				first = fmt.Sprintf("files of %s changed: %s", m.name, strings.Join(c, ", "))
			}
		}
	}
	return row{
		test:       test,
		runs:       fmt.Sprintf("%d opens", attempts),
		violations: attempts - right + changed,
		figure: fmt.Sprintf("ErrByteOrder: %s (6 files, each through 6 kinds' opens read-write and read-only, and Inspect); %d files compared byte for byte, %d changed; Inspect says %q, an open %q%s",
			strings.Join(per, ", "), len(boFiles)*len(makers), changed, inspected, refusal, note(first)),
	}, nil
}
