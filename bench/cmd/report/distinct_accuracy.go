package main

import (
	"math"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/shmsketch/sketch"
)

// The distinct counts' relative error, measured once in the orchestrator
// (both builds set the same registers for the same keys, which the parity
// tests check): sketch.Distinct and axiomhq's New14 count the same keys,
// key numbers 0 to n-1 shifted by a run's offset, one at a time, and are
// read at each n.

// distinctKinds are the kinds of keys the error is measured on, each
// writing key number i as bytes.
var distinctKinds = []struct {
	name   string
	append func(dst []byte, i uint64) []byte
}{
	{"uint64", appendUint64},
	{"addresses", appendKey},
}

// distinctImpls are the counts compared, in table order.
var distinctImpls = []string{"sketch", "axiomhq"}

// distinctErrors holds the relative errors by kind of keys, count and n.
type distinctErrors struct {
	Ns   []int
	Runs int // runs on disjoint keys at each n
	// RMS is the root mean square of (estimate - n) / n over the runs, by
	// kind, then impl, then n's index.
	RMS map[string]map[string][]float64
}

// measureDistinctErrors counts keys up to the last of ns in each of runs
// runs, on both kinds of keys, and returns the errors.
func measureDistinctErrors(ns []int, runs int) (*distinctErrors, error) {
	t0 := time.Now()
	out := &distinctErrors{Ns: ns, Runs: runs, RMS: map[string]map[string][]float64{}}
	last := uint64(ns[len(ns)-1])
	for _, kind := range distinctKinds {
		sq := map[string][]float64{"sketch": make([]float64, len(ns)), "axiomhq": make([]float64, len(ns))}
		var buf []byte
		for r := range uint64(runs) {
			d, err := sketch.OpenDistinct(sketch.Memory(), distinctConfig())
			if err != nil {
				return nil, err
			}
			h := hyperloglog.New14()
			i := uint64(0)
			for j, n := range ns {
				for ; i < uint64(n); i++ {
					buf = kind.append(buf[:0], r*last+i)
					d.Add(buf)
					h.Insert(buf)
				}
				for impl, est := range map[string]uint64{"sketch": d.Count(), "axiomhq": h.Estimate()} {
					e := (float64(est) - float64(n)) / float64(n)
					sq[impl][j] += e * e
				}
			}
			d.Close()
		}
		out.RMS[kind.name] = map[string][]float64{}
		for impl, s := range sq {
			for j := range s {
				s[j] = math.Sqrt(s[j] / float64(runs))
			}
			out.RMS[kind.name][impl] = s
		}
	}
	progress("distinct counts: errors over %d runs up to %s keys took %v", runs, countLabel(int(last)), time.Since(t0).Round(time.Millisecond))
	return out, nil
}
