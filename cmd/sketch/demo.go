package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shmsketch/sketch"
)

// The demo: several worker processes count a skewed stream of client
// addresses into one shared sketch while this process shows the loudest
// clients with their error bars. At the end each worker reports its exact
// counts, and the demo shows that no estimate is below the truth.

const (
	demoWorkerCmd = "demo-worker"
	universe      = 1 << 16 // distinct client addresses
	batchSize     = 256
)

// clientAddr names the i-th client; an odd multiplier scatters the loud
// ones over the address space.
func clientAddr(i uint64) string {
	a := i * 40503 % universe
	return fmt.Sprintf("10.0.%d.%d", a>>8, a&0xff)
}

func runDemo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	procs := fs.Int("procs", 4, "worker processes")
	adds := fs.Int("adds", 3_000_000, "adds per worker")
	file := fs.String("file", "", "sketch file (default: a temporary file, removed at the end)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	path := *file
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
	fmt.Printf("sketch %s: %d x %d counters, %d KiB, backend %s\n", path, s.Rows, s.Width, s.Bytes/1024, sketch.Backend)
	fmt.Printf("starting %d worker processes, %d adds each, Zipf-skewed over %d client addresses\n\n", *procs, *adds, universe)

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	exact := make([]uint64, universe)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, *procs)
	start := time.Now()
	for i := 0; i < *procs; i++ {
		cmd := exec.Command(exe, demoWorkerCmd, path, strconv.Itoa(i), strconv.Itoa(*adds))
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
	tick := time.NewTicker(400 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-tick.C:
			showLoudest(cms, keys, est, nil, time.Since(start), 5)
		}
	}
	close(errs)
	for err := range errs {
		return err
	}
	fmt.Println("all workers done; exact counts are the workers' own tallies")
	low := showLoudest(cms, keys, est, exact, time.Since(start), 10)
	var total uint64
	for _, n := range exact {
		total += n
	}
	s = cms.Stats()
	fmt.Printf("\ntotal %d (exact %d), %d adds, estimates below the truth: %d of %d addresses\n", s.Total, total, s.Adds, low, universe)
	if err := cms.Check(); err != nil {
		return err
	}
	if low != 0 || s.Total != total {
		return fmt.Errorf("sketch demo: the sketch under-counted")
	}
	fmt.Println("check: ok")
	return nil
}

// showLoudest prints the top n addresses by estimate, each with its error
// bar, and with exact counts when it has them; it returns how many
// estimates are below the exact counts (which must be none).
func showLoudest(cms *sketch.CountMin, keys [][]byte, est, exact []uint64, elapsed time.Duration, n int) (low int) {
	if err := cms.EstimateBatch(keys, est); err != nil {
		fmt.Println(err)
		return 0
	}
	s := cms.Stats()
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return est[order[a]] > est[order[b]] })
	fmt.Printf("t=%-6s total %-10d error bound %d (each estimate is high by at most that, with %.0f%% confidence)\n",
		elapsed.Round(100*time.Millisecond), s.Total, s.ErrorBound, 100*s.Confidence)
	for _, i := range order[:n] {
		line := fmt.Sprintf("  %-12s estimate %-9d true count in [%d, %d]", keys[i], est[i], est[i]-min(est[i], s.ErrorBound), est[i])
		if exact != nil {
			line += fmt.Sprintf("  exact %d", exact[i])
		}
		fmt.Println(line)
	}
	if exact != nil {
		for i := range exact {
			if est[i] < exact[i] {
				low++
			}
		}
	}
	return low
}

// runDemoWorker adds a Zipf-skewed stream of addresses, in batches and one
// at a time, and prints its exact counts ("index count" lines) at the end.
func runDemoWorker(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: sketch %s FILE ID ADDS", demoWorkerCmd)
	}
	id, err1 := strconv.Atoi(args[1])
	adds, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("sketch %s: bad arguments %q", demoWorkerCmd, strings.Join(args, " "))
	}
	cms, err := sketch.OpenCountMin(args[0], sketch.CountMinConfig{}, sketch.WithoutCreate())
	if err != nil {
		return err
	}
	defer cms.Close()
	zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(id), 2026)), 1.2, 1, universe-1)
	counts := make([]uint64, universe)
	batch := make([][]byte, 0, batchSize)
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
		if len(batch) == batchSize {
			if err := cms.AddBatch(batch, nil); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := cms.AddBatch(batch, nil); err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	for i, n := range counts {
		if n > 0 {
			fmt.Fprintln(w, i, n)
		}
	}
	return nil
}
