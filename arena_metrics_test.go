//go:build linux

package sketch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// metricsScrape is the JSON an ArenaMetrics serves, as a client reads it.
type metricsScrape struct {
	Path  string `json:"path"`
	Arena struct {
		Entries  int  `json:"entries"`
		ReadOnly bool `json:"read_only"`
		Closed   bool `json:"closed"`
	} `json:"arena"`
	Lock       *LockInfo      `json:"lock"`
	Structures []metricsEntry `json:"structures"`
}

type metricsEntry struct {
	Name   string         `json:"name"`
	Kind   Kind           `json:"kind"`
	Config map[string]any `json:"config"`
	Stats  map[string]any `json:"stats"`
	Error  string         `json:"error"`
}

// metricsWant is what a structure's stats must hold, by JSON name.
type metricsWant struct {
	kind  Kind
	stats map[string]float64
}

// fillMetricsArena makes one structure of each kind in a, adds known keys
// to each and closes them; it returns what their stats must say.
func fillMetricsArena(t *testing.T, a *Arena) map[string]metricsWant {
	t.Helper()
	cms := mustIn(t, OpenCountMin, a.Place("clients"), CountMinConfig{Rows: 4, Width: 1024})
	for i := range 7 {
		cms.AddString(strings.Repeat("k", i%3+1))
	}
	bl := mustIn(t, OpenBloom, a.Place("request-ids"), BloomConfig{Capacity: 1000, FPRate: 0.01})
	bl.AddString("req-1")
	bl.AddString("req-2")
	bl.AddString("req-1")
	cbf := mustIn(t, OpenCountingBloom, a.Place("banned"), CountingBloomConfig{Capacity: 1000, FPRate: 0.01})
	cbf.AddString("evil")
	cbf.AddString("worse")
	cbf.RemoveString("worse")
	cmw := mustIn(t, OpenCountMinWindow, a.Place("per-client"), CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: CountMinConfig{Rows: 2, Width: 256}})
	cmw.AddString("a")
	cmw.Rotate()
	cmw.AddString("a")
	cmw.AddString("b")
	bw := mustIn(t, OpenBloomWindow, a.Place("recent"), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{Capacity: 100, FPRate: 0.01}})
	bw.Rotate()
	bw.Rotate()
	bw.AddString("x")
	return map[string]metricsWant{
		"clients":     {KindCountMin, map[string]float64{"total": 7, "adds": 7, "rows": 4, "width": 1024}},
		"request-ids": {KindBloom, map[string]float64{"adds": 3, "adds_present": 1, "capacity": 1000}},
		"banned":      {KindCountingBloom, map[string]float64{"adds": 2, "capacity": 1000}},
		"per-client":  {KindCountMinWindow, map[string]float64{"total": 3, "current": 1, "oldest": 0, "keep": 3, "rotations": 1}},
		"recent":      {KindBloomWindow, map[string]float64{"current": 2, "oldest": 1, "keep": 2, "rotations": 2}},
	}
}

// checkScrape finds every structure of want in s, with the stats it must
// hold, and nothing else.
func checkScrape(t *testing.T, s metricsScrape, want map[string]metricsWant) {
	t.Helper()
	if s.Arena.Entries != len(want) || len(s.Structures) != len(want) {
		t.Errorf("scrape has %d entries and %d structures, want %d", s.Arena.Entries, len(s.Structures), len(want))
	}
	seen := map[string]bool{}
	for _, e := range s.Structures {
		w, ok := want[e.Name]
		if !ok {
			t.Errorf("scrape lists %q, which the arena does not hold", e.Name)
			continue
		}
		seen[e.Name] = true
		if e.Error != "" || e.Stats == nil {
			t.Errorf("%s: error %q, stats %v; want stats", e.Name, e.Error, e.Stats)
			continue
		}
		if e.Kind != w.kind {
			t.Errorf("%s: kind %q, want %q", e.Name, e.Kind, w.kind)
		}
		if len(e.Config) == 0 {
			t.Errorf("%s: no config", e.Name)
		}
		for field, v := range w.stats {
			if got, _ := e.Stats[field].(float64); got != v {
				t.Errorf("%s: stats.%s = %v, want %v", e.Name, field, e.Stats[field], v)
			}
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("scrape lacks %q", name)
		}
	}
}

func getScrape(t *testing.T, url string) metricsScrape {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s, Content-Type %q", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	var s metricsScrape
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return s
}

// TestArenaMetrics_ServeHTTP scrapes the handler and finds every
// structure of every kind with its stats, and the arena's own.
func TestArenaMetrics_ServeHTTP(t *testing.T) {
	path := tempPath(t, "metrics.arena")
	a := mustOpenArena(t, path, 4<<20)
	want := fillMetricsArena(t, a)
	m := a.Metrics()
	defer m.Close()
	srv := httptest.NewServer(m)
	defer srv.Close()

	s := getScrape(t, srv.URL)
	checkScrape(t, s, want)
	if s.Path != path {
		t.Errorf("path %q, want %q", s.Path, path)
	}
	if s.Lock == nil {
		t.Error("scrape has no lock state")
	}

	// The same, as an expvar.Var.
	checkScrape(t, scrapeOf(t, m), want)
}

// TestArenaMetrics_ServeHTTP_Name serves one structure with ?name=, a 404
// for a name the arena does not hold, and a 405 for a POST.
func TestArenaMetrics_ServeHTTP_Name(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "metrics.arena"), 4<<20)
	want := fillMetricsArena(t, a)
	m := a.Metrics()
	defer m.Close()
	srv := httptest.NewServer(m)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "?name=banned")
	if err != nil {
		t.Fatal(err)
	}
	var e metricsEntry
	err = json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET ?name=banned: %s, %v", resp.Status, err)
	}
	checkScrape(t, metricsScrape{Structures: []metricsEntry{e}, Arena: struct {
		Entries  int  `json:"entries"`
		ReadOnly bool `json:"read_only"`
		Closed   bool `json:"closed"`
	}{Entries: 1}}, map[string]metricsWant{"banned": want["banned"]})

	for _, tc := range []struct {
		method, query string
		status        int
	}{
		{http.MethodGet, "?name=nothing", http.StatusNotFound},
		{http.MethodPost, "", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.query, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %q: %s, want %d", tc.method, tc.query, resp.Status, tc.status)
		}
	}
}

// TestArenaMetrics_Cache opens each structure once however many scrapes
// ask, opens a structure another handle creates after the first scrape,
// and closes every handle it opened on Close.
func TestArenaMetrics_Cache(t *testing.T) {
	path := tempPath(t, "metrics.arena")
	a := mustOpenArena(t, path, 4<<20)
	want := fillMetricsArena(t, a)
	m := a.Metrics()
	defer m.Close()
	checkScrape(t, scrapeOf(t, m), want)
	first := maps.Clone(m.opened)
	if len(first) != len(want) {
		t.Fatalf("%d structures open after a scrape, want %d", len(first), len(want))
	}
	for range 3 {
		m.Stats()
	}
	for name, st := range m.opened {
		if first[name] != st {
			t.Errorf("%s was opened again by a later scrape", name)
		}
	}

	// Another worker creates a structure after the first scrape.
	other := mustOpenArena(t, path, 0)
	mustIn(t, OpenCountMin, other.Place("late"), CountMinConfig{Rows: 2, Width: 64}).AddString("x")
	want["late"] = metricsWant{KindCountMin, map[string]float64{"total": 1}}
	checkScrape(t, scrapeOf(t, m), want)
	first["late"] = m.opened["late"]

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for name, st := range first {
		if !strings.Contains(st.StatsVar().String(), `"closed":true`) {
			t.Errorf("%s is still open after Close: %s", name, st.StatsVar())
		}
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, e := range m.Stats().Structures {
		if !strings.Contains(e.Error, ErrClosed.Error()) || e.Stats != nil {
			t.Errorf("%s after Close: error %q, stats %v; want %v", e.Name, e.Error, e.Stats, ErrClosed)
		}
	}
}

// TestArenaMetrics_ArenaClosed: a scrape after the arena's Close releases
// the structures the metrics held, and reports the arena closed.
func TestArenaMetrics_ArenaClosed(t *testing.T) {
	path := tempPath(t, "metrics.arena")
	a := mustOpenArena(t, path, 4<<20)
	fillMetricsArena(t, a)
	m := a.Metrics()
	defer m.Close()
	m.Stats()
	if len(m.opened) != 5 {
		t.Fatalf("%d structures open after a scrape, want 5", len(m.opened))
	}
	a.Close()
	s := m.Stats()
	if !s.Arena.Closed || s.Lock != nil || len(s.Structures) != 5 {
		t.Errorf("after the arena's Close: closed %v, lock %v, %d structures; want closed, no lock, 5", s.Arena.Closed, s.Lock, len(s.Structures))
	}
	if len(m.opened) != 0 {
		t.Errorf("%d structures still open after the arena's Close", len(m.opened))
	}
}

// TestArenaMetrics_ReadOnly: a monitor that opens the arena read-only
// scrapes every structure, takes no lock token, and leaves the file's
// bytes as they were.
func TestArenaMetrics_ReadOnly(t *testing.T) {
	path := tempPath(t, "metrics.arena")
	a := mustOpenArena(t, path, 4<<20)
	want := fillMetricsArena(t, a)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := Inspect(path)
	if err != nil {
		t.Fatal(err)
	}

	ro := mustOpenArena(t, path, 0, WithReadOnly())
	m := ro.Metrics()
	defer m.Close()
	s := scrapeOf(t, m)
	checkScrape(t, s, want)
	if !s.Arena.ReadOnly {
		t.Error("the arena's stats do not say read-only")
	}
	for _, e := range s.Structures {
		if e.Stats["read_only"] != true {
			t.Errorf("%s: read_only = %v, want true", e.Name, e.Stats["read_only"])
		}
	}
	if s.Lock == nil || s.Lock.Handles != fi.Lock.Handles {
		t.Errorf("lock %+v with the monitor, want %d handles as without it", s.Lock, fi.Lock.Handles)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a read-only scrape changed the file")
	}
}

// TestArenaMetrics_Stats compares the typed scrape with each structure's
// own Stats, opened the same way. A memory arena has no path; its lock is read all the same.
func TestArenaMetrics_Stats(t *testing.T) {
	a, err := OpenArena(Memory(), ArenaConfig{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fillMetricsArena(t, a)
	m := a.Metrics()
	defer m.Close()
	s := m.Stats()
	if s.Path != "" || s.Lock == nil {
		t.Errorf("memory arena: path %q, lock %v; want no path, a lock", s.Path, s.Lock)
	}
	if s.Arena.Entries != 5 || len(s.Structures) != 5 {
		t.Fatalf("%d entries, %d structures, want 5", s.Arena.Entries, len(s.Structures))
	}
	cms := mustIn(t, OpenCountMin, a.Place("clients"), CountMinConfig{})
	got, ok := s.Structures[0].Stats.(CountMinStats)
	if !ok {
		t.Fatalf("first structure's stats are %T, want CountMinStats", s.Structures[0].Stats)
	}
	if diff := cmp.Diff(cms.Stats(), got); diff != "" {
		t.Errorf("clients stats (-want +got):\n%s", diff)
	}
	if s.Structures[0].Config != (CountMinConfig{Rows: 4, Width: 1024}) {
		t.Errorf("clients config = %+v", s.Structures[0].Config)
	}
	for i, w := range []any{BloomStats{}, CountingBloomStats{}, CountMinWindowStats{}, BloomWindowStats{}} {
		if got, want := typeName(s.Structures[i+1].Stats), typeName(w); got != want {
			t.Errorf("%s: stats are %s, want %s", s.Structures[i+1].Name, got, want)
		}
	}
}

// TestArenaMetrics_UnknownKind: a kind without metrics is listed with an
// error that wraps ErrUnsupported, and nothing panics.
func TestArenaMetrics_UnknownKind(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "metrics.arena"), 1<<20)
	_, err := openMetered(a.Place("x"), Kind("heavyhitters"))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "metrics.arena:x") {
		t.Errorf("openMetered of an unknown kind: %v, want %v naming the structure", err, ErrUnsupported)
	}
}

// TestArenaMetrics_EveryKind: the metrics open a structure of every kind
// (testKinds) and give its Stats, those its own handle gives, and a
// snapshot of the arena copies every kind.
func TestArenaMetrics_EveryKind(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "metrics.arena"), 1<<20)
	own := map[string]testStructure{}
	for i := range testKinds {
		k := &testKinds[i]
		own[k.name] = mustOpenTestKind(t, k, a.Place(k.name))
		if err := k.add(own[k.name], []byte("k")); err != nil {
			t.Fatalf("%s: add: %v", k.name, err)
		}
	}
	m := a.Metrics()
	defer m.Close()
	s := m.Stats()
	if len(s.Structures) != len(testKinds) {
		t.Fatalf("metrics list %d structures, want %d", len(s.Structures), len(testKinds))
	}
	for _, e := range s.Structures {
		if e.Error != "" || e.Stats == nil {
			t.Errorf("%s: error %q, stats %v; want stats", e.Name, e.Error, e.Stats)
			continue
		}
		if want := own[e.Name].StatsVar().stats(); typeName(e.Stats) != typeName(want) {
			t.Errorf("%s: stats are %s, want %s", e.Name, typeName(e.Stats), typeName(want))
		}
	}
	snap, err := a.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if got := len(snap.List()); got != len(testKinds) {
		t.Errorf("the snapshot holds %d structures, want %d", got, len(testKinds))
	}
}

// scrapeOf is m's String decoded, as an expvar client reads it.
func scrapeOf(t *testing.T, m *ArenaMetrics) metricsScrape {
	t.Helper()
	var s metricsScrape
	if err := json.Unmarshal([]byte(m.String()), &s); err != nil {
		t.Fatalf("String() is not JSON: %v", err)
	}
	return s
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// TestArenaMetrics_ZeroArena: the metrics of an arena that was never
// opened report it closed, and nothing panics.
func TestArenaMetrics_ZeroArena(t *testing.T) {
	var a Arena
	m := a.Metrics()
	mustNotPanic(t, "scraping a zero Arena", func() {
		s := scrapeOf(t, m)
		if !s.Arena.Closed || len(s.Structures) != 0 || s.Lock != nil {
			t.Errorf("zero arena: closed %v, %d structures, lock %v; want closed, none, no lock", s.Arena.Closed, len(s.Structures), s.Lock)
		}
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?name=x", nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("?name=x on a zero arena: %d, want 404", rec.Code)
		}
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

// BenchmarkArenaMetrics_Stats is one scrape of the README's gateway arena:
// a Count-Min window of 6 periods of 5 x 32768 counters, a Bloom filter of
// 10M keys at 0.1% and a counting Bloom filter of 100k keys, every byte
// walked.
func BenchmarkArenaMetrics_Stats(b *testing.B) {
	a, err := OpenArena(Memory(), ArenaConfig{Size: 64 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	mustIn(b, OpenCountMinWindow, a.Place("requests-per-client"), CountMinWindowConfig{Window: Window{Keep: 6}, CountMin: CountMinConfig{ErrorRate: 0.0001}})
	mustIn(b, OpenBloom, a.Place("request-ids"), BloomConfig{Capacity: 10_000_000, FPRate: 0.001})
	mustIn(b, OpenCountingBloom, a.Place("banned-keys"), CountingBloomConfig{Capacity: 100_000})
	m := a.Metrics()
	defer m.Close()
	st := m.Stats()
	b.SetBytes(int64(st.Arena.Used))
	b.ResetTimer()
	for b.Loop() {
		m.Stats()
	}
}
