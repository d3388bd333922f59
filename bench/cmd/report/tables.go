package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

func sortStrings(s []string) { slices.Sort(s) }

// order of the builds in tables: cgo (the default) first.
func (v *view) buildList() []string {
	var out []string
	for _, b := range allBuilds {
		if v.has(b) {
			out = append(out, b)
		}
	}
	return out
}

// mainBuild is the build single-key rows are quoted from: the default
// (cgo) when it ran. Single keys are Go code in both builds.
func (v *view) mainBuild() string {
	if v.has("cgo") {
		return "cgo"
	}
	return "purego"
}

func shapeLabel(name string) string {
	sh := shapeNamed(name)
	return fmt.Sprintf("%s %d×%d (%s)", name, sh.rows, sh.width, sizeString(sh.bytes()))
}

func (v *view) shapesTable() *mdTable {
	t := &mdTable{Header: []string{"shape", "rows × width", "counters", "on this machine"}}
	for _, sh := range cmsShapes {
		where := "fits " + v.m.where(sh.bytes())
		if where == "fits DRAM" {
			where = "past the caches"
		}
		t.add(sh.name, fmt.Sprintf("%d × %d", sh.rows, sh.width), sizeString(sh.bytes()), where)
	}
	return t
}

func mapKey(impl, op, dist string) Key { return exactKey(impl, op, dist, 1) }

// headline is the report's first table: the ratios a reader asks for
// first, each from one run.
//
// It also returns the README's quotes of a few of them: phrases with a %s
// for the ratio.
func (v *view) headline(mem *memTable) (*mdTable, []string) {
	t := &mdTable{Header: []string{"", "time ratio (range over rounds)", "medians, ns per key"}}
	var quotes []string
	b := v.mainBuild()
	quote := func(phrase string, ratio float64) {
		if phrase != "" && !math.IsNaN(ratio) {
			quotes = append(quotes, fmt.Sprintf(phrase, "**"+num(ratio)+"x**"))
		}
	}
	row := func(what, phrase string, a, base Key, speedup bool) {
		if v.sum(a).N == 0 || v.sum(base).N == 0 {
			return
		}
		r := v.times(a, base, speedup)
		m := v.ratio(a, base).Median
		if speedup {
			r, m = "**"+r+"** the throughput", 1/m
		} else {
			r = "**" + r + "**"
		}
		t.add(what, r, v.nsBare(a)+" vs "+v.nsBare(base))
		quote(phrase, m)
	}
	add1 := sk("add", b, "default", "uniform", 1)
	est1 := sk("estimate", b, "default", "uniform", 1)
	row("Count-Min `Add` (default shape, uniform keys) / `sync.Mutex` + map insert (1M keys)", "a Count-Min `Add` (default shape) costs %s a `sync.Mutex` + map insert with 1M keys", add1, mapKey("mutexmap", "insert", "uniform"), false)
	row("Count-Min `Add` / `sync.Map` + atomic counter insert (1M keys)", "", add1, mapKey("syncmap", "insert", "uniform"), false)
	row("Count-Min `Add` / BoomFilters Count-Min `Add` (same shape)", "the same `Add` costs %s BoomFilters' on the same shape", add1, cmsKey("add", "boom", "", "default", "uniform", 1, 1, 1), false)
	row("Count-Min `Add` / the bare floor (XXH3-128 and one atomic add per row, nothing else)", "", add1, cmsKey("add", "floor", "", "default", "uniform", 1, 1, 1), false)
	row("Count-Min `Estimate` / `sync.Mutex` + map lookup (1M keys)", "an `Estimate` costs %s a map lookup", est1, mapKey("mutexmap", "lookup", "uniform"), false)
	row("Count-Min `Estimate` / BoomFilters `Count`", "", est1, cmsKey("estimate", "boom", "", "default", "uniform", 1, 1, 1), false)
	if v.has("cgo") {
		row("`AddBatch` ×256 (cgo build, C core) / `Add`, 160 MiB shape C, uniform", "past the caches (160 MiB) `AddBatch` in the cgo build costs %s single `Add`s", sk("add", "cgo", "C", "uniform", 256), sk("add", "cgo", "C", "uniform", 1), false)
		row("`EstimateBatch` ×256 (cgo build) / `Estimate`, shape C", "", sk("estimate", "cgo", "C", "uniform", 256), sk("estimate", "cgo", "C", "uniform", 1), false)
		row("`AddBatch` ×256, cgo build / pure-Go build, shape C", "", sk("add", "cgo", "C", "uniform", 256), sk("add", "purego", "C", "uniform", 256), false)
	}
	row("counting Bloom `Add` / BoomFilters `CountingBloomFilter.Add` (1M items, 1%)", "a counting Bloom filter `Add` costs %s BoomFilters'", cbfKey("add", "sketch", b, 1, 1, 1), cbfKey("add", "boom", "", 1, 1, 1), false)
	row("counting Bloom `Contains` / BoomFilters `Test`", "", cbfKey("contains", "sketch", b, 1, 1, 1), cbfKey("contains", "boom", "", 1, 1, 1), false)
	if v.has("cgo") {
		row("counting Bloom `AddBatch` ×256 (cgo build) / `Add`", "", cbfKey("add", "sketch", "cgo", 256, 1, 1), cbfKey("add", "sketch", "cgo", 1, 1, 1), false)
	}
	row("Bloom `Add` / bits-and-blooms `Add` (1M keys, 1%)", "", bloomKey("add", "sketch", b, "1M", 1, 1, 1), bloomKey("add", "bitsblooms", "", "1M", 1, 1, 1), false)
	row("Bloom `Contains` / bits-and-blooms `Test` (1M keys, 1%)", "a Bloom filter `Contains` costs %s bits-and-blooms' `Test`", bloomKey("check", "sketch", b, "1M", 1, 1, 1), bloomKey("check", "bitsblooms", "", "1M", 1, 1, 1), false)
	row("Bloom `Contains` / bits-and-blooms `Test` (100M keys, 1%: 120 MiB)", "", bloomKey("check", "sketch", b, "100M", 1, 1, 1), bloomKey("check", "bitsblooms", "", "100M", 1, 1, 1), false)
	row("distinct count `Add` / axiomhq/hyperloglog `Insert` (precision 14, 8-byte keys)", "a distinct count's `Add` (precision 14) costs %s axiomhq/hyperloglog's `Insert`", distinctKey("add", "sketch", b, "uint64", 1, 1, 1), distinctKey("add", "axiomhq", "", "uint64", 1, 1, 1), false)
	row("Count-Min window `Add` (two periods) / Count-Min `Add`, default shape", "", windowKey("add", b, "default", 1, 1), add1, false)
	row("two goroutines adding to one Count-Min (default shape) / one", "", cmsKey("add", "sketch", b, "default", "uniform", 1, 2, 1), add1, true)
	row("two processes adding to one Count-Min file (default shape) / one", "two processes adding to one default-shape file get %s the throughput of one", cmsKey("add", "sketch", b, "default", "uniform", 1, 1, 2), add1, true)
	row("two processes adding to one Count-Min file (shape C, 160 MiB) / one", "", cmsKey("add", "sketch", b, "C", "uniform", 1, 1, 2), sk("add", b, "C", "uniform", 1), true)
	if mem != nil {
		last := len(mem.Counts) - 1
		if h := mem.Heap["mutexmap"]; len(h) > last && last >= 0 {
			cms := mem.Bytes["countmin"][last]
			t.add(fmt.Sprintf("memory at %s distinct keys: `sync.Mutex` + map heap / Count-Min (default shape) file", countLabel(mem.Counts[last])),
				fmt.Sprintf("**%sx**", num(float64(h[last].Heap)/float64(cms))), sizeString(h[last].Heap)+" vs "+sizeString(cms))
			quotes = append(quotes, fmt.Sprintf("at %s distinct keys the map's heap is **%sx** the sketch's %s", countLabel(mem.Counts[last]), num(float64(h[last].Heap)/float64(cms)), sizeString(cms)))
		}
	}
	return t, quotes
}

// cmsTables are the Count-Min tables of one stream: ns per key by shape,
// and ratios to the exact map and the peers from the same rounds.
func (v *view) cmsTables(dist string) (nsT, ratioT *mdTable) {
	header := []string{"ns per key"}
	for _, sh := range cmsShapes {
		header = append(header, shapeLabel(sh.name))
	}
	nsT = &mdTable{Header: header}
	row := func(label string, k func(shape string) Key) {
		cells := []string{label}
		any := false
		for _, sh := range cmsShapes {
			kk := k(sh.name)
			cells = append(cells, v.ns(kk))
			any = any || v.sum(kk).N > 0
		}
		if any {
			nsT.add(cells...)
		}
	}
	for _, op := range []string{"add", "estimate"} {
		single, batch, boomOp := "`Add`", "`AddBatch` ×256", "BoomFilters `Add`"
		if op == "estimate" {
			single, batch, boomOp = "`Estimate`", "`EstimateBatch` ×256", "BoomFilters `Count`"
		}
		for _, b := range v.buildList() {
			row(single+", "+buildName[b], func(s string) Key { return sk(op, b, s, dist, 1) })
		}
		for _, b := range v.buildList() {
			row(batch+", "+buildName[b], func(s string) Key { return sk(op, b, s, dist, 256) })
		}
		row("bare floor "+strings.Trim(single, "`"), func(s string) Key { return cmsKey(op, "floor", "", s, dist, 1, 1, 1) })
		row(boomOp, func(s string) Key { return cmsKey(op, "boom", "", s, dist, 1, 1, 1) })
	}
	header = []string{"time ratio"}
	for _, sh := range cmsShapes {
		header = append(header, sh.name)
	}
	ratioT = &mdTable{Header: header}
	rrow := func(label string, a, base func(shape string) Key) {
		cells := []string{label}
		any := false
		for _, sh := range cmsShapes {
			cells = append(cells, v.times(a(sh.name), base(sh.name), false))
			any = any || v.ratio(a(sh.name), base(sh.name)).N > 0
		}
		if any {
			ratioT.add(cells...)
		}
	}
	b := v.mainBuild()
	ins := func(string) Key { return mapKey("mutexmap", "insert", dist) }
	look := func(string) Key { return mapKey("mutexmap", "lookup", dist) }
	rrow("`Add` / map insert", func(s string) Key { return sk("add", b, s, dist, 1) }, ins)
	for _, bb := range v.buildList() {
		rrow("`AddBatch` ×256, "+buildName[bb]+" / map insert", func(s string) Key { return sk("add", bb, s, dist, 256) }, ins)
	}
	rrow("BoomFilters `Add` / map insert", func(s string) Key { return cmsKey("add", "boom", "", s, dist, 1, 1, 1) }, ins)
	rrow("`Add` / BoomFilters `Add`", func(s string) Key { return sk("add", b, s, dist, 1) }, func(s string) Key { return cmsKey("add", "boom", "", s, dist, 1, 1, 1) })
	rrow("`Add` / bare floor", func(s string) Key { return sk("add", b, s, dist, 1) }, func(s string) Key { return cmsKey("add", "floor", "", s, dist, 1, 1, 1) })
	rrow("`Estimate` / map lookup", func(s string) Key { return sk("estimate", b, s, dist, 1) }, look)
	for _, bb := range v.buildList() {
		rrow("`EstimateBatch` ×256, "+buildName[bb]+" / map lookup", func(s string) Key { return sk("estimate", bb, s, dist, 256) }, look)
	}
	rrow("`Estimate` / BoomFilters `Count`", func(s string) Key { return sk("estimate", b, s, dist, 1) }, func(s string) Key { return cmsKey("estimate", "boom", "", s, dist, 1, 1, 1) })
	return nsT, ratioT
}

var batchSizes = []int{1, 16, 256, 4096}

func (v *view) batchTable() *mdTable {
	t := &mdTable{Header: []string{"ns per key, uniform keys"}}
	for _, n := range batchSizes {
		label := fmt.Sprintf("batch of %d", n)
		if n == 1 {
			label = "single key"
		}
		t.Header = append(t.Header, label)
	}
	for _, op := range []string{"add", "estimate"} {
		for _, shape := range []string{"default", "C"} {
			for _, b := range v.buildList() {
				name := map[string]string{"add": "`Add`/`AddBatch`", "estimate": "`Estimate`/`EstimateBatch`"}[op]
				cells := []string{fmt.Sprintf("%s, %s, %s", name, shapeLabel(shape), buildName[b])}
				for _, n := range batchSizes {
					cells = append(cells, v.ns(sk(op, b, shape, "uniform", n)))
				}
				t.add(cells...)
			}
		}
	}
	return t
}

func (v *view) cbfTable() *mdTable {
	t := &mdTable{Header: []string{"ns per key, 1M items at 1%"}}
	builds := v.buildList()
	for _, b := range builds {
		t.Header = append(t.Header, "sketch, "+buildName[b])
	}
	t.Header = append(t.Header, "BoomFilters (counting)", "bits-and-blooms (plain Bloom)", "`sync.RWMutex` + map")
	row := func(label, op string, batch int, peers bool) {
		cells := []string{label}
		for _, b := range builds {
			cells = append(cells, v.ns(cbfKey(op, "sketch", b, batch, 1, 1)))
		}
		for _, impl := range []string{"boom", "bitsblooms", "rwmutexmap"} {
			switch {
			case !peers:
				cells = append(cells, "–")
			case impl == "bitsblooms":
				cells = append(cells, v.ns(bloomKey(map[string]string{"add": "add", "contains": "check"}[op], impl, "", "1M", 1, 1, 1)))
			default:
				cells = append(cells, v.ns(cbfKey(op, impl, "", 1, 1, 1)))
			}
		}
		t.add(cells...)
	}
	row("`Add`", "add", 1, true)
	row("`Contains` (`Test`)", "contains", 1, true)
	row("`Estimate`", "countof", 1, false)
	row("`Add` + `Remove` (`TestAndRemove`)", "addremove", 1, true)
	for _, n := range []int{16, 256, 4096} {
		row(fmt.Sprintf("`AddBatch` ×%d", n), "add", n, false)
	}
	ratio := func(label, op, peer string) {
		cells := []string{label}
		for _, b := range builds {
			cells = append(cells, v.times(cbfKey(op, "sketch", b, 1, 1, 1), cbfKey(op, peer, "", 1, 1, 1), false))
		}
		cells = append(cells, "", "", "")
		t.add(cells...)
	}
	ratio("time ratio, `Add` / BoomFilters", "add", "boom")
	ratio("time ratio, `Contains` / BoomFilters", "contains", "boom")
	ratio("time ratio, `Add` / `RWMutex` + map", "add", "rwmutexmap")
	return t
}

func (v *view) bloomTable() *mdTable {
	t := &mdTable{Header: []string{"ns per key, at 1%"}}
	builds := v.buildList()
	for _, c := range bloomCapacities {
		for _, b := range builds {
			t.Header = append(t.Header, fmt.Sprintf("sketch, %s keys, %s", c, buildName[b]))
		}
		t.Header = append(t.Header, "bits-and-blooms, "+c+" keys")
	}
	row := func(label, op string, batch int) {
		cells := []string{label}
		for _, c := range bloomCapacities {
			for _, b := range builds {
				cells = append(cells, v.ns(bloomKey(op, "sketch", b, c, batch, 1, 1)))
			}
			if batch == 1 {
				cells = append(cells, v.ns(bloomKey(op, "bitsblooms", "", c, 1, 1, 1)))
			} else {
				cells = append(cells, "–")
			}
		}
		t.add(cells...)
	}
	row("`Add`", "add", 1)
	row("`Contains` (`Test`)", "check", 1)
	for _, n := range []int{16, 256, 4096} {
		row(fmt.Sprintf("`AddBatch` ×%d", n), "add", n)
	}
	row("`CheckBatch` ×256", "check", 256)
	ratio := func(label, op string) {
		cells := []string{label}
		for _, c := range bloomCapacities {
			for _, b := range builds {
				cells = append(cells, v.times(bloomKey(op, "sketch", b, c, 1, 1, 1), bloomKey(op, "bitsblooms", "", c, 1, 1, 1), false))
			}
			cells = append(cells, "")
		}
		t.add(cells...)
	}
	ratio("time ratio, `Add` / bits-and-blooms", "add")
	ratio("time ratio, `Contains` / bits-and-blooms `Test`", "check")
	return t
}

func (v *view) windowTable() *mdTable {
	t := &mdTable{Header: []string{"ns per key, uniform keys"}}
	builds := v.buildList()
	for _, b := range builds {
		t.Header = append(t.Header, "window, "+buildName[b], "plain Count-Min, "+buildName[b], "time ratio, window / plain")
	}
	for _, shape := range []string{"default", "C"} {
		for _, op := range []string{"add", "estimate"} {
			for _, batch := range []int{1, 256} {
				label := map[string]string{"add": "`Add`", "estimate": "`Estimate`"}[op]
				if batch > 1 {
					label = map[string]string{"add": "`AddBatch`", "estimate": "`EstimateBatch`"}[op] + fmt.Sprintf(" ×%d", batch)
				}
				cells := []string{label + ", " + shapeLabel(shape)}
				for _, b := range builds {
					w, p := windowKey(op, b, shape, batch, 1), sk(op, b, shape, "uniform", batch)
					cells = append(cells, v.ns(w), v.ns(p), v.times(w, p, false))
				}
				t.add(cells...)
			}
		}
	}
	return t
}

// heavyTable is Add with a table of K = 2n candidates beside the plain
// Add and BoomFilters' TopK of k = 2n, with the share of the table's adds
// that took the lock (h's, measured apart: nil leaves it out).
func (v *view) heavyTable(h *heavyScores) *mdTable {
	t := &mdTable{Header: []string{"ns per key, default shape", "plain `Add`", "`Add` with a table of K", "BoomFilters `TopK.Add`, k = K", "time ratio, table / plain", "time ratio, table / BoomFilters", "adds that took the lock"}}
	builds := v.buildList()
	for _, d := range dists {
		for _, n := range topNs {
			for _, b := range builds {
				label := fmt.Sprintf("%s keys, top %d (K = %d)", d, n, 2*n)
				if len(builds) > 1 {
					label += ", " + buildName[b]
				}
				plain, table, boomK := sk("add", b, "default", d, 1), heavyKey("sketch", b, d, n), heavyKey("boom", "", d, n)
				if v.sum(table).N == 0 && v.sum(boomK).N == 0 {
					continue
				}
				lock := "–"
				if h != nil {
					lock = percent(h.Lock[d][n])
				}
				t.add(label, v.ns(plain), v.ns(table), v.ns(boomK), v.times(table, plain, false), v.times(table, boomK, false), lock)
			}
		}
	}
	return t
}

// heavyAccuracyTable scores the table and BoomFilters' TopK against exact
// counts after h.Adds adds of each Zipf stream.
func heavyAccuracyTable(h *heavyScores) *mdTable {
	t := &mdTable{Header: []string{"stream over 1M keys", "table recall", "table precision", "adds that took the lock", "BoomFilters `TopK` recall", "BoomFilters `TopK` precision"}}
	for _, s := range heavySkews {
		for _, n := range topNs {
			tb, bm := h.Table[s][n], h.Boom[s][n]
			t.add(fmt.Sprintf("Zipf(%v), top %d (K = k = %d)", s, n, 2*n), num(tb.Recall), num(tb.Precision), percent(tb.LockShare), num(bm.Recall), num(bm.Precision))
		}
	}
	return t
}

// percent writes a share as a percentage with two significant digits.
func percent(x float64) string {
	p := 100 * x
	if p == 0 {
		return "0%"
	}
	digits := max(0, 1-int(math.Floor(math.Log10(p))))
	return fmt.Sprintf("%.*f%%", digits, p)
}

// distinctKeys names the distinct counts' key streams and kinds of keys.
var distinctKeys = map[string]string{"uint64": "8-byte keys", "uniform": "address and path keys", "addresses": "address and path keys"}

// distinctTable is the distinct count's ops on each build beside
// axiomhq/hyperloglog's on the same keys, with the time ratios to it; a
// row none of whose subjects ran is left out.
func (v *view) distinctTable() *mdTable {
	builds := v.buildList()
	t := &mdTable{Header: []string{"ns per key (`Count`: per call), precision 14"}}
	for _, b := range builds {
		t.Header = append(t.Header, "sketch, "+buildName[b])
	}
	t.Header = append(t.Header, "axiomhq `New14`")
	for _, b := range builds {
		t.Header = append(t.Header, "time ratio, sketch / axiomhq, "+buildName[b])
	}
	// row adds ours on each build beside peer (none: the zero Key).
	row := func(label string, ours func(build string) Key, peer Key) {
		cells := []string{label}
		ran := v.sum(peer).N > 0
		for _, b := range builds {
			cells = append(cells, v.ns(ours(b)))
			ran = ran || v.sum(ours(b)).N > 0
		}
		cells = append(cells, v.ns(peer))
		for _, b := range builds {
			cells = append(cells, v.times(ours(b), peer, false))
		}
		if ran {
			t.add(cells...)
		}
	}
	one := func(op, dist string, batch, writers, procs int) func(string) Key {
		return func(b string) Key { return distinctKey(op, "sketch", b, dist, batch, writers, procs) }
	}
	for _, d := range distinctDists {
		insert := distinctKey("add", "axiomhq", "", d, 1, 1, 1)
		row("`Add` (axiomhq: `Insert`), "+distinctKeys[d], one("add", d, 1, 1, 1), insert)
		row("`AddString` (axiomhq: `Insert` of the same bytes), "+distinctKeys[d], one("addstring", d, 1, 1, 1), insert)
	}
	row("`Add`, 8-byte keys, two goroutines on one handle", one("add", "uint64", 1, 2, 1), Key{})
	row("`Add`, 8-byte keys, two processes on one file", one("add", "uint64", 1, 1, 2), Key{})
	row("`AddBatch` ×256, 8-byte keys", one("add", "uint64", 256, 1, 1), Key{})
	estimate := distinctKey("count", "axiomhq", "", "uint64", 1, 1, 1)
	row("`Count`, nothing changed since the last (axiomhq: `Estimate`)", one("count", "uint64", 1, 1, 1), estimate)
	row("`Count` after a change: a walk of the registers (axiomhq: `Estimate`)", one("countwalk", "uint64", 1, 1, 1), estimate)
	return t
}

// distinctErrorTable is the RMS relative error of both counts at each n,
// on each kind of keys.
func distinctErrorTable(e *distinctErrors) *mdTable {
	t := &mdTable{Header: []string{"distinct keys"}}
	for _, k := range distinctKinds {
		for _, impl := range distinctImpls {
			t.Header = append(t.Header, impl+", "+distinctKeys[k.name])
		}
	}
	for j, n := range e.Ns {
		cells := []string{countLabel(n)}
		for _, k := range distinctKinds {
			for _, impl := range distinctImpls {
				cells = append(cells, percent(e.RMS[k.name][impl][j]))
			}
		}
		t.add(cells...)
	}
	return t
}

func (v *view) mergeTable() *mdTable {
	t := &mdTable{Header: []string{"one whole merge"}}
	var cells []string
	for _, shape := range []string{"default", "B", "C"} {
		sh := shapeNamed(shape)
		t.Header = append(t.Header, shapeLabel(shape))
		s := v.sum(Key{Struct: "countmin", Op: "merge", Impl: "sketch", Shape: shape, Dist: "-", Batch: 1, Writers: 1, Procs: 1})
		if s.N == 0 {
			cells = append(cells, "–")
			continue
		}
		cells = append(cells, fmt.Sprintf("%s (%s–%s), %.1f GB/s", duration(s.Median), duration(s.Min), duration(s.Max), float64(sh.bytes())/s.Median))
	}
	t.add(append([]string{"`CountMin.Merge` (Go in both builds)"}, cells...)...)
	return t
}

// duration writes ns as ns, µs, ms or s.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return num(ns/1e9) + " s"
	case ns >= 1e6:
		return num(ns/1e6) + " ms"
	case ns >= 1e3:
		return num(ns/1e3) + " µs"
	}
	return num(ns) + " ns"
}

func (v *view) exactTable() *mdTable {
	t := &mdTable{Header: []string{"ns per key", "insert, 10k keys", "lookup, 10k keys", "insert, 1M zipf", "lookup, 1M zipf", "insert, 1M uniform", "lookup, 1M uniform"}}
	for _, impl := range []string{"mutexmap", "syncmap"} {
		cells := []string{map[string]string{"mutexmap": "`sync.Mutex` + `map[string]uint64`", "syncmap": "`sync.Map` + `*atomic.Uint64`"}[impl]}
		for _, d := range []string{"uniform10k", "zipf", "uniform"} {
			cells = append(cells, v.ns(mapKey(impl, "insert", d)), v.ns(mapKey(impl, "lookup", d)))
		}
		t.add(cells...)
	}
	return t
}

// writerRow is a single-writer subject that also ran with two writers.
type writerRow struct {
	label, short string // for the table, for the chart
	key          Key
}

// writerRows are the subjects measured with two goroutines or two
// processes, by their single-writer key.
func (v *view) writerRows() []writerRow {
	var rows []writerRow
	row := func(label, short string, one Key) {
		g2, p2 := one, one
		g2.Writers, p2.Procs = 2, 2
		if v.sum(g2).N > 0 || v.sum(p2).N > 0 {
			rows = append(rows, writerRow{label, short, one})
		}
	}
	short := map[string]string{"cgo": "cgo", "purego": "pure Go"}
	for _, b := range v.buildList() {
		for _, shape := range []string{"default", "C"} {
			row(fmt.Sprintf("Count-Min `Add`, %s, %s", shapeLabel(shape), buildName[b]), fmt.Sprintf("CM Add, %s, %s", shape, short[b]), sk("add", b, shape, "uniform", 1))
			row(fmt.Sprintf("Count-Min `AddBatch` ×256, %s, %s", shapeLabel(shape), buildName[b]), fmt.Sprintf("CM AddBatch 256, %s, %s", shape, short[b]), sk("add", b, shape, "uniform", 256))
		}
	}
	for _, shape := range []string{"default", "C"} {
		row("bare floor add, "+shapeLabel(shape), "floor add, "+shape, cmsKey("add", "floor", "", shape, "uniform", 1, 1, 1))
	}
	for _, b := range v.buildList() {
		row("counting Bloom `Add`, "+buildName[b], "CBF Add, "+short[b], cbfKey("add", "sketch", b, 1, 1, 1))
		row("counting Bloom `AddBatch` ×256, "+buildName[b], "CBF AddBatch 256, "+short[b], cbfKey("add", "sketch", b, 256, 1, 1))
	}
	for _, b := range v.buildList() {
		row("Bloom `Add`, 1M keys, "+buildName[b], "Bloom Add, "+short[b], bloomKey("add", "sketch", b, "1M", 1, 1, 1))
		row("Bloom `AddBatch` ×256, 1M keys, "+buildName[b], "Bloom AddBatch 256, "+short[b], bloomKey("add", "sketch", b, "1M", 256, 1, 1))
	}
	for _, b := range v.buildList() {
		row("Count-Min window `Add`, "+shapeLabel("default")+", "+buildName[b], "window Add, default, "+short[b], windowKey("add", b, "default", 1, 1))
	}
	for _, b := range v.buildList() {
		row("distinct count `Add`, 8-byte keys, "+buildName[b], "distinct Add, "+short[b], distinctKey("add", "sketch", b, "uint64", 1, 1, 1))
	}
	row("`sync.Mutex` + map insert, 1M keys", "mutex+map insert", mapKey("mutexmap", "insert", "uniform"))
	row("`sync.Map` + atomic insert, 1M keys", "sync.Map insert", mapKey("syncmap", "insert", "uniform"))
	return rows
}

func (v *view) writersTable() *mdTable {
	t := &mdTable{Header: []string{"uniform keys", "one writer, ns per key", "two goroutines, ns per key", "throughput ×", "two processes, ns per key", "throughput ×"}}
	for _, r := range v.writerRows() {
		g2, p2 := r.key, r.key
		g2.Writers, p2.Procs = 2, 2
		t.add(r.label, v.ns(r.key), v.ns(g2), v.times(g2, r.key, true), v.ns(p2), v.times(p2, r.key, true))
	}
	return t
}

func countLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

var memLabels = map[string]string{
	"mutexmap":      "`sync.Mutex` + `map[string]uint64` (Go heap, keys included)",
	"syncmap":       "`sync.Map` + `*atomic.Uint64` (Go heap, keys included)",
	"boomcbf":       "BoomFilters `CountingBloomFilter`, 1% (Go heap)",
	"bitsblooms":    "bits-and-blooms `BloomFilter`, 1% (Go heap)",
	"countmin":      "Count-Min, default shape (file; any number of keys)",
	"countingbloom": "counting Bloom filter sized for the keys at 1% (file)",
	"bloom":         "Bloom filter sized for the keys at 1% (file)",
}

func memoryTables(mem *memTable) (sizes, gc *mdTable) {
	sizes = &mdTable{Header: []string{"bytes (per key)"}}
	gc = &mdTable{Header: []string{"one full GC with the structure live"}}
	for _, n := range mem.Counts {
		sizes.Header = append(sizes.Header, countLabel(n)+" keys")
		gc.Header = append(gc.Header, countLabel(n)+" keys")
	}
	cell := func(b int64, n int) string {
		return fmt.Sprintf("%s (%s)", sizeString(b), num(float64(b)/float64(n)))
	}
	for _, impl := range memImpls {
		cells, gcs := []string{memLabels[impl]}, []string{memLabels[impl]}
		for i, r := range mem.Heap[impl] {
			cells = append(cells, cell(r.Heap, mem.Counts[i]))
			gcs = append(gcs, duration(float64(r.GC.Nanoseconds())))
		}
		sizes.add(cells...)
		gc.add(gcs...)
	}
	for _, impl := range sketchMem {
		cells := []string{memLabels[impl]}
		for i, b := range mem.Bytes[impl] {
			cells = append(cells, cell(b, mem.Counts[i]))
		}
		sizes.add(cells...)
	}
	return sizes, gc
}

// instrLabel names a callgrind row.
func instrLabel(k Key) string {
	switch k.Struct {
	case "countmin":
		op := map[string]string{"add": "`Add`", "estimate": "`Estimate`"}[k.Op]
		if k.Batch > 1 {
			op = map[string]string{"add": "`AddBatch`", "estimate": "`EstimateBatch`"}[k.Op] + fmt.Sprintf(" ×%d", k.Batch)
		}
		switch k.Impl {
		case "floor":
			return "bare floor add, " + shapeLabel(k.Shape)
		case "boom":
			return "BoomFilters Count-Min `Add`, " + shapeLabel(k.Shape)
		}
		return "Count-Min " + op + ", " + shapeLabel(k.Shape)
	case "countingbloom":
		op := map[string]string{"add": "`Add`", "contains": "`Contains`"}[k.Op]
		if k.Batch > 1 {
			op = fmt.Sprintf("`AddBatch` ×%d", k.Batch)
		}
		if k.Impl == "boom" {
			return "BoomFilters `CountingBloomFilter.Add`"
		}
		return "counting Bloom " + op
	case "bloom":
		op := map[string]string{"add": "`Add`", "check": "`Contains`"}[k.Op]
		if k.Batch > 1 {
			op = map[string]string{"add": "`AddBatch`", "check": "`CheckBatch`"}[k.Op] + fmt.Sprintf(" ×%d", k.Batch)
		}
		if k.Impl == "bitsblooms" {
			return "bits-and-blooms `BloomFilter.Add`, " + k.Shape + " keys"
		}
		return "Bloom " + op + ", " + k.Shape + " keys"
	case "window":
		return "Count-Min window `Add`, " + shapeLabel(k.Shape)
	case "distinct":
		if k.Impl == "axiomhq" {
			return "axiomhq/hyperloglog `Insert`, " + distinctKeys[k.Dist]
		}
		op := map[string]string{"add": "`Add`", "addstring": "`AddString`"}[k.Op]
		if k.Batch > 1 {
			op = fmt.Sprintf("`AddBatch` ×%d", k.Batch)
		}
		return "distinct count " + op + ", " + distinctKeys[k.Dist]
	case "map":
		return map[string]string{"mutexmap": "`sync.Mutex` + map insert", "syncmap": "`sync.Map` + atomic insert"}[k.Impl] + ", " + k.Shape + " keys"
	case "cgo":
		return "empty cgo call"
	}
	return k.String()
}

func callgrindTable(ic []instrCount, note string) (*mdTable, string) {
	if len(ic) == 0 {
		return nil, note
	}
	t := &mdTable{Header: []string{"instructions per key", "cgo build", "pure-Go build"}}
	type cells struct{ cgo, purego string }
	rows := map[string]*cells{}
	var order []string
	var errs []string
	for _, c := range ic {
		label := instrLabel(c.Key)
		if rows[label] == nil {
			rows[label] = &cells{"–", "–"}
			order = append(order, label)
		}
		val := "–"
		if c.Err != "" {
			errs = append(errs, c.Key.String()+": "+c.Err)
		} else {
			val = fmt.Sprintf("%.0f", math.Round(c.PerOp))
		}
		switch c.Key.Build {
		case "cgo":
			rows[label].cgo = val
		case "purego":
			rows[label].purego = val
		default:
			rows[label].cgo, rows[label].purego = val, "(same code)"
		}
	}
	for _, l := range order {
		t.add(l, rows[l].cgo, rows[l].purego)
	}
	if len(errs) > 0 {
		note += " Failed: " + strings.Join(errs, "; ") + "."
	}
	return t, note
}
