//go:build linux

package prom

import (
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmsketch/sketch"
)

// TestNewCollector_EveryKind: NewCollector takes every kind's Stats
// method, and its series carry the kind and the kind's own figures.
func TestNewCollector_EveryKind(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cms, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 2, Width: 64})
	must(err)
	defer cms.Close()
	cms.AddN([]byte("k"), 4)
	bl, err := sketch.OpenBloom(sketch.Memory(), sketch.BloomConfig{Capacity: 100, FPRate: 0.01})
	must(err)
	defer bl.Close()
	bl.AddString("a")
	cbf, err := sketch.OpenCountingBloom(sketch.Memory(), sketch.CountingBloomConfig{Capacity: 100, FPRate: 0.01})
	must(err)
	defer cbf.Close()
	cbf.AddString("a")
	cbf.AddString("b")
	cmw, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 64}})
	must(err)
	defer cmw.Close()
	cmw.AddN([]byte("k"), 3)
	bw, err := sketch.OpenBloomWindow(sketch.Memory(), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 2}, Bloom: sketch.BloomConfig{Capacity: 100, FPRate: 0.01}})
	must(err)
	defer bw.Close()
	bw.Rotate()
	dc, err := sketch.OpenDistinct(sketch.Memory(), sketch.DistinctConfig{Precision: 8})
	must(err)
	defer dc.Close()
	dc.AddString("a")
	dw, err := sketch.OpenDistinctWindow(sketch.Memory(), sketch.DistinctWindowConfig{Window: sketch.Window{Keep: 2}, Distinct: sketch.DistinctConfig{Precision: 8}})
	must(err)
	defer dw.Close()
	dw.AddString("a")
	dw.Rotate()
	dw.AddString("b")
	dw.AddString("c")
	gl, err := sketch.OpenGCRA(sketch.Memory(), sketch.GCRAConfig{Rate: sketch.Rate{Count: 5, Per: time.Minute}, Burst: 1, Rows: 2, Width: 64})
	must(err)
	defer gl.Close()
	gl.AllowString("k", 2)
	ctr, err := sketch.OpenCounters(sketch.Memory(), sketch.CountersConfig{Names: []string{"200", "404", `"q"`}})
	must(err)
	defer ctr.Close()
	ctr.Add("404", 7)
	set, err := sketch.OpenSet(sketch.Memory(), sketch.SetConfig{Capacity: 4})
	must(err)
	defer set.Close()
	set.AddString("a")
	set.AddString("b")
	sw, err := sketch.OpenSetWindow(sketch.Memory(), sketch.SetWindowConfig{Window: sketch.Window{Keep: 2}, Set: sketch.SetConfig{Capacity: 4}})
	must(err)
	defer sw.Close()
	sw.AddString("a")
	sw.Rotate()
	sw.RemoveString("a")

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(
		NewCollector("cm", cms.Stats),
		NewCollector("bloom", bl.Stats),
		NewCollector("cbf", cbf.Stats),
		NewCollector("cmw", cmw.Stats),
		NewCollector("bw", bw.Stats),
		NewCollector("dc", dc.Stats),
		NewCollector("dw", dw.Stats),
		NewCollector("gcra", gl.Stats),
		NewCollector("ctr", ctr.Stats),
		NewCollector("set", set.Stats),
		NewCollector("sw", sw.Stats),
	)
	fams := parse(t, scrape(t, reg))
	for _, tc := range []struct {
		structure string
		kind      sketch.Kind
		family    string
		want      float64
	}{
		{"cm", sketch.KindCountMin, "sketch_adds_total", 4},
		{"bloom", sketch.KindBloom, "sketch_adds_total", 1},
		{"cbf", sketch.KindCountingBloom, "sketch_adds_total", 2},
		{"cmw", sketch.KindCountMinWindow, "sketch_counted", 3},
		{"bw", sketch.KindBloomWindow, "sketch_window_rotations_total", 1},
		{"dc", sketch.KindDistinct, "sketch_distinct_estimate", dc.Stats().Estimate},
		{"dw", sketch.KindDistinctWindow, "sketch_distinct_estimate", dw.Stats().Estimate},
		{"dw", sketch.KindDistinctWindow, "sketch_window_current_period", 1},
		{"gcra", sketch.KindGCRA, "sketch_rate_limit_allowed_cost_total", 2},
		{"gcra", sketch.KindGCRA, "sketch_rate_limit_requests_per_second", 5.0 / 60},
		{"set", sketch.KindSet, "sketch_set_keys", 2},
		{"set", sketch.KindSet, "sketch_set_capacity", 4},
		{"sw", sketch.KindSetWindow, "sketch_set_keys", 0},
		{"sw", sketch.KindSetWindow, "sketch_set_removes_total", 1},
		{"sw", sketch.KindSetWindow, "sketch_window_current_period", 1},
	} {
		found := false
		for _, m := range fams[tc.family].GetMetric() {
			l := labelMap(m)
			if l["structure"] != tc.structure {
				continue
			}
			found = true
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			if l["kind"] != string(tc.kind) || v != tc.want {
				t.Errorf("%s{structure=%q} = %v of kind %q, want %v of kind %q", tc.family, tc.structure, v, l["kind"], tc.want, tc.kind)
			}
		}
		if !found {
			t.Errorf("no series %s{structure=%q}", tc.family, tc.structure)
		}
	}
	// A counters structure: a series a counter, labelled with its name
	// (quoted when it begins with a quote, as every name from a file).
	counters := map[string]float64{}
	for _, m := range fams["sketch_counts_total"].GetMetric() {
		if l := labelMap(m); l["structure"] == "ctr" && l["kind"] == string(sketch.KindCounters) {
			counters[l["name"]] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"200": 0, "404": 7, `"\"q\""`: 0}; !maps.Equal(counters, want) {
		t.Errorf("sketch_counts_total{structure=\"ctr\"} by name = %v, want %v", counters, want)
	}
	if e := dw.Stats().Estimate; e < 2.5 || e > 3.5 {
		t.Errorf("the distinct window's estimate %v, want about the 3 keys of its 2 periods", e)
	}
}

// TestArenaCollector_CounterNames: counter names with quotes, escapes'
// characters, the label syntax's own and non-ASCII letters scrape as
// label values Prometheus's parser reads back as the names (one that
// begins with a quote quoted), and the JSON handler serves them.
func TestArenaCollector_CounterNames(t *testing.T) {
	names := []string{`"q"`, `a\b`, `{x="y"}`, "GET /a b", "é-ü", "#", "=", ","}
	a, err := sketch.OpenArena(sketch.Memory(), sketch.ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctr, err := sketch.OpenCounters(a.Place("names"), sketch.CountersConfig{Names: names})
	if err != nil {
		t.Fatal(err)
	}
	defer ctr.Close()
	for i, name := range names {
		ctr.Add(name, uint64(i+1))
	}
	m := a.Metrics()
	defer m.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewArenaCollector(m))
	checkGather(t, reg)
	got := map[string]float64{}
	for _, s := range parse(t, scrape(t, reg))["sketch_counts_total"].GetMetric() {
		got[labelMap(s)["name"]] = s.GetCounter().GetValue()
	}
	want := map[string]float64{}
	for i, name := range names {
		want[labelValue(name)] = float64(i + 1)
	}
	if !maps.Equal(got, want) {
		t.Errorf("sketch_counts_total by name = %v, want %v", got, want)
	}
}
