package main

import (
	"github.com/shmsketch/sketch"
)

// Count-Min rows: every shape and stream, single keys and batches of 256,
// on each build of this module, beside the bare floor and BoomFilters;
// batches of 16 and 4096 on a shape in L2 and one past the caches; and
// one against two writers (goroutines, processes) on the same two shapes.
func countMinRows(builds []string) []subject {
	var rows []subject
	inL2, past := shapeNamed("default"), shapeNamed("C")
	for _, b := range builds {
		for _, sh := range cmsShapes {
			for _, d := range dists {
				for _, op := range []string{"add", "estimate"} {
					rows = append(rows, cmsRow(b, op, sh, d, 1, 1, 1), cmsRow(b, op, sh, d, 256, 1, 1))
				}
			}
		}
		for _, sh := range []shape{inL2, past} {
			for _, op := range []string{"add", "estimate"} {
				rows = append(rows, cmsRow(b, op, sh, "uniform", 16, 1, 1), cmsRow(b, op, sh, "uniform", 4096, 1, 1))
			}
			for _, batch := range []int{1, 256} {
				rows = append(rows, cmsRow(b, "add", sh, "uniform", batch, 2, 1), cmsRow(b, "add", sh, "uniform", batch, 1, 2))
			}
		}
	}
	for _, sh := range cmsShapes {
		for _, d := range dists {
			for _, op := range []string{"add", "estimate"} {
				rows = append(rows, floorRow(op, sh, d, 1), boomCMSRow(op, sh, d))
			}
		}
	}
	for _, sh := range []shape{inL2, past} {
		rows = append(rows, floorRow("add", sh, "uniform", 2))
	}
	return rows
}

// cmsRow is sketch.CountMin's Add or Estimate (batch 1) or AddBatch or
// EstimateBatch.
func cmsRow(build, op string, sh shape, dist string, batch, writers, procs int) subject {
	k := Key{Struct: "countmin", Op: op, Impl: "sketch", Build: build, Shape: sh.name, Dist: dist, Batch: batch, Writers: writers, Procs: procs}
	return subject{Key: k, Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		c, err := e.countMin(sh)
		return overKeys(e, dist, err, func() func([][]byte) uint64 { return cmsOp(c, op, batch) })
	}}
}

func cmsOp(c *sketch.CountMin, op string, batch int) func([][]byte) uint64 {
	switch {
	case op == "add" && batch == 1:
		return func(keys [][]byte) (sum uint64) {
			for _, k := range keys {
				v, _ := c.Add(k)
				sum += v
			}
			return sum
		}
	case op == "add":
		return func(keys [][]byte) uint64 {
			for i := 0; i < len(keys); i += batch {
				c.AddBatch(keys[i:i+batch], nil)
			}
			return 0
		}
	case batch == 1:
		return func(keys [][]byte) (sum uint64) {
			for _, k := range keys {
				sum += c.Estimate(k)
			}
			return sum
		}
	}
	est := make([]uint64, batch)
	return func(keys [][]byte) (sum uint64) {
		for i := 0; i < len(keys); i += batch {
			c.EstimateBatch(keys[i:i+batch], est)
			sum += est[0]
		}
		return sum
	}
}

// floorRow is the bare floor's add or estimate.
func floorRow(op string, sh shape, dist string, writers int) subject {
	k := Key{Struct: "countmin", Op: op, Impl: "floor", Shape: sh.name, Dist: dist, Batch: 1, Writers: writers, Procs: 1}
	return subject{Key: k, Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		f, err := e.floorOf(sh)
		if err != nil {
			return opener{}, err
		}
		do := f.Add
		if op == "estimate" {
			do = f.Estimate
		}
		return over(e.stream(dist).Bytes, func() func([][]byte) uint64 {
			return func(keys [][]byte) (sum uint64) {
				for _, k := range keys {
					sum += do(k)
				}
				return sum
			}
		}), nil
	}}
}

// boomCMSRow is BoomFilters' CountMinSketch Add or Count, on a heap grid
// of the same shape (not safe for concurrent use: one writer only).
func boomCMSRow(op string, sh shape, dist string) subject {
	k := Key{Struct: "countmin", Op: op, Impl: "boom", Shape: sh.name, Dist: dist, Batch: 1, Writers: 1, Procs: 1}
	return subject{Key: k, Bytes: sh.bytes(), open: func(e *env) (opener, error) {
		c := e.boomCMS(sh)
		return over(e.stream(dist).Bytes, func() func([][]byte) uint64 {
			if op == "add" {
				return func(keys [][]byte) uint64 {
					for _, k := range keys {
						c.Add(k)
					}
					return 0
				}
			}
			return func(keys [][]byte) (sum uint64) {
				for _, k := range keys {
					sum += c.Count(k)
				}
				return sum
			}
		}), nil
	}}
}
