package main

import (
	"fmt"
	"strings"
)

// lanesTable is the lanes rows of each build: one writer's ns per key by
// lanes, then each kind's throughput with 2 and 4 writers over one
// writer's on a file of as many lanes, with the bare floor's (a grid a
// writer) in the last column.
func (v *view) lanesTable() *mdTable {
	t := &mdTable{Header: []string{fmt.Sprintf("blind `AddBatch` ×%d, zipf keys, default shape", lanesBatch)}}
	for _, l := range laneCounts {
		t.Header = append(t.Header, lanesLabel(l))
	}
	t.Header = append(t.Header, "bare floor, a grid a writer")
	for _, b := range v.buildList() {
		cells := []string{"one writer, ns per key, " + buildName[b]}
		ran := false
		for _, l := range laneCounts {
			cells = append(cells, v.ns(lanesKey(b, l, 1, 1, 1)))
			ran = ran || v.sum(lanesKey(b, l, 1, 1, 1)).N > 0
		}
		if !ran {
			continue
		}
		t.add(append(cells, v.ns(floorGridsKey(1)))...)
		for _, k := range writerKinds {
			for _, w := range writerCounts[1:] {
				cells := []string{fmt.Sprintf("%d %s, throughput ×, %s", w, k.name, buildName[b])}
				for _, l := range laneCounts {
					cells = append(cells, v.times(k.key(b, l, w), lanesKey(b, l, 1, 1, 1), true))
				}
				t.add(append(cells, v.times(floorGridsKey(w), floorGridsKey(1), true))...)
			}
		}
	}
	return t
}

func lanesLabel(l int) string {
	if l == 1 {
		return "1 lane (no lanes)"
	}
	return fmt.Sprintf("%d lanes", l)
}

// speedup is the median over rounds of one writer's time over a's: a's
// throughput relative to one writer's.
func (v *view) speedup(a, one Key) float64 { return 1 / v.ratio(a, one).Median }

// ratioTicks are the lanes chart's: no more writers than 4 can give more.
var ratioTicks = []float64{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4}

// lanesChart draws the main build's lanes rows: throughput relative to
// one writer by writers, a line for each kind of writers and lane count,
// and the bare floor's line (a grid a writer) dashed.
func (v *view) lanesChart(path string) error {
	b := v.mainBuild()
	var xs []float64
	for _, w := range writerCounts {
		xs = append(xs, float64(w))
	}
	var ss []series
	for i, k := range writerKinds {
		for j, l := range laneCounts {
			s := series{Name: fmt.Sprintf("%s, %s", k.name, lanesLabel(l)), X: xs, Color: 3*i + j}
			for _, w := range writerCounts {
				s.Y = append(s.Y, v.speedup(k.key(b, l, w), lanesKey(b, l, 1, 1, 1)))
			}
			ss = append(ss, s)
		}
	}
	fl := series{Name: "bare floor, a grid a writer (the limit)", X: xs, Color: 9, Dashed: true}
	for _, w := range writerCounts {
		fl.Y = append(fl.Y, v.speedup(floorGridsKey(w), floorGridsKey(1)))
	}
	ss = append(ss, fl)
	title := fmt.Sprintf("Blind AddBatch x%d, default shape, zipf keys, %s: throughput by writers and lanes", lanesBatch, buildName[b])
	return lineChart(path, title,
		axis{Label: "writers", Log: true, Ticks: xs, Fmt: func(x float64) string { return fmt.Sprint(x) }},
		axis{Label: "throughput relative to one writer", Ticks: ratioTicks, Fmt: func(x float64) string { return fmt.Sprintf("%.1fx", x) }}, ss)
}

// overTable is conservative update's over-estimates beside plain adds':
// each sketch's file bytes and the pages it wrote, the mean, 99th
// percentile and largest over-estimate of a distinct word, and the mean's
// and the 99th percentile's ratios to plain adds on one grid (the first
// row). A row with words estimated low says so in bold.
func overTable(o *overEstimates) *mdTable {
	sh := shapeNamed("default")
	t := &mdTable{Header: []string{
		fmt.Sprintf("%d × %d unless said", sh.rows, sh.width), "file bytes", "pages written", "mean over-estimate",
		"99th percentile", "max", "mean / plain one grid", "99th percentile / plain one grid"}}
	base := o.Rows[0]
	for _, r := range o.Rows {
		label := r.Config.label()
		if r.Low > 0 {
			label += fmt.Sprintf(" **(ERROR: %d words estimated below their count)**", r.Low)
		}
		t.add(label, sizeString(r.Bytes), sizeString(r.Written), num(r.Mean), fmt.Sprint(r.P99), fmt.Sprint(r.Max),
			timesOf(r.Mean, base.Mean), timesOf(float64(r.P99), float64(base.P99)))
	}
	return t
}

// timesOf writes a over b as "0.52x", or "–" when b is 0.
func timesOf(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return num(a/b) + "x"
}

// overStream describes the real text the over-estimates are measured on.
func overStream(o *overEstimates) string {
	part := "the words"
	if o.Capped {
		part = fmt.Sprintf("the first %s words", countLabel(o.Words))
	}
	return fmt.Sprintf("%s of the Go %s sources (every `.go` file under `$GOROOT/src` outside `testdata` directories, in sorted path order, split at every rune that is not a letter, a digit or `_`): %d words, %d distinct, from %d files",
		part, o.Version, o.Words, o.Distinct, o.Files)
}

// overFigures writes a row's mean and 99th percentile.
func overFigures(r overRow) string {
	return fmt.Sprintf("a mean of %s and a 99th percentile of %d", num(r.Mean), r.P99)
}

// overRatios writes a row's mean and 99th percentile over another's.
func overRatios(r, base overRow) string {
	return timesOf(r.Mean, base.Mean) + " and " + timesOf(float64(r.P99), float64(base.P99))
}

// overSummary says what the rows show, from their figures, a sentence an
// element. Errors (words estimated low) come first.
func overSummary(o *overEstimates) []string {
	var out []string
	for _, r := range o.Rows {
		if r.Low > 0 {
			out = append(out, fmt.Sprintf("**ERROR: %s estimated %d words below their exact count, which a Count-Min sketch must never do.**", r.Config.phrase(), r.Low))
		}
	}
	find := func(ok func(c overConfig) bool) (overRow, bool) {
		for _, r := range o.Rows {
			if ok(r.Config) {
				return r, true
			}
		}
		return overRow{}, false
	}
	sh := shapeNamed("default")
	base := o.Rows[0]
	var cus []overRow
	for _, r := range o.Rows {
		if r.Config.Conservative {
			cus = append(cus, r)
		}
	}
	// The same shape.
	var same []string
	for i, r := range cus {
		s := fmt.Sprintf("%s over-estimates with %s, %s plain adds' (%s)", r.Config.phrase(), overFigures(r), overRatios(r, base), overFigures(base))
		if i > 0 {
			s = fmt.Sprintf("%s (each raising its own lane; an estimate sums the lanes), %s, %s", r.Config.phrase(), overFigures(r), overRatios(r, base))
		}
		same = append(same, s)
	}
	if len(same) > 0 {
		out = append(out, "At the default shape, "+strings.Join(same, "; ")+".")
	}
	if r, ok := find(func(c overConfig) bool { return !c.Conservative && c.Lanes > 1 && c.Width == sh.width }); ok {
		figures := "the figures of one grid"
		if r.Mean != base.Mean || r.P99 != base.P99 || r.Max != base.Max {
			figures = "other figures than one grid's"
		}
		out = append(out, fmt.Sprintf("Plain adds on %d lanes from one handle write one lane and give %s, in %s instead of %s.",
			r.Config.Lanes, figures, sizeString(r.Bytes), sizeString(base.Bytes)))
	}
	// What the files take.
	if len(cus) > 0 {
		r := cus[0]
		zeros := r.Bytes - r.Written
		s := fmt.Sprintf("Conservative update keeps one grid more than its lanes, the shared lane (%s here), for adds without a lane of their own; %s, whose one writer owns a lane, left %s of its %s file all zeros",
			sizeString(sh.bytes()), r.Config.phrase(), sizeString(zeros), sizeString(r.Bytes))
		reserved := true
		for _, x := range o.Rows {
			reserved = reserved && x.Allocated >= x.Bytes
		}
		if reserved {
			s += ", but the library reserves every block of a file it creates (fallocate), so on tmpfs each file here took its whole size in memory, zeros included."
		} else {
			s += fmt.Sprintf(", and the file had %s of blocks allocated.", sizeString(r.Allocated))
		}
		out = append(out, s)
	}
	// Equal bytes.
	for i, r := range cus {
		counters := r.Config.grids() * sh.width
		var near []overRow
		for _, x := range nearestWidths(counters) {
			if p, ok := find(func(c overConfig) bool { return !c.Conservative && c.Lanes <= 1 && c.Width == x }); ok {
				near = append(near, p)
			}
		}
		var s string
		switch {
		case len(near) == 0:
			continue
		case len(near) == 1 && near[0].Config.Width == counters:
			s = fmt.Sprintf("%s (%d grids, %s) has the counters of one grid of width %d", r.Config.phrase(), r.Config.grids(), sizeString(r.Bytes), counters)
		case len(near) == 1:
			s = fmt.Sprintf("%s (%d grids, %s) is nearest one grid of width %d", r.Config.phrase(), r.Config.grids(), sizeString(r.Bytes), near[0].Config.Width)
		default:
			s = fmt.Sprintf("%s (%d grids, %s) lies halfway between one grid of width %d and one of %d (widths are powers of two)", r.Config.phrase(), r.Config.grids(), sizeString(r.Bytes), near[0].Config.Width, near[1].Config.Width)
		}
		if i == 0 {
			s = "At equal file bytes plain adds get a wider grid: " + s
		} else {
			s = capitalize(s)
		}
		var parts []string
		for _, p := range near {
			parts = append(parts, fmt.Sprintf("width %d (%s) has %s, %s conservative update's: %s", p.Config.Width, sizeString(p.Bytes), overFigures(p), overRatios(p, r), verdict(p, r)))
		}
		out = append(out, s+"; "+strings.Join(parts, "; ")+".")
	}
	return out
}

// verdict says which of a plain grid p and conservative update r
// over-estimates less, on the mean and the 99th percentile together.
func verdict(p, r overRow) string {
	switch {
	case p.Mean == r.Mean && p.P99 == r.P99:
		return "the same"
	case p.Mean <= r.Mean && p.P99 <= r.P99:
		return "plain adds over-estimate less"
	case p.Mean >= r.Mean && p.P99 >= r.P99:
		return "conservative update over-estimates less"
	}
	return "lower on one figure, higher on the other"
}

// capitalize starts a sentence with s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
