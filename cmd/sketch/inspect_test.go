//go:build linux

package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestInspect_IntegerParams: inspect prints a structure's integer
// parameters as integers, not as floats in exponent form.
func TestInspect_IntegerParams(t *testing.T) {
	path := create(t, "b.bloom", "--kind", "bloom", "--capacity", "2000000", "--fp-rate", "0.001")
	out := sk(t, "inspect", path).ok(t, "inspect")
	if !regexp.MustCompile(`bits=\d+ capacity=2000000 fp_rate=0.001 hashes=\d+\n`).MatchString(out) || strings.Contains(out, "e+") {
		t.Errorf("inspect of a Bloom filter of capacity 2000000:\n%s\nwant bits=N capacity=2000000 fp_rate=0.001 hashes=N", out)
	}
	path = create(t, "w.cmsw", "--kind", "countminwindow", "--keep", "1", "--period", "1m", "--rows", "1", "--width", "1048576")
	if out := sk(t, "inspect", path).ok(t, "inspect"); !strings.Contains(out, "keep=1 period=1m0s rows=1 width=1048576\n") {
		t.Errorf("inspect of a Count-Min window:\n%s\nwant keep=1 period=1m0s rows=1 width=1048576", out)
	}
}
