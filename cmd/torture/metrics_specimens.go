package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/shmsketch/sketch"
)

// The metrics part's own specimens: candidate tables holding keys a
// label or a terminal chokes on, kept whole by real adds (invalid UTF-8,
// control and format characters, keys whose 64-byte prefix is cut inside
// a multibyte rune) or written over a long key's stored prefix after the
// fact (a crafted table: a prefix is named only by its hash, so the bytes
// are listed as they are); and arenas whose structure names were written
// over in the directory, with the checksums made again. The mutate part's
// specimens and mutations (mutate_specimens.go, mutate_ops.go) then break
// copies of them.

// metricsKeys are keys added for real: each is kept as it is, or as its
// first 64 (or 8) bytes.
var metricsKeys = []string{
	"\xff\xfe",
	"x\x1b]0;title\x07",
	"\x1b[2J\x1b[H",
	"tab\tnl\ncr\r",
	"\x00nul\x00",
	"\u202eevil\u0085\x7f",
	"a" + strings.Repeat("é", 36),      // 73 bytes: the 64-byte prefix ends inside an "é"
	"bb" + strings.Repeat("😀", 20),     // 82 bytes: cut inside a 4-byte rune
	"é" + strings.Repeat("\u0301", 40), // combining marks
	`"quote\\<tag>&amp;`,
}

// metricsPrefixes are 64 bytes each, written over the stored prefix of a
// long marker key: what a writer of the file may put there.
var metricsPrefixes = [][]byte{
	append([]byte("\xff\xfe"), bytes.Repeat([]byte("A"), 62)...),
	pad64("\x1b[2J\x1b[H\x1b]0;owned\x07\x00\x00\x01\x02"),
	append(bytes.Repeat([]byte("a"), 63), 0xc3),
	append(append(bytes.Repeat([]byte("b"), 60), "\xf0\x9f\x98"...), 'c'),
	bytes.Repeat([]byte{0x80}, 64),
	pad64("\u202e\u0085\x7f\u2028\ufeff"),
}

// pad64 is s padded with spaces to 64 bytes.
func pad64(s string) []byte { return []byte(s + strings.Repeat(" ", 64-len(s))) }

// metricsNames are written over the names of an arena's structures (each
// at most the marker's length).
var metricsNames = [][]byte{
	[]byte("x\xff"),
	[]byte("\x1b[31mred\x1b[0m"),
	[]byte("\xc3"),
	[]byte("a\u202eb\u0085"),
	[]byte("\x7f\x01\x02"),
	[]byte(`é:c?&name="<>`),
}

// markerKey is the long key whose stored prefix crafted prefix i replaces.
func markerKey(i int) []byte {
	return fmt.Appendf(nil, "%-80s", fmt.Sprintf("METRICS-MARKER-KEY-%02d-", i))
}

// markerName is the name crafted name i replaces: 20 bytes, printable.
func markerName(i int) string { return fmt.Sprintf("MARKNAME-%02d-xxxxxxxx", i) }

// patchAll writes with over every occurrence of marker in b, zero-padded
// to the marker's length, and returns where.
func patchAll(b, marker, with []byte) []int {
	rep := make([]byte, len(marker))
	copy(rep, with)
	var at []int
	for i := 0; ; {
		j := bytes.Index(b[i:], marker)
		if j < 0 {
			return at
		}
		copy(b[i+j:], rep)
		at = append(at, i+j)
		i += j + len(marker)
	}
}

// craftedSpan is the hot span around a crafted slot or name: its way's
// head (sequence, hash, length) before it, the next way after it.
func craftedSpan(at int) span { return span{max(at-64, 0), 192} }

// feedCandidates adds the crafted keys loud, the markers loudest (Stats
// lists the 10 loudest), and quiet keys under them.
func feedCandidates(addN func(key []byte, n uint64) error, markers int) error {
	for i := range markers {
		if err := addN(markerKey(i), uint64(100000-i)); err != nil {
			return err
		}
	}
	for i, k := range metricsKeys {
		if err := addN([]byte(k), uint64(50000-i)); err != nil {
			return err
		}
	}
	for i := range 100 {
		if err := addN(fmt.Appendf(nil, "quiet-%d", i), 1); err != nil {
			return err
		}
	}
	return nil
}

func addNOf[A any](h interface {
	AddN([]byte, uint64) (A, error)
}) func([]byte, uint64) error {
	return func(k []byte, n uint64) error { _, err := h.AddN(k, n); return err }
}

// makeMetricsSpecimens writes the crafted files into dir and reads them
// back, crafted.
func makeMetricsSpecimens(dir string, rng *rand.Rand) ([]specimen, error) {
	var out []specimen
	for _, m := range metricsMakers(rng) {
		path := filepath.Join(dir, m.name)
		os.Remove(path)
		if err := m.make(path); err != nil {
			return nil, fmt.Errorf("specimen %s: %w", m.name, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		hot, err := craftSpecimen(m, data)
		if err != nil {
			return nil, err
		}
		// Mutations aim at the crafted slots and names as often as at the
		// header, the directory and the regions' heads.
		out = append(out, specimen{name: m.name, data: data, hot: append(hotSpans(data), hot...)})
	}
	twice, err := namedTwice(out[len(out)-1])
	if err != nil {
		return nil, err
	}
	return append(out, twice), nil
}

// A metricsMaker writes one file to craft.
type metricsMaker struct {
	name  string
	make  func(path string) error
	names bool // the structure names are crafted too
}

// metricsMakers are the files to craft: structures with candidate tables
// holding the marker keys, and an arena of marker names.
func metricsMakers(rng *rand.Rand) []metricsMaker {
	seed := func() uint64 { return rng.Uint64() | 1 }
	cand := sketch.CountMinConfig{Rows: 3, Width: 512, Candidates: 24}
	seeded := func(cfg sketch.CountMinConfig) sketch.CountMinConfig { cfg.Seed = seed(); return cfg }
	markers := len(metricsPrefixes)
	return []metricsMaker{
		{name: "candidates-countmin", make: func(p string) error {
			c, err := sketch.OpenCountMin(sketch.Path(p), seeded(cand))
			if err == nil {
				err = feedCandidates(addNOf[uint64](c), markers)
			}
			return closeAfter(c, err)
		}},
		{name: "candidates-keybytes8", make: func(p string) error {
			c, err := sketch.OpenCountMin(sketch.Path(p), sketch.CountMinConfig{Rows: 2, Width: 256, Candidates: 16, CandidateKeyBytes: 8, Seed: seed()})
			if err == nil {
				err = feedCandidates(addNOf[uint64](c), 0)
			}
			return closeAfter(c, err)
		}},
		{name: "candidates-window", make: func(p string) error {
			w, err := sketch.OpenCountMinWindow(sketch.Path(p), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 3}, CountMin: seeded(cand)})
			if err == nil {
				err = feedCandidates(addNOf[uint64](w), markers)
			}
			if err == nil {
				err = w.Rotate()
			}
			if err == nil {
				err = feedCandidates(addNOf[uint64](w), markers)
			}
			return closeAfter(w, err)
		}},
		{name: "candidates-arena", names: true, make: func(p string) error {
			return makeCandidatesArena(p, cand, seed(), markers)
		}},
	}
}

// makeCandidatesArena makes an arena of marker names: a Count-Min sketch
// and a window fed the marker keys, and Bloom filters.
func makeCandidatesArena(p string, cand sketch.CountMinConfig, seed uint64, markers int) error {
	a, err := sketch.OpenArena(sketch.Path(p), sketch.ArenaConfig{Size: 1 << 20, Seed: seed})
	if err != nil {
		return err
	}
	defer a.Close()
	c, err := sketch.OpenCountMin(a.Place(markerName(0)), cand)
	if err == nil {
		err = feedCandidates(addNOf[uint64](c), markers)
		c.Close()
	}
	if err != nil {
		return err
	}
	w, err := sketch.OpenCountMinWindow(a.Place(markerName(1)), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 2}, CountMin: cand})
	if err == nil {
		err = feedCandidates(addNOf[uint64](w), markers)
		w.Close()
	}
	if err != nil {
		return err
	}
	for i := 2; i < len(metricsNames); i++ {
		b, err := sketch.OpenBloom(a.Place(markerName(i)), sketch.BloomConfig{Capacity: 100, FPRate: 0.01})
		if err != nil {
			return err
		}
		b.Close()
	}
	return nil
}

// craftSpecimen patches the marker keys in data's candidate slots with the
// crafted prefixes, and the marker names with the crafted names when the
// maker says so, and returns the spans it patched.
func craftSpecimen(m metricsMaker, data []byte) ([]span, error) {
	var hot []span
	if m.name != "candidates-keybytes8" {
		for i, with := range metricsPrefixes {
			at := patchAll(data, markerKey(i)[:sketch.DefaultCandidateKeyBytes], with)
			if len(at) == 0 {
				return nil, fmt.Errorf("specimen %s: marker key %d is in no candidate slot", m.name, i)
			}
			for _, a := range at {
				hot = append(hot, craftedSpan(a))
			}
		}
	}
	if m.names {
		for i, with := range metricsNames {
			at := patchAll(data, []byte(markerName(i)), with)
			if len(at) != 1 {
				return nil, fmt.Errorf("specimen %s: name %q is not in the directory once", m.name, markerName(i))
			}
			hot = append(hot, craftedSpan(at[0]))
		}
		resum(data)
	}
	return hot, nil
}

// namedTwice is the crafted arena with two structures under one crafted
// name.
func namedTwice(arena specimen) (specimen, error) {
	dup := append([]byte(nil), arena.data...)
	at := bytes.Index(dup, append(append([]byte(nil), metricsNames[4]...), 0))
	if at < 0 {
		return specimen{}, fmt.Errorf("specimen candidates-arena: crafted name %q is not in the directory", metricsNames[4])
	}
	copy(dup[at:], metricsNames[5])
	resum(dup)
	return specimen{name: "candidates-arena-twice", data: dup, hot: arena.hot}, nil
}
