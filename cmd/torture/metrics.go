package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/shmsketch/sketch"
)

// The metrics part: the crafted specimens (metrics_specimens.go), then
// mutated copies of them and of the mutate part's specimens, opened
// read-only by scrapers of both builds through every metrics path of the
// main module: each structure's StatsVar, an arena's ArenaMetrics as
// expvar (String, and inside an expvar.Map) and as an http.Handler (with
// and without ?name=), and the CLI's sketch watch --json on the file and
// on each FILE:NAME of an arena. No panic, no crash, no hang; every output
// valid JSON and valid UTF-8. The Prometheus collectors live in the prom
// module, which this one cannot import: they have a fuzz target there.
type metricsConfig struct {
	files       int           // the most files, each scraped by both builds
	batch       int           // files per scraper child
	hang        time.Duration // a file that takes longer hung its child
	budget      time.Duration // no batch starts after this
	watchBudget time.Duration // no watch starts after this
	watchNames  int           // FILE:NAME watches per arena, at most
}

func metricsConfigFor(short bool) metricsConfig {
	if short {
		return metricsConfig{files: 120, batch: 60, hang: mutateHang, budget: 4 * time.Second, watchBudget: 4 * time.Second, watchNames: 2}
	}
	return metricsConfig{files: 20000, batch: 250, hang: mutateHang, budget: time.Minute, watchBudget: time.Minute, watchNames: 4}
}

func init() {
	roles["scraper"] = func([]string) error { return runScraper(os.Stdin, os.Stdout) }
}

// scrapeResult is what a scraper child reports for one file, one JSON
// line each.
type scrapeResult struct {
	File    int      `json:"file"`
	Opened  int      `json:"opened"`  // structures and arenas that opened
	Outputs int      `json:"outputs"` // outputs checked
	Bad     []string `json:"bad,omitempty"`
	Panics  []string `json:"panics,omitempty"`
	// Names are an arena's structure names, for watch FILE:NAME.
	Names  [][]byte `json:"names,omitempty"`
	Arena  bool     `json:"arena,omitempty"`
	Micros int64    `json:"us"`
}

// outputFault says what is wrong with an output that must be JSON (or,
// when wantJSON is false, only text): "" when nothing is.
func outputFault(b []byte, wantJSON bool) string {
	switch {
	case !utf8.Valid(b):
		return "not valid UTF-8"
	case wantJSON && !json.Valid(b):
		return "not valid JSON"
	}
	return ""
}

// jsonLinesFault is outputFault for JSON Lines: every line one value.
func jsonLinesFault(b []byte) string {
	if !utf8.Valid(b) {
		return "not valid UTF-8"
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			return fmt.Sprintf("a line is not valid JSON: %.80q", l)
		}
	}
	return ""
}

// runScraper reads file paths from stdin, one a line, scrapes each and
// writes a scrapeResult line per file.
func runScraper(in io.Reader, out io.Writer) error {
	var paths []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		paths = append(paths, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	for i, path := range paths {
		began := time.Now()
		r := scrapeResult{File: i}
		scrapeFile(path, &r)
		r.Micros = time.Since(began).Microseconds()
		if err := enc.Encode(&r); err != nil {
			return err
		}
	}
	return nil
}

// scraper checks one file's outputs; a panic is recovered and named after
// the step it happened in.
type scraper struct{ r *scrapeResult }

func (s scraper) step(where string, f func()) {
	defer func() {
		if v := recover(); v != nil {
			s.r.Panics = append(s.r.Panics, fmt.Sprintf("%s: %v", where, v))
		}
	}()
	f()
}

func (s scraper) output(where string, b []byte, wantJSON bool) {
	s.r.Outputs++
	if f := outputFault(b, wantJSON); f != "" {
		s.r.Bad = append(s.r.Bad, fmt.Sprintf("%s: %s: %.120q", where, f, b))
	}
}

// serve asks h for target and checks the answer: JSON when the status is
// 200, text otherwise; wantOK says a 200 is due.
func (s scraper) serve(h http.Handler, target string, wantOK bool) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	ok := rec.Code == http.StatusOK
	if wantOK && !ok {
		s.r.Bad = append(s.r.Bad, fmt.Sprintf("GET %s: status %d, want 200: %.120q", target, rec.Code, rec.Body.Bytes()))
		return
	}
	s.output("GET "+target, rec.Body.Bytes(), ok)
}

// scrapeFile opens the file read-only with every kind's open and as an
// arena, and reads every metrics output of whatever opened.
func scrapeFile(path string, r *scrapeResult) {
	s := scraper{r}
	for _, k := range structKinds {
		s.step("open "+string(k.kind), func() {
			h, err := k.open(sketch.Path(path), nil, sketch.WithReadOnly(), sketch.WithWaitTimeout(openWait))
			if err != nil {
				return
			}
			r.Opened++
			defer h.(handle).Close()
			s.step("StatsVar "+string(k.kind), func() { s.output("StatsVar", []byte(h.(handle).StatsVar().String()), true) })
		})
	}
	s.step("open arena", func() {
		a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{}, sketch.WithReadOnly(), sketch.WithWaitTimeout(openWait))
		if err != nil {
			return
		}
		r.Opened++
		r.Arena = true
		defer a.Close()
		m := a.Metrics()
		defer m.Close()
		var vars expvar.Map
		vars.Init()
		vars.Set("arena", m)
		s.step("ArenaMetrics.String", func() { s.output("ArenaMetrics.String", []byte(m.String()), true) })
		s.step("ArenaMetrics.ServeHTTP", func() { s.serve(m, "/", true) })
		for _, e := range a.List() {
			r.Names = append(r.Names, []byte(e.Name))
			target := "/?" + url.Values{"name": {e.Name}}.Encode()
			s.step("ArenaMetrics.ServeHTTP ?name=", func() { s.serve(m, target, true) })
			k := structKindOf(e.Kind)
			if k == nil {
				continue
			}
			s.step("open "+string(k.kind)+" in the arena", func() {
				h, err := k.open(a.Place(e.Name), nil)
				if err != nil {
					return
				}
				r.Opened++
				defer h.(handle).Close()
				sv := h.(handle).StatsVar()
				vars.Set(fmt.Sprintf("structure-%d", len(r.Names)), sv)
				s.step("StatsVar in the arena", func() { s.output("StatsVar "+e.Name, []byte(sv.String()), true) })
				s.step("expvar.Map", func() { s.output("expvar.Map", []byte(vars.String()), true) })
			})
		}
		for _, name := range []string{"", "\xff\xfe absent", "\x1b[2J"} {
			target := "/?" + url.Values{"name": {name}}.Encode()
			s.step("ArenaMetrics.ServeHTTP ?name= absent", func() { s.serve(m, target, false) })
		}
		s.step("expvar.Map", func() { s.output("expvar.Map", []byte(vars.String()), true) })
	})
}

// A metricsTally is one scraper build's (or one CLI build's) count.
type metricsTally struct {
	what                            string // the build
	files, runs, opened, outputs    int
	bad                             int
	panics, hangs, signals, crashes int
	first                           string
	keep                            string
	slowest                         time.Duration
}

func (t *metricsTally) violations() int { return t.bad + t.panics + t.hangs + t.signals + t.crashes }

func (t *metricsTally) note(m mutant, what string) {
	if t.first != "" {
		return
	}
	t.first = fmt.Sprintf("#%d (%s): %s", m.index, m.what, what)
	if t.keep != "" && os.MkdirAll(t.keep, 0o755) == nil {
		if data, err := os.ReadFile(m.path); err == nil {
			name := filepath.Join(t.keep, fmt.Sprintf("%06d", m.index))
			if os.WriteFile(name, data, 0o600) == nil {
				t.first += ", kept as " + name
			}
		}
	}
}

func (t *metricsTally) add(r scrapeResult, m mutant) {
	t.files++
	t.opened += r.Opened
	t.outputs += r.Outputs
	t.bad += len(r.Bad)
	t.panics += len(r.Panics)
	if d := time.Duration(r.Micros) * time.Microsecond; d > t.slowest {
		t.slowest = d
	}
	for _, b := range r.Bad {
		t.note(m, b)
	}
	for _, p := range r.Panics {
		t.note(m, "panic in "+p)
	}
}

// exit counts a child that ended badly on m.
func (t *metricsTally) exit(e childExit, m mutant) {
	switch e.kind {
	case "hang":
		t.hangs++
	case "signal":
		t.signals++
	case "panic":
		t.panics++
	default:
		t.crashes++
	}
	t.note(m, e.kind+": "+e.name)
}

// runMetrics makes the specimens and the files batch by batch, has both
// builds scrape each batch at once, then runs the CLI's watch over the
// files it has time for.
func runMetrics(s setting, cfg metricsConfig) ([]row, error) {
	valid := filepath.Join(s.dir, "valid")
	if err := os.MkdirAll(valid, 0o755); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(s.seed, 0x6d6574726963))
	crafted, err := makeMetricsSpecimens(valid, rng)
	if err != nil {
		return nil, err
	}
	others, err := makeSpecimens(valid, rng)
	if err != nil {
		return nil, err
	}
	// The crafted ones first as they are, then mutated, three times as
	// often as the others.
	pool := append(append(append(append([]specimen(nil), crafted...), crafted...), crafted...), others...)
	keep := filepath.Join(os.TempDir(), fmt.Sprintf("sketch-torture-metrics-%d", s.seed))
	tallies := make([]*metricsTally, len(s.builds))
	for i, b := range s.builds {
		tallies[i] = &metricsTally{what: b.backend, keep: keep}
	}
	// The CLI builds (a link of a few seconds each) while the scrapers
	// run; the short run builds the pure-Go CLI only.
	type built struct {
		clis []build
		err  error
	}
	cliDone := make(chan built, 1)
	if s.module != "" {
		go func() {
			clis, err := buildCLIs(s.module, s.dir, !s.short)
			cliDone <- built{clis, err}
		}()
	}
	files := filepath.Join(s.dir, "files")
	if err := os.MkdirAll(files, 0o755); err != nil {
		return nil, err
	}
	var all []mutant
	arenas := map[int][][]byte{} // an arena file's names, as a scraper listed them
	began := time.Now()
	stopped := ""
	for len(all) < cfg.files {
		if time.Since(began) > cfg.budget {
			stopped = fmt.Sprintf(" (its %s budget ran out)", cfg.budget)
			break
		}
		batch, err := writeMetricsBatch(files, len(all), min(len(all)+cfg.batch, cfg.files), crafted, pool, s.seed)
		if err != nil {
			return nil, err
		}
		all = append(all, batch...)
		if err := scrapeAtOnce(s.builds, batch, cfg.hang, tallies, arenas); err != nil {
			return nil, err
		}
	}
	rows := metricsRows(tallies, len(crafted), len(others), time.Since(began), stopped)

	if s.module == "" {
		return append(rows, cannotRun("metrics: sketch watch --json over crafted and mutated files", "needs -module (the CLI is built from it) and the go tool")), nil
	}
	b := <-cliDone
	if b.err != nil {
		return nil, b.err
	}
	return append(rows, watchFiles(b.clis, all, arenas, cfg, keep)...), nil
}

// writeMetricsBatch writes the files from to end-1 of the pass: the crafted
// specimens as they are, then mutated copies of the pool.
func writeMetricsBatch(files string, from, end int, crafted, pool []specimen, seed uint64) ([]mutant, error) {
	var batch []mutant
	for i := from; i < end; i++ {
		m := mutant{index: i, path: filepath.Join(files, fmt.Sprintf("%06d", i))}
		var data []byte
		if i < len(crafted) {
			data, m.what = crafted[i].data, crafted[i].name+": as crafted"
		} else {
			data, m.what = mutate(pool[i%len(pool)], seed^0x6d6574726963, i)
		}
		if err := os.WriteFile(m.path, data, 0o600); err != nil {
			return nil, err
		}
		batch = append(batch, m)
	}
	return batch, nil
}

// scrapeAtOnce has a scraper of every build go over the batch at the same
// time; the first build's listings of arena files land in arenas, for the
// watch's FILE:NAME runs.
func scrapeAtOnce(builds []build, batch []mutant, hang time.Duration, tallies []*metricsTally, arenas map[int][][]byte) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make([]error, len(builds))
	for i, b := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = scrapeBatch(b, batch, hang, tallies[i], func(r scrapeResult, m mutant) {
				if r.Arena && i == 0 {
					mu.Lock()
					arenas[m.index] = r.Names
					mu.Unlock()
				}
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// watchFiles runs the CLIs' watch over the files, by turns, within its
// budget: each file, and FILE:NAME for the first names of an arena's.
func watchFiles(clis []build, all []mutant, arenas map[int][][]byte, cfg metricsConfig, keep string) []row {
	wt := make([]*metricsTally, len(clis))
	for i, c := range clis {
		wt[i] = &metricsTally{what: c.backend, keep: keep}
	}
	wb := time.Now()
	stopped := ""
	for i, m := range all {
		if time.Since(wb) > cfg.watchBudget {
			stopped = fmt.Sprintf(" (its %s budget ran out after %d of %d files)", cfg.watchBudget, i, len(all))
			break
		}
		args := []string{m.path}
		for j, name := range arenas[m.index] {
			if j < cfg.watchNames && !strings.ContainsRune(string(name), 0) {
				args = append(args, m.path+":"+string(name))
			}
		}
		t := wt[i%len(wt)]
		t.files++
		for _, a := range args {
			t.runs++
			runWatch(clis[i%len(clis)], a, cfg.hang, t, m)
		}
	}
	return watchRows(wt, len(all), time.Since(wb), stopped)
}

// scrapeBatch runs a scraper child of b over the batch; a child that hangs
// or dies on a file is counted, and a new one goes on after that file.
func scrapeBatch(b build, batch []mutant, hang time.Duration, t *metricsTally, seen func(scrapeResult, mutant)) error {
	for len(batch) > 0 {
		done, exit, err := runFileChild(b, []string{"scraper"}, batch, hang, func(i int, line []byte) error {
			var r scrapeResult
			if err := json.Unmarshal(line, &r); err != nil {
				return err
			}
			if r.File != i {
				return fmt.Errorf("a result for file %d, want file %d", r.File, i)
			}
			t.add(r, batch[i])
			seen(r, batch[i])
			return nil
		})
		if err != nil {
			return err
		}
		if done == len(batch) {
			return nil
		}
		t.files++
		t.exit(exit, batch[done])
		batch = batch[done+1:]
	}
	return nil
}

// buildCLIs builds the CLI from the module, pure Go and, when withCgo is
// set and a C compiler is there, cgo.
func buildCLIs(module, dir string, withCgo bool) ([]build, error) {
	var out []build
	for _, cgo := range []string{"0", "1"} {
		if cgo == "1" && !withCgo {
			break
		}
		bin := filepath.Join(dir, "sketch.cgo"+cgo)
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/sketch")
		cmd.Dir = module
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		if msg, err := cmd.CombinedOutput(); err != nil {
			if cgo == "1" && len(out) > 0 {
				break // no C compiler: the pure-Go CLI alone
			}
			return nil, fmt.Errorf("go build ./cmd/sketch: %v: %s", err, msg)
		}
		backend := "purego"
		if cgo == "1" {
			backend = "cgo"
		}
		out = append(out, build{path: bin, backend: backend})
	}
	return out, nil
}

// runWatch runs sketch watch --json for two samples on target and counts
// how it ended: an error exit is an answer (the file is refused); a
// signal, a panic, a runtime crash, a hang or output that is not JSON
// Lines of valid UTF-8 is a violation.
func runWatch(cli build, target string, hang time.Duration, t *metricsTally, m mutant) {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli.path, "watch", "--json", "--interval", "1ms", "--count", "2", target)
	stdout, stderr := &headBuffer{max: 1 << 20}, &headBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second // a killed watch's children may hold its pipes
	began := time.Now()
	err := cmd.Run()
	if d := time.Since(began); d > t.slowest {
		t.slowest = d
	}
	if ctx.Err() != nil {
		t.exit(childExit{"hang", fmt.Sprintf("watch %.60q: no end in %s", target, hang)}, m)
		return
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.exit(childExit{"crash", fmt.Sprintf("watch %.60q: %v", target, err)}, m)
		return
	}
	if e, bad := watchExit(err, stderr.String()); bad {
		e.name = fmt.Sprintf("watch %.60q: %s", target, e.name)
		t.exit(e, m)
		return
	}
	out := []byte(stdout.String())
	t.outputs++
	if err == nil {
		t.opened++
		if f := jsonLinesFault(out); f != "" || len(out) == 0 {
			if f == "" {
				f = "no output"
			}
			t.bad++
			t.note(m, fmt.Sprintf("watch %.60q: %s", target, f))
		}
	} else if len(out) > 0 {
		if f := jsonLinesFault(out); f != "" {
			t.bad++
			t.note(m, fmt.Sprintf("watch %.60q (exit %d): %s", target, ee.ExitCode(), f))
		}
	}
}

// watchExit tells a crash from an answer: killed by a signal, a panic or
// a runtime crash in its standard error.
func watchExit(err error, stderr string) (childExit, bool) {
	if err == nil {
		return childExit{}, false
	}
	e, _ := classifyExit(err, stderr)
	switch e.kind {
	case "signal", "panic":
		return e, true
	}
	if l := firstLine(stderr, "fatal error: "); l != "" {
		return childExit{"crash", l}, true
	}
	if strings.Contains(stderr, "goroutine ") && strings.Contains(stderr, "[running]") {
		return childExit{"crash", firstLine(stderr, "")}, true
	}
	return childExit{}, false
}

func metricsRows(ts []*metricsTally, crafted, others int, took time.Duration, stopped string) []row {
	var rows []row
	for _, t := range ts {
		rows = append(rows, row{
			test:       fmt.Sprintf("metrics: %d crafted files (candidate keys, prefixes, arena names) and mutated copies of them and %d more scraped read-only: StatsVar, ArenaMetrics (String, expvar.Map, ServeHTTP with and without ?name=) (%s build)", crafted, others, t.what),
			runs:       fmt.Sprintf("%d files", t.files),
			violations: t.violations(),
			figure: fmt.Sprintf("%d opens, %d outputs checked (JSON, UTF-8): %d bad; panics %d, hangs %d, signals %d, crashes %d; slowest file %s, pass %s%s%s",
				t.opened, t.outputs, t.bad, t.panics, t.hangs, t.signals, t.crashes, t.slowest.Round(time.Millisecond), took.Round(time.Second), stopped, note(t.first)),
		})
	}
	return rows
}

func watchRows(ts []*metricsTally, files int, took time.Duration, stopped string) []row {
	var rows []row
	for _, t := range ts {
		rows = append(rows, row{
			test:       fmt.Sprintf("metrics: sketch watch --json (two samples) on each file, and FILE:NAME on an arena's crafted names (%s CLI)", t.what),
			runs:       fmt.Sprintf("%d runs", t.runs),
			violations: t.violations(),
			figure: fmt.Sprintf("%d files, %d runs answered (exit 0) with JSON Lines, %d outputs checked: %d bad; panics %d, hangs %d, signals %d, crashes %d; slowest run %s, pass %s%s%s",
				t.files, t.opened, t.outputs, t.bad, t.panics, t.hangs, t.signals, t.crashes, t.slowest.Round(time.Millisecond), took.Round(time.Second), stopped, note(t.first)),
		})
	}
	return rows
}
