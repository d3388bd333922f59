package main

import (
	"fmt"

	"github.com/shmsketch/sketch"
)

// window is what the Count-Min window and the Bloom window adapters share:
// the rows and words they print alike, and the calls a window refuses.
// Each embeds it beside its library type, whose Rotate makes it a rotator.
type window struct {
	what string // the kind, as messages name it: "Count-Min window"
}

// Reset refuses: a window's periods leave it by themselves.
func (w window) Reset() error {
	return errNotSupported("reset (its periods leave the window by themselves; rotate turns one now)", w.what)
}

func (w window) merge(src structure) error { return errNotSupported("merge", w.what) }

// windowText says how a window turns: "the last 3 periods of 1s", "the
// current period of 1s" (Keep 1).
func windowText(w sketch.Window) string {
	periods := fmt.Sprintf("the last %d periods", w.Keep)
	if w.Keep == 1 {
		periods = "the current period"
	}
	if w.Period == 0 {
		return periods + ", turned by rotate"
	}
	return fmt.Sprintf("%s of %v", periods, w.Period)
}

// windowState is what both windows' Stats report alike.
type windowState struct {
	window          sketch.Window
	oldest, current uint64
	rotations       uint64
	turns           uint64 // by the clock or rotate
	written         uint64 // adds (a distinct window: changes) since made
	writtenWhat     string // what written counts, as its row names it
	bytes           uint64
	frozen          bool
}

// windowSlot is a slot's row: its state, its period and the kind's figures
// for it.
type windowSlot struct {
	state   string
	period  uint64
	figures string
}

// rows are a window's stats rows: its kind, its window, the kind's shape
// rows, its bytes, the periods it covers and when the current one started,
// its rotations, the kind's figures, whether it is frozen, and a row a
// slot.
func (w window) rows(st windowState, shape, figures [][2]string, slots []windowSlot) [][2]string {
	rows := append([][2]string{
		{"kind", w.what},
		{"window", windowText(st.window)},
	}, shape...)
	rows = append(rows,
		[2]string{"bytes", fmt.Sprint(st.bytes)},
		[2]string{"periods", st.periodsText()},
		[2]string{"rotations", fmt.Sprint(st.rotations)},
		[2]string{"turns", fmt.Sprintf("%d (by the clock or rotate)", st.turns)},
		[2]string{st.writtenWhat, fmt.Sprintf("%d (every period, not only those covered)", st.written)},
	)
	rows = append(append(rows, figures...), [2]string{"frozen", yesNo(st.frozen)})
	clock := st.clock()
	for i, sl := range slots {
		when := clock.from(sl.period)
		if since, ok := clock.since(sl.period); ok && sl.state == "current" {
			when = since
		}
		if when != "" {
			when = " (" + when + ")"
		}
		what := fmt.Sprintf("%-8s period %d%s, %s", sl.state, sl.period, when, sl.figures)
		if sl.state == "empty" {
			what = "empty"
		}
		rows = append(rows, [2]string{fmt.Sprintf("slot %d", i), what})
	}
	return rows
}

// clock gives the window's periods their wall-clock times.
func (st windowState) clock() periodClock {
	return periodClock{period: st.window.Period, rotations: st.rotations}
}

// periodsText is the periods row: "29458211 to 29458213 (current
// 29458213 since 14:03:20)", or why the periods have no clock times.
func (st windowState) periodsText() string {
	if since, ok := st.clock().since(st.current); ok {
		return fmt.Sprintf("%d to %d (current %d %s)", st.oldest, st.current, st.current, since)
	}
	return fmt.Sprintf("%d to %d (current %d); %s", st.oldest, st.current, st.current, st.clock().noClock())
}

// summary is a window's row in an arena's stats: the periods it covers
// and when the current one started, then the kind's figures.
func (st windowState) summary(figures string) string {
	when := st.clock().noClock()
	if since, ok := st.clock().since(st.current); ok {
		when = "current " + since
	}
	return fmt.Sprintf("periods %d-%d (%s): %s", st.oldest, st.current, when, figures)
}

// windowSample is a window's sample: s with the periods it covers and
// when the current one started.
func windowSample(s sample, oldest, current uint64, clock periodClock) sample {
	s.Oldest, s.Current, s.clock = &oldest, &current, clock
	if t, ok := clock.start(current); ok {
		t = t.UTC()
		s.Start = &t
	}
	return s
}
