// Command report measures the sketch module's structures beside exact maps
// and other libraries, and writes docs/BENCHMARKS.md with its charts
// (make bench-report runs it).
//
// The orchestrator starts one worker per build of this program (cgo and
// pure Go: the build decides which core serves batches) and visits every
// subject in interleaved rounds, one sample at a time, so that ratios
// between subjects come from moments close together. Subjects of several
// processes start peer processes of the worker's build on the same file.
// Memory is measured in fresh processes, instruction counts under
// callgrind.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/shmsketch/sketch"
)

func main() {
	var (
		role      = flag.String("role", "", "internal: worker, peer, mem or oploop")
		dir       = flag.String("dir", "", "internal: the run's directory for files")
		id        = flag.String("id", "", "internal: subject ID")
		start     = flag.Int("start", 0, "internal: the peer's first key")
		parent    = flag.String("parent", "", "internal: the ID of the subject the peer is a process of")
		n         = flag.Int("n", 0, "internal: keys (oploop, mem)")
		impl      = flag.String("impl", "", "internal: structure (mem)")
		small     = flag.Bool("small", false, "internal: short key streams (peer)")
		cgoBin    = flag.String("cgo", "", "the cgo build of this program (default: this program, if it is one)")
		puregoBin = flag.String("purego", "", "the pure-Go build of this program (default: this program, if it is one)")
		out       = flag.String("out", "docs/BENCHMARKS.md", "the report to write")
		charts    = flag.String("charts", "docs/bench", "the directory for its SVG charts")
		rounds    = flag.Int("rounds", 7, "samples of each subject (odd: the median is one of them)")
		sample    = flag.Duration("sample", 80*time.Millisecond, "the length of one sample")
		quick     = flag.Bool("quick", false, "a check of the program, not a measurement: 3 rounds of 10ms samples, memory up to 1M keys, op counts 10x smaller")
		run       = flag.String("run", "", "measure only subjects whose ID matches this regexp")
		noCG      = flag.Bool("nocallgrind", false, "leave out the instruction counts")
		noMem     = flag.Bool("nomemory", false, "leave out the memory section")
		readme    = flag.String("readme", "", "a README whose marked block to rewrite with the headline ratios")
		command   = flag.String("command", "", "the command to record as having run this program (make bench-report)")
	)
	flag.Parse()
	self, err := os.Executable()
	if err != nil {
		fatalf("%v", err)
	}
	switch *role {
	case "worker":
		e := newEnv(*dir, self, false)
		defer e.close()
		err = worker(e, os.Stdin, os.Stdout)
	case "peer":
		e := newEnv(*dir, self, *small)
		e.attach, e.parent = true, *parent
		defer e.close()
		err = peerMain(e, *id, *start, os.Stdin, os.Stdout)
	case "mem":
		err = memMain(*impl, *n, os.Stdout)
	case "oploop":
		e := newEnv(*dir, self, true)
		defer e.close()
		err = opLoop(e, *id, *n)
	case "":
		if *quick {
			*rounds, *sample = 3, 10*time.Millisecond
		}
		o := orchestration{
			self: self, out: *out, charts: *charts, quick: *quick, callgrind: !*noCG, memory: !*noMem,
			command: *command, readme: *readme,
			plan: plan{rounds: *rounds, target: *sample, bins: map[string]string{}},
		}
		o.argv = shellJoin(os.Args)
		o.plan.bins[sketch.Backend] = self
		if *cgoBin != "" {
			o.plan.bins["cgo"] = *cgoBin
		}
		if *puregoBin != "" {
			o.plan.bins["purego"] = *puregoBin
		}
		if *run != "" {
			if o.plan.filter, err = regexp.Compile(*run); err != nil {
				fatalf("-run: %v", err)
			}
		}
		err = o.main()
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	if err != nil {
		fatalf("%v", err)
	}
}

// orchestration is one run of the whole report.
type orchestration struct {
	plan
	self, out, charts string
	quick, callgrind  bool
	memory            bool
	memCounts         []int // key counts of the memory section (default 10k, 1M, 10M)
	heavy             *heavyScores
	distinct          *distinctErrors
	over              *overEstimates // conservative update's over-estimates
	overNote          string         // why they are missing
	wordLimit         int            // words of the real-text stream (0: all, -quick 1M)
	readme            string
	command           string // what the user ran, when not this program directly
	argv              string // this program's command line
}

func (o *orchestration) main() error {
	began := time.Now()
	dir, err := os.MkdirTemp(shmDir(), "sketch-report-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The run's files are large (gigabytes on tmpfs): an interrupted run
	// removes them too. Workers and peers end when their stdin closes.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		os.RemoveAll(dir)
		fatalf("%v: removed %s", s, dir)
	}()
	o.dir = dir
	m := readMachine()
	progress("%s, %d CPUs; %s; load average %s", m.CPU, m.CPUs, m.CacheList(), m.LoadStart)
	res, err := o.measure()
	if err != nil {
		return err
	}
	for _, s := range res.Subjects {
		if n := res.GCs[s.ID()]; n > 0 {
			progress("%s: %d garbage collections during its samples", s.ID(), n)
		}
	}
	v := &view{res: res, m: m, builds: map[string]bool{}}
	for _, b := range res.Builds {
		v.builds[b] = true
	}
	counts := o.memCounts
	switch {
	case counts != nil:
	case o.quick:
		counts = []int{10_000, 1_000_000}
	default:
		counts = []int{10_000, 1_000_000, 10_000_000}
	}
	var mem *memTable
	memErr := errors.New("left out (-nomemory)")
	if o.memory {
		if mem, memErr = measureMemory(o.self, counts); memErr != nil {
			progress("%v", memErr)
		}
	}
	// The heavy hitters' accuracy goes with their rows; -quick makes its
	// streams 10x shorter.
	if o.measures("heavy") {
		adds := 10_000_000
		if o.quick {
			adds = 1_000_000
		}
		if o.heavy, err = measureHeavy(adds); err != nil {
			progress("%v", err)
		}
	}
	// So do the distinct counts' errors: -quick stops at 1M keys.
	if o.measures("distinct") {
		ns := []int{1000, 100_000, 10_000_000}
		if o.quick {
			ns[2] = 1_000_000
		}
		if o.distinct, err = measureDistinctErrors(ns, 5); err != nil {
			progress("%v", err)
		}
	}
	// And conservative update's over-estimates on real text go with the
	// Count-Min rows: -quick counts the first 1M words.
	if o.measures("countmin") {
		o.measureOver(runtime.GOROOT())
	} else {
		o.overNote = "Not measured: this run measured no Count-Min rows (-run)."
	}
	var ic []instrCount
	var icNote string
	n1, n2 := 2048, 10240
	if o.quick {
		n1, n2 = 512, 2560
	}
	switch _, lookErr := exec.LookPath("valgrind"); {
	case !o.callgrind:
		icNote = "Instruction counts were left out (-nocallgrind)."
	case lookErr != nil:
		icNote = "Instruction counts were left out: valgrind is not installed (`make bench-report` installs it when run as root on Debian)."
	default:
		t0 := time.Now()
		ic = o.countInstructions(dir, n1, n2)
		progress("instruction counts took %v", time.Since(t0).Round(time.Second))
	}
	if err := o.writeReport(v, mem, memErr, ic, icNote, n1, n2, time.Since(began)); err != nil {
		return err
	}
	h, _ := v.headline(mem)
	fmt.Fprint(progressOut, h)
	progress("wrote %s and %s in %v", o.out, o.charts, time.Since(began).Round(time.Second))
	return nil
}

// shellJoin writes a command line as a shell would take it back.
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?[]()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}

// shmDir is where the run's files go: tmpfs, as shared sketches usually
// live, when the machine has it.
func shmDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}
