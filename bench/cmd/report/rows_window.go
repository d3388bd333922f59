package main

import (
	"time"

	"github.com/shmsketch/sketch"
)

// Count-Min window rows: a window of two periods of an hour (three slots,
// so no period turns during a run) on the default shape and shape C,
// uniform keys, Add and Estimate single and in batches of 256 on each
// build, and two processes adding; beside the plain Count-Min rows of the
// same shapes. And Count-Min Merge, one whole grid into another.
func windowRows(builds []string) []subject {
	var rows []subject
	for _, b := range builds {
		for _, sh := range []string{"default", "C"} {
			for _, op := range []string{"add", "estimate"} {
				rows = append(rows, windowRow(b, op, sh, 1, 1), windowRow(b, op, sh, 256, 1))
			}
		}
		rows = append(rows, windowRow(b, "add", "default", 1, 2))
	}
	for _, sh := range []string{"default", "B", "C"} {
		rows = append(rows, mergeRow(sh))
	}
	return rows
}

// windowSpan is the window measured: an hour a period, so none turns.
var windowSpan = sketch.Window{Period: time.Hour, Keep: 2}

func windowKey(op, build, shape string, batch, procs int) Key {
	return Key{Struct: "window", Op: op, Impl: "sketch", Build: build, Shape: shape, Dist: "uniform", Batch: batch, Writers: 1, Procs: procs}
}

// window returns this build's Count-Min window of a shape, rotated
// through so that its slots hold the window's periods, as in a window in
// use (also for the instruction counts: a fresh window's previous slot
// holds nothing and its adds take another way), and its slots' pages
// touched where they cost time.
func (e *env) window(sh shape) (*sketch.CountMinWindow, error) {
	return cachedErr(e, "window-"+sh.name, func() (*sketch.CountMinWindow, error) {
		w, err := sketch.OpenCountMinWindow(sketch.Path(e.file("window", sh.name)), sketch.CountMinWindowConfig{Window: windowSpan, CountMin: sh.config()})
		if err != nil {
			return nil, err
		}
		for i := 0; i < windowSpan.Keep+1 && !e.attach; i++ {
			if err := w.Rotate(); err != nil {
				w.Close()
				return nil, err
			}
		}
		if !e.small {
			w.Stats() // maps every page of every slot by reading it
		}
		e.onClose(w)
		return w, nil
	})
}

func windowRow(build, op, shape string, batch, procs int) subject {
	sh := shapeNamed(shape)
	k := windowKey(op, build, shape, batch, procs)
	return subject{Key: k, Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		w, err := e.window(sh)
		return overKeys(e, "uniform", err, func() func([][]byte) uint64 { return windowOp(w, op, batch) })
	}}
}

// windowOp is cmsOp for the window.
func windowOp(w *sketch.CountMinWindow, op string, batch int) func([][]byte) uint64 {
	switch {
	case op == "add" && batch == 1:
		return func(keys [][]byte) (sum uint64) {
			for _, k := range keys {
				v, _ := w.Add(k)
				sum += v
			}
			return sum
		}
	case op == "add":
		return func(keys [][]byte) uint64 {
			for i := 0; i < len(keys); i += batch {
				w.AddBatch(keys[i:i+batch], nil)
			}
			return 0
		}
	case batch == 1:
		return func(keys [][]byte) (sum uint64) {
			for _, k := range keys {
				sum += w.Estimate(k)
			}
			return sum
		}
	}
	est := make([]uint64, batch)
	return func(keys [][]byte) (sum uint64) {
		for i := 0; i < len(keys); i += batch {
			w.EstimateBatch(keys[i:i+batch], est)
			sum += est[0]
		}
		return sum
	}
}

// mergeRow is CountMin.Merge of one sketch into another of the same shape
// and seed (in Go in both builds): one op is one whole merge.
func mergeRow(shape string) subject {
	sh := shapeNamed(shape)
	k := Key{Struct: "countmin", Op: "merge", Impl: "sketch", Shape: shape, Dist: "-", Batch: 1, Writers: 1, Procs: 1}
	return subject{Key: k, Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		dst, err := e.countMin(sh)
		if err != nil {
			return opener{}, err
		}
		src, err := cachedErr(e, "merge-src-"+shape, func() (*sketch.CountMin, error) {
			c, err := sketch.OpenCountMin(sketch.Path(e.file("cms", shape+"-src")), sh.config())
			if err == nil {
				e.onClose(c)
				err = c.Reset()
			}
			return c, err
		})
		if err != nil {
			return opener{}, err
		}
		// One merge per "key": the stream only counts the merges.
		return over(e.stream("uniform").Bytes, func() func([][]byte) uint64 {
			return func(keys [][]byte) uint64 {
				for range keys {
					dst.Merge(src)
				}
				return 0
			}
		}), nil
	}}
}
