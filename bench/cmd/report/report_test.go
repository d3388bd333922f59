package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/bench/internal/keystream"
)

// TestMain lets the test binary serve as the report's worker, peer, memory
// and op-loop processes, which it starts with -role.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "-role=") {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAppendKey_DistinctAndSized(t *testing.T) {
	seen := make(map[string]uint64, space)
	var buf []byte
	for i := range uint64(space) {
		buf = appendKey(buf[:0], i)
		if len(buf) < 8 || len(buf) > 60 {
			t.Fatalf("key %d = %q: %d bytes, want 8 to 60", i, buf, len(buf))
		}
		if j, dup := seen[string(buf)]; dup {
			t.Fatalf("keys %d and %d are both %q", j, i, buf)
		}
		seen[string(buf)] = i
	}
	if a, b := makeStream("zipf", 1024), makeStream("zipf", 1024); strings.Join(a.Strs, ",") != strings.Join(b.Strs, ",") {
		t.Error("two zipf streams differ")
	}
}

func TestMakeStream_Uint64(t *testing.T) {
	s, next := makeStream("uint64", 4096), keystream.Numbers("uniform")
	for i, k := range s.Bytes {
		if want := next(); len(k) != 8 || binary.LittleEndian.Uint64(k) != want || s.Strs[i] != string(k) {
			t.Fatalf("key %d = %x (%q), want the 8 bytes of %d", i, k, s.Strs[i], want)
		}
	}
}

// openDistinctOf opens a distinct count in memory holding the first n
// keys of the uint64 stream.
func openDistinctOf(t *testing.T, n int) *sketch.Distinct {
	d, err := sketch.OpenDistinct(sketch.Memory(), distinctConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.AddBatch(makeStream("uint64", n).Bytes); err != nil {
		t.Fatal(err)
	}
	return d
}

// changes is the change count of d's file.
func changes(d *sketch.Distinct) uint64 { return d.Stats().RegisterChanges }

func TestRaisers_EachRaisesOneRegister(t *testing.T) {
	from := openDistinctOf(t, 4096)
	keys, err := raisers(from, 300)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 300 {
		t.Fatalf("raisers(300) returned %d keys", len(keys))
	}
	c := openDistinctOf(t, 0)
	if err := c.Merge(from); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		before := changes(c)
		c.Add(k)
		if got := changes(c) - before; got != 1 {
			t.Fatalf("key %d of the list (%x) raised %d registers, want 1", i, k, got)
		}
	}
}

// TestDistinctWalk_RaisesEveryOp runs Count after a change over its list
// twice: every op raised a register, and each pass began with the count's
// first registers back (a Reset, then a Merge that changes every word
// the first registers have).
func TestDistinctWalk_RaisesEveryOp(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t.TempDir(), self, true)
	defer e.close()
	s, ok := lookup(table(allBuilds), distinctKey("countwalk", "sketch", sketch.Backend, "uint64", 1, 1, 1).String())
	if !ok {
		t.Fatal("no Count-after-a-change subject")
	}
	run, _, err := s.start(e, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := e.distinctWalk()
	blank := openDistinctOf(t, 0)
	before := changes(blank)
	blank.Merge(w.first)
	words := changes(blank) - before
	before = changes(w.d)
	n := 2 * len(w.keys)
	run(n)
	if got, want := changes(w.d)-before, uint64(n)+2*(1+words); got != want {
		t.Errorf("%d ops (two passes) made %d changes, want %d: one each and %d for each restore", n, got, want, 1+words)
	}
}

func TestDistinctErrorTable(t *testing.T) {
	e := &distinctErrors{Ns: []int{1000, 10_000_000}, Runs: 5, RMS: map[string]map[string][]float64{
		"uint64":    {"sketch": {0.00012, 0.0081}, "axiomhq": {0, 0.0123}},
		"addresses": {"sketch": {0.5, 0.0009}, "axiomhq": {0.01, 0.02}},
	}}
	want := "| distinct keys | sketch, 8-byte keys | axiomhq, 8-byte keys | sketch, address and path keys | axiomhq, address and path keys |\n" +
		"| --- | ---: | ---: | ---: | ---: |\n" +
		"| 1k | 0.012% | 0% | 50% | 1.0% |\n" +
		"| 10M | 0.81% | 1.2% | 0.090% | 2.0% |\n"
	if got := distinctErrorTable(e).String(); got != want {
		t.Errorf("distinctErrorTable:\n%s\nwant\n%s", got, want)
	}
}

func TestDistinctTable(t *testing.T) {
	res := &results{Samples: map[string][]float64{}}
	set := func(k Key, xs ...float64) { res.Samples[k.String()] = xs }
	set(distinctKey("add", "sketch", "cgo", "uint64", 1, 1, 1), 10, 12, 11)
	set(distinctKey("add", "sketch", "purego", "uint64", 1, 1, 1), 11, 13, math.NaN())
	set(distinctKey("add", "axiomhq", "", "uint64", 1, 1, 1), 20, 24, 20)
	set(distinctKey("add", "sketch", "cgo", "uint64", 1, 2, 1), 6, 6, 6)
	set(distinctKey("countwalk", "sketch", "purego", "uint64", 1, 1, 1), 30000, 30000, 30000)
	set(distinctKey("count", "axiomhq", "", "uint64", 1, 1, 1), 15000, 20000, 10000)
	v := &view{res: res, builds: map[string]bool{"cgo": true, "purego": true}}
	want := "| ns per key (`Count`: per call), precision 14 | sketch, cgo build | sketch, pure-Go build | axiomhq `New14` | time ratio, sketch / axiomhq, cgo build | time ratio, sketch / axiomhq, pure-Go build |\n" +
		"| --- | ---: | ---: | ---: | ---: | ---: |\n" +
		"| `Add` (axiomhq: `Insert`), 8-byte keys | 11.0 (10.0–12.0) | 12.0 (11.0–13.0) | 20.0 (20.0–24.0) | 0.500x (0.500–0.550) | 0.546x (0.542–0.550) |\n" +
		"| `AddString` (axiomhq: `Insert` of the same bytes), 8-byte keys | – | – | 20.0 (20.0–24.0) | – | – |\n" +
		"| `Add`, 8-byte keys, two goroutines on one handle | 6.00 (6.00–6.00) | – | – | – | – |\n" +
		"| `Count`, nothing changed since the last (axiomhq: `Estimate`) | – | – | 15000 (10000–20000) | – | – |\n" +
		"| `Count` after a change: a walk of the registers (axiomhq: `Estimate`) | – | 30000 (30000–30000) | 15000 (10000–20000) | – | 2.00x (1.50–3.00) |\n"
	if got := v.distinctTable().String(); got != want {
		t.Errorf("distinctTable:\n%s\nwant\n%s", got, want)
	}
}

func TestStats(t *testing.T) {
	s := summarize([]float64{5, math.NaN(), 1, 3, 9})
	if s.Median != 4 || s.Min != 1 || s.Max != 9 || s.N != 4 {
		t.Errorf("summarize = %+v, want median 4, range 1-9, 4 samples", s)
	}
	r := summarize(ratios([]float64{2, 4, math.NaN(), 9}, []float64{1, 1, 1, 3}))
	if r.Median != 3 || r.N != 3 {
		t.Errorf("ratios summarized = %+v, want median 3 of 3", r)
	}
}

// counted returns what a subject's structure says was counted so far, for
// the subjects whose structure keeps a count.
func counted(e *env, s subject) (uint64, bool) {
	switch {
	case s.Struct == "countmin" && s.Impl == "sketch" && s.Lanes > 0:
		hs, _ := e.laneHandles(s.Key)
		return hs[0].Total(), true
	case s.Struct == "countmin" && s.Impl == "sketch":
		c, _ := e.countMin(shapeNamed(s.Shape))
		return c.Total(), true
	case s.Struct == "countingbloom" && s.Impl == "sketch":
		f, _ := e.countingBloom(filterFor(s.Op))
		return f.Stats().Adds, true
	case s.Struct == "bloom" && s.Impl == "sketch":
		f, _ := e.bloomOf(s.Shape, filterFor(s.Op))
		st := f.Stats()
		return st.Adds, true
	case s.Struct == "heavy" && s.Impl == "sketch":
		var k int
		fmt.Sscanf(s.Shape, "k%d", &k)
		c, _ := e.countMinTable(s.Dist, k)
		return c.Total(), true
	case s.Struct == "window":
		w, _ := e.window(shapeNamed(s.Shape))
		return w.Stats().Total, true
	case s.Struct == "map" && s.Impl == "mutexmap":
		n := space
		if s.Shape == "10k" {
			n = smallSpace
		}
		m := e.exactMutexMap(n)
		var sum uint64
		for _, v := range m.m {
			sum += v
		}
		return sum, true
	}
	return 0, false
}

// wantCounted is how much a run of n keys of s should move counted: one
// per key added, nothing for lookups.
func wantCounted(s subject, n int) uint64 {
	switch s.Op {
	case "add", "insert":
		return uint64(n)
	case "addremove":
		return uint64(n) // a remove is no add
	}
	return 0
}

// TestSubjects_RunWhatTheySay runs every subject this build can (on short
// streams, leaving out structures over a few MiB) and checks, where the
// structure counts, that a run of n keys did n keys' work: split between
// goroutines, or between this process and its peer on the same file.
func TestSubjects_RunWhatTheySay(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t.TempDir(), self, true)
	defer e.close()
	for _, s := range table(allBuilds) {
		if s.Build != "" && s.Build != sketch.Backend || s.Shape == "C" || s.Shape == "D" || s.Shape == "100M" {
			continue
		}
		t.Run(s.ID(), func(t *testing.T) {
			run, stop, err := s.start(e, 0)
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			if stop != nil {
				defer stop()
			}
			n := 2 * max(s.unit(), 1024)
			before, ok := counted(e, s)
			run(n)
			if !ok {
				return
			}
			after, _ := counted(e, s)
			if got, want := after-before, wantCounted(s, n); got != want && s.Op != "addremove" {
				t.Errorf("a run of %d keys counted %d, want %d", n, got, want)
			}
		})
	}
}

// TestReport_EndToEnd makes a small report in a temporary directory: a few
// subjects, short samples, memory at 10k keys, no instruction counts.
func TestReport_EndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	progressOut = io.Discard
	defer func() { progressOut = os.Stderr }()
	o := orchestration{
		self: self, out: filepath.Join(dir, "docs", "BENCHMARKS.md"), charts: filepath.Join(dir, "docs", "bench"),
		quick: true, memory: true, command: "make bench-report",
		plan: plan{rounds: 3, target: 2 * time.Millisecond, bins: map[string]string{sketch.Backend: self}},
	}
	o.filter = regexp.MustCompile(`^(countmin/(add|estimate)/(sketch\.[a-z]+|boom|floor)/(A|default)/uniform/b(1|256)/g1p1|map/(insert|lookup)/mutexmap/1M/uniform/b1/g1p1|countmin/add/sketch\.[a-z]+/default/uniform/b1/g(2p1|1p2)|distinct/add/(sketch\.[a-z]+|axiomhq)/p14/uint64/b1/g1p1|countmin/add/(sketch\.[a-z]+|floor)/default/zipf/b64/g[12]p1/l[12]h[12])$`)
	o.memCounts = []int{10_000}
	o.wordLimit = 100_000
	o.readme = filepath.Join(dir, "README.md")
	readme := "# x\n\nbefore\n" + readmeBegin + "\nold quote\n" + readmeEnd + "\nafter\n"
	if err := os.WriteFile(o.readme, []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := o.main(); err != nil {
		t.Fatal(err)
	}
	rb, err := os.ReadFile(o.readme)
	if err != nil {
		t.Fatal(err)
	}
	r := string(rb)
	words := strings.Join(strings.Fields(r), " ")
	if !strings.HasPrefix(r, "# x\n\nbefore\n"+readmeBegin+"\n") || !strings.HasSuffix(r, readmeEnd+"\nafter\n") ||
		strings.Contains(r, "old quote") || !strings.Contains(words, "a `sync.Mutex` + map insert with 1M keys") || !strings.Contains(words, "](docs/BENCHMARKS.md)") {
		t.Errorf("README after the report:\n%s", r)
	}
	md, err := os.ReadFile(o.out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	for _, want := range []string{
		"## Headline",
		"| Count-Min `Add` (default shape, uniform keys) / `sync.Mutex` + map insert (1M keys) | **",
		"two processes adding to one Count-Min file (default shape) / one",
		"make bench-report",
		"(bench/countmin-add-uniform.svg)",
		"| `sync.Mutex` + `map[string]uint64` (Go heap, keys included) | ",
		"| distinct count `Add` / axiomhq/hyperloglog `Insert` (precision 14, 8-byte keys) | **",
		"| `Add` (axiomhq: `Insert`), 8-byte keys | ",
		"| distinct keys | sketch, 8-byte keys | axiomhq, 8-byte keys |",
		"## Many writers: lanes",
		"(bench/lanes.svg)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	over := "| conservative update, Lanes 1 | "
	if _, err := os.Stat(filepath.Join(runtime.GOROOT(), "src")); err != nil {
		over = "Conservative update's over-estimates were not measured: their stream is the words of the Go sources"
	}
	if i := strings.Index(text, "### Conservative update: over-estimates on real text"); i < 0 || !strings.Contains(text[i:], over) {
		t.Errorf("the report's over-estimates section lacks %q", over)
	}
	if row := "| 2 goroutines, a handle each, throughput ×, " + buildName[sketch.Backend] + " | "; !regexp.MustCompile(regexp.QuoteMeta(row) + `[0-9.]+x \(`).MatchString(text) {
		t.Errorf("the report lacks a ratio in %q", row)
	}
	if strings.Contains(text, dir) {
		t.Errorf("the report names the temporary directory %s", dir)
	}
	for _, name := range []string{"countmin-add-uniform.svg", "memory.svg", "writers.svg", "lanes.svg"} {
		b, err := os.ReadFile(filepath.Join(o.charts, name))
		if err != nil {
			t.Error(err)
		} else if !strings.Contains(string(b), "<svg") {
			t.Errorf("%s is not an SVG", name)
		}
	}
}

// TestInstructionCounts_Repeatable counts a Count-Min Add under callgrind
// twice: the same count each time, and a plausible one.
func TestInstructionCounts_Repeatable(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind is not installed")
	}
	// go test strips the binaries it runs, and callgrind finds measured by
	// its symbol: build the program as make bench-report does.
	bin := filepath.Join(t.TempDir(), "report")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	id := sk("add", sketch.Backend, "default", "uniform", 1).String()
	var counts []uint64
	for i := range 2 {
		n, err := callgrind(bin, filepath.Join(t.TempDir(), fmt.Sprint(i)), id, 1024)
		if errors.Is(err, errValgrindCPU) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, n)
	}
	if counts[0] != counts[1] {
		t.Errorf("two runs counted %d and %d instructions", counts[0], counts[1])
	}
	if per := counts[0] / 1024; per < 50 || per > 5000 {
		t.Errorf("%d instructions per Add, want 50 to 5000", per)
	}
}

func TestNum(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1234.5, "1234"}, {12.34, "12.3"}, {1.234, "1.23"}, {0.1234, "0.123"}, {0.001, "0.001"},
		{0, "0.000"}, {0.000754, "0.00075"}, {0.0000075, "0.0000075"}, {-0.000754, "-0.00075"}, {math.NaN(), "–"},
	} {
		if got := num(c.x); got != c.want {
			t.Errorf("num(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}
