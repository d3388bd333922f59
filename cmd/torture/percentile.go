package main

import (
	"fmt"
	"slices"
	"time"
)

// A distribution summarises durations by nearest rank, so every figure is
// one that was measured.
type distribution struct {
	n                 int
	median, p99, most time.Duration
}

// distributionOf sorts a copy of ds and reads its median, 99th percentile and
// maximum (zero for no durations).
func distributionOf(ds []time.Duration) distribution {
	if len(ds) == 0 {
		return distribution{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return distribution{n: len(s), median: rank(s, 50), p99: rank(s, 99), most: s[len(s)-1]}
}

// rank is the nearest-rank p-th percentile of sorted s: the smallest value
// with at least p% of the values at or below it.
func rank(s []time.Duration, p int) time.Duration {
	i := (p*len(s) + 99) / 100 // ceil(p/100 * n), 1-based
	if i < 1 {
		i = 1
	}
	return s[i-1]
}

func (d distribution) String() string {
	if d.n == 0 {
		return "no samples"
	}
	return fmt.Sprintf("median %s, p99 %s, max %s", ms(d.median), ms(d.p99), ms(d.most))
}

// ms prints a duration in milliseconds with one decimal.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
