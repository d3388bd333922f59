package main

import (
	"fmt"
	"time"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/bench/internal/heavy"
	"github.com/shmsketch/sketch/bench/internal/keystream"
)

// The heavy-hitter figures that are not times, measured once in the
// orchestrator (they repeat exactly): how often the table's adds take the
// file's lock on the rows' streams, and how well the table and
// BoomFilters' TopK find the true top n of long Zipf streams.

// heavySkews are the Zipf exponents of the accuracy streams.
var heavySkews = []float64{1.1, 1.2}

// heavyScores holds those figures.
type heavyScores struct {
	Adds int // adds of each accuracy stream
	// Lock is the share of a second pass's adds that took the lock, by
	// row stream then n (K = 2n).
	Lock map[string]map[int]float64
	// Table and Boom are the scores by Zipf exponent then n.
	Table, Boom map[float64]map[int]heavy.Score
}

// measureHeavy measures the lock shares and the accuracy, the latter over
// adds adds of each skew.
func measureHeavy(adds int) (*heavyScores, error) {
	t0 := time.Now()
	h := &heavyScores{Adds: adds, Lock: map[string]map[int]float64{}, Table: map[float64]map[int]heavy.Score{}, Boom: map[float64]map[int]heavy.Score{}}
	for _, d := range dists {
		h.Lock[d] = map[int]float64{}
		for _, n := range topNs {
			share, err := lockShare(makeStream(d, streamLen), 2*n)
			if err != nil {
				return nil, err
			}
			h.Lock[d][n] = share
		}
	}
	keys := heavy.SpaceKeys(space, appendKey)
	sh := shapeNamed("default")
	for _, s := range heavySkews {
		var subjects []heavy.Subject
		for _, n := range topNs {
			c, err := openTable(2 * n)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			subjects = append(subjects,
				heavy.Subject{Lister: heavy.Sketch(c), N: n},
				heavy.Subject{Lister: heavy.Boom(boom.NewTopK(boomEpsilon(sh.width), boomDelta(sh.rows), uint(2*n))), N: n})
		}
		scores, err := heavy.Measure(keys, keystream.ZipfNumbers(s), adds, subjects)
		if err != nil {
			return nil, fmt.Errorf("heavy hitters, zipf %v: %w", s, err)
		}
		h.Table[s], h.Boom[s] = map[int]heavy.Score{}, map[int]heavy.Score{}
		for i, n := range topNs {
			h.Table[s][n], h.Boom[s][n] = scores[2*i], scores[2*i+1]
		}
	}
	progress("heavy hitters: lock shares and accuracy over %d adds took %v", adds, time.Since(t0).Round(time.Millisecond))
	return h, nil
}

// openTable opens a default-shape sketch in memory keeping k candidates.
func openTable(k int) (*sketch.CountMin, error) {
	cfg := shapeNamed("default").config()
	cfg.Candidates = k
	return sketch.OpenCountMin(sketch.Memory(), cfg)
}

// lockShare is the share of Adds that take the lock in a table of k that
// has counted s once already, as the rows' tables have.
func lockShare(s *stream, k int) (float64, error) {
	c, err := openTable(k)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	for _, key := range s.Bytes {
		c.Add(key)
	}
	before := c.Stats().Candidates.Admissions
	for _, key := range s.Bytes {
		c.Add(key)
	}
	return float64(c.Stats().Candidates.Admissions-before) / float64(len(s.Bytes)), nil
}
