//go:build linux

package prom

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shmsketch/sketch"
)

// fuzzPlaceholder is the name FuzzScrape's Count-Min sketch is made under
// before the fuzzed name is written over it.
const fuzzPlaceholder = "placeholder-for-the-fuzzed-name"

// FuzzScrape makes an arena of every kind whose candidate tables hold the
// fuzzed keys, names its Count-Min sketch with the fuzzed bytes, pokes the
// fuzzed bytes into its structures (a crafted file: candidate slots with
// any key bytes and lengths), and scrapes it read-only every way a
// service does: the arena's collector and a standalone one gathered and
// written in the text format, the JSON handler whole and by name, and
// the expvar. None may panic; each must give what its reader parses:
// Prometheus's text parser, valid JSON, valid UTF-8 labels. The seeds run
// as a plain test.
func FuzzScrape(f *testing.F) {
	var sweep []byte // pokes over the sketch's counters and table
	for off := 0; off < 4096; off += 61 {
		sweep = append(sweep, 0, byte(off), byte(off>>8), byte(0xc3+off))
	}
	f.Add("x\xff", "\xff\xfe\n"+cutKey+"\n192.0.2.1", []byte(nil))
	f.Add("clients", "alice@example.org\nbob\n\x1b[2Jgone\n", sweep)
	f.Add(`"quoted"`, `"quoted"`+"\n"+strings.Repeat("é", 40), []byte{1, 0, 1, 0xff, 2, 9, 0, 0x80})
	f.Add("a\tb", "\n\n\xc3", []byte{0, 0xff, 0x0f, 0xff})
	f.Add("clients/min", strings.Repeat("k\n", 20), bytes.Repeat([]byte{0, 7, 2, 0xfe}, 8))
	f.Fuzz(func(t *testing.T, name, keys string, pokes []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.arena")
		entries := fuzzArena(t, path, strings.Split(keys, "\n"))
		if len(name) > 0 && len(name) < entNameSize && strings.IndexByte(name, 0) < 0 {
			renameEntry(t, path, fuzzPlaceholder, name)
		} else {
			name = fuzzPlaceholder
		}
		poke(t, path, entries, pokes)

		a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{}, sketch.WithReadOnly())
		if err != nil {
			return // a crafted name another entry has: refused as corrupt
		}
		defer a.Close()
		m := a.Metrics()
		defer m.Close()
		regs := []*prometheus.Registry{prometheus.NewPedanticRegistry(), prometheus.NewPedanticRegistry()}
		regs[0].MustRegister(NewArenaCollector(m))
		regs[1].MustRegister(NewArenaCollector(m, WithHashedKeys([]byte("secret"))))
		if cms, err := sketch.OpenCountMin(a.Place(name), sketch.CountMinConfig{}, sketch.WithReadOnly()); err == nil {
			defer cms.Close()
			regs = append(regs, prometheus.NewPedanticRegistry())
			regs[2].MustRegister(NewCollector(name, cms.Stats))
		}
		for _, reg := range regs {
			checkGather(t, reg)
		}

		for _, query := range []string{"", "?" + url.Values{"name": {name}}.Encode()} {
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+query, nil))
			if rec.Code != http.StatusOK || !json.Valid(rec.Body.Bytes()) || !utf8.Valid(rec.Body.Bytes()) {
				t.Errorf("GET /%s: %d, valid JSON %v:\n%s", query, rec.Code, json.Valid(rec.Body.Bytes()), rec.Body.Bytes())
			}
		}
		if s := m.String(); !json.Valid([]byte(s)) || !strings.HasPrefix(s, "{") {
			t.Errorf("the expvar is not a JSON object:\n%s", s)
		}
	})
}

// fuzzArena makes the arena of FuzzScrape at path, one structure of each
// kind, the keys added to each (to the Count-Min sketch and window with
// weights 1 to 5), and returns its entries.
func fuzzArena(t *testing.T, path string, keys []string) []sketch.ArenaEntry {
	t.Helper()
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	must := func(c interface{ Close() error }, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	cms, err := sketch.OpenCountMin(a.Place(fuzzPlaceholder), sketch.CountMinConfig{Rows: 2, Width: 64, Candidates: 8, CandidateKeyBytes: 16})
	must(cms, err)
	cmw, err := sketch.OpenCountMinWindow(a.Place("cmw"), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 64, Candidates: 8}})
	must(cmw, err)
	bl, err := sketch.OpenBloom(a.Place("bloom"), sketch.BloomConfig{Capacity: 64, FPRate: 0.01})
	must(bl, err)
	cbf, err := sketch.OpenCountingBloom(a.Place("cbf"), sketch.CountingBloomConfig{Capacity: 64, FPRate: 0.01})
	must(cbf, err)
	bw, err := sketch.OpenBloomWindow(a.Place("bw"), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 2}, Bloom: sketch.BloomConfig{Capacity: 64, FPRate: 0.01}})
	must(bw, err)
	dc, err := sketch.OpenDistinct(a.Place("dc"), sketch.DistinctConfig{Precision: 4})
	must(dc, err)
	dw, err := sketch.OpenDistinctWindow(a.Place("dw"), sketch.DistinctWindowConfig{Window: sketch.Window{Keep: 2}, Distinct: sketch.DistinctConfig{Precision: 4}})
	must(dw, err)
	gl, err := sketch.OpenGCRA(a.Place("gcra"), sketch.GCRAConfig{Rate: sketch.Rate{Count: 1, Per: time.Second}, Burst: 3, Rows: 2, Width: 64})
	must(gl, err)
	ctr, err := sketch.OpenCounters(a.Place("ctr"), sketch.CountersConfig{Names: []string{"200", "GET /", `"q"`, "é"}})
	must(ctr, err)
	set, err := sketch.OpenSet(a.Place("set"), sketch.SetConfig{Capacity: 16, KeyBytes: 32})
	must(set, err)
	sw, err := sketch.OpenSetWindow(a.Place("sw"), sketch.SetWindowConfig{Window: sketch.Window{Keep: 2}, Set: sketch.SetConfig{Capacity: 16, KeyBytes: 32}})
	must(sw, err)
	for i, k := range keys[:min(len(keys), 32)] {
		cms.AddN([]byte(k), uint64(1+i%5))
		cmw.AddN([]byte(k), uint64(1+i%5))
		bl.AddString(k)
		cbf.AddString(k)
		bw.AddString(k)
		dc.AddString(k)
		dw.AddString(k)
		gl.AllowString(k, uint64(1+i%4))
		ctr.Add("GET /", uint64(len(k)))
		set.AddString(k) // a long key is refused; a full set refuses more
		sw.AddString(k)
		if i%3 == 0 {
			set.RemoveString(k)
		}
	}
	return a.List()
}

// poke writes pokes into the structures of the arena file at path, four
// bytes a poke: which entry, a little-endian offset into its region
// (modulo its size), and the byte to write there.
func poke(t *testing.T, path string, entries []sketch.ArenaEntry, pokes []byte) {
	t.Helper()
	if len(pokes) < 4 {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for ; len(pokes) >= 4; pokes = pokes[4:] {
		e := entries[int(pokes[0])%len(entries)]
		b[e.Offset+uint64(binary.LittleEndian.Uint16(pokes[1:]))%e.Bytes] = pokes[3]
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkGather gathers reg, which must not fail, and writes the result in
// the text format, which Prometheus's parser must read back with valid
// UTF-8 in every label.
func checkGather(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatalf("encoding %s: %v", f.GetName(), err)
		}
	}
	if !utf8.Valid(text.Bytes()) {
		t.Fatalf("the scrape is not valid UTF-8:\n%q", text.Bytes())
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	back, err := parser.TextToMetricFamilies(bytes.NewReader(text.Bytes()))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, text.Bytes())
	}
	if len(back) != len(fams) {
		t.Errorf("%d families gathered, %d read back", len(fams), len(back))
	}
}
