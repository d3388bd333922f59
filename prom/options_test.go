//go:build linux

package prom

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmsketch/sketch"
)

// loudKeys is the key label of each sketch_heavy_hitter_estimate series
// of a registry, by rank.
func loudKeys(t *testing.T, reg *prometheus.Registry) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range parse(t, scrape(t, reg))["sketch_heavy_hitter_estimate"].GetMetric() {
		l := labelMap(m)
		out[l["structure"]+"/"+l["rank"]] = l["key"]
	}
	return out
}

// TestCollector_KeyLabels: by default a loud key is its own label;
// WithHashedKeys labels it HashKey(secret, key) (of the bytes its table
// keeps, for a longer key), WithoutKeys leaves the label empty; ranks and
// estimates stay, for the arena's collector and a standalone one alike.
func TestCollector_KeyLabels(t *testing.T) {
	a, _ := newArena(t)
	cms, err := sketch.OpenCountMin(a.Place("clients"), sketch.CountMinConfig{Rows: 4, Width: 1024, Candidates: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer cms.Close()
	long := "session-" + strings.Repeat("0123456789", 8) // longer than the 64 bytes a table keeps
	cms.AddN([]byte("alice@example.org"), 30)
	cms.AddN([]byte(long), 20)
	m := a.Metrics()
	defer m.Close()
	secret := []byte("0123456789abcdef0123456789abcdef")
	for _, tc := range []struct {
		name string
		opts []Option
		want [2]string // the keys of rank 1 and 2
	}{
		{"default", nil, [2]string{"alice@example.org", strconv.Quote(long[:64]) + "... (88 bytes)"}},
		{"hashed", []Option{WithHashedKeys(secret)}, [2]string{HashKey(secret, "alice@example.org"), HashKey(secret, long[:64]) + "... (88 bytes)"}},
		{"dropped", []Option{WithoutKeys()}, [2]string{"", ""}},
		{"nil option", []Option{nil}, [2]string{"alice@example.org", strconv.Quote(long[:64]) + "... (88 bytes)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewArenaCollector(m, tc.opts...), NewCollector("standalone", cms.Stats, tc.opts...))
			got := loudKeys(t, reg)
			for _, s := range []string{"clients", "standalone"} {
				for i, k := range tc.want {
					if g, ok := got[fmt.Sprintf("%s/%d", s, i+1)]; !ok || g != k {
						t.Errorf("%s rank %d: key %q (found %v), want %q", s, i+1, g, ok, k)
					}
				}
			}
		})
	}
}

// TestHashKey: 16 hex digits, the same for the same secret and key, and
// another for another secret or key.
func TestHashKey(t *testing.T) {
	a := HashKey([]byte("s1"), "alice")
	if len(a) != 16 || a != HashKey([]byte("s1"), "alice") {
		t.Fatalf("HashKey = %q, want 16 hex digits, stable", a)
	}
	for _, other := range []string{HashKey([]byte("s2"), "alice"), HashKey([]byte("s1"), "bob"), HashKey(nil, "alice")} {
		if other == a {
			t.Errorf("HashKey gives %q for another secret or key", other)
		}
	}
	// The option keeps its own copy of the secret.
	secret := []byte("s1")
	opt := WithHashedKeys(secret)
	secret[0] = 'x'
	o := collectorOptions([]Option{opt})
	if got := o.key(sketch.HeavyHitter{Key: "alice", Length: 5}); got != a {
		t.Errorf("after the caller changed its secret: %q, want %q", got, a)
	}
}
