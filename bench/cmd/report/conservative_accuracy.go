package main

import (
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/shmsketch/sketch"
)

// Conservative update's over-estimates, measured once in the orchestrator
// (they repeat exactly: one stream, one order, a fixed seed): Count-Min
// sketches of the default shape, with plain adds and with conservative
// update, and wider plain grids of the same file bytes, count a real
// text's words (words.go), and each distinct word's estimate is compared
// with its exact count.

// overChunk is the words of one AddBatch call.
const overChunk = 64

// overConfig is one sketch of the measurement: its width (the rows are the
// default shape's), lanes, update and the handles that take the chunks in
// turn, each claiming a lane of its own.
type overConfig struct {
	Width        int
	Lanes        int
	Conservative bool
	Handles      int
}

// grids is how many grids of counters the file keeps: with conservative
// update, the lanes (at least 1) and the shared lane.
func (c overConfig) grids() int {
	if c.Conservative {
		return max(c.Lanes, 1) + 1
	}
	return max(c.Lanes, 1)
}

func (c overConfig) label() string {
	var s string
	switch {
	case c.Conservative:
		s = fmt.Sprintf("conservative update, Lanes %d", c.Lanes)
	case c.Lanes > 1:
		s = fmt.Sprintf("plain adds, %d lanes", c.Lanes)
	default:
		s = "plain adds, one grid"
	}
	if c.Handles > 1 {
		s += fmt.Sprintf(", %d handles taking chunks in turn", c.Handles)
	} else if c.Lanes > 1 {
		s += ", one handle (one lane written)"
	}
	if def := shapeNamed("default"); c.Width != def.width {
		s += fmt.Sprintf(", width %d", c.Width)
	}
	return s
}

// phrase names the config in a sentence.
func (c overConfig) phrase() string {
	switch {
	case c.Conservative && c.Handles > 1:
		return fmt.Sprintf("conservative update at Lanes %d with %d handles", c.Lanes, c.Handles)
	case c.Conservative:
		return fmt.Sprintf("conservative update at Lanes %d", c.Lanes)
	case c.Lanes > 1:
		return fmt.Sprintf("plain adds on %d lanes", c.Lanes)
	}
	return fmt.Sprintf("plain adds on one grid of width %d", c.Width)
}

// overConfigs are the measurement's sketches: the base (plain adds, one
// grid of the default shape) first, then one grid of plain adds for each
// width of as many bytes as a conservative sketch's grids, or the nearest
// powers of two (both when equally near).
func overConfigs() []overConfig {
	w := shapeNamed("default").width
	cs := []overConfig{
		{Width: w, Handles: 1},
		{Width: w, Lanes: 2, Handles: 1},
		{Width: w, Lanes: 1, Conservative: true, Handles: 1},
		{Width: w, Lanes: 2, Conservative: true, Handles: 2},
	}
	var widths []int
	for _, c := range cs {
		if c.Conservative {
			for _, x := range nearestWidths(c.grids() * w) {
				if !slices.Contains(widths, x) {
					widths = append(widths, x)
				}
			}
		}
	}
	slices.Sort(widths)
	for _, x := range widths {
		cs = append(cs, overConfig{Width: x, Handles: 1})
	}
	return cs
}

// nearestWidths are the powers of two nearest n: n itself when it is one,
// else the one below or above, or both when equally near.
func nearestWidths(n int) []int {
	lo := 1 << (bits.Len(uint(n)) - 1)
	hi := lo << 1
	switch {
	case lo == n:
		return []int{n}
	case n-lo < hi-n:
		return []int{lo}
	case n-lo > hi-n:
		return []int{hi}
	}
	return []int{lo, hi}
}

// overRow is one sketch's over-estimates.
type overRow struct {
	Config overConfig
	// Bytes is the file's size, Allocated its allocated blocks (the
	// library reserves a file's blocks when it creates it), and Written
	// the bytes of the pages that hold anything but zeros after the adds:
	// what the header and the adds wrote.
	Bytes, Allocated, Written int64
	Mean                      float64 // of Estimate - count over the distinct words
	P99, Max                  uint64
	// Low is the distinct words estimated below their count, which a
	// Count-Min sketch must never do.
	Low int
}

// overEstimates is the measurement.
type overEstimates struct {
	// Words and Distinct count the stream's words; Version, Files and
	// Capped are the stream's (textWords).
	Words, Distinct int
	Version         string
	Files           int
	Capped          bool
	Rows            []overRow // in overConfigs' order: the base first
	Took            time.Duration
}

// measureOver reads the real-text stream of the sources under goroot, the
// first o.wordLimit words (1M under -quick, else all), and measures the over-estimates on it in
// the run's directory; when it cannot, o.overNote says why.
func (o *orchestration) measureOver(goroot string) {
	limit := o.wordLimit
	if limit == 0 && o.quick {
		limit = 1_000_000
	}
	t0 := time.Now()
	w, err := goSourceWords(goroot, limit)
	if err != nil {
		o.overNote = fmt.Sprintf("Conservative update's over-estimates were not measured: their stream is the words of the Go sources under `$GOROOT/src`, and this run found none (%v).", err)
		progress("%v", err)
		return
	}
	progress("real text: %d words (%d distinct) of the Go %s sources read in %v", len(w.Stream), len(w.Vocab), w.Version, time.Since(t0).Round(time.Millisecond))
	if o.over, err = measureOverEstimates(o.dir, w); err != nil {
		o.overNote = fmt.Sprintf("Conservative update's over-estimates were not measured: %v.", err)
		progress("%v", err)
	}
}

// measureOverEstimates counts the words in a sketch of each config, in
// files in dir, and compares every distinct word's estimate with its
// count.
func measureOverEstimates(dir string, w *textWords) (*overEstimates, error) {
	t0 := time.Now()
	exact := w.counts()
	out := &overEstimates{Words: len(w.Stream), Distinct: len(w.Vocab), Version: w.Version, Files: w.Files, Capped: w.Capped}
	for i, c := range overConfigs() {
		r, err := overRowOf(filepath.Join(dir, fmt.Sprintf("overestimates-%d", i)), c, w, exact)
		if err != nil {
			return nil, fmt.Errorf("over-estimates, %s: %w", c.label(), err)
		}
		if r.Low > 0 {
			progress("ERROR: over-estimates, %s: %d words estimated below their exact count", c.label(), r.Low)
		}
		out.Rows = append(out.Rows, r)
	}
	out.Took = time.Since(t0)
	progress("conservative update: over-estimates on %d words of the Go %s sources took %v", len(w.Stream), w.Version, out.Took.Round(time.Millisecond))
	return out, nil
}

// overRowOf counts the words in a sketch of config c at path, which it
// removes afterwards.
func overRowOf(path string, c overConfig, w *textWords, exact []uint64) (overRow, error) {
	r := overRow{Config: c}
	defer os.Remove(path)
	sh := shapeNamed("default")
	cfg := sketch.CountMinConfig{Rows: sh.rows, Width: c.Width, Lanes: c.Lanes, ConservativeUpdate: c.Conservative, Seed: keySeed}
	var hs []*sketch.CountMin
	defer func() {
		for _, h := range hs {
			h.Close()
		}
	}()
	lanes := map[int]bool{}
	for range c.Handles {
		h, err := sketch.OpenCountMin(sketch.Path(path), cfg)
		if err != nil {
			return r, err
		}
		hs = append(hs, h)
		if st := h.Stats(); c.Lanes > 1 || c.Conservative {
			if !st.LaneOwned || lanes[st.Lane] {
				return r, fmt.Errorf("handle %d adds to lane %d (claimed: %v), not a lane of its own", len(hs)-1, st.Lane, st.LaneOwned)
			}
			lanes[st.Lane] = true
		}
	}
	chunk := make([][]byte, 0, overChunk)
	for i := 0; i < len(w.Stream); i += overChunk {
		chunk = chunk[:0]
		for _, id := range w.Stream[i:min(i+overChunk, len(w.Stream))] {
			chunk = append(chunk, w.Vocab[id])
		}
		if err := hs[(i/overChunk)%len(hs)].AddBatch(chunk, nil); err != nil {
			return r, err
		}
	}
	st := hs[0].Stats()
	if st.Adds != uint64(len(w.Stream)) {
		return r, fmt.Errorf("the sketch counted %d adds, want %d", st.Adds, len(w.Stream))
	}
	r.Bytes = int64(st.Bytes)
	fi, err := os.Stat(path)
	if err != nil {
		return r, err
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		r.Allocated = int64(sys.Blocks) * 512
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	r.Written = writtenBytes(data, os.Getpagesize())
	est := make([]uint64, len(w.Vocab))
	if err := hs[0].EstimateBatch(w.Vocab, est); err != nil {
		return r, err
	}
	r.Mean, r.P99, r.Max, r.Low = overStats(est, exact)
	return r, nil
}

// writtenBytes is the bytes of the pages of data that are not all zeros.
func writtenBytes(data []byte, page int) int64 {
	var n int64
	for off := 0; off < len(data); off += page {
		p := data[off:min(off+page, len(data))]
		if slices.ContainsFunc(p, func(b byte) bool { return b != 0 }) {
			n += int64(len(p))
		}
	}
	return n
}

// overStats is the mean, 99th percentile (nearest rank) and largest of
// est[i] - exact[i], and how many est[i] are below exact[i] (counted as
// 0 over).
func overStats(est, exact []uint64) (mean float64, p99, most uint64, low int) {
	if len(est) == 0 {
		return 0, 0, 0, 0
	}
	over := make([]uint64, len(est))
	var sum float64
	for i, e := range est {
		if e < exact[i] {
			low++
			continue
		}
		over[i] = e - exact[i]
		sum += float64(over[i])
	}
	slices.Sort(over)
	rank := (99*len(over) + 99) / 100 // ceil(0.99 n)
	return sum / float64(len(over)), over[rank-1], over[len(over)-1], low
}
