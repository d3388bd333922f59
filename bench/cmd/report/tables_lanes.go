package main

import "fmt"

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
