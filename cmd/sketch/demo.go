package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shmsketch/sketch"
)

// The demo: worker processes (this binary, re-executed) count a skewed
// stream of client addresses into one shared sketch at full speed while
// this process shows the loudest clients with their error bars. At the
// end each worker reports its exact counts, and the demo shows that no
// estimate is below the truth and how many are within the error bar.

var demoCmd = &command{
	name:    "demo",
	args:    "",
	summary: "several processes count one skewed stream into one shared sketch",
	details: `
Demo starts worker processes that count a Zipf-skewed stream of client
addresses into one shared Count-Min sketch, as fast as they can, while it
shows the adds per second across all of them and the loudest clients with
their error bars (redrawn in place on a terminal, a plain log otherwise).
At the end it puts the exact counts the workers kept beside the sketch's
answers: no estimate is below the truth, and nearly all are within the
bar. It removes its file when it ends.`,
	example: `sketch demo
sketch demo --procs 8 --adds 1000000`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		procs := fs.Int("procs", 4, "worker processes")
		adds := fs.Int("adds", 3_000_000, "adds per worker")
		file := fs.String("file", "", "sketch file (default: a temporary file, removed at the end)")
		return func(args []string) error {
			if len(args) != 0 {
				return usageError("demo takes no arguments")
			}
			if *procs < 1 || *adds < 0 {
				return usageError("--procs must be at least 1 and --adds not negative")
			}
			return runDemo(*procs, *adds, *file)
		}
	},
}

var demoWorkerCmd = &command{
	name:    "demo-worker",
	args:    "FILE ID ADDS",
	summary: "one worker process of the demo",
	details: "A worker of sketch demo: it adds ADDS keys to FILE and prints its exact counts.",
	example: "sketch demo-worker /tmp/clients.cms 0 1000",
	setup: func(fs *flag.FlagSet) func([]string) error {
		return runDemoWorker
	},
}

const (
	universe  = 1 << 16 // distinct client addresses
	demoBatch = 256
)

// clientAddr names the i-th client; an odd multiplier scatters the loud
// ones over the address space.
func clientAddr(i uint64) string {
	a := i * 40503 % universe
	return fmt.Sprintf("10.0.%d.%d", a>>8, a&0xff)
}

func runDemo(procs, adds int, path string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if path == "" {
		dir, err := os.MkdirTemp("", "sketch-demo")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "clients.cms")
	}
	cms, err := sketch.OpenCountMin(path, sketch.CountMinConfig{ErrorRate: 0.0005, Confidence: 0.99})
	if err != nil {
		return err
	}
	defer cms.Close()
	s := cms.Stats()
	fmt.Fprintf(stdout, "sketch %s: %d x %d counters, %d KiB, backend %s\n", path, s.Rows, s.Width, s.Bytes/1024, sketch.Backend)
	fmt.Fprintf(stdout, "%d worker processes add %d keys each, Zipf-skewed over %d client addresses\n\n", procs, adds, universe)
	stdout.Flush()

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	exact := make([]uint64, universe)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	start := time.Now()
	for i := 0; i < procs; i++ {
		cmd := exec.CommandContext(ctx, exe, demoWorkerCmd.name, path, strconv.Itoa(i), strconv.Itoa(adds))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var idx, n uint64
				if _, err := fmt.Sscan(sc.Text(), &idx, &n); err == nil && idx < universe {
					mu.Lock()
					exact[idx] += n
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				errs <- fmt.Errorf("worker %v: %w", cmd.Args[3], err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	keys := make([][]byte, universe)
	for i := range keys {
		keys[i] = []byte(clientAddr(uint64(i)))
	}
	est := make([]uint64, universe)
	v := &demoView{cms: cms, keys: keys, est: est, live: isTerminal(os.Stdout), start: start}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-ctx.Done():
			<-done // the workers were killed with the context
			return errors.New("interrupted; the workers were stopped")
		case <-tick.C:
			v.draw()
		}
	}
	close(errs)
	for err := range errs {
		return err
	}
	return v.final(exact)
}

// demoView is the parent's live view.
type demoView struct {
	cms        *sketch.CountMin
	keys       [][]byte
	est        []uint64
	live       bool
	start      time.Time
	lastTotal  uint64
	lastAt     time.Time
	drawnLines int
}

// loudest estimates every address and returns their indexes, loudest
// first.
func (v *demoView) loudest() []int {
	v.cms.EstimateBatch(v.keys, v.est)
	order := make([]int, len(v.keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return v.est[order[a]] > v.est[order[b]] })
	return order
}

func (v *demoView) draw() {
	now := time.Now()
	total := v.cms.Total()
	since := v.lastAt
	if since.IsZero() {
		since = v.start
	}
	perSec := float64(total-min(total, v.lastTotal)) / now.Sub(since).Seconds()
	v.lastTotal, v.lastAt = total, now
	bound := v.cms.ErrorBound()
	var b strings.Builder
	fmt.Fprintf(&b, "t=%-5s %9s adds/s across all processes, total %s, error bound %s\n",
		now.Sub(v.start).Round(100*time.Millisecond), rate(perSec), count(total), count(bound))
	for _, i := range v.loudest()[:5] {
		e := v.est[i]
		fmt.Fprintf(&b, "  %-12s estimate %-9d true count in [%d, %d]\n", v.keys[i], e, e-min(e, bound), e)
	}
	if v.live {
		if v.drawnLines > 0 {
			fmt.Fprintf(stdout, "\x1b[%dA", v.drawnLines)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for _, ln := range lines {
			fmt.Fprintf(stdout, "\x1b[2K%s\n", ln)
		}
		v.drawnLines = len(lines)
	} else {
		fmt.Fprint(stdout, b.String())
	}
	stdout.Flush()
}

// final compares the sketch's answers with the exact counts.
func (v *demoView) final(exact []uint64) error {
	order := v.loudest()
	s := v.cms.Stats()
	var total uint64
	for _, n := range exact {
		total += n
	}
	low, within := 0, 0
	for i := range exact {
		if v.est[i] < exact[i] {
			low++
		} else if v.est[i]-exact[i] <= s.ErrorBound {
			within++
		}
	}
	el := time.Since(v.start)
	fmt.Fprintf(stdout, "\nall workers done in %v: %s adds/s across all processes\n", el.Round(100*time.Millisecond), rate(float64(s.Total)/el.Seconds()))
	fmt.Fprintf(stdout, "the loudest clients, the sketch's answers beside the workers' exact counts (error bound %d):\n", s.ErrorBound)
	for _, i := range order[:10] {
		e := v.est[i]
		fmt.Fprintf(stdout, "  %-12s estimate %-9d true count in [%d, %d]  exact %d\n", v.keys[i], e, e-min(e, s.ErrorBound), e, exact[i])
	}
	fmt.Fprintf(stdout, "\ntotal %d (exact %d), %d adds\n", s.Total, total, s.Adds)
	fmt.Fprintf(stdout, "estimates below the truth: %d of %d addresses\n", low, len(exact))
	fmt.Fprintf(stdout, "estimates within the error bar: %d of %d (%s; the sketch promises %s for each)\n", within, len(exact), percent(float64(within)/float64(len(exact))), percent(s.Confidence))
	if err := v.cms.Check(); err != nil {
		return err
	}
	if low != 0 || s.Total != total {
		return errors.New("the sketch under-counted")
	}
	fmt.Fprintln(stdout, "check: ok")
	return nil
}

// runDemoWorker adds a Zipf-skewed stream of addresses, in batches and one
// at a time, and prints its exact counts ("index count" lines) at the end.
func runDemoWorker(args []string) error {
	if len(args) != 3 {
		return usageError("want FILE ID ADDS")
	}
	id, err1 := strconv.Atoi(args[1])
	adds, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		return usageError("bad arguments %q", strings.Join(args, " "))
	}
	cms, err := sketch.OpenCountMin(args[0], sketch.CountMinConfig{}, sketch.WithoutCreate())
	if err != nil {
		return err
	}
	defer cms.Close()
	zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(id), 2026)), 1.2, 1, universe-1)
	counts := make([]uint64, universe)
	batch := make([][]byte, 0, demoBatch)
	for i := 0; i < adds; i++ {
		idx := zipf.Uint64()
		counts[idx]++
		if i%4 == 0 { // some adds one at a time, the rest in batches
			if _, err := cms.AddString(clientAddr(idx)); err != nil {
				return err
			}
			continue
		}
		batch = append(batch, []byte(clientAddr(idx)))
		if len(batch) == demoBatch {
			if err := cms.AddBatch(batch, nil); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := cms.AddBatch(batch, nil); err != nil {
		return err
	}
	for i, n := range counts {
		if n > 0 {
			fmt.Fprintln(stdout, i, n)
		}
	}
	return nil
}
