//go:build linux

package prom

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shmsketch/sketch"
)

// series names one series of a structure: its family and structure label.
type series struct{ family, structure string }

// fillArena makes one structure of each kind in a with known adds, and
// returns the series each must have, with their values.
func fillArena(t *testing.T, a *sketch.Arena) map[series]float64 {
	t.Helper()
	closeLater := func(c io.Closer, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	cms, err := sketch.OpenCountMin(a.Place("clients"), sketch.CountMinConfig{Rows: 4, Width: 1024, Candidates: 4})
	closeLater(cms, err)
	for range 7 {
		cms.AddString("192.0.2.1")
	}
	bl, err := sketch.OpenBloom(a.Place("request-ids"), sketch.BloomConfig{Capacity: 1000, FPRate: 0.01})
	closeLater(bl, err)
	bl.AddString("req-1")
	bl.AddString("req-2")
	bl.AddString("req-1")
	cbf, err := sketch.OpenCountingBloom(a.Place("banned"), sketch.CountingBloomConfig{Capacity: 1000, FPRate: 0.01})
	closeLater(cbf, err)
	cbf.AddString("evil")
	cbf.AddString("worse")
	cbf.RemoveString("worse")
	cmw, err := sketch.OpenCountMinWindow(a.Place("per-client"), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 3}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 256}})
	closeLater(cmw, err)
	cmw.AddString("a")
	cmw.Rotate()
	cmw.AddString("a")
	cmw.AddString("b")
	bw, err := sketch.OpenBloomWindow(a.Place("recent"), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 2}, Bloom: sketch.BloomConfig{Capacity: 100, FPRate: 0.01}})
	closeLater(bw, err)
	bw.Rotate()
	bw.Rotate()
	bw.AddString("x")
	dc, err := sketch.OpenDistinct(a.Place("visitors"), sketch.DistinctConfig{Precision: 10})
	closeLater(dc, err)
	for i := range 100 {
		dc.AddString(fmt.Sprint("visitor-", i%40))
	}
	dw, err := sketch.OpenDistinctWindow(a.Place("visitors/min"), sketch.DistinctWindowConfig{Window: sketch.Window{Keep: 2}, Distinct: sketch.DistinctConfig{Precision: 8}})
	closeLater(dw, err)
	dw.AddString("v1")
	dw.Rotate()
	dw.AddString("v2")
	gl, err := sketch.OpenGCRA(a.Place("api/limit"), sketch.GCRAConfig{Rate: sketch.Rate{Count: 10, Per: time.Second}, Burst: 2, Rows: 2, Width: 64})
	closeLater(gl, err)
	at := time.Now().Add(time.Hour) // busy until then: a scrape now finds its cells busy
	for range 4 {
		gl.AllowAt([]byte("tenant-1"), 1, at) // 3 allowed (burst 2), the 4th refused
	}
	gl.AllowAt([]byte("tenant-2"), 2, at)
	ctr, err := sketch.OpenCounters(a.Place("status"), sketch.CountersConfig{Names: []string{"404"}})
	closeLater(ctr, err)
	ctr.Add("404", 5)
	set, err := sketch.OpenSet(a.Place("sessions"), sketch.SetConfig{Capacity: 8, KeyBytes: 16})
	closeLater(set, err)
	for _, k := range []string{"s1", "s2", "s3", "s1"} {
		set.AddString(k) // the second s1 is no add
	}
	set.RemoveString("s2")
	sw, err := sketch.OpenSetWindow(a.Place("nonces"), sketch.SetWindowConfig{Window: sketch.Window{Keep: 2}, Set: sketch.SetConfig{Capacity: 8, KeyBytes: 16}})
	closeLater(sw, err)
	sw.AddString("n1")
	sw.Rotate()
	sw.AddString("n2")
	sw.Rotate() // n1 leaves the window, and stays held
	sw.AddString("n3")
	// n1 stays held unless n3's add reused its slot, which depends on
	// where the arena's random seed puts the two: read what the window
	// holds rather than guess it.
	held := float64(sw.Stats().Held)
	return map[series]float64{
		{"sketch_set_keys", "sessions"}:                         2,
		{"sketch_set_capacity", "sessions"}:                     8,
		{"sketch_set_tombstones", "sessions"}:                   1,
		{"sketch_set_longest_run_slots", "sessions"}:            float64(set.Stats().LongestRun),
		{"sketch_set_adds_total", "sessions"}:                   3,
		{"sketch_set_removes_total", "sessions"}:                1,
		{"sketch_fill_ratio", "sessions"}:                       0.25,
		{"sketch_set_keys", "nonces"}:                           2,
		{"sketch_set_held_keys", "nonces"}:                      held,
		{"sketch_set_adds_total", "nonces"}:                     3,
		{"sketch_fill_ratio", "nonces"}:                         held / 8,
		{"sketch_window_current_period", "nonces"}:              2,
		{"sketch_window_oldest_period", "nonces"}:               1,
		{"sketch_window_rotations_total", "nonces"}:             2,
		{"sketch_rate_limit_allowed_cost_total", "api/limit"}:   5,
		{"sketch_rate_limit_busy_cells", "api/limit"}:           float64(gl.Stats().Busy),
		{"sketch_rate_limit_busy_ratio", "api/limit"}:           gl.Stats().BusyRate,
		{"sketch_rate_limit_requests_per_second", "api/limit"}:  10,
		{"sketch_rate_limit_burst", "api/limit"}:                2,
		{"sketch_counts_total", "status"}:                       5,
		{"sketch_distinct_estimate", "visitors/min"}:            dw.Stats().Estimate,
		{"sketch_window_current_period", "visitors/min"}:        1,
		{"sketch_window_rotations_total", "visitors/min"}:       1,
		{"sketch_distinct_estimate", "visitors"}:                dc.Stats().Estimate,
		{"sketch_distinct_relative_standard_error", "visitors"}: dc.StdError(),
		{"sketch_adds_total", "clients"}:                        7,
		{"sketch_counted", "clients"}:                           7,
		{"sketch_error_bound", "clients"}:                       1, // ceil(e/1024 * 7)
		{"sketch_bytes", "clients"}:                             float64(cms.Stats().Bytes),
		{"sketch_frozen", "clients"}:                            0,
		{"sketch_candidates_held", "clients"}:                   1,
		{"sketch_candidate_admissions_total", "clients"}:        1,
		{"sketch_heavy_hitter_estimate", "clients"}:             7, // 192.0.2.1, rank 1
		{"sketch_adds_total", "request-ids"}:                    3,
		{"sketch_adds_present_total", "request-ids"}:            1,
		{"sketch_fill_ratio", "request-ids"}:                    bl.Stats().Fill,
		{"sketch_estimated_items", "request-ids"}:               bl.Stats().Estimated,
		{"sketch_adds_total", "banned"}:                         2, // the remove is no add
		{"sketch_fill_ratio", "banned"}:                         cbf.Stats().Fill,
		{"sketch_estimated_items", "banned"}:                    cbf.Stats().Estimated,
		{"sketch_counted", "per-client"}:                        3,
		{"sketch_error_bound", "per-client"}:                    float64(cmw.ErrorBound()),
		{"sketch_window_current_period", "per-client"}:          1,
		{"sketch_window_oldest_period", "per-client"}:           0,
		{"sketch_window_rotations_total", "per-client"}:         1,
		{"sketch_window_current_period", "recent"}:              2,
		{"sketch_window_oldest_period", "recent"}:               1,
		{"sketch_window_rotations_total", "recent"}:             2,
		{"sketch_false_positive_ratio", "recent"}:               bw.Stats().FPRateNow,
		{"sketch_fill_ratio", "recent"}:                         currentSlot(bw.Stats()).Fill,
		{"sketch_estimated_items", "recent"}:                    currentSlot(bw.Stats()).Estimated,
	}
}

func currentSlot(s sketch.BloomWindowStats) sketch.BloomWindowSlotStats {
	for _, slot := range s.Slots {
		if slot.State == "current" {
			return slot
		}
	}
	return sketch.BloomWindowSlotStats{}
}

// kinds are the kind label each structure of fillArena must carry.
var kinds = map[string]sketch.Kind{
	"clients":      sketch.KindCountMin,
	"request-ids":  sketch.KindBloom,
	"banned":       sketch.KindCountingBloom,
	"per-client":   sketch.KindCountMinWindow,
	"recent":       sketch.KindBloomWindow,
	"visitors":     sketch.KindDistinct,
	"visitors/min": sketch.KindDistinctWindow,
	"api/limit":    sketch.KindGCRA,
	"status":       sketch.KindCounters,
	"sessions":     sketch.KindSet,
	"nonces":       sketch.KindSetWindow,
}

// scrape serves reg with promhttp and returns the body, in the text
// format.
func scrape(t *testing.T, reg *prometheus.Registry) []byte {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v\n%s", resp.Status, err, body)
	}
	return body
}

// parse reads a scrape into its families.
func parse(t *testing.T, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body)
	}
	return fams
}

// value finds a family's series with the given structure label, and
// checks its kind label.
func value(t *testing.T, fams map[string]*dto.MetricFamily, s series) (float64, bool) {
	t.Helper()
	f, ok := fams[s.family]
	if !ok {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		lbl := map[string]string{}
		for _, l := range m.GetLabel() {
			lbl[l.GetName()] = l.GetValue()
		}
		if lbl["structure"] != s.structure {
			continue
		}
		if lbl["kind"] != string(kinds[s.structure]) {
			t.Errorf("%s{structure=%q} has kind %q, want %q", s.family, s.structure, lbl["kind"], kinds[s.structure])
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		}
		t.Errorf("%s is a %v", s.family, f.GetType())
	}
	return 0, false
}

func newArena(t *testing.T) (*sketch.Arena, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.arena")
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, path
}

// TestArenaCollector_Scrape registers the collector, scrapes it with
// promhttp and finds every structure's series with their values, and the
// arena's and its lock's; a structure made after the first scrape shows
// in the next.
func TestArenaCollector_Scrape(t *testing.T) {
	a, _ := newArena(t)
	want := fillArena(t, a)
	m := a.Metrics()
	defer m.Close()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(NewArenaCollector(m)); err != nil {
		t.Fatal(err)
	}
	fams := parse(t, scrape(t, reg))
	for s, v := range want {
		got, ok := value(t, fams, s)
		if !ok {
			t.Errorf("no series %s{structure=%q}", s.family, s.structure)
		} else if got != v {
			t.Errorf("%s{structure=%q} = %v, want %v", s.family, s.structure, got, v)
		}
	}
	for name := range kinds {
		for _, f := range []string{"sketch_bytes", "sketch_frozen"} {
			if _, ok := value(t, fams, series{f, name}); !ok {
				t.Errorf("no series %s{structure=%q}", f, name)
			}
		}
	}
	st := a.Stats()
	for f, v := range map[string]float64{
		"sketch_arena_bytes":            float64(st.Bytes),
		"sketch_arena_used_bytes":       float64(st.Used),
		"sketch_arena_free_bytes":       float64(st.Free),
		"sketch_arena_structures":       11,
		"sketch_arena_max_structures":   float64(st.Capacity),
		"sketch_lock_writer":            0,
		"sketch_lock_writer_dead":       0,
		"sketch_lock_readers":           0,
		"sketch_lock_dead_reader_slots": 0,
	} {
		fam, ok := fams[f]
		if !ok || len(fam.GetMetric()) != 1 {
			t.Errorf("%s: %v, want one series", f, fam)
			continue
		}
		if got := fam.GetMetric()[0].GetGauge().GetValue(); got != v {
			t.Errorf("%s = %v, want %v", f, got, v)
		}
	}
	if fam := fams["sketch_lock_handles"]; fam == nil || fam.GetMetric()[0].GetGauge().GetValue() < 1 {
		t.Errorf("sketch_lock_handles: %v, want at least this process's handle", fam)
	}

	late, err := sketch.OpenCountMin(a.Place("late"), sketch.CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	late.AddN([]byte("x"), 5)
	kinds["late"] = sketch.KindCountMin
	defer delete(kinds, "late")
	if got, ok := value(t, parse(t, scrape(t, reg)), series{"sketch_adds_total", "late"}); got != 5 {
		t.Errorf("sketch_adds_total{structure=\"late\"} = %v (found %v) after it was made, want 5", got, ok)
	}
}

// TestArenaCollector_Promtool runs promtool check metrics on a scrape:
// names, types, units and help as Prometheus lints them.
func TestArenaCollector_Promtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found, and CI=true runs everything: install it (Debian: apt-get install prometheus; make deps does)")
		}
		t.Skip("skipped: promtool not found (Debian: apt-get install prometheus; make deps does as root)")
	}
	a, _ := newArena(t)
	fillArena(t, a)
	m := a.Metrics()
	defer m.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewArenaCollector(m), NewCollector("standalone", func() sketch.CountMinStats {
		return sketch.CountMinStats{Rows: 1, Width: 8}
	}))
	body := scrape(t, reg)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nthe scrape:\n%s", err, out, body)
	}
}

// TestNewCollector collects one standalone structure beside an arena's,
// in one registry, under the same names and labels.
func TestNewCollector(t *testing.T) {
	cms, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	cms.AddN([]byte("k"), 11)
	bl, err := sketch.OpenBloom(sketch.Memory(), sketch.BloomConfig{Capacity: 100, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	bl.AddString("a")

	a, _ := newArena(t)
	want := fillArena(t, a)
	m := a.Metrics()
	defer m.Close()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range []prometheus.Collector{NewArenaCollector(m), NewCollector("requests", cms.Stats), NewCollector("jobs", bl.Stats)} {
		if err := reg.Register(c); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	kinds["requests"], kinds["jobs"] = sketch.KindCountMin, sketch.KindBloom
	defer delete(kinds, "requests")
	defer delete(kinds, "jobs")
	want[series{"sketch_adds_total", "requests"}] = 11
	want[series{"sketch_counted", "requests"}] = 11
	want[series{"sketch_adds_total", "jobs"}] = 1
	want[series{"sketch_adds_present_total", "jobs"}] = 0
	fams := parse(t, scrape(t, reg))
	for s, v := range want {
		if got, ok := value(t, fams, s); !ok || got != v {
			t.Errorf("%s{structure=%q} = %v (found %v), want %v", s.family, s.structure, got, ok, v)
		}
	}
}

// TestSamplesOf: every kind's Stats gives samples and its kind; anything
// else gives none.
func TestSamplesOf(t *testing.T) {
	for _, tc := range []struct {
		stats any
		kind  sketch.Kind
	}{
		{sketch.CountMinStats{}, sketch.KindCountMin},
		{sketch.BloomStats{}, sketch.KindBloom},
		{sketch.CountingBloomStats{}, sketch.KindCountingBloom},
		{sketch.CountMinWindowStats{}, sketch.KindCountMinWindow},
		{sketch.BloomWindowStats{}, sketch.KindBloomWindow},
		{sketch.DistinctStats{}, sketch.KindDistinct},
		{sketch.DistinctWindowStats{}, sketch.KindDistinctWindow},
		{sketch.GCRAStats{}, sketch.KindGCRA},
		{sketch.CountersStats{Counters: []sketch.NamedValue{{Name: "a", Value: 1}}}, sketch.KindCounters},
		{sketch.SetStats{}, sketch.KindSet},
		{sketch.SetWindowStats{}, sketch.KindSetWindow},
	} {
		kind, samples, ok := samplesOf(tc.stats)
		if !ok || kind != tc.kind || len(samples) < 3 {
			t.Errorf("samplesOf(%T) = %q, %d samples, %v; want %q", tc.stats, kind, len(samples), ok, tc.kind)
		}
	}
	// A Bloom window's current period before its first add has no slot:
	// its fill is 0, not missing.
	_, samples, _ := samplesOf(sketch.BloomWindowStats{WindowStats: sketch.WindowStats{Current: 3}, Slots: []sketch.BloomWindowSlotStats{{State: "window", Period: 2, Fill: 0.25}}})
	found := false
	for _, x := range samples {
		if x.f == fFill {
			found = true
			if x.v != 0 {
				t.Errorf("fill of an unclaimed current period = %v, want 0", x.v)
			}
		}
	}
	if !found {
		t.Error("no fill for a Bloom window whose current period has no slot yet")
	}
	for _, v := range []any{nil, sketch.ArenaStats{}, "countmin"} {
		if _, _, ok := samplesOf(v); ok {
			t.Errorf("samplesOf(%#v) is ok", v)
		}
	}
}

// TestArenaCollector_TwoArenas: two arenas share a registry, each
// registered with a label of its own, as the docs say.
func TestArenaCollector_TwoArenas(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, name := range []string{"edge", "core"} {
		a, _ := newArena(t)
		fillArena(t, a)
		m := a.Metrics()
		defer m.Close()
		if err := prometheus.WrapRegistererWith(prometheus.Labels{"arena": name}, reg).Register(NewArenaCollector(m)); err != nil {
			t.Fatalf("Register arena %s: %v", name, err)
		}
	}
	fams := parse(t, scrape(t, reg))
	// Of fillArena's structures, the Count-Min sketch, the two filters and
	// the two windows count adds.
	if n := len(fams["sketch_adds_total"].GetMetric()); n != 10 {
		t.Errorf("sketch_adds_total has %d series, want 5 structures in each of 2 arenas", n)
	}
	if n := len(fams["sketch_arena_structures"].GetMetric()); n != 2 {
		t.Errorf("sketch_arena_structures has %d series, want one an arena", n)
	}
}

// TestArenaCollector_HeavyHitters: a candidate table's loudest keys are
// series labelled with their rank and key, at most StatsLoudest of them.
func TestArenaCollector_HeavyHitters(t *testing.T) {
	a, _ := newArena(t)
	cms, err := sketch.OpenCountMin(a.Place("loud"), sketch.CountMinConfig{Rows: 4, Width: 4096, Candidates: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	for i := range 15 {
		for range 10 * (i + 1) {
			cms.AddString(fmt.Sprintf("client-%02d", i))
		}
	}
	m := a.Metrics()
	defer m.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewArenaCollector(m))
	fam := parse(t, scrape(t, reg))["sketch_heavy_hitter_estimate"]
	if fam == nil || len(fam.Metric) != sketch.StatsLoudest {
		t.Fatalf("sketch_heavy_hitter_estimate: %v, want %d series", fam, sketch.StatsLoudest)
	}
	for _, mt := range fam.Metric {
		l := map[string]string{}
		for _, lp := range mt.Label {
			l[lp.GetName()] = lp.GetValue()
		}
		var rank int
		fmt.Sscan(l["rank"], &rank)
		if want := fmt.Sprintf("client-%02d", 15-rank); l["key"] != want || mt.GetGauge().GetValue() != float64(10*(16-rank)) {
			t.Errorf("rank %d: key %q = %v, want %s at %d", rank, l["key"], mt.GetGauge().GetValue(), want, 10*(16-rank))
		}
	}
}

// TestNewCollector_FleetPart: a Count-Min sketch with a fleet part has a
// sketch_fleet_counted series, the fleet part's largest row sum as the
// agent stored it; one without has none.
func TestNewCollector_FleetPart(t *testing.T) {
	cfg := sketch.CountMinConfig{Rows: 2, Width: 64, Fleet: true}
	cms, err := sketch.OpenCountMin(sketch.Memory(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	counts := make([]byte, 2*64*8)
	counts[0] = 5      // row 0, column 0: 5
	counts[64*8+8] = 9 // row 1, column 1: 9
	if err := cms.SetFleetCounts(counts); err != nil {
		t.Fatal(err)
	}
	plain, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range []prometheus.Collector{NewCollector("synced", cms.Stats), NewCollector("local", plain.Stats)} {
		if err := reg.Register(c); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	kinds["synced"], kinds["local"] = sketch.KindCountMin, sketch.KindCountMin
	defer delete(kinds, "synced")
	defer delete(kinds, "local")
	fams := parse(t, scrape(t, reg))
	if got, ok := value(t, fams, series{"sketch_fleet_counted", "synced"}); !ok || got != 9 {
		t.Errorf("sketch_fleet_counted{structure=\"synced\"} = %v (found %v), want 9", got, ok)
	}
	if _, ok := value(t, fams, series{"sketch_fleet_counted", "local"}); ok {
		t.Error("a sketch without a fleet part has a sketch_fleet_counted series")
	}
}

// TestNewCollector_Lanes: a Count-Min sketch of lanes, and a window of
// lanes, have a sketch_countmin_lanes series; one of one grid has none.
func TestNewCollector_Lanes(t *testing.T) {
	laned, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 2, Width: 64, Lanes: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer laned.Close()
	plain, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	win, err := sketch.OpenCountMinWindow(sketch.Memory(), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 64, Lanes: 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer win.Close()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range []prometheus.Collector{NewCollector("laned", laned.Stats), NewCollector("grid", plain.Stats), NewCollector("window", win.Stats)} {
		if err := reg.Register(c); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	kinds["laned"], kinds["grid"], kinds["window"] = sketch.KindCountMin, sketch.KindCountMin, sketch.KindCountMinWindow
	defer delete(kinds, "laned")
	defer delete(kinds, "grid")
	defer delete(kinds, "window")
	fams := parse(t, scrape(t, reg))
	if got, ok := value(t, fams, series{"sketch_countmin_lanes", "laned"}); !ok || got != 4 {
		t.Errorf("sketch_countmin_lanes{structure=\"laned\"} = %v (found %v), want 4", got, ok)
	}
	if got, ok := value(t, fams, series{"sketch_countmin_lanes", "window"}); !ok || got != 3 {
		t.Errorf("sketch_countmin_lanes{structure=\"window\"} = %v (found %v), want 3", got, ok)
	}
	if _, ok := value(t, fams, series{"sketch_countmin_lanes", "grid"}); ok {
		t.Error("a sketch of one grid has a sketch_countmin_lanes series")
	}
}

// TestArenaCollector_RateLimitDecisions: a rate limiter's decisions are
// one counter labelled by outcome, as fillArena made them (4 allowed, 1
// refused).
func TestArenaCollector_RateLimitDecisions(t *testing.T) {
	a, _ := newArena(t)
	fillArena(t, a)
	m := a.Metrics()
	defer m.Close()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewArenaCollector(m))
	fam := parse(t, scrape(t, reg))["sketch_rate_limit_decisions_total"]
	got := map[string]float64{}
	for _, mt := range fam.GetMetric() {
		l := labelMap(mt)
		if l["structure"] != "api/limit" || l["kind"] != string(sketch.KindGCRA) {
			t.Errorf("sketch_rate_limit_decisions_total has a series of %q, kind %q", l["structure"], l["kind"])
		}
		got[l["outcome"]] = mt.GetCounter().GetValue()
	}
	if want := map[string]float64{"allowed": 4, "refused": 1}; !maps.Equal(got, want) {
		t.Errorf("sketch_rate_limit_decisions_total by outcome = %v, want %v", got, want)
	}
}
