package main

import (
	"math"
	"time"
)

// periodClock gives a window's period numbers their wall-clock times.
// While only the clock has turned a window, period q started at q×Period
// since the Unix epoch, in every process. A period turned by Rotate
// started whenever some process called it, which the file does not keep:
// a window made with Period 0, or rotated even once, has no clock times.
type periodClock struct {
	period    time.Duration // 0: turned by rotate only
	rotations uint64
}

// start is when period q started, and whether the clock says.
func (c periodClock) start(q uint64) (time.Time, bool) {
	if c.period <= 0 || c.rotations > 0 || q > uint64(math.MaxInt64/int64(c.period)) {
		return time.Time{}, false
	}
	return time.Unix(0, int64(q)*int64(c.period)), true
}

// noClock says why a window's periods have no clock times.
func (c periodClock) noClock() string {
	if c.period <= 0 {
		return "turned by rotate, no clock times"
	}
	return "rotated, no clock times"
}

// at is when period q started on the local clock, as clockTime shows it;
// ok is false when the clock does not say.
func (c periodClock) at(q uint64) (text string, ok bool) {
	t, ok := c.start(q)
	if !ok {
		return "", false
	}
	return clockTime(t, c.period, time.Now()), true
}

// since is "since 14:03:20", when the current period q started; ok is
// false when the clock does not say.
func (c periodClock) since(q uint64) (string, bool) {
	t, ok := c.at(q)
	return "since " + t, ok
}

// from is "from 14:03:10", when period q (not the current one) started;
// "" when the clock does not say.
func (c periodClock) from(q uint64) string {
	if t, ok := c.at(q); ok {
		return "from " + t
	}
	return ""
}

// clockTime is t on the local clock, as people read it beside a period:
// the time of day, with milliseconds when periods are not whole seconds,
// and the date when t is not on now's day or periods last a day or more.
func clockTime(t time.Time, period time.Duration, now time.Time) string {
	t, now = t.Local(), now.Local()
	layout := "15:04:05"
	if period%time.Second != 0 {
		layout = "15:04:05.000"
	}
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	if period >= 24*time.Hour || ty != ny || tm != nm || td != nd {
		layout = "2006-01-02 " + layout
	}
	return t.Format(layout)
}
