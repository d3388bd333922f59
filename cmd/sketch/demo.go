package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
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

// The demo: worker processes (this binary, re-executed) serve a skewed
// stream of requests into one shared arena at full speed: each request's
// client address is counted in a Count-Min window, and its request id is
// added to a Bloom filter of ids seen. This process shows the loudest
// clients of the window with their error bars while the periods turn. At
// the end each worker reports its exact counts, period by period, and the
// demo shows that no estimate over the window is below the truth, how many
// are within the error bar, and that the ids the filter called seen before
// (all ids are distinct) are false positives, at about the rate it was
// sized for.

var demoCmd = &command{
	name:    "demo",
	args:    "",
	summary: "several processes count one skewed stream into one shared arena",
	details: `
Demo starts worker processes that serve a Zipf-skewed stream of requests
into one shared arena, as fast as they can: each counts the request's
client address in a Count-Min window (periods of 1s, answers over the last
3) and adds its request id to a Bloom filter of ids seen. Meanwhile it
shows the requests per second across all of them and the loudest clients
of the window with their error bars (redrawn in place on a terminal, a
plain log otherwise). At the end it freezes the window and puts the exact
counts the workers kept, period by period, beside the window's answers: no
estimate is below the truth, and nearly all are within the bar. Every id
is distinct, so every id the filter calls seen before is a false
positive: it shows how many, beside the rate the filter was sized for. It
removes its file when it ends.`,
	example: `sketch demo
sketch demo --procs 8 --adds 1000000`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		procs := fs.Int("procs", 4, "worker processes")
		adds := fs.Int("adds", 3_000_000, "requests a worker serves at most")
		duration := fs.Duration("duration", 10*time.Second, "how long the workers serve at most")
		file := fs.String("file", "", "arena file (default: a temporary file, removed at the end)")
		return func(args []string) error {
			if len(args) != 0 {
				return usageError("demo takes no arguments")
			}
			if *procs < 1 || *adds < 1 || *duration <= 0 {
				return usageError("--procs and --adds must be at least 1 and --duration positive")
			}
			return runDemo(*procs, *adds, *duration, *file)
		}
	},
}

var demoWorkerCmd = &command{
	name:    "demo-worker",
	args:    "FILE ID ADDS DEADLINE",
	summary: "one worker process of the demo",
	details: "A worker of sketch demo: it serves at most ADDS requests into the arena FILE until DEADLINE (Unix nanoseconds) and prints its exact counts.",
	example: "sketch demo-worker /tmp/demo.arena 0 1000 1767225600000000000",
	setup: func(fs *flag.FlagSet) func([]string) error {
		return runDemoWorker
	},
}

const (
	universe  = 1 << 16 // distinct client addresses
	demoBatch = 256

	demoWindow   = "clients"  // the Count-Min window in the demo's arena
	demoBloom    = "requests" // the Bloom filter of request ids
	demoDistinct = "distinct" // the distinct window of client addresses
)

// demoWindowCfg turns during the demo, so that the view shows the window.
var demoWindowCfg = sketch.Window{Period: time.Second, Keep: 3}

// clientAddr names the i-th client; an odd multiplier scatters the loud
// ones over the address space.
func clientAddr(i uint64) string {
	a := i * 40503 % universe
	return fmt.Sprintf("10.0.%d.%d", a>>8, a&0xff)
}

func runDemo(procs, adds int, duration time.Duration, path string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if path == "" {
		dir, err := os.MkdirTemp("", "sketch-demo")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "demo.arena")
	}
	// The window keeps a table of its 20 loudest clients: the view lists
	// them from it, with no list of addresses on the side.
	cmsCfg := sketch.CountMinConfig{ErrorRate: 0.0005, Confidence: 0.99, Candidates: 20}
	slot, err := cmsCfg.Bytes()
	if err != nil {
		return err
	}
	// The filter is sized for every request, up to what ten seconds at
	// full speed serve: past it its rate climbs, and the demo says so.
	capacity := min(uint64(procs)*uint64(adds), 1<<26)
	// A Bloom filter at 1% takes about 1.3 bytes a key; the file is
	// sparse, so the slack costs nothing.
	size := int64(uint64(demoWindowCfg.Keep+1)*slot + 2*capacity + 1<<20)
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: size})
	if err != nil {
		return err
	}
	defer a.Close()
	win, err := sketch.OpenCountMinWindow(a.Place(demoWindow), sketch.CountMinWindowConfig{Window: demoWindowCfg, CountMin: cmsCfg})
	if err != nil {
		return err
	}
	defer win.Close()
	ids, err := sketch.OpenBloom(a.Place(demoBloom), sketch.BloomConfig{Capacity: capacity, FPRate: 0.01})
	if err != nil {
		return err
	}
	defer ids.Close()
	dw, err := sketch.OpenDistinctWindow(a.Place(demoDistinct), sketch.DistinctWindowConfig{Window: demoWindowCfg})
	if err != nil {
		return err
	}
	defer dw.Close()
	ws, bs := win.Stats(), ids.Stats()
	fmt.Fprintf(stdout, "arena %s, backend %s:\n", path, sketch.Backend)
	fmt.Fprintf(stdout, "  %s: Count-Min window, %s, %d x %d counters a period, a table of its %d loudest clients\n", demoWindow, windowText(demoWindowCfg), ws.Rows, ws.Width, cmsCfg.Candidates)
	fmt.Fprintf(stdout, "  %s: Bloom filter of request ids, %d keys at %s, %d KiB\n", demoBloom, bs.Capacity, percent(bs.FPRate), bs.Bits/8/1024)
	fmt.Fprintf(stdout, "  %s: distinct window of client addresses, %s, %d registers a period (%s relative error)\n", demoDistinct, windowText(demoWindowCfg), dw.Stats().Registers, percent(dw.StdError()))
	fmt.Fprintf(stdout, "%d worker processes serve up to %d requests each for up to %v, Zipf-skewed over %d client addresses\n\n", procs, adds, duration, universe)
	stdout.Flush()

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ex := newDemoExact()
	var wg sync.WaitGroup
	errs := make(chan error, procs)
	// The demo's first period is the one it starts in, read before the
	// workers start (they may take a while to).
	first, start := win.Current(), time.Now()
	deadline := start.Add(duration).UnixNano()
	for i := 0; i < procs; i++ {
		cmd := exec.CommandContext(ctx, exe, demoWorkerCmd.name, path, strconv.Itoa(i), strconv.Itoa(adds), strconv.FormatInt(deadline, 10))
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
				ex.take(sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				errs <- fmt.Errorf("worker %v: %w", cmd.Args[2], err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	keys := make([][]byte, universe)
	for i := range keys {
		keys[i] = []byte(clientAddr(uint64(i)))
	}
	v := &demoView{win: win, ids: ids, dw: dw, keys: keys, est: make([]uint64, universe), live: isTerminal(os.Stdout), start: start, first: first}
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
	return v.final(ex, path)
}

// demoExact is what the workers counted exactly: each client's requests by
// the periods an add may have landed in (lo == hi: surely that one; an add
// made while the period turned is lo and hi apart), and the filter's
// answers.
type demoExact struct {
	mu     sync.Mutex
	counts map[[2]uint64][]uint64
	added  uint64 // ids the filter took as new
	seen   uint64 // ids it called seen before
}

func newDemoExact() *demoExact { return &demoExact{counts: map[[2]uint64][]uint64{}} }

// take reads one line of a worker: "c LO HI INDEX COUNT" or "b ADDED SEEN".
func (e *demoExact) take(line string) {
	f := strings.Fields(line)
	n := make([]uint64, len(f))
	for i := 1; i < len(f); i++ {
		n[i], _ = strconv.ParseUint(f[i], 10, 64)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case len(f) == 5 && f[0] == "c" && n[3] < universe:
		k := [2]uint64{n[1], n[2]}
		if e.counts[k] == nil {
			e.counts[k] = make([]uint64, universe)
		}
		e.counts[k][n[3]] += n[4]
	case len(f) == 3 && f[0] == "b":
		e.added += n[1]
		e.seen += n[2]
	}
}

// bounds returns each client's true count in the periods oldest to
// current: at least lower (adds surely in them), at most upper (adds that
// may be), and the adds made at a turn that the two differ by.
func (e *demoExact) bounds(oldest, current uint64) (lower, upper []uint64, turn uint64) {
	lower, upper = make([]uint64, universe), make([]uint64, universe)
	for k, c := range e.counts {
		in := k[0] >= oldest && k[1] <= current
		maybe := k[1] >= oldest && k[0] <= current
		for i, n := range c {
			if in {
				lower[i] += n
			}
			if maybe {
				upper[i] += n
			}
			if maybe && !in {
				turn += n
			}
		}
	}
	return lower, upper, turn
}

// demoView is the parent's live view.
type demoView struct {
	win        *sketch.CountMinWindow
	ids        *sketch.Bloom
	dw         *sketch.DistinctWindow
	keys       [][]byte
	est        []uint64
	live       bool
	start      time.Time
	first      uint64 // the period the demo started in
	lastReqs   uint64
	lastAt     time.Time
	drawnLines int
}

// loudest estimates every address over the window and returns their
// indexes, loudest first.
func (v *demoView) loudest() []int {
	v.win.EstimateBatch(v.keys, v.est)
	order := make([]int, len(v.keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return v.est[order[a]] > v.est[order[b]] })
	return order
}

func (v *demoView) draw() {
	now := time.Now()
	ws, bs := v.win.Stats(), v.ids.Stats()
	reqs := bs.Adds
	since := v.lastAt
	if since.IsZero() {
		since = v.start
	}
	perSec := float64(reqs-min(reqs, v.lastReqs)) / now.Sub(since).Seconds()
	v.lastReqs, v.lastAt = reqs, now
	var b strings.Builder
	fmt.Fprintf(&b, "t=%-5s %9s requests/s across all processes, %s in all\n", now.Sub(v.start).Round(100*time.Millisecond), rate(perSec), count(reqs))
	fmt.Fprintf(&b, "  window: periods %d-%d of the demo, %s counted in them, error bound %s\n", ws.Oldest-min(ws.Oldest, v.first), ws.Current-v.first, count(ws.Total), count(ws.ErrorBound))
	fmt.Fprintf(&b, "  request ids: %s seen before (all false positives), filter fill %s\n", count(bs.AddsPresent), percent(bs.Fill))
	fmt.Fprintf(&b, "  distinct clients in the window: about %s\n", count(v.dw.Count()))
	top, err := v.win.Top(5)
	if err != nil {
		fmt.Fprintf(&b, "  loudest clients: %v\n", err)
	}
	for _, h := range top {
		fmt.Fprintf(&b, "  %-12s estimate %-9d true count in [%d, %d]\n", h.Key, h.Estimate, h.Low, h.Estimate)
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

// final freezes the window, so that its answers stay on the periods it
// covers now, and compares them with the exact counts.
func (v *demoView) final(ex *demoExact, path string) error {
	el := time.Since(v.start)
	if err := v.win.Freeze(); err != nil {
		return err
	}
	ws, bs := v.win.Stats(), v.ids.Stats()
	distinct, dper := v.dw.CountCovered()
	v.loudest()
	lower, upper, turn := ex.bounds(ws.Oldest, ws.Current)
	var sumLow, sumUp uint64
	low, within := 0, 0
	for i := range v.est {
		sumLow += lower[i]
		sumUp += upper[i]
		if v.est[i] < lower[i] {
			low++
		} else if v.est[i]-lower[i] <= ws.ErrorBound {
			within++
		}
	}
	reqs := ex.added + ex.seen
	fmt.Fprintf(stdout, "\nall workers done in %v: %s requests/s across all processes\n", el.Round(100*time.Millisecond), rate(float64(reqs)/el.Seconds()))
	fmt.Fprintf(stdout, "the window, frozen at period %d of the demo, covers periods %d-%d; the loudest clients its table lists, beside the workers' exact counts in those periods and their exact ranks (error bound %d):\n",
		ws.Current-v.first, ws.Oldest-min(ws.Oldest, v.first), ws.Current-v.first, ws.ErrorBound)
	exact := func(i int) string {
		if lower[i] == upper[i] {
			return fmt.Sprint(lower[i])
		}
		return fmt.Sprintf("%d-%d", lower[i], upper[i])
	}
	// The exact ranks, by the adds surely in the window.
	byExact := make([]int, universe)
	for i := range byExact {
		byExact[i] = i
	}
	sort.SliceStable(byExact, func(a, b int) bool { return lower[byExact[a]] > lower[byExact[b]] })
	rank, index := make(map[string]int), make(map[string]int)
	for r, i := range byExact {
		rank[string(v.keys[i])], index[string(v.keys[i])] = r+1, i
	}
	top, err := v.win.Top(10)
	if err != nil {
		return err
	}
	named := 0
	for _, h := range top {
		i := index[h.Key]
		if rank[h.Key] <= 10 {
			named++
		}
		fmt.Fprintf(stdout, "  %-12s estimate %-9d true count in [%d, %d]  exact %-9s rank %d\n", h.Key, h.Estimate, h.Low, h.Estimate, exact(i), rank[h.Key])
	}
	fmt.Fprintf(stdout, "the table named %d of the workers' 10 loudest clients in its top 10\n", named)
	exactTotal := fmt.Sprint(sumLow)
	if sumLow != sumUp {
		exactTotal = fmt.Sprintf("between %d and %d: %d adds were made as the period turned, and count in either", sumLow, sumUp, turn)
	}
	fmt.Fprintf(stdout, "\ntotal in the window %d (exact %s)\n", ws.Total, exactTotal)
	fmt.Fprintf(stdout, "estimates below the truth: %d of %d addresses\n", low, universe)
	fmt.Fprintf(stdout, "estimates within the error bar: %d of %d (%s; the sketch promises %s for each)\n",
		within, universe, percent(float64(within)/universe), percent(1-math.Exp(-float64(ws.Rows))))
	// The clients surely in the distinct window's periods, and those
	// perhaps in them (an add made as the period turned).
	dLow, dUp, _ := ex.bounds(dper.Oldest, dper.Current)
	var surely, perhaps uint64
	for i := range dLow {
		surely += min(dLow[i], 1)
		perhaps += min(dUp[i], 1)
	}
	exactDistinct := fmt.Sprint(surely)
	if surely != perhaps {
		exactDistinct = fmt.Sprintf("between %d and %d", surely, perhaps)
	}
	dev := 0.0 // how far the count is from the exact range, in standard errors
	if d := float64(distinct); d < float64(surely) {
		dev = (float64(surely) - d) / (v.dw.StdError() * float64(surely))
	} else if d > float64(perhaps) {
		dev = (d - float64(perhaps)) / (v.dw.StdError() * float64(perhaps))
	}
	fmt.Fprintf(stdout, "distinct clients in the window: about %d (exact %s; %.2f standard errors of %s away)\n", distinct, exactDistinct, dev, percent(v.dw.StdError()))
	fpRate := float64(ex.seen) / float64(max(reqs, 1))
	fmt.Fprintf(stdout, "request ids: %d, all distinct; the filter called %d seen before, all false positives: %s of them (the rate grows with the fill, to the %s it was sized for at %d ids; it holds about %.0f, fill %s)\n",
		reqs, ex.seen, percent(fpRate), percent(bs.FPRate), bs.Capacity, bs.Estimated, percent(bs.Fill))
	r := checkFile(path)
	if r.Status != "ok" {
		return fmt.Errorf("check: %s", strings.Join(r.Findings, "; "))
	}
	switch {
	case low != 0:
		return errors.New("the window under-counted")
	case ws.Total < sumLow || ws.Total > sumUp:
		return fmt.Errorf("the window's total %d is not what the workers counted in its periods (%d to %d)", ws.Total, sumLow, sumUp)
	case dev > 5:
		return fmt.Errorf("the distinct window counted %d clients, %.1f standard errors from the exact %s", distinct, dev, exactDistinct)
	case bs.Adds != reqs || bs.AddsPresent != ex.seen:
		return fmt.Errorf("the filter counted %d adds, %d present; the workers %d, %d", bs.Adds, bs.AddsPresent, reqs, ex.seen)
	}
	fmt.Fprintln(stdout, "check: ok")
	return nil
}

// runDemoWorker serves a Zipf-skewed stream of requests, in batches and
// one at a time, and prints its exact counts at the end: "c LO HI INDEX
// COUNT" lines (counted in period LO, or LO to HI when the period turned
// during the add) and "b ADDED SEEN" (the filter's answers).
func runDemoWorker(args []string) error {
	if len(args) != 4 {
		return usageError("want FILE ID ADDS DEADLINE")
	}
	id, err1 := strconv.Atoi(args[1])
	adds, err2 := strconv.Atoi(args[2])
	deadline, err3 := strconv.ParseInt(args[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return usageError("bad arguments %q", strings.Join(args, " "))
	}
	a, err := sketch.OpenArena(sketch.Path(args[0]), sketch.ArenaConfig{}, sketch.WithoutCreate())
	if err != nil {
		return err
	}
	defer a.Close()
	win, err := sketch.OpenCountMinWindow(a.Place(demoWindow), sketch.CountMinWindowConfig{Window: sketch.Window{}, CountMin: sketch.CountMinConfig{}})
	if err != nil {
		return err
	}
	defer win.Close()
	ids, err := sketch.OpenBloom(a.Place(demoBloom), sketch.BloomConfig{})
	if err != nil {
		return err
	}
	defer ids.Close()
	dw, err := sketch.OpenDistinctWindow(a.Place(demoDistinct), sketch.DistinctWindowConfig{})
	if err != nil {
		return err
	}
	defer dw.Close()
	zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(id), 2026)), 1.2, 1, universe-1)
	counts := map[[2]uint64][]uint64{}
	count := func(lo, hi uint64, idx ...uint64) {
		k := [2]uint64{lo, hi}
		c := counts[k]
		if c == nil {
			c = make([]uint64, universe)
			counts[k] = c
		}
		for _, i := range idx {
			c[i]++
		}
	}
	var added, seen uint64
	batch := make([][]byte, 0, demoBatch)
	idx := make([]uint64, 0, demoBatch)
	reqIDs := make([][]byte, 0, demoBatch)
	already := make([]bool, demoBatch)
	for i := 0; i < adds && time.Now().UnixNano() < deadline; {
		batch, idx, reqIDs = batch[:0], idx[:0], reqIDs[:0]
		for ; len(batch) < demoBatch && i < adds; i++ {
			x := zipf.Uint64()
			batch = append(batch, []byte(clientAddr(x)))
			idx = append(idx, x)
			reqIDs = append(reqIDs, []byte(fmt.Sprintf("req-%d-%d", id, i)))
		}
		// Some requests one at a time, the rest in a batch; the period
		// read before and after says which periods the adds went to.
		lo := win.Current()
		if _, err := win.AddString(string(batch[0])); err != nil {
			return err
		}
		if err := win.AddBatch(batch[1:], nil); err != nil {
			return err
		}
		if err := dw.AddBatch(batch); err != nil {
			return err
		}
		count(lo, win.Current(), idx...)
		if err := ids.AddBatch(reqIDs, already[:len(reqIDs)]); err != nil {
			return err
		}
		for _, s := range already[:len(reqIDs)] {
			if s {
				seen++
			} else {
				added++
			}
		}
	}
	for k, c := range counts {
		for i, n := range c {
			if n > 0 {
				fmt.Fprintln(stdout, "c", k[0], k[1], i, n)
			}
		}
	}
	fmt.Fprintln(stdout, "b", added, seen)
	return nil
}
