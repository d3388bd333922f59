package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch"
)

func TestClockTime(t *testing.T) {
	now := time.Date(2026, 12, 2, 14, 30, 0, 0, time.Local)
	for _, c := range []struct {
		t      time.Time
		period time.Duration
		want   string
	}{
		{time.Date(2026, 12, 2, 14, 3, 20, 0, time.Local), time.Minute, "14:03:20"},
		{time.Date(2026, 12, 2, 14, 3, 20, 500e6, time.Local), 1500 * time.Millisecond, "14:03:20.500"},
		{time.Date(2026, 12, 1, 23, 59, 0, 0, time.Local), time.Minute, "2026-12-01 23:59:00"},
		{time.Date(2026, 12, 2, 0, 0, 0, 0, time.Local), 24 * time.Hour, "2026-12-02 00:00:00"},
	} {
		if got := clockTime(c.t, c.period, now); got != c.want {
			t.Errorf("clockTime(%v, %v) = %q, want %q", c.t, c.period, got, c.want)
		}
	}
	if _, ok := (periodClock{period: 0}).start(5); ok {
		t.Errorf("a window turned by rotate has a clock time")
	}
	if _, ok := (periodClock{period: time.Second, rotations: 1}).start(5); ok {
		t.Errorf("a rotated window has a clock time")
	}
	if got, ok := (periodClock{period: time.Second}).start(5); !ok || !got.Equal(time.Unix(5, 0)) {
		t.Errorf("start(5) of 1s periods = %v, %v; want %v", got, ok, time.Unix(5, 0))
	}
}

// TestWindowRows_ClockTimes: each slot of a clock window shows when its
// period started; a rotated window's show no time.
func TestWindowRows_ClockTimes(t *testing.T) {
	const period = 7 * time.Minute
	q := uint64(time.Now().UnixNano() / int64(period))
	clock := func(q uint64) string { return clockTime(time.Unix(0, int64(q)*int64(period)), period, time.Now()) }
	slots := []windowSlot{{"window", q - 1, "total 1"}, {"current", q, "total 2"}, {"next", q + 1, "total 0"}, {"empty", 0, ""}}
	st := windowState{window: sketch.Window{Period: period, Keep: 2}, oldest: q - 1, current: q, turns: 4, written: 9, writtenWhat: "adds since made"}
	got := window{"Count-Min window"}.rows(st, nil, nil, slots)
	want := [][2]string{
		{"kind", "Count-Min window"},
		{"window", "the last 2 periods of 7m0s"},
		{"bytes", "0"},
		{"periods", fmt.Sprintf("%d to %d (current %d since %s)", q-1, q, q, clock(q))},
		{"rotations", "0"},
		{"turns", "4 (by the clock or rotate)"},
		{"adds since made", "9 (every period, not only those covered)"},
		{"frozen", "no"},
		{"slot 0", fmt.Sprintf("window   period %d (from %s), total 1", q-1, clock(q-1))},
		{"slot 1", fmt.Sprintf("current  period %d (since %s), total 2", q, clock(q))},
		{"slot 2", fmt.Sprintf("next     period %d (from %s), total 0", q+1, clock(q+1))},
		{"slot 3", "empty"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows of a clock window (-want +got):\n%s", diff)
	}
	st.rotations = 1
	got = window{"Count-Min window"}.rows(st, nil, nil, slots)
	want[3][1] = fmt.Sprintf("%d to %d (current %d); rotated, no clock times", q-1, q, q)
	want[4][1] = "1"
	want[8][1] = fmt.Sprintf("window   period %d, total 1", q-1)
	want[9][1] = fmt.Sprintf("current  period %d, total 2", q)
	want[10][1] = fmt.Sprintf("next     period %d, total 0", q+1)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows of a rotated clock window (-want +got):\n%s", diff)
	}
}
