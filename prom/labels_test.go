//go:build linux

package prom

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shmsketch/sketch"
	"github.com/zeebo/xxh3"
)

// TestLabelValue: printable text stays as it is; anything else, and
// anything that could read as a quoted value, is quoted, so that the
// result is valid UTF-8 and two strings never share it.
func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":         "192.0.2.1",
		"GET /index.html":   "GET /index.html",
		"café":              "café",
		"":                  `""`,
		"\xff\xfe":          `"\xff\xfe"`,
		"x\xff":             `"x\xff"`,
		"tab\there":         `"tab\there"`,
		"\x1b[2Jgone":       `"\x1b[2Jgone"`,
		`"x\xff"`:           `"\"x\\xff\""`,
		"\u202eevil":        `"\u202eevil"`,
		"alice@example.org": "alice@example.org",
	} {
		got := labelValue(in)
		if got != want {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("labelValue(%q) = %q is not valid UTF-8", in, got)
		}
	}
}

// TestHeldKey: a key kept as a prefix loses the bytes of a character its
// cut fell inside; a whole key, or a prefix cut between characters, stays
// as it is.
func TestHeldKey(t *testing.T) {
	a63, a62 := strings.Repeat("a", 63), strings.Repeat("a", 62)
	for _, tc := range []struct {
		h    sketch.HeavyHitter
		want string
	}{
		{sketch.HeavyHitter{Key: a63 + "\xc3", Length: 72}, a63},          // "é" cut after its first byte
		{sketch.HeavyHitter{Key: a62 + "\xe2\x82", Length: 72}, a62},      // "€" cut after two
		{sketch.HeavyHitter{Key: a62 + "é", Length: 72}, a62 + "é"},       // cut between characters
		{sketch.HeavyHitter{Key: a63 + "\xff", Length: 72}, a63 + "\xff"}, // not a character's start: quoted later
		{sketch.HeavyHitter{Key: "ab\xc3", Length: 3}, "ab\xc3"},          // a whole key is never cut
		{sketch.HeavyHitter{Key: "\xc3", Length: 9}, ""},
		{sketch.HeavyHitter{Key: "", Length: 0}, ""},
	} {
		if got := heldKey(tc.h); got != tc.want {
			t.Errorf("heldKey(%q, length %d) = %q, want %q", tc.h.Key, tc.h.Length, got, tc.want)
		}
	}
}

// Directory entry fields, as docs/FORMAT.md lays them out.
const (
	entNameOff     = 88
	entNameSize    = 32
	entChecksumOff = 120
)

// renameEntry rewrites the name of the structure named old in the arena
// file at path to name, with the entry's checksum made good again: a file
// as another user may write it (a create refuses such a name).
func renameEntry(t *testing.T, path, old, name string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	field := make([]byte, entNameSize)
	copy(field, old)
	i := bytes.Index(b, field)
	if i < entNameOff || len(name) >= entNameSize {
		t.Fatalf("no entry named %q in %s, or %q is too long", old, path, name)
	}
	entry := b[i-entNameOff:][:entChecksumOff+8]
	clear(field)
	copy(field, name)
	copy(entry[entNameOff:], field)
	binary.NativeEndian.PutUint64(entry[entChecksumOff:], xxh3.Hash(entry[:entChecksumOff]))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// The keys and names of a file its writers made hostile.
var (
	// cutKey is valid UTF-8 of 72 bytes, kept as its first 64: the cut
	// falls inside "é".
	cutKey = strings.Repeat("a", 63) + "é" + "bcdefg"
	// badKey is not UTF-8 at all.
	badKey = "\xff\xfe"
	// badName is a structure's name that is not UTF-8 (a create refuses
	// it; another user's file holds it anyway).
	badName = "x\xff"
)

// hostileArena makes an arena file at path whose candidate tables hold
// badKey and cutKey among their loudest, in a Count-Min sketch renamed
// badName and in a Count-Min window.
func hostileArena(t *testing.T, path string) {
	t.Helper()
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cms, err := sketch.OpenCountMin(a.Place("placeholder"), sketch.CountMinConfig{Rows: 4, Width: 1024, Candidates: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	cmw, err := sketch.OpenCountMinWindow(a.Place("per-minute"), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 4, Width: 1024, Candidates: 8}})
	if err != nil {
		t.Fatal(err)
	}
	defer cmw.Close()
	for range 20 {
		for _, k := range []string{badKey, cutKey, "192.0.2.1"} {
			cms.AddString(k)
			cmw.AddString(k)
		}
	}
	for _, top := range []func(int) ([]sketch.HeavyHitter, error){cms.Top, cmw.Top} {
		if hs, err := top(0); err != nil || len(hs) != 3 {
			t.Fatalf("Top = %+v, %v; want the 3 keys added", hs, err)
		}
	}
	cms.Close()
	cmw.Close()
	a.Close()
	renameEntry(t, path, "placeholder", badName)
}

const (
	envRole = "SKETCH_PROM_TEST_ROLE"
	envPath = "SKETCH_PROM_TEST_PATH"
)

// TestScrapeChild is the service of TestArenaCollector_HostileFile, run
// as a process of its own: it opens the arena read-only, as a monitor
// does, registers both collectors, gathers once and writes the scrape to
// standard output in the text format.
func TestScrapeChild(t *testing.T) {
	if os.Getenv(envRole) != "scrape" {
		t.Skip("skipped: run by TestArenaCollector_HostileFile")
	}
	a, err := sketch.OpenArena(sketch.Path(os.Getenv(envPath)), sketch.ArenaConfig{}, sketch.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	m := a.Metrics()
	defer m.Close()
	cms, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 4, Width: 1024, Candidates: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	for range 20 {
		cms.AddString(badKey)
		cms.AddString(cutKey)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewArenaCollector(m), NewCollector("standalone\xfe", cms.Stats))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	enc := expfmt.NewEncoder(os.Stdout, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
}

// TestArenaCollector_HostileFile: a service scrapes, read-only, a real
// arena whose candidate tables hold a key that is not UTF-8 and a 72-byte
// key cut inside "é", in a structure whose name is not UTF-8, and a
// standalone sketch holding the same keys: Gather returns every series
// (it panicked in its goroutine, which ended the process), with valid
// UTF-8 labels, the keys and the name quoted, the cut key cut before "é".
func TestArenaCollector_HostileFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip("skipped: no test binary to run again:", err)
	}
	path := filepath.Join(t.TempDir(), "hostile.arena")
	hostileArena(t, path)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(exe, "-test.run=^TestScrapeChild$", "-test.v")
	cmd.Env = append(os.Environ(), envRole+"=scrape", envPath+"="+path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the scraping service: %v (it must not end)\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	// The child's -test.v lines around the scrape are not metrics.
	var body bytes.Buffer
	for _, l := range strings.SplitAfter(stdout.String(), "\n") {
		if !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "PASS") && !strings.HasPrefix(l, "ok ") {
			body.WriteString(l)
		}
	}
	if !utf8.Valid(body.Bytes()) {
		t.Errorf("the scrape is not valid UTF-8:\n%q", body.Bytes())
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body.Bytes()))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, body.Bytes())
	}
	// The loud keys of each structure, by key label.
	keys := map[string]map[string]float64{}
	for _, m := range fams["sketch_heavy_hitter_estimate"].GetMetric() {
		l := labelMap(m)
		if keys[l["structure"]] == nil {
			keys[l["structure"]] = map[string]float64{}
		}
		keys[l["structure"]][l["key"]] = m.GetGauge().GetValue()
	}
	quotedBad, cut := strconv.Quote(badKey), strconv.Quote(strings.Repeat("a", 63))+"... (71 bytes)"
	for _, tc := range []struct {
		structure string
		keys      map[string]float64
	}{
		{strconv.Quote(badName), map[string]float64{quotedBad: 20, cut: 20, "192.0.2.1": 20}},
		{"per-minute", map[string]float64{quotedBad: 20, cut: 20, "192.0.2.1": 20}},
		{strconv.Quote("standalone\xfe"), map[string]float64{quotedBad: 20, cut: 20}},
	} {
		if got := keys[tc.structure]; fmt.Sprint(got) != fmt.Sprint(tc.keys) {
			t.Errorf("sketch_heavy_hitter_estimate{structure=%s}: keys %v, want %v", tc.structure, got, tc.keys)
		}
	}
	if v, ok := seriesValue(fams, "sketch_adds_total", strconv.Quote(badName)); !ok || v != 60 {
		t.Errorf("sketch_adds_total{structure=%s} = %v (found %v), want 60", strconv.Quote(badName), v, ok)
	}
}

// labelMap is a series' labels by name.
func labelMap(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// seriesValue is the value of a family's series with the given structure
// label.
func seriesValue(fams map[string]*dto.MetricFamily, family, structure string) (float64, bool) {
	for _, m := range fams[family].GetMetric() {
		if labelMap(m)["structure"] == structure {
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestPlainKey_PrefixOwnLabel: a client whose key is another's first 64
// bytes gets a label of its own (the prefix, quoted, and the length), by
// default and hashed; both labels were the same, so one client's series
// carried another's key.
func TestPlainKey_PrefixOwnLabel(t *testing.T) {
	short := strings.Repeat("v", 64)
	whole := sketch.HeavyHitter{Key: short, Length: 64}
	prefix := sketch.HeavyHitter{Key: short, Length: 81}
	if a, b := plainKey(whole), plainKey(prefix); a == b || b != strconv.Quote(short)+"... (81 bytes)" {
		t.Errorf("plainKey: whole %q, prefix %q: want two labels, the prefix's with its length", a, b)
	}
	// A whole key spelled like a prefix's label still differs from it.
	spelled := sketch.HeavyHitter{Key: plainKey(prefix), Length: len(plainKey(prefix))}
	if plainKey(spelled) == plainKey(prefix) {
		t.Errorf("a whole key %q shares the prefix's label", spelled.Key)
	}
	secret := []byte("s")
	if hashedKey(secret, whole) == hashedKey(secret, prefix) {
		t.Errorf("hashed labels of a key and of a longer key with its bytes are the same: %q", hashedKey(secret, whole))
	}
}
