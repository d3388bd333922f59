package main

import "github.com/shmsketch/sketch"

// shape is a Count-Min geometry.
type shape struct {
	name        string
	rows, width int
}

func (s shape) bytes() int64 { return int64(s.rows) * int64(s.width) * 8 }

// config is the shape's Count-Min config, with the streams' seed.
func (s shape) config() sketch.CountMinConfig {
	return sketch.CountMinConfig{Rows: s.rows, Width: s.width, Seed: keySeed}
}

// cmsShapes run from a grid in L1/L2 through the default to far past the
// last-level cache (the report says where each falls on its machine).
var cmsShapes = []shape{
	{"A", 4, 1 << 10},    // 32 KiB
	{"default", 5, 4096}, // 160 KiB: ErrorRate 0.001, Confidence 0.99
	{"B", 7, 1 << 15},    // 1.75 MiB
	{"C", 5, 1 << 22},    // 160 MiB
	{"D", 5, 1 << 24},    // 640 MiB
}

func shapeNamed(name string) shape {
	for _, s := range cmsShapes {
		if s.name == name {
			return s
		}
	}
	panic("unknown shape " + name)
}

// Counting Bloom filters are sized for 1M items at 1% (2^24 4-bit
// counters, 8 MiB, 7 hashes), as the package's own benchmarks are.
const (
	cbfCapacity = 1_000_000
	cbfFPRate   = 0.01
)

// dists are the key streams every Count-Min shape runs.
var dists = []string{"zipf", "uniform"}
