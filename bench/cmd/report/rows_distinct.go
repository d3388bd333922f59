package main

import (
	"encoding/binary"
	"fmt"

	"github.com/axiomhq/hyperloglog"

	"github.com/shmsketch/sketch"
)

// Distinct-count rows: sketch.Distinct at precision 14 (2^14 one-byte
// registers) on each build beside axiomhq/hyperloglog's New14 (as many
// registers on the heap, not safe for concurrent use: one writer only) on
// the same keys, 8-byte keys ("uint64") and the uniform stream's. Add and
// AddString in one goroutine, Add in two goroutines on one handle and in
// two processes on one file, AddBatch ×256, and Count with nothing changed
// (cached) and after a change (a walk of the registers) beside axiomhq's
// Estimate, which walks every time. Both have counted their stream once
// before the clock starts, so adds find their registers as high as the
// key would raise them, as most adds do once a count is well past its
// registers.
func distinctRows(builds []string) []subject {
	var rows []subject
	for _, b := range builds {
		for _, d := range distinctDists {
			rows = append(rows, distinctAddRow(b, "add", d, 1, 1, 1), distinctAddRow(b, "addstring", d, 1, 1, 1))
		}
		rows = append(rows,
			distinctAddRow(b, "add", "uint64", 256, 1, 1),
			distinctAddRow(b, "add", "uint64", 1, 2, 1),
			distinctAddRow(b, "add", "uint64", 1, 1, 2),
			distinctCountRow(b), distinctWalkRow(b))
	}
	for _, d := range distinctDists {
		rows = append(rows, axiomAddRow(d))
	}
	return append(rows, axiomCountRow())
}

// distinctDists are the key streams of the distinct-count rows.
var distinctDists = []string{"uint64", "uniform"}

// distinctP is the precision measured, the default: 16384 registers, as
// axiomhq's New14 has.
const distinctP = 14

// distinctConfig is the distinct counts' config, with the streams' seed.
func distinctConfig() sketch.DistinctConfig {
	return sketch.DistinctConfig{Precision: distinctP, Seed: keySeed}
}

// distinctFileBytes is the size of a distinct count's file.
func distinctFileBytes() int64 {
	n, err := distinctConfig().Bytes()
	if err != nil {
		panic(err)
	}
	return int64(n)
}

// distinctKey is the key of a distinct-count row: op add, addstring,
// count (nothing changed since the last) or countwalk (after a change);
// axiomhq's Insert is its add, its Estimate its count.
func distinctKey(op, impl, build, dist string, batch, writers, procs int) Key {
	return Key{Struct: "distinct", Op: op, Impl: impl, Build: build, Shape: fmt.Sprintf("p%d", distinctP), Dist: dist, Batch: batch, Writers: writers, Procs: procs}
}

// distinctOf returns this build's distinct count named name, in a file,
// kept (keep) and warm: it has counted stream dist once (a peer attaching
// finds it so).
func (e *env) distinctOf(name, dist string) (*sketch.Distinct, error) {
	return cachedErr(e, "distinct-"+name, func() (*sketch.Distinct, error) {
		d, err := sketch.OpenDistinct(sketch.Path(e.file("distinct", name)), distinctConfig())
		if err != nil {
			return nil, err
		}
		return d, e.keep(d, func() { d.Stats() }, func() error {
			if e.attach {
				return nil
			}
			return d.AddBatch(e.stream(dist).Bytes)
		})
	})
}

// distinctAddRow is sketch.Distinct's Add, AddString or (batch > 1)
// AddBatch on stream dist; the writers share one handle, two processes
// one file.
func distinctAddRow(build, op, dist string, batch, writers, procs int) subject {
	return subject{Key: distinctKey(op, "sketch", build, dist, batch, writers, procs), Bytes: distinctFileBytes(), open: func(e *env) (opener, error) {
		d, err := e.distinctOf("add-"+dist, dist)
		if err != nil {
			return opener{}, err
		}
		if op == "addstring" {
			return over(e.stream(dist).Strs, func() func([]string) uint64 {
				return func(keys []string) uint64 {
					for _, k := range keys {
						d.AddString(k)
					}
					return 0
				}
			}), nil
		}
		return over(e.stream(dist).Bytes, func() func([][]byte) uint64 {
			if batch > 1 {
				return func(keys [][]byte) uint64 {
					for i := 0; i < len(keys); i += batch {
						d.AddBatch(keys[i : i+batch])
					}
					return 0
				}
			}
			return func(keys [][]byte) uint64 {
				for _, k := range keys {
					d.Add(k)
				}
				return 0
			}
		}), nil
	}}
}

// distinctCountRow is Count with nothing changed since the handle's last
// Count: a count no one adds to.
func distinctCountRow(build string) subject {
	return subject{Key: distinctKey("count", "sketch", build, "uint64", 1, 1, 1), Bytes: distinctFileBytes(), open: func(e *env) (opener, error) {
		d, err := e.distinctOf("count", "uint64")
		return overKeys(e, "uint64", err, func() func([][]byte) uint64 {
			return func(keys [][]byte) (sum uint64) {
				for range keys {
					sum += d.Count()
				}
				return sum
			}
		})
	}}
}

// distinctWalkRow is Count after a change, which walks the registers:
// each op adds a key that raises a register (raisers), then counts. At
// the start of the list the count gets its first registers back (Reset,
// then Merge from a copy), so that every key of the list raises one again;
// that costs one walk's worth of stores per list of thousands of ops.
func distinctWalkRow(build string) subject {
	return subject{Key: distinctKey("countwalk", "sketch", build, "uint64", 1, 1, 1), Bytes: distinctFileBytes(), open: func(e *env) (opener, error) {
		w, err := e.distinctWalk()
		if err != nil {
			return opener{}, err
		}
		return opener{n: len(w.keys), new: func() func(lo, hi int) {
			return func(lo, hi int) {
				if lo == 0 {
					w.restore()
				}
				var sum uint64
				for _, k := range w.keys[lo:hi] {
					w.d.Add(k)
					sum += w.d.Count()
				}
				sink.Add(sum)
			}
		}}, nil
	}}
}

// walkKeys is the length of distinctWalkRow's list of raisers.
const walkKeys = 4096

// distinctWalker is the count that distinctWalkRow changes, a copy of its
// first registers, and keys each of which raises one of them in turn.
type distinctWalker struct {
	d, first *sketch.Distinct
	keys     [][]byte
}

// restore gives the count its first registers back.
func (w *distinctWalker) restore() {
	w.d.Reset()
	w.d.Merge(w.first)
}

// distinctWalk returns this build's walker: a count in a file, kept
// (keep), holding the uint64 stream; its copy in memory; and walkKeys
// raisers (256 on short streams).
func (e *env) distinctWalk() (*distinctWalker, error) {
	return cachedErr(e, "distinct-walk", func() (*distinctWalker, error) {
		first, err := sketch.OpenDistinct(sketch.Memory(), distinctConfig())
		if err != nil {
			return nil, err
		}
		e.onClose(first)
		if err := first.AddBatch(e.stream("uint64").Bytes); err != nil {
			return nil, err
		}
		d, err := sketch.OpenDistinct(sketch.Path(e.file("distinct", "walk")), distinctConfig())
		if err != nil {
			return nil, err
		}
		w := &distinctWalker{d: d, first: first}
		n := walkKeys
		if e.small {
			n = 256
		}
		return w, e.keep(d, func() { d.Stats() }, func() error {
			if err := d.Merge(first); err != nil {
				return err
			}
			w.keys, err = raisers(first, n)
			return err
		})
	})
}

// raisers returns n 8-byte keys, none of any stream's, each of which
// raises a register of a count (of distinctConfig, as from is) that holds
// from's registers and the keys before it in the list. It adds candidates
// to a copy of from and keeps those after which Count moved, which it
// does only when a register rose. A raise that leaves the rounded count
// as it was loses its key, but every later key still raises a register
// of the list's count: its registers are never above the copy's.
func raisers(from *sketch.Distinct, n int) ([][]byte, error) {
	c, err := sketch.OpenDistinct(sketch.Memory(), distinctConfig())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Merge(from); err != nil {
		return nil, err
	}
	buf := make([]byte, 8*n)
	keys := make([][]byte, 0, n)
	last := c.Count()
	for i := uint64(1) << 32; len(keys) < n; i++ {
		k := buf[8*len(keys) : 8*len(keys)+8 : 8*len(keys)+8]
		binary.LittleEndian.PutUint64(k, i)
		if err := c.Add(k); err != nil {
			return nil, err
		}
		if now := c.Count(); now != last {
			keys, last = append(keys, k), now
		}
	}
	return keys, nil
}

// axiomHLL returns axiomhq's New14 sketch warm with stream dist, as
// distinctOf's count is, and dense, as in use: short streams (under
// callgrind) leave it sparse, so it counts 2^15 more keys then.
func (e *env) axiomHLL(dist string) *hyperloglog.Sketch {
	return cached(e, "axiomhq-"+dist, func() *hyperloglog.Sketch {
		h := hyperloglog.New14()
		for _, k := range e.stream(dist).Bytes {
			h.Insert(k)
		}
		if e.small {
			var buf []byte
			for i := range uint64(1 << 15) {
				buf = appendUint64(buf[:0], 1<<33+i)
				h.Insert(buf)
			}
		}
		return h
	})
}

// axiomAddRow is axiomhq's Insert (it has no string variant: it takes the
// bytes of the keys that AddString takes as strings).
func axiomAddRow(dist string) subject {
	return subject{Key: distinctKey("add", "axiomhq", "", dist, 1, 1, 1), open: func(e *env) (opener, error) {
		h := e.axiomHLL(dist)
		return over(e.stream(dist).Bytes, func() func([][]byte) uint64 {
			return func(keys [][]byte) uint64 {
				for _, k := range keys {
					h.Insert(k)
				}
				return 0
			}
		}), nil
	}}
}

// axiomCountRow is axiomhq's Estimate, which walks its registers every
// time.
func axiomCountRow() subject {
	return subject{Key: distinctKey("count", "axiomhq", "", "uint64", 1, 1, 1), open: func(e *env) (opener, error) {
		h := e.axiomHLL("uint64")
		return over(e.stream("uint64").Bytes, func() func([][]byte) uint64 {
			return func(keys [][]byte) (sum uint64) {
				for range keys {
					sum += h.Estimate()
				}
				return sum
			}
		}), nil
	}}
}
