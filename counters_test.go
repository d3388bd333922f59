package sketch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ctrNamesHTTP are the names most tests count under.
var ctrNamesHTTP = []string{"200", "404", "500", "GET /api/users", "é-ü"}

func mustCounters(t testing.TB, at Place, cfg CountersConfig, opts ...Option) *Counters {
	t.Helper()
	return mustIn(t, OpenCounters, at, cfg, opts...)
}

// TestCountersConfig_Invalid: a config whose names cannot be stored is
// ErrInvalidConfig, saying which name and why; names at the limits are
// taken.
func TestCountersConfig_Invalid(t *testing.T) {
	many := make([]string, CountersMaxNames+1)
	for i := range many {
		many[i] = fmt.Sprint("n", i)
	}
	for _, tc := range []struct {
		name  string
		names []string
		says  string // "" when valid
	}{
		{"none", nil, "needs Names"},
		{"empty list", []string{}, "needs Names"},
		{"1025 names", many, "1025 names, more than 1024"},
		{"empty name", []string{"a", ""}, "name 1: an empty name"},
		{"65 bytes", []string{strings.Repeat("x", 65)}, "is 65 bytes, more than 64"},
		{"not UTF-8", []string{"ok", "b\xff"}, `name 1: "b\xff" is not valid UTF-8`},
		{"tab", []string{"a\tb"}, `"a\tb" holds U+0009, which is not printable`},
		{"escape", []string{"\x1b[31m"}, "U+001B"},
		{"no-break space", []string{"a\u00a0b"}, "U+00A0"},
		{"twice", []string{"200", "404", "200"}, `name 2, "200", is also name 0`},
		{"1024 names", many[:CountersMaxNames], ""},
		{"64 bytes", []string{strings.Repeat("x", 64)}, ""},
		{"64 bytes of 2-byte runes", []string{strings.Repeat("é", 32)}, ""},
		{"space and punctuation", []string{"GET /api/users?x=1", `a"b\c{}`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := CountersConfig{Names: tc.names}
			n, err := cfg.Bytes()
			if tc.says == "" {
				if err != nil || n == 0 {
					t.Fatalf("Bytes() = %d, %v, want a size", n, err)
				}
				c := mustCounters(t, Memory(), cfg)
				if got := c.Names(); !slices.Equal(got, tc.names) {
					t.Errorf("Names() = %q, want %q", got, tc.names)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Bytes() error = %v, want ErrInvalidConfig saying %q", err, tc.says)
			}
			if _, err := OpenCounters(Memory(), cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("OpenCounters = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// TestCounters_Exact: adds by name and through a resolved Counter land
// exactly where they were asked, Values lists every counter in the
// stored order, and Reset clears them.
func TestCounters_Exact(t *testing.T) {
	c := mustCounters(t, Memory(), CountersConfig{Names: ctrNamesHTTP})
	want := map[string]uint64{}
	k404, err := c.Counter("404")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		name := ctrNamesHTTP[i%len(ctrNamesHTTP)]
		n := uint64(i%7 + 1)
		if name == "404" {
			err = k404.Add(n)
		} else {
			err = c.Add(name, n)
		}
		if err != nil {
			t.Fatalf("add %d to %q: %v", n, name, err)
		}
		want[name] += n
	}
	var wantValues []NamedValue
	for _, name := range ctrNamesHTTP {
		got, err := c.Value(name)
		if err != nil || got != want[name] {
			t.Errorf("Value(%q) = %d, %v, want %d", name, got, err, want[name])
		}
		wantValues = append(wantValues, NamedValue{name, want[name]})
	}
	if got := k404.Value(); got != want["404"] {
		t.Errorf("Counter(404).Value() = %d, want %d", got, want["404"])
	}
	if diff := cmp.Diff(wantValues, c.Values()); diff != "" {
		t.Errorf("Values() (-want +got):\n%s", diff)
	}
	s := c.Stats()
	if diff := cmp.Diff(wantValues, s.Counters); diff != "" || s.Names != len(ctrNamesHTTP) || s.Bytes == 0 {
		t.Errorf("Stats() = %+v (-want +got counters):\n%s", s, diff)
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	for _, nv := range c.Values() {
		if nv.Value != 0 {
			t.Errorf("after Reset, %q = %d", nv.Name, nv.Value)
		}
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCounters_UnknownName: a name the structure lacks is
// ErrInvalidArgument naming it, from Add, Counter and Value, and adds
// nothing.
func TestCounters_UnknownName(t *testing.T) {
	c := mustCounters(t, Memory(), CountersConfig{Names: ctrNamesHTTP})
	for _, name := range []string{"201", "", "GET /api/users ", "\x00", strings.Repeat("x", 1000)} {
		_, verr := c.Value(name)
		_, cerr := c.Counter(name)
		for op, err := range map[string]error{"Add": c.Add(name, 1), "Counter": cerr, "Value": verr} {
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) {
				t.Errorf("%s(%q) = %v, want ErrInvalidArgument naming %q", op, name, err, name)
			}
		}
	}
	for _, nv := range c.Values() {
		if nv.Value != 0 {
			t.Errorf("%q = %d after adds to unknown names", nv.Name, nv.Value)
		}
	}
	var zero Counter
	if err := zero.Add(1); !errors.Is(err, ErrClosed) {
		t.Errorf("the zero Counter's Add = %v, want ErrClosed", err)
	}
}

// TestCounters_Wraps: a counter wraps at 2^64, as the atomic add does.
func TestCounters_Wraps(t *testing.T) {
	c := mustCounters(t, Memory(), CountersConfig{Names: []string{"n"}})
	c.Add("n", math.MaxUint64)
	c.Add("n", 3)
	if got, _ := c.Value("n"); got != 2 {
		t.Errorf("MaxUint64 + 3 = %d, want 2 (wrapped)", got)
	}
}

// TestCounters_ClosedAndFrozen: after Close every call reports it
// (Counter's Add too); a frozen structure refuses adds, resets and
// merges with ErrFrozen and still reads.
func TestCounters_ClosedAndFrozen(t *testing.T) {
	c, err := OpenCounters(Memory(), CountersConfig{Names: ctrNamesHTTP})
	if err != nil {
		t.Fatal(err)
	}
	k, _ := c.Counter("200")
	c.Add("500", 5)
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	for op, err := range map[string]error{"Add": c.Add("200", 1), "Counter.Add": k.Add(1), "Reset": c.Reset(), "Merge": c.Merge()} {
		if !errors.Is(err, ErrFrozen) {
			t.Errorf("%s on a frozen structure = %v, want ErrFrozen", op, err)
		}
	}
	if v, err := c.Value("500"); v != 5 || err != nil {
		t.Errorf("Value on a frozen structure = %d, %v, want 5", v, err)
	}
	c.Close()
	_, verr := c.Value("200")
	for op, err := range map[string]error{"Add": c.Add("200", 1), "Counter.Add": k.Add(1), "Value": verr} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", op, err)
		}
	}
	if c.Values() != nil || k.Value() != 0 || !c.Stats().Closed {
		t.Error("a closed handle still reads values")
	}
}

// TestCounters_Merge: Merge adds the others' counters, name by name; one
// of other names is ErrIncompatible saying the difference, before
// anything changes.
func TestCounters_Merge(t *testing.T) {
	cfg := CountersConfig{Names: ctrNamesHTTP}
	host := func(n uint64) *Counters {
		c := mustCounters(t, Memory(), cfg)
		for i, name := range ctrNamesHTTP {
			c.Add(name, n*uint64(i+1))
		}
		s, err := c.Snapshot(Memory())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	total := mustCounters(t, Memory(), cfg)
	if err := total.Merge(host(1), host(10), host(100)); err != nil {
		t.Fatal(err)
	}
	for i, name := range ctrNamesHTTP {
		if got, _ := total.Value(name); got != 111*uint64(i+1) {
			t.Errorf("merged %q = %d, want %d", name, got, 111*(i+1))
		}
	}
	for _, names := range [][]string{ctrNamesHTTP[:4], append(slices.Clone(ctrNamesHTTP), "x"), {"404", "200", "500", "GET /api/users", "é-ü"}} {
		other := mustCounters(t, Memory(), CountersConfig{Names: names})
		other.Add(names[0], 1)
		err := total.Merge(host(1), other)
		if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "asked for") {
			t.Errorf("Merge with names %q = %v, want ErrIncompatible saying how they differ", names, err)
		}
	}
	if got, _ := total.Value("200"); got != 111 {
		t.Errorf("a refused merge changed 200 to %d", got)
	}
}

// TestCounters_AddAllocatesNothing: adding by name, through a Counter,
// and reading a value allocate nothing.
func TestCounters_AddAllocatesNothing(t *testing.T) {
	c := mustCounters(t, Memory(), CountersConfig{Names: ctrNamesHTTP})
	k, _ := c.Counter("500")
	name := strings.Clone("GET /api/users")
	for op, f := range map[string]func(){
		"Add":         func() { c.Add(name, 1) },
		"Counter.Add": func() { k.Add(1) },
		"Value":       func() { c.Value(name) },
	} {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s allocates %v times a call, want 0", op, n)
		}
	}
}

// TestCounters_InArena: two counters structures beside a Count-Min
// sketch in one arena, each counting on its own, attached by name with
// the zero config, listed and scraped by the arena's metrics with their
// names and values.
func TestCounters_InArena(t *testing.T) {
	a := mustIn(t, OpenArena, Memory(), ArenaConfig{Size: 1 << 20})
	cms := mustIn(t, OpenCountMin, a.Place("clients"), CountMinConfig{Rows: 2, Width: 256})
	status := mustCounters(t, a.Place("status"), CountersConfig{Names: []string{"200", "404", "500"}})
	routes := mustCounters(t, a.Place("routes"), CountersConfig{Names: []string{"/", "/api", "/login"}})
	for i := range 300 {
		status.Add([]string{"200", "404", "500"}[i%3], 1)
		routes.Add([]string{"/", "/api", "/login"}[i%3], 2)
		cms.AddString("k")
	}
	again := mustCounters(t, a.Place("routes"), CountersConfig{})
	if diff := cmp.Diff([]NamedValue{{"/", 200}, {"/api", 200}, {"/login", 200}}, again.Values()); diff != "" {
		t.Errorf("routes, attached with the zero config (-want +got):\n%s", diff)
	}
	if _, err := OpenCounters(a.Place("routes"), CountersConfig{Names: []string{"/", "/api"}}); !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), `also has "/login"`) {
		t.Errorf("routes opened with fewer names = %v, want ErrIncompatible saying it also has /login", err)
	}
	if got := cms.Estimate([]byte("k")); got != 300 {
		t.Errorf("the Count-Min sketch beside them says %d, want 300", got)
	}
	for _, e := range a.List() {
		if e.Name == "status" {
			if diff := cmp.Diff(CountersConfig{Names: []string{"200", "404", "500"}}, e.Config); diff != "" {
				t.Errorf("List's config of status (-want +got):\n%s", diff)
			}
		}
	}
	m := a.Metrics()
	defer m.Close()
	b, err := json.Marshal(m.Stats())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"counters"`, `{"name":"404","value":100}`, `{"name":"/login","value":200}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the arena's metrics lack %s:\n%s", want, b)
		}
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}
