package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

// TestRateOf_WindowTurns: a window of one 1 s period under a steady 300
// adds a second, sampled every second just after each turn, shows a total
// of a few adds (the new period's) while its adds since it was made grow
// by 300 a sample: the rate is 300 every time, where the total's rate
// was 0 at every turn after the first.
func TestRateOf_WindowTurns(t *testing.T) {
	totals := []uint64{310, 22, 0, 0, 7, 300}
	var adds uint64 = 1000
	prev := sample{Total: totals[0], Adds: ptr(adds)}
	for i, total := range totals[1:] {
		adds += 300
		cur := sample{Total: total, Adds: ptr(adds)}
		if got := rateOf(prev, cur, time.Second); got != 300 {
			t.Errorf("sample %d: rate %v, want 300", i+1, got)
		}
		prev = cur
	}
	// A kind without the count: the total's rate, 0 when it dropped.
	if got := rateOf(sample{Total: 50}, sample{Total: 80}, 2*time.Second); got != 15 {
		t.Errorf("rate of a total 50 -> 80 in 2s = %v, want 15", got)
	}
	if got := rateOf(sample{Total: 80}, sample{Total: 50}, time.Second); got != 0 {
		t.Errorf("rate of a total that dropped = %v, want 0", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestWatchRate_Windows: watch's samples of a real Count-Min and Bloom
// window, turned between samples while 40 adds go in each period, give a
// rate of 40 a sample every time (an interval of a second, given: no
// clock), though each window's total falls back at every turn.
func TestWatchRate_Windows(t *testing.T) {
	dir := t.TempDir()
	cmw, err := sketch.OpenCountMinWindow(sketch.Path(filepath.Join(dir, "cmw")), sketch.CountMinWindowConfig{Window: sketch.Window{Keep: 1}, CountMin: sketch.CountMinConfig{Rows: 2, Width: 256}})
	if err != nil {
		t.Fatal(err)
	}
	defer cmw.Close()
	bw, err := sketch.OpenBloomWindow(sketch.Path(filepath.Join(dir, "bw")), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 1}, Bloom: sketch.BloomConfig{Capacity: 10000, FPRate: 0.01}})
	if err != nil {
		t.Fatal(err)
	}
	defer bw.Close()
	for _, tc := range []struct {
		s      structure
		add    func(i int)
		rotate func() error
	}{
		{newCountMinWindow(cmw), func(i int) { cmw.AddN(fmt.Appendf(nil, "k%d", i%5), 2) }, cmw.Rotate},
		{newBloomWindow(bw), func(i int) { bw.AddString(fmt.Sprint("key-", i)) }, bw.Rotate},
	} {
		t.Run(tc.s.kind(), func(t *testing.T) {
			per := 40.0
			if tc.s.kind() == string(sketch.KindCountMinWindow) {
				per = 80 // AddN of 2
			}
			prev := tc.s.sample()
			key := 0
			for turn := range 8 {
				for range 40 {
					tc.add(key)
					key++
				}
				if err := tc.rotate(); err != nil {
					t.Fatal(err)
				}
				cur := tc.s.sample()
				if cur.Total != 0 {
					t.Fatalf("turn %d: total %d just after a turn of a window of one period, want 0", turn, cur.Total)
				}
				if got := rateOf(prev, cur, time.Second); got != per {
					t.Errorf("turn %d: rate %v, want %v", turn, got, per)
				}
				prev = cur
			}
		})
	}
}
