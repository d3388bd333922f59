package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

var nsTicks = []float64{5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}

// drawCharts writes the SVG charts and records each one's path relative to
// the report in charts.
func (o *orchestration) drawCharts(v *view, mem *memTable, charts map[string]string) error {
	// draw runs a chart function on the chart's path and records the
	// path relative to the report; a chart without data is left out.
	draw := func(name string, f func(path string) error) error {
		path := filepath.Join(o.charts, name)
		rel, err := filepath.Rel(filepath.Dir(o.out), path)
		if err != nil {
			return err
		}
		switch err := f(path); {
		case errors.Is(err, errNoData):
			os.Remove(path)
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		default:
			charts[name] = filepath.ToSlash(rel)
		}
		return nil
	}
	var sizes []float64
	for _, sh := range cmsShapes {
		sizes = append(sizes, float64(sh.bytes()))
	}
	sizeAxis := axis{Label: "Count-Min grid size", Log: true, Ticks: sizes, Fmt: func(x float64) string { return sizeString(int64(x)) }}
	nsAxis := axis{Label: "ns per key (log)", Log: true, Ticks: nsTicks, Fmt: func(x float64) string { return fmt.Sprint(x) }}
	for _, dist := range dists {
		for _, op := range []string{"add", "estimate"} {
			var ss []series
			line := func(name string, color int, dashed bool, k func(shape string) Key) {
				s := series{Name: name, Color: color, Dashed: dashed}
				for i, sh := range cmsShapes {
					s.X = append(s.X, sizes[i])
					s.Y = append(s.Y, v.sum(k(sh.name)).Median)
				}
				ss = append(ss, s)
			}
			single, batch, peer, mapOp := "Add", "AddBatch x256", "BoomFilters Add", "insert"
			if op == "estimate" {
				single, batch, peer, mapOp = "Estimate", "EstimateBatch x256", "BoomFilters Count", "lookup"
			}
			for _, b := range v.buildList() {
				c := map[string]int{"cgo": 0, "purego": 1}[b]
				line(single+", "+buildName[b], c, false, func(s string) Key { return sk(op, b, s, dist, 1) })
				line(batch+", "+buildName[b], c+2, false, func(s string) Key { return sk(op, b, s, dist, 256) })
			}
			line("bare floor", 4, false, func(s string) Key { return cmsKey(op, "floor", "", s, dist, 1, 1, 1) })
			line(peer, 6, false, func(s string) Key { return cmsKey(op, "boom", "", s, dist, 1, 1, 1) })
			line("sync.Mutex + map "+mapOp+", 1M keys", 8, true, func(string) Key { return mapKey("mutexmap", mapOp, dist) })
			line("sync.Map "+mapOp+", 1M keys", 9, true, func(string) Key { return mapKey("syncmap", mapOp, dist) })
			title := fmt.Sprintf("Count-Min %s, %s keys: ns per key by grid size", single, dist)
			if err := draw(fmt.Sprintf("countmin-%s-%s.svg", op, dist), func(path string) error {
				return lineChart(path, title, sizeAxis, nsAxis, ss)
			}); err != nil {
				return err
			}
		}
	}
	var bs []float64
	for _, n := range batchSizes {
		bs = append(bs, float64(n))
	}
	for _, op := range []string{"add", "estimate"} {
		var ss []series
		for i, shape := range []string{"default", "C"} {
			for _, b := range v.buildList() {
				c := 2*i + map[string]int{"cgo": 0, "purego": 1}[b]
				s := series{Name: fmt.Sprintf("%s, %s", shapeLabel(shape), buildName[b]), X: bs, Color: c}
				for _, n := range batchSizes {
					s.Y = append(s.Y, 1000/v.sum(sk(op, b, shape, "uniform", n)).Median)
				}
				ss = append(ss, s)
			}
		}
		title := map[string]string{"add": "AddBatch", "estimate": "EstimateBatch"}[op] + ": throughput by batch size (uniform keys; 1 = a single-key call)"
		if err := draw("batch-"+op+".svg", func(path string) error {
			return lineChart(path, title,
				axis{Label: "keys per call", Log: true, Ticks: bs, Fmt: func(x float64) string { return fmt.Sprint(x) }},
				axis{Label: "million keys per second"}, ss)
		}); err != nil {
			return err
		}
	}
	if mem != nil {
		var xs []float64
		for _, n := range mem.Counts {
			xs = append(xs, float64(n))
		}
		var ss []series
		for i, impl := range memImpls {
			s := series{Name: strings.ReplaceAll(memLabels[impl], "`", ""), X: xs, Color: []int{8, 9, 6, 5}[i], Dashed: true}
			for _, r := range mem.Heap[impl] {
				s.Y = append(s.Y, float64(r.Heap))
			}
			ss = append(ss, s)
		}
		for i, impl := range sketchMem {
			s := series{Name: memLabels[impl], X: xs, Color: 2 * i}
			for _, b := range mem.Bytes[impl] {
				s.Y = append(s.Y, float64(b))
			}
			ss = append(ss, s)
		}
		var ticks []float64
		for e := 10; e <= 34; e += 4 {
			ticks = append(ticks, math.Ldexp(1, e))
		}
		if err := draw("memory.svg", func(path string) error {
			return lineChart(path, "Memory by distinct keys",
				axis{Label: "distinct keys", Log: true, Ticks: xs, Fmt: func(x float64) string { return countLabel(int(x)) }},
				axis{Label: "bytes (log)", Log: true, Ticks: ticks, Fmt: func(x float64) string { return sizeString(int64(x)) }}, ss)
		}); err != nil {
			return err
		}
	}
	var groups []barGroup
	for _, g := range v.writerRows() {
		g2, p2 := g.key, g.key
		g2.Writers, p2.Procs = 2, 2
		groups = append(groups, barGroup{Label: g.short, Values: []float64{1 / v.ratio(g2, g.key).Median, 1 / v.ratio(p2, g.key).Median}})
	}
	if err := draw("writers.svg", func(path string) error {
		return barChart(path, "Two writers: throughput relative to one (uniform keys)", "throughput relative to one writer",
			[]string{"two goroutines", "two processes"}, groups, 1)
	}); err != nil {
		return err
	}
	return draw("lanes.svg", v.lanesChart)
}
