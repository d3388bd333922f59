package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shmsketch/sketch"
)

func main() {
	if len(os.Args) > 1 {
		if run, ok := roles[os.Args[1]]; ok {
			if err := run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "torture %s (%s): %v\n", os.Args[1], sketch.Backend, err)
				os.Exit(1)
			}
			return
		}
	}
	os.Exit(supervise(os.Args[1:]))
}

// roles are the processes the supervisor starts from either build.
var roles = map[string]func(args []string) error{
	"backend": func([]string) error { fmt.Println(sketch.Backend); return nil },
	"worker": func(args []string) error {
		fs := flag.NewFlagSet("worker", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		slot := fs.Int("slot", 0, "")
		seed := fs.Uint64("seed", 0, "")
		fs.Parse(args)
		return runWorker(*dir, *slot, *seed)
	},
	"checker": func(args []string) error {
		fs := flag.NewFlagSet("checker", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		slots := fs.Int("slots", 0, "")
		fs.Parse(args)
		return runChecker(*dir, *slots)
	},
	"lockholder": func(args []string) error {
		fs := flag.NewFlagSet("lockholder", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		mode := fs.String("mode", "write", "")
		fs.Parse(args)
		return runLockHolder(*dir, *mode)
	},
	"arch": runArchRole,
	"lockadder": func(args []string) error {
		fs := flag.NewFlagSet("lockadder", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		fs.Parse(args)
		return runLockAdder(*dir)
	},
	"arena": runArenaRole, // arena.go: worker, check, creator, opener
	"fault": runFaultRole,
}

// supervise runs the storm and the lock recovery, prints the summary and
// returns the exit status: 1 on any violation (including a negative control
// that was not caught), 2 when the run itself could not be made.
func supervise(args []string) int {
	fs := flag.NewFlagSet("torture", flag.ExitOnError)
	other := fs.String("other", "", "the other build of this program (cgo beside pure Go); both backends run on the same files")
	short := fs.Bool("short", os.Getenv("TORTURE") == "short", "about a minute: a 30s storm, 20 kills per lock case (also TORTURE=short)")
	storm := fs.Duration("storm", 6*time.Minute, "how long the kill storm lasts; raise it for a longer run")
	kills := fs.Int("kills", 100, "kills per lock-recovery case")
	workers := fs.Int("workers", 4, "storm workers, alternating between the builds")
	gap := fs.Duration("gap", 30*time.Millisecond, "mean time between kills")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()), "random seed (printed, to rerun a schedule)")
	dir := fs.String("dir", "", "where the files go (default: a new directory in /dev/shm, removed afterwards)")
	cross := map[string]*string{}
	for _, arch := range crossArchs {
		cross[arch] = fs.String(arch, "", "this program's pure-Go build for linux/"+arch+", run under "+qemuFor[arch]+" by the arch part")
	}
	module := fs.String("module", "", "the module's source directory, for the fuzz part (the Makefile passes its own)")
	onlyList := fs.String("only", "", "run only these parts, comma-separated (default: all; -only list names them)")
	fs.Parse(args)
	if *onlyList == "list" {
		fmt.Println(partNames())
		return 0
	}
	if *short { // the short sizes, unless given explicitly
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["storm"] {
			*storm = 30 * time.Second
		}
		if !set["kills"] {
			*kills = 20
		}
	}

	builds, err := bothBuilds(*other)
	if err != nil {
		return fail(err)
	}
	if *dir == "" {
		d, err := newFilesDir()
		if err != nil {
			return fail(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	fmt.Printf("torture: seed %d, storm %s with %d workers, %d kills per lock case, files in %s\n",
		*seed, *storm, *workers, *kills, filepath.Base(*dir))

	only, err := onlyParts(*onlyList)
	if err != nil {
		return fail(err)
	}
	set := setting{builds: builds, short: *short, seed: *seed,
		storm: stormConfig{workers: *workers, duration: *storm, gap: *gap, seed: *seed}, kills: *kills, module: *module}
	set.cross = map[string]string{}
	for arch, path := range cross {
		set.cross[arch] = *path
	}
	began := time.Now()
	rows, err := runParts(set, *dir, only)
	if err != nil {
		return fail(err)
	}
	fmt.Println()
	total := printSummary(os.Stdout, rows)
	fmt.Printf("\ntorture: %s; violations: %d\n", time.Since(began).Round(time.Second), total)
	if total > 0 {
		return 1
	}
	return 0
}

// bothBuilds are this program and the other build, which must be of the
// other backend.
func bothBuilds(other string) ([]build, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	builds := []build{{path: self, backend: sketch.Backend}}
	if other == "" {
		return nil, fmt.Errorf("-other is required: the build of the other backend")
	}
	ob, err := probeBuild(other)
	if err != nil {
		return nil, err
	}
	if ob.backend == sketch.Backend {
		return nil, fmt.Errorf("-other %s is a %s build too: want the other backend", other, ob.backend)
	}
	return append(builds, ob), nil
}

// newFilesDir is a new directory for the files, in /dev/shm when there is
// one; the caller removes it.
func newFilesDir() (string, error) {
	base := "/dev/shm"
	if _, err := os.Stat(base); err != nil {
		base = os.TempDir()
	}
	return os.MkdirTemp(base, "sketch-torture-")
}

// onlyParts are the parts -only names; nil for all of them.
func onlyParts(list string) (map[string]bool, error) {
	if list == "" {
		return nil, nil
	}
	only := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		if partByName(name) == nil {
			return nil, fmt.Errorf("-only %s: no such part (parts: %s)", name, partNames())
		}
		only[name] = true
	}
	return only, nil
}

// runParts runs the parts (those of only, when it is not nil) one after
// another, each in a directory of its own under dir, and returns their
// rows.
func runParts(set setting, dir string, only map[string]bool) ([]row, error) {
	var rows []row
	for _, p := range parts {
		if only != nil && !only[p.name] {
			continue
		}
		set.dir = filepath.Join(dir, p.name)
		if err := os.MkdirAll(set.dir, 0o755); err != nil {
			return nil, err
		}
		pb := time.Now()
		r, err := p.run(set)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Printf("torture: %s done in %s\n", p.name, time.Since(pb).Round(time.Second))
		rows = append(rows, r...)
	}
	return rows, nil
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "torture: %v\n", err)
	return 2
}
