package main

import (
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

//go:embed report.md.tmpl
var reportTemplate string

// view answers the report's questions from one run's results.
type view struct {
	res    *results
	m      machine
	builds map[string]bool
}

func (v *view) has(build string) bool { return v.builds[build] }

// samples returns a subject's samples, nil if it was not measured.
func (v *view) samples(k Key) []float64 { return v.res.Samples[k.String()] }

func (v *view) sum(k Key) summary { return summarize(v.samples(k)) }

// ratio summarizes a's time over b's, round by round.
func (v *view) ratio(a, b Key) summary { return summarize(ratios(v.samples(a), v.samples(b))) }

// ns writes a median and its range in ns.
func (v *view) ns(k Key) string {
	s := v.sum(k)
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

// nsBare writes the median alone.
func (v *view) nsBare(k Key) string {
	s := v.sum(k)
	if s.N == 0 {
		return "–"
	}
	return num(s.Median)
}

// times writes a's time over b's (or b's over a's when speedup), as
// "0.42x (0.39–0.45)".
func (v *view) times(a, b Key, speedup bool) string {
	s := v.ratio(a, b)
	if s.N == 0 {
		return "–"
	}
	if speedup {
		s = summary{Median: 1 / s.Median, Min: 1 / s.Max, Max: 1 / s.Min, N: s.N}
	}
	return fmt.Sprintf("%sx (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
}

// num writes a value with about three significant digits (two below
// 0.001).
func num(x float64) string {
	a := math.Abs(x)
	switch {
	case math.IsNaN(x):
		return "–"
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 1:
		return fmt.Sprintf("%.2f", x)
	case a >= 0.001 || a == 0:
		return fmt.Sprintf("%.3f", x)
	}
	// Smaller, as a ratio to a walk of thousands can be: two significant
	// digits, not 0.000.
	return fmt.Sprintf("%.*f", 1-int(math.Floor(math.Log10(a))), x)
}

// mdTable is a Markdown table.
type mdTable struct {
	Header []string
	Rows   [][]string
}

func (t *mdTable) add(cells ...string) { t.Rows = append(t.Rows, cells) }

func (t *mdTable) String() string {
	if t == nil || len(t.Rows) == 0 {
		return "(not measured)\n"
	}
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	row(t.Header)
	sep := make([]string, len(t.Header))
	for i := range sep {
		sep[i] = "---:"
		if i == 0 {
			sep[i] = "---"
		}
	}
	row(sep)
	for _, r := range t.Rows {
		row(r)
	}
	return b.String()
}

// Keys of the subjects, by what they are.
func cmsKey(op, impl, build, shape, dist string, batch, writers, procs int) Key {
	return Key{Struct: "countmin", Op: op, Impl: impl, Build: build, Shape: shape, Dist: dist, Batch: batch, Writers: writers, Procs: procs}
}

func sk(op, build, shape, dist string, batch int) Key {
	return cmsKey(op, "sketch", build, shape, dist, batch, 1, 1)
}

var buildName = map[string]string{"cgo": "cgo build", "purego": "pure-Go build"}

// reportData is what the template fills in.
type reportData struct {
	M             machine
	LoadEnd       string
	Command       string
	Argv          string
	Took          string
	Rounds        int
	Sample        string
	Quick         bool
	Builds        string
	MissingBuild  string
	Keys          []string
	Noise         string // the same code's time ratio between the two workers
	Shapes        *mdTable
	Headline      *mdTable
	CMS           map[string]*mdTable // by dist
	CMSRatios     map[string]*mdTable
	Dists         []string
	Batches       *mdTable
	CBF           *mdTable
	Bloom         *mdTable
	Window        *mdTable
	Heavy         *mdTable // Add with a candidate table
	HeavyAccuracy *mdTable
	HeavyAdds     string   // adds of each accuracy stream
	Distinct      *mdTable // the distinct count's ops beside axiomhq's
	DistinctError *mdTable // and their relative errors
	DistinctRuns  int      // runs of each error
	DistinctFile  string   // a distinct count's file size
	WalkKeys      int      // ops between restores of Count after a change
	Merge         *mdTable
	Exact         *mdTable
	CgoCall       string
	Writers       *mdTable
	Lanes         *mdTable // blind adds by writers and lanes
	LanesBatch    int      // keys a call of the lanes rows
	LanesKeys     int      // keys of the zipf stream they walk
	LanesBuild    string   // the build the lanes chart shows
	Over          *mdTable // conservative update's over-estimates
	OverStream    string   // the real text they are measured on
	OverText      []string // what the rows show, a sentence each
	OverPage      int      // the page size of "pages written"
	OverNote      string   // why they are missing
	Memory        *mdTable
	MemoryGC      *mdTable
	MemoryNote    string
	Callgrind     *mdTable
	CallgrindNote string
	Charts        map[string]string
	Errors        []string
	NotMeasured   []string
	quotes        []string // the README's quotes of the headline
	CGN1, CGN2    int
}

// writeReport renders the report and its charts.
func (o *orchestration) writeReport(v *view, mem *memTable, memErr error, ic []instrCount, icNote string, n1, n2 int, took time.Duration) error {
	if err := os.MkdirAll(o.charts, 0o755); err != nil {
		return err
	}
	d := &reportData{
		M: v.m, LoadEnd: loadAverage(), Command: o.command, Argv: o.argv, Took: took.Round(time.Second).String(),
		Rounds: o.rounds, Sample: o.target.String(), Quick: o.quick,
		CMS: map[string]*mdTable{}, CMSRatios: map[string]*mdTable{}, Dists: dists,
		Charts: map[string]string{}, CGN1: n1, CGN2: n2,
	}
	var names []string
	for _, b := range v.res.Builds {
		names = append(names, buildName[b])
	}
	d.Builds = strings.Join(names, " and ")
	if !v.has("cgo") {
		d.MissingBuild = "The cgo build did not run (no C compiler): every row of this module's structures is the pure-Go build's."
	}
	for _, name := range []string{"zipf", "uniform", "uniform10k", "uint64"} {
		s := makeStream(name, streamLen)
		lo, mean, hi := keyLengths(s)
		d.Keys = append(d.Keys, fmt.Sprintf("`%s`: %d keys, %d to %d bytes, %.1f on average, %d distinct", name, len(s.Bytes), lo, hi, mean, distinct(s)))
	}
	d.Shapes = v.shapesTable()
	if v.has("cgo") && v.has("purego") {
		d.Noise = v.times(sk("add", "cgo", "default", "uniform", 1), sk("add", "purego", "default", "uniform", 1), false)
	}
	d.Headline, d.quotes = v.headline(mem)
	for _, dist := range dists {
		d.CMS[dist], d.CMSRatios[dist] = v.cmsTables(dist)
	}
	d.Batches = v.batchTable()
	d.CBF = v.cbfTable()
	d.Bloom = v.bloomTable()
	d.Window = v.windowTable()
	d.Heavy = v.heavyTable(o.heavy)
	if o.heavy != nil {
		d.HeavyAccuracy, d.HeavyAdds = heavyAccuracyTable(o.heavy), countLabel(o.heavy.Adds)
	}
	d.Distinct, d.DistinctFile, d.WalkKeys = v.distinctTable(), sizeString(distinctFileBytes()), walkKeys
	if o.distinct != nil {
		d.DistinctError, d.DistinctRuns = distinctErrorTable(o.distinct), o.distinct.Runs
	}
	d.Merge = v.mergeTable()
	d.Exact = v.exactTable()
	d.CgoCall = v.ns(cgoRows()[0].Key)
	d.Writers = v.writersTable()
	d.Lanes, d.LanesBatch, d.LanesKeys, d.LanesBuild = v.lanesTable(), lanesBatch, lanesKeys, buildName[v.mainBuild()]
	if o.over != nil {
		d.Over, d.OverStream, d.OverText, d.OverPage = overTable(o.over), overStream(o.over), overSummary(o.over), os.Getpagesize()
		for _, r := range o.over.Rows {
			if r.Low > 0 {
				d.Errors = append(d.Errors, fmt.Sprintf("over-estimates, %s: %d words estimated below their exact count", r.Config.label(), r.Low))
			}
		}
	} else {
		d.OverNote = o.overNote
	}
	if mem != nil {
		d.Memory, d.MemoryGC = memoryTables(mem)
	} else if memErr != nil {
		d.MemoryNote = "Memory was not measured: " + memErr.Error()
	}
	d.Callgrind, d.CallgrindNote = callgrindTable(ic, icNote)
	for _, e := range sortedErrors(v.res.Errors) {
		d.Errors = append(d.Errors, e)
	}
	if err := o.drawCharts(v, mem, d.Charts); err != nil {
		return err
	}
	tmpl, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, d); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if o.readme != "" {
		return o.writeReadme(d)
	}
	return nil
}

// The README's quote of the headline sits between these lines, which the
// report rewrites and leaves the rest of the README alone.
const (
	readmeBegin = "<!-- make bench-report writes from here to the end marker -->"
	readmeEnd   = "<!-- end of what make bench-report writes -->"
)

// writeReadme replaces the quote between the markers in the README, which
// must have them.
func (o *orchestration) writeReadme(d *reportData) error {
	old, err := os.ReadFile(o.readme)
	if err != nil {
		return err
	}
	text := string(old)
	i, j := strings.Index(text, readmeBegin), strings.Index(text, readmeEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q block to rewrite", o.readme, readmeBegin, readmeEnd)
	}
	rel, err := filepath.Rel(filepath.Dir(o.readme), o.out)
	if err != nil {
		return err
	}
	var p strings.Builder
	if o.quick {
		p.WriteString("(A quick check of the report program, not a measurement.) ")
	}
	virt := ""
	if d.M.Virtual != "" {
		virt = ", " + d.M.Virtual
	}
	fmt.Fprintf(&p, "From one run of `make bench-report` on %s (%s%s, %d CPUs; Go %s; load average %s), each ratio measured in the same rounds: ",
		d.M.Date, d.M.CPU, virt, d.M.CPUs, strings.TrimPrefix(strings.Fields(d.M.Go)[0], "go"), d.M.LoadStart)
	p.WriteString(strings.Join(d.quotes, "; "))
	fmt.Fprintf(&p, ". Every structure on both builds, beside `sync.Map`, BoomFilters, bits-and-blooms and axiomhq/hyperloglog, by shape, batch size and writers, with memory, instruction counts and charts: [%s](%s).", filepath.Base(o.out), filepath.ToSlash(rel))
	var b strings.Builder
	b.WriteString(readmeBegin + "\n")
	b.WriteString(wrap(p.String(), 76))
	b.WriteString(text[j:])
	return os.WriteFile(o.readme, []byte(text[:i]+b.String()), 0o644)
}

// wrap breaks text into lines of at most width columns at spaces, as the
// README's paragraphs are.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		switch {
		case n == 0:
		case n+1+len([]rune(w)) > width:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(w)
		n += len([]rune(w))
	}
	return b.String() + "\n"
}

func distinct(s *stream) int {
	m := make(map[string]struct{}, len(s.Strs))
	for _, k := range s.Strs {
		m[k] = struct{}{}
	}
	return len(m)
}

func sortedErrors(errs map[string]string) []string {
	var out []string
	for id, e := range errs {
		out = append(out, fmt.Sprintf("`%s`: %s", id, e))
	}
	sortStrings(out)
	return out
}
