package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Instruction counts: each subject's op loop runs under callgrind, which
// counts instructions only inside measured (--toggle-collect; the pattern
// matches main.measured and, in a test binary, its package path), at two key
// counts; the difference over the difference in keys is the cost of one
// key with any fixed cost cancelled. Counts do not move with the machine's
// load, as times do.

// callgrindRows are the subjects counted. Single keys are Go code in
// both builds, so they are counted once, like the other libraries; the
// batches, which the cgo build hands to C, are counted in each build.
func callgrindRows(builds []string) []Key {
	keys := []Key{
		sk("add", "", "default", "uniform", 1),
		sk("estimate", "", "default", "uniform", 1),
		cbfKey("add", "sketch", "", 1, 1, 1),
		cbfKey("contains", "sketch", "", 1, 1, 1),
		bloomKey("add", "sketch", "", "1M", 1, 1, 1),
		bloomKey("check", "sketch", "", "1M", 1, 1, 1),
		windowKey("add", "", "default", 1, 1),
		distinctKey("add", "sketch", "", "uint64", 1, 1, 1),
	}
	for _, b := range builds {
		keys = append(keys,
			sk("add", b, "default", "uniform", 256),
			sk("add", b, "C", "uniform", 256),
			sk("estimate", b, "C", "uniform", 256),
			cbfKey("add", "sketch", b, 256, 1, 1),
			bloomKey("add", "sketch", b, "1M", 256, 1, 1),
			distinctKey("add", "sketch", b, "uint64", 256, 1, 1),
		)
	}
	keys = append(keys,
		cmsKey("add", "floor", "", "default", "uniform", 1, 1, 1),
		cmsKey("add", "boom", "", "default", "uniform", 1, 1, 1),
		cbfKey("add", "boom", "", 1, 1, 1),
		bloomKey("add", "bitsblooms", "", "1M", 1, 1, 1),
		distinctKey("add", "axiomhq", "", "uint64", 1, 1, 1),
		exactKey("mutexmap", "insert", "uniform10k", 1),
		exactKey("syncmap", "insert", "uniform10k", 1),
	)
	for _, b := range builds {
		if b == "cgo" {
			keys = append(keys, cgoRows()[0].Key)
		}
	}
	return keys
}

// instrCount is one subject's instructions per key.
type instrCount struct {
	Key   Key
	PerOp float64
	Err   string
}

// countInstructions runs every callgrind row in the build that owns it,
// two valgrind processes at a time.
func (p plan) countInstructions(dir string, n1, n2 int) []instrCount {
	var builds []string
	for _, b := range allBuilds {
		if p.bins[b] != "" {
			builds = append(builds, b)
		}
	}
	keys := callgrindRows(builds)
	out := make([]instrCount, len(keys))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, k := range keys {
		build := p.owner(subject{Key: k})
		id := k
		if k.Impl == "sketch" && k.Build == "" && k.Op != "merge" {
			id = k.with(build) // a single key: the same Go code in each build
		}
		bin := p.bins[build]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = instrCount{Key: k}
			var ir [2]uint64
			for j, n := range []int{n1, n2} {
				d := filepath.Join(dir, fmt.Sprintf("cg-%d-%d", i, j))
				c, err := callgrind(bin, d, id.String(), n)
				os.RemoveAll(d)
				if err != nil {
					out[i].Err = err.Error()
					return
				}
				ir[j] = c
			}
			out[i].PerOp = float64(ir[1]-ir[0]) / float64(n2-n1)
		})
	}
	wg.Wait()
	return out
}

// errValgrindCPU means valgrind stopped at an instruction it does not
// know: Go's runtime reads the time stamp counter with RDTSCP where the
// CPU says it has it, which older valgrind releases cannot decode on some
// CPUs (seen on AMD Zen 5). Whether a run gets there depends on timing
// (a contended runtime lock), so such a machine counts nothing reliably.
var errValgrindCPU = errors.New("valgrind cannot run Go programs on this CPU (an instruction it does not recognise, RDTSCP in Go's runtime)")

// callgrind runs one op loop under callgrind and returns the instructions
// counted inside measured.
func callgrind(bin, dir, id string, n int) (uint64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	outFile := filepath.Join(dir, "callgrind.out")
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+outFile,
		"--collect-atstart=no", "--toggle-collect=*.measured",
		bin, "-role=oploop", "-dir="+dir, "-id="+id, fmt.Sprint("-n=", n))
	// Valgrind's callgrind trips over the signals of Go's asynchronous
	// preemption; the op loop does not need it.
	// No collection may run inside measured, where callgrind would count
	// it: the op loops allocate little, and GOGC=off keeps it all.
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1", "GOGC=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "Unrecognised instruction") {
			return 0, fmt.Errorf("valgrind %s: %w", id, errValgrindCPU)
		}
		return 0, fmt.Errorf("valgrind %s: %v: %s", id, err, lastLine(string(out)))
	}
	f, err := os.Open(outFile)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "totals:"); ok {
			n, err := strconv.ParseUint(strings.Fields(v)[0], 10, 64)
			if err == nil && n == 0 {
				err = fmt.Errorf("callgrind %s: nothing counted in measured (a binary without symbols?)", id)
			}
			return n, err
		}
	}
	return 0, fmt.Errorf("callgrind %s: no totals", id)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// opLoop is the program valgrind runs: open the subject on short streams,
// warm it up, then run n keys inside measured.
func opLoop(e *env, id string, n int) error {
	s, ok := lookup(table(allBuilds), id)
	if !ok {
		return fmt.Errorf("no subject %s", id)
	}
	run, stop, err := s.start(e, 0)
	if err != nil {
		return err
	}
	if stop != nil {
		defer stop()
	}
	chunk := max(256, s.unit())
	run(chunk)
	// Short calls of measured, the scheduler's turn between them: a
	// goroutine that runs 10ms without one is preempted, and the switch of
	// stacks can make callgrind think measured returned, after which it
	// stops counting.
	for done := 0; done < n; done += chunk {
		runtime.Gosched()
		measured(run, min(chunk, n-done))
	}
	return nil
}

// measured is where callgrind counts.
//
//go:noinline
func measured(run runFunc, n int) { run(n) }
