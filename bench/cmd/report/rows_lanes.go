package main

import (
	"strings"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/bench/internal/floor"
)

// The lanes rows: blind AddBatch (no estimates, lanesBatch keys a call)
// on the default shape, in a file with 1, 2 or 4 lanes (1 is the layout
// without lanes), from 1, 2 or 4 writers of three kinds: processes (the
// worker and peers of its build, a handle each), goroutines with a handle
// each, and goroutines of one handle; beside the bare floor with a grid
// of its own a writer, which no writer's line ever leaves: the most the
// machine's cores give.
const (
	lanesBatch = 64
	// lanesKeys is how many keys of the zipf stream the writers walk:
	// few enough for the caches, so that what moves between cores is the
	// counters' lines, not keys fetched from memory.
	lanesKeys = 1 << 12
)

var (
	laneCounts   = []int{1, 2, 4}
	writerCounts = []int{1, 2, 4}
)

// writerKind is one way of having several writers.
type writerKind struct {
	name string // for tables and charts: "processes", ...
	// key returns the kind's key for w writers on a file of lanes lanes.
	key func(build string, lanes, w int) Key
}

var writerKinds = []writerKind{
	{"processes, a handle each", func(b string, l, w int) Key { return lanesKey(b, l, 1, w, 1) }},
	{"goroutines, a handle each", func(b string, l, w int) Key { return lanesKey(b, l, w, 1, w) }},
	{"goroutines of one handle", func(b string, l, w int) Key { return lanesKey(b, l, w, 1, 1) }},
}

// lanesKey is a lanes row's key: writers goroutines in each of procs
// processes, with handles read-write handles in each.
func lanesKey(build string, lanes, writers, procs, handles int) Key {
	return Key{Struct: "countmin", Op: "add", Impl: "sketch", Build: build, Shape: "default", Dist: "zipf", Batch: lanesBatch,
		Writers: writers, Procs: procs, Lanes: lanes, Handles: handles}
}

// floorGridsKey is the bare floor's row with w writers, a grid each.
func floorGridsKey(w int) Key {
	return Key{Struct: "countmin", Op: "add", Impl: "floor", Shape: "default", Dist: "zipf", Batch: lanesBatch, Writers: w, Procs: 1, Lanes: w, Handles: w}
}

// lanesRows are the lanes rows of every build: one writer (the base of
// every kind) and each kind's 2 and 4 writers, for each lane count; then
// the floor's.
func lanesRows(builds []string) []subject {
	var rows []subject
	for _, b := range builds {
		for _, l := range laneCounts {
			rows = append(rows, lanesRow(lanesKey(b, l, 1, 1, 1)))
			for _, k := range writerKinds {
				for _, w := range writerCounts[1:] {
					rows = append(rows, lanesRow(k.key(b, l, w)))
				}
			}
		}
	}
	for _, w := range writerCounts {
		rows = append(rows, floorGridsRow(w))
	}
	return rows
}

// lanesRow adds blind batches through k.Handles handles of a file of
// k.Lanes lanes, which only k's processes open (a file shared with
// another subject's handles would leave its lanes taken): goroutine i
// writes through handle i mod Handles.
func lanesRow(k Key) subject {
	sh := shapeNamed("default")
	return subject{Key: k, Bytes: sh.bytes() * int64(k.Lanes), open: func(e *env) (opener, error) {
		hs, err := e.laneHandles(k)
		if err != nil {
			return opener{}, err
		}
		next := 0
		return over(e.prefix(k.Dist, lanesKeys), func() func([][]byte) uint64 {
			c := hs[next%len(hs)]
			next++
			return cmsOp(c, "add", k.Batch)
		}), nil
	}}
}

// laneHandles opens k.Handles read-write handles, each claiming a lane,
// on the file of k's group (the first kept: its pages touched).
func (e *env) laneHandles(k Key) ([]*sketch.CountMin, error) {
	return cachedErr(e, "lanes-"+k.String(), func() ([]*sketch.CountMin, error) {
		cfg := shapeNamed(k.Shape).config()
		cfg.Lanes = k.Lanes
		path := e.file("lanes", strings.ReplaceAll(e.group(k), "/", ","))
		var hs []*sketch.CountMin
		for i := range k.Handles {
			c, err := sketch.OpenCountMin(sketch.Path(path), cfg)
			if err == nil && i == 0 {
				err = e.keep(c, func() { c.Stats() }, nil)
			} else if err == nil {
				e.onClose(c)
			}
			if err != nil {
				return nil, err
			}
			hs = append(hs, c)
		}
		return hs, nil
	})
}

// floorGridsRow is the bare floor's add from w goroutines, each into a
// grid of its own of the default shape.
func floorGridsRow(w int) subject {
	sh := shapeNamed("default")
	k := floorGridsKey(w)
	return subject{Key: k, Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		var grids []*floor.Grid
		for range w {
			f, err := floor.New(sh.rows, sh.width, keySeed, !e.small)
			if err != nil {
				return opener{}, err
			}
			e.onClose(f)
			grids = append(grids, f)
		}
		next := 0
		return over(e.prefix(k.Dist, lanesKeys), func() func([][]byte) uint64 {
			f := grids[next%len(grids)]
			next++
			return func(keys [][]byte) (sum uint64) {
				for _, k := range keys {
					sum += f.Add(k)
				}
				return sum
			}
		}), nil
	}}
}
