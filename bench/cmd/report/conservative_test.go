package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
)

func TestOverStats(t *testing.T) {
	est := []uint64{5, 3, 10, 7, 4}
	exact := []uint64{5, 1, 4, 8, 4}
	mean, p99, most, low := overStats(est, exact)
	// Over: 0, 2, 6, (low), 0: the low word counts as 0 over.
	if mean != 8.0/5 || p99 != 6 || most != 6 || low != 1 {
		t.Errorf("overStats = %v, %d, %d, %d; want 1.6, 6, 6, 1", mean, p99, most, low)
	}
	// Nearest rank: of 200 values 1..200, the 198th.
	est, exact = make([]uint64, 200), make([]uint64, 200)
	for i := range est {
		est[i] = uint64(200 - i)
	}
	if _, p99, _, _ := overStats(est, exact); p99 != 198 {
		t.Errorf("99th percentile of 1..200 = %d, want 198", p99)
	}
}

func TestNearestWidths(t *testing.T) {
	for n, want := range map[int][]int{4096: {4096}, 8192: {8192}, 12288: {8192, 16384}, 10000: {8192}, 14000: {16384}} {
		if got := nearestWidths(n); !slices.Equal(got, want) {
			t.Errorf("nearestWidths(%d) = %v, want %v", n, got, want)
		}
	}
}

// syntheticWords is a text of n distinct words, word i said 1 + i%7
// times, interleaved.
func syntheticWords(n int) *textWords {
	var b strings.Builder
	for round := range 7 {
		for i := range n {
			if i%7 >= round {
				fmt.Fprintf(&b, "w%d ", i)
			}
		}
	}
	return wordsOf(b.String())
}

// TestOverEstimates_FewWordsExact counts a few words, which the default
// shape's 5 rows of 4096 never all share: every row is exact.
func TestOverEstimates_FewWordsExact(t *testing.T) {
	w := syntheticWords(50)
	o, err := measureOverEstimates(t.TempDir(), w)
	if err != nil {
		t.Fatal(err)
	}
	if o.Words != len(w.Stream) || o.Distinct != 50 || len(o.Rows) != len(overConfigs()) {
		t.Fatalf("%d words, %d distinct, %d rows; want %d, 50, %d", o.Words, o.Distinct, len(o.Rows), len(w.Stream), len(overConfigs()))
	}
	for _, r := range o.Rows {
		if r.Mean != 0 || r.P99 != 0 || r.Max != 0 || r.Low != 0 {
			t.Errorf("%s: mean %v, p99 %d, max %d, low %d; want all 0", r.Config.label(), r.Mean, r.P99, r.Max, r.Low)
		}
		if want := sketchFileBytes(t, r.Config); r.Bytes != want {
			t.Errorf("%s: %d file bytes, want %d", r.Config.label(), r.Bytes, want)
		}
		if r.Written <= 0 || r.Written > r.Bytes {
			t.Errorf("%s: %d bytes written of %d", r.Config.label(), r.Written, r.Bytes)
		}
	}
}

// sketchFileBytes is the size of a new sketch of c in memory.
func sketchFileBytes(t *testing.T, c overConfig) int64 {
	sh := shapeNamed("default")
	s, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: sh.rows, Width: c.Width, Lanes: c.Lanes, ConservativeUpdate: c.Conservative, Seed: keySeed})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return int64(s.Stats().Bytes)
}

// TestOverEstimates_AgainstAReference counts words that share counters in
// the default shape and checks the plain row against a sketch fed one Add
// at a time and a map: the same figures. Conservative update at Lanes 1
// (the shared lane unwritten) is never above plain adds, key by key, so
// neither are its figures; and the shared lane's pages hold only zeros.
func TestOverEstimates_AgainstAReference(t *testing.T) {
	w := syntheticWords(20_000)
	o, err := measureOverEstimates(t.TempDir(), w)
	if err != nil {
		t.Fatal(err)
	}
	sh := shapeNamed("default")
	ref, err := sketch.OpenCountMin(sketch.Memory(), sh.config())
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	exact := map[string]uint64{}
	for _, id := range w.Stream {
		ref.Add(w.Vocab[id])
		exact[string(w.Vocab[id])]++
	}
	est, counts := make([]uint64, 0, len(exact)), make([]uint64, 0, len(exact))
	for k, n := range exact {
		est, counts = append(est, ref.EstimateString(k)), append(counts, n)
	}
	var want overRow
	want.Mean, want.P99, want.Max, want.Low = overStats(est, counts)
	base := o.Rows[0]
	if base.Config.label() != "plain adds, one grid" || base.Mean != want.Mean || base.P99 != want.P99 || base.Max != want.Max || base.Low != 0 {
		t.Errorf("%s: mean %v, p99 %d, max %d, low %d; want %v, %d, %d, 0", base.Config.label(), base.Mean, base.P99, base.Max, base.Low, want.Mean, want.P99, want.Max)
	}
	if base.Mean == 0 {
		t.Errorf("%d distinct words in %d × %d over-estimate by nothing: the test no longer makes them share counters", len(w.Vocab), sh.rows, sh.width)
	}
	for _, r := range o.Rows {
		if r.Low != 0 {
			t.Errorf("%s: %d words estimated low", r.Config.label(), r.Low)
		}
		if c := r.Config; c.Conservative && c.Lanes == 1 {
			if r.Mean > base.Mean || r.P99 > base.P99 || r.Max > base.Max {
				t.Errorf("%s: %s, above plain adds' %s", c.label(), overFigures(r), overFigures(base))
			}
			if zeros := r.Bytes - r.Written; zeros < sh.bytes() {
				t.Errorf("%s: %d bytes all zeros, want the shared lane's %d at least", c.label(), zeros, sh.bytes())
			}
		}
	}
}

func TestOverTable(t *testing.T) {
	row := func(c overConfig, bytes int64, mean float64, p99, most uint64) overRow {
		return overRow{Config: c, Bytes: bytes, Allocated: bytes, Written: bytes / 2, Mean: mean, P99: p99, Max: most}
	}
	cs := overConfigs()
	o := &overEstimates{Words: 1000, Distinct: 100, Version: "go1.2.3", Files: 3, Capped: true, Rows: []overRow{
		row(cs[0], 196608, 20, 60, 300),
		row(cs[1], 360448, 20, 60, 300),
		row(cs[2], 360448, 10, 30, 280),
		row(cs[3], 524288, 11, 33, 280),
		row(cs[4], 360448, 7.5, 27, 140),
		row(cs[5], 688128, 2, 10, 40),
	}}
	o.Rows[3].Low = 2
	got := overTable(o).String()
	for _, want := range []string{
		"| 5 × 4096 unless said | file bytes | pages written | mean over-estimate | 99th percentile | max | mean / plain one grid | 99th percentile / plain one grid |\n",
		"| plain adds, one grid | 192 KiB | 96 KiB | 20.0 | 60 | 300 | 1.00x | 1.00x |\n",
		"| conservative update, Lanes 1 | 352 KiB | 176 KiB | 10.0 | 30 | 280 | 0.500x | 0.500x |\n",
		"| conservative update, Lanes 2, 2 handles taking chunks in turn **(ERROR: 2 words estimated below their count)** | 512 KiB |",
		"| plain adds, one grid, width 16384 | 672 KiB | 336 KiB | 2.00 | 10 | 40 | 0.100x | 0.167x |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("overTable lacks\n%s\nin\n%s", want, got)
		}
	}
	text := strings.Join(overSummary(o), " ")
	for _, want := range []string{
		"**ERROR: conservative update at Lanes 2 with 2 handles estimated 2 words below their exact count",
		"conservative update at Lanes 1 over-estimates with a mean of 10.0 and a 99th percentile of 30, 0.500x and 0.500x plain adds'",
		"Plain adds on 2 lanes from one handle write one lane and give the figures of one grid, in 352 KiB instead of 192 KiB.",
		"the library reserves every block",
		"At equal file bytes plain adds get a wider grid: conservative update at Lanes 1 (2 grids, 352 KiB) has the counters of one grid of width 8192; width 8192 (352 KiB) has a mean of 7.50 and a 99th percentile of 27, 0.750x and 0.900x conservative update's: plain adds over-estimate less.",
		"plain adds over-estimate less. Conservative update at Lanes 2 with 2 handles (3 grids, 512 KiB) lies halfway between one grid of width 8192 and one of 16384",
		"left 176 KiB of its 352 KiB file all zeros",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("overSummary lacks\n%s\nin\n%s", want, text)
		}
	}
	if s := overStream(o); !strings.Contains(s, "the first 1k words of the Go go1.2.3 sources") || !strings.Contains(s, "1000 words, 100 distinct, from 3 files") {
		t.Errorf("overStream = %q", s)
	}
	// Figures the other way round say so.
	o.Rows[4].Mean, o.Rows[4].P99 = 12, 40
	if text := strings.Join(overSummary(o), " "); !strings.Contains(text, "1.20x and 1.33x conservative update's: conservative update over-estimates less") {
		t.Errorf("overSummary with a worse wide grid:\n%s", text)
	}
}

// TestMeasureOver_NoSources leaves the measurement out with a note saying
// why when GOROOT has no sources.
func TestMeasureOver_NoSources(t *testing.T) {
	o := orchestration{quick: true}
	o.dir = t.TempDir()
	goroot := t.TempDir()
	o.measureOver(goroot)
	if o.over != nil || !strings.HasPrefix(o.overNote, "Conservative update's over-estimates were not measured: ") || !strings.Contains(o.overNote, goroot+"/src is not there") {
		t.Errorf("measureOver(%s): %v, note %q", goroot, o.over, o.overNote)
	}
}
