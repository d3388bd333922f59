package main

import (
	"fmt"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
)

// Heavy-hitter rows: Add on the default shape keeping a table of K = 2n
// candidates, for the top n = 10 and 100, on each build and stream,
// beside BoomFilters' TopK of k = 2n (a heap beside its own Count-Min of
// the same grid), so that both list as many keys. The plain Count-Min's
// Add of the same shape is a Count-Min row.
func heavyRows(builds []string) []subject {
	var rows []subject
	for _, n := range topNs {
		for _, d := range dists {
			for _, b := range builds {
				rows = append(rows, tableRow(b, d, n))
			}
			rows = append(rows, boomTopKRow(d, n))
		}
	}
	return rows
}

// topNs are the top n measured, each with K = 2n.
var topNs = []int{10, 100}

// heavyKey is the key of a heavy-hitter row: its shape is the table's K
// (the grid is the default shape).
func heavyKey(impl, build, dist string, n int) Key {
	return Key{Struct: "heavy", Op: "add", Impl: impl, Build: build, Shape: fmt.Sprintf("k%d", 2*n), Dist: dist, Batch: 1, Writers: 1, Procs: 1}
}

// tableRow is sketch.CountMin's Add with a table of 2n candidates.
func tableRow(build, dist string, n int) subject {
	sh := shapeNamed("default")
	return subject{Key: heavyKey("sketch", build, dist, n), Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		c, err := e.countMinTable(dist, 2*n)
		return overKeys(e, dist, err, func() func([][]byte) uint64 { return cmsOp(c, "add", 1) })
	}}
}

// boomTopKRow is BoomFilters' TopK Add (not safe for concurrent use: one
// writer only).
func boomTopKRow(dist string, n int) subject {
	sh := shapeNamed("default")
	return subject{Key: heavyKey("boom", "", dist, n), Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		t := e.boomTopK(dist, 2*n)
		return over(e.stream(dist).Bytes, func() func([][]byte) uint64 {
			return func(keys [][]byte) uint64 {
				for _, k := range keys {
					t.Add(k)
				}
				return 0
			}
		}), nil
	}}
}

// countMinTable returns a default-shape sketch keeping k candidates, in a
// file of this build's, kept (keep) and warm: it has counted the stream
// once, so that its table is full of the stream's loud keys, as in use.
// Each stream has its own, so that one stream's keys do not hold the
// other's table.
func (e *env) countMinTable(dist string, k int) (*sketch.CountMin, error) {
	name := fmt.Sprintf("default-k%d-%s", k, dist)
	return cachedErr(e, "cms-"+name, func() (*sketch.CountMin, error) {
		cfg := shapeNamed("default").config()
		cfg.Candidates = k
		c, err := sketch.OpenCountMin(sketch.Path(e.file("cms", name)), cfg)
		if err != nil {
			return nil, err
		}
		return c, e.keep(c, func() { c.Stats() }, func() error {
			for _, key := range e.stream(dist).Bytes {
				if _, err := c.Add(key); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// boomTopK returns BoomFilters' TopK of k on the default grid, warm as
// countMinTable's sketch is.
func (e *env) boomTopK(dist string, k int) *boom.TopK {
	return cached(e, fmt.Sprintf("boomtopk-%d-%s", k, dist), func() *boom.TopK {
		sh := shapeNamed("default")
		t := boom.NewTopK(boomEpsilon(sh.width), boomDelta(sh.rows), uint(k))
		for _, key := range e.stream(dist).Bytes {
			t.Add(key)
		}
		return t
	})
}
