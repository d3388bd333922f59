package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The mutation pass: broken copies of valid files (mutate_specimens.go,
// mutate_ops.go) go to opener children of both builds (mutate_open.go),
// which open each every way and use whatever opens. A panic, a child that
// hangs or dies, is a violation; the errors the opens return are counted.
type mutateConfig struct {
	files  int           // the most mutated copies, each tried by both builds
	batch  int           // files per child
	hang   time.Duration // a file that takes longer hung the child
	budget time.Duration // no batch starts after this
}

// A file costs each build 5 to 25 ms on 2 cores (12 opens, each a mapping
// and its unmapping, and the calls), so the budget, not the count, ends
// the default pass; the count caps a fast machine. Files are made in
// order, so a seed replays the same files however far a run got.
func mutateConfigFor(short bool) mutateConfig {
	if short {
		return mutateConfig{files: 400, batch: 100, hang: mutateHang, budget: 8 * time.Second}
	}
	return mutateConfig{files: 30000, batch: 250, hang: mutateHang, budget: time.Minute}
}

// mutateHang is how long one file may take in an opener. The longest wait
// the library may legitimately make is a window add's wait for a clear by a
// holder that looks alive (10 s), which a forged slot word can ask for.
const mutateHang = 30 * time.Second

func init() {
	roles["hostile"] = func(args []string) error {
		fs := flag.NewFlagSet("hostile", flag.ExitOnError)
		scratch := fs.String("scratch", "", "where the read-write copies go")
		fs.Parse(args)
		return runHostile(os.Stdin, os.Stdout, *scratch)
	}
}

// A mutant is one mutated file of the pass.
type mutant struct {
	index int
	path  string
	what  string // the specimen and what was done to it
}

// runMutate makes the specimens, then the mutated copies batch by batch,
// and has both builds open each batch at once.
func runMutate(s setting, cfg mutateConfig) ([]row, error) {
	valid := filepath.Join(s.dir, "valid")
	if err := os.MkdirAll(valid, 0o755); err != nil {
		return nil, err
	}
	specs, err := makeSpecimens(valid, rand.New(rand.NewPCG(s.seed, 0)))
	if err != nil {
		return nil, err
	}
	keep := filepath.Join(os.TempDir(), fmt.Sprintf("sketch-torture-mutate-%d", s.seed))
	tallies := make([]*mutateTally, len(s.builds))
	for i, b := range s.builds {
		tallies[i] = newMutateTally(b.backend, keep)
		if err := os.MkdirAll(filepath.Join(s.dir, "scratch-"+b.backend), 0o755); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	made, stopped := 0, ""
	for made < cfg.files {
		if time.Since(began) > cfg.budget {
			stopped = fmt.Sprintf(" (its %s budget ran out before the %d files of a fast machine)", cfg.budget, cfg.files)
			break
		}
		dir := filepath.Join(s.dir, "batch")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		var batch []mutant
		for i := made; i < min(made+cfg.batch, cfg.files); i++ {
			sp := specs[i%len(specs)]
			data, what := mutate(sp, s.seed, i)
			m := mutant{index: i, path: filepath.Join(dir, fmt.Sprintf("%06d", i)), what: what}
			if err := os.WriteFile(m.path, data, 0o600); err != nil {
				return nil, err
			}
			batch = append(batch, m)
		}
		made += len(batch)
		var wg sync.WaitGroup
		errs := make([]error, len(s.builds))
		for i, b := range s.builds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = openBatch(b, batch, filepath.Join(s.dir, "scratch-"+b.backend), cfg.hang, tallies[i])
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	return mutateRows(tallies, len(specs), time.Since(began), stopped), nil
}

// openBatch runs an opener child of b over the batch. A child that hangs
// on a file is killed, one that dies is classified, and either way a new
// child goes on after that file.
func openBatch(b build, batch []mutant, scratch string, hang time.Duration, t *mutateTally) error {
	for len(batch) > 0 {
		done, exit, err := runOpener(b, batch, scratch, hang, t)
		if err != nil {
			return err
		}
		if done == len(batch) {
			return nil
		}
		t.violation(exit, batch[done])
		batch = batch[done+1:]
	}
	return nil
}

// childExit is how an opener child ended before it reported every file.
type childExit struct {
	kind string // "hang", "signal", "panic" (not recovered) or "crash"
	name string // what it printed or died of
}

// runOpener starts one child over batch and returns how many files it
// reported and, when that is not all, how it ended.
func runOpener(b build, batch []mutant, scratch string, hang time.Duration, t *mutateTally) (int, childExit, error) {
	return runFileChild(b, []string{"hostile", "-scratch", scratch}, batch, hang, func(i int, line []byte) error {
		var r hostileResult
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.File != i {
			return fmt.Errorf("a result for file %d, want file %d of %d", r.File, i, len(batch))
		}
		t.add(r, batch[i])
		return nil
	})
}

// runFileChild starts a child of b with args, gives it the batch's paths
// on its standard input, one a line, and hands each line it prints to
// result with the index of its file. It returns how many files the child
// reported and, when that is not all, how it ended: a file with no line
// within hang hung it. An error is the harness's: a line result refused,
// or the child's own complaint.
func runFileChild(b build, args []string, batch []mutant, hang time.Duration, result func(i int, line []byte) error) (int, childExit, error) {
	var list strings.Builder
	for _, m := range batch {
		fmt.Fprintln(&list, m.path)
	}
	cmd := exec.Command(b.path, args...)
	cmd.Stdin = strings.NewReader(list.String())
	stderr := &headBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, childExit{}, err
	}
	if err := cmd.Start(); err != nil {
		return 0, childExit{}, err
	}
	lines := make(chan []byte)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	done := 0
	timer := time.NewTimer(hang)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				if done == len(batch) && err == nil {
					return done, childExit{}, nil
				}
				exit, harness := classifyExit(err, stderr.String())
				if harness {
					return done, exit, fmt.Errorf("%s (%s): %s", args[0], b.backend, exit.name)
				}
				return done, exit, nil
			}
			err := fmt.Errorf("a line past the %d files", len(batch))
			if done < len(batch) {
				err = result(done, line)
			}
			if err != nil {
				cmd.Process.Kill()
				for range lines {
				}
				cmd.Wait()
				return done, childExit{}, fmt.Errorf("%s (%s): %q: %w", args[0], b.backend, line, err)
			}
			done++
			timer.Reset(hang)
		case <-timer.C:
			cmd.Process.Kill()
			for range lines {
			}
			cmd.Wait()
			return done, childExit{kind: "hang", name: fmt.Sprintf("no answer in %s", hang)}, nil
		}
	}
}

var signalLine = regexp.MustCompile(`\[signal (SIG[A-Z]+)`)

// classifyExit tells how a child that did not report every file ended:
// killed by a signal (or the Go runtime reporting one: SIGSEGV, SIGBUS), a
// panic nobody recovered, some other crash of the runtime, or the
// harness's own failure (harness: an error of the opener role, not of the
// library).
func classifyExit(err error, stderr string) (exit childExit, harness bool) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return childExit{"signal", signalName(ws.Signal())}, false
		}
	}
	if m := signalLine.FindStringSubmatch(stderr); m != nil {
		return childExit{"signal", m[1] + ": " + firstLine(stderr, "")}, false
	}
	if l := firstLine(stderr, "panic: "); l != "" {
		return childExit{"panic", l}, false
	}
	if l := firstLine(stderr, "fatal error: "); l != "" {
		return childExit{"crash", l}, false
	}
	if l := firstLine(stderr, "torture "); l != "" { // a role's own error (main.go)
		return childExit{"crash", l}, true
	}
	if err == nil {
		return childExit{"crash", "ended without a word about the rest of its files"}, false
	}
	return childExit{"crash", err.Error() + ": " + firstLine(stderr, "")}, false
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGILL:
		return "SIGILL"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}

// firstLine returns the first line of s that starts with prefix, or with
// anything when prefix is empty; "" when there is none.
func firstLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// headBuffer keeps the first max bytes written to it: a runtime crash
// prints its reason first and then every goroutine's stack.
type headBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.b); room > 0 {
		t.b = append(t.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (t *headBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
