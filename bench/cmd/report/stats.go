package main

import (
	"math"
	"slices"
)

// summary is a subject's samples reduced: the median and the range.
type summary struct {
	Median, Min, Max float64
	N                int
}

// summarize ignores NaN (rounds where the subject did not run).
func summarize(xs []float64) summary {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(v)
	return summary{Median: median(v), Min: v[0], Max: v[len(v)-1], N: len(v)}
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ratios returns a[r]/b[r] for every round r where both ran: the ratio of
// two subjects measured moments apart, which drifts less than either.
func ratios(a, b []float64) []float64 {
	var out []float64
	for r := range min(len(a), len(b)) {
		if !math.IsNaN(a[r]) && !math.IsNaN(b[r]) && b[r] > 0 {
			out = append(out, a[r]/b[r])
		}
	}
	return out
}
