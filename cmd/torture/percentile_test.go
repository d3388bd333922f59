package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDistributionOf(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		ds := make([]time.Duration, len(vs))
		for i, v := range vs {
			ds[i] = time.Duration(v) * time.Millisecond
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 down to 1: sorting is the function's job
	}
	tests := []struct {
		in   []time.Duration
		want distribution
	}{
		{nil, distribution{}},
		{ms(7), distribution{n: 1, median: ms(7)[0], p99: ms(7)[0], most: ms(7)[0]}},
		{ms(3, 1, 2), distribution{n: 3, median: ms(2)[0], p99: ms(3)[0], most: ms(3)[0]}},
		{ms(4, 1, 3, 2), distribution{n: 4, median: ms(2)[0], p99: ms(4)[0], most: ms(4)[0]}},
		{ms(hundred...), distribution{n: 100, median: ms(50)[0], p99: ms(99)[0], most: ms(100)[0]}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(len(tt.in)), func(t *testing.T) {
			got := distributionOf(tt.in)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(distribution{})); diff != "" {
				t.Errorf("distributionOf(%v) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestDistributionOf_LeavesInputAlone(t *testing.T) {
	in := []time.Duration{3, 1, 2}
	distributionOf(in)
	if diff := cmp.Diff([]time.Duration{3, 1, 2}, in); diff != "" {
		t.Errorf("input changed (-want +got):\n%s", diff)
	}
}
