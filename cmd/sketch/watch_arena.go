package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/shmsketch/sketch"
)

// arenaWatcher watches every structure of an arena, a line each, and
// those made while it watches as the arena's directory shows them.
type arenaWatcher struct {
	a        *sketch.Arena
	path     string
	scr      *screen
	jsonOut  bool
	interval time.Duration
	watched  []*watched // in the arena's order: the order they were made
	known    map[string]bool
}

// watched is one structure of the watched arena.
type watched struct {
	name, kind string
	off        uint64 // its region's offset: a structure made again under its name has another, or another kind
	p          place
	s          structure // nil until it opens
	err        error     // why it did not open
	prev       sample
	prevAt     time.Time // zero until a first sample: no rate yet
}

func newArenaWatcher(a *sketch.Arena, path string, scr *screen, jsonOut bool, interval time.Duration) *arenaWatcher {
	w := &arenaWatcher{a: a, path: path, scr: scr, jsonOut: jsonOut, interval: interval, known: map[string]bool{}}
	w.discover()
	at := time.Now()
	for _, e := range w.watched {
		if e.s != nil {
			e.prev, e.prevAt = e.s.sample(), at
		}
	}
	return w
}

// discover opens the structures made since it last looked, and tries
// again those that did not open. A structure removed from the arena
// (sketch rm FILE:NAME) is closed and dropped, so that its room can be
// reused; one made again under its name is a new structure.
func (w *arenaWatcher) discover() {
	listed := w.a.List()
	at := make(map[string]sketch.ArenaEntry, len(listed))
	for _, e := range listed {
		at[e.Name] = e
	}
	kept := w.watched[:0]
	for _, e := range w.watched {
		if l, ok := at[e.name]; ok && l.Offset == e.off && string(l.Kind) == e.kind {
			kept = append(kept, e)
			continue
		}
		if e.s != nil {
			e.s.Close()
		}
		delete(w.known, e.name)
	}
	clear(w.watched[len(kept):])
	w.watched = kept
	for _, e := range listed {
		if !w.known[e.Name] {
			w.known[e.Name] = true
			w.watched = append(w.watched, &watched{name: e.Name, kind: string(e.Kind), off: e.Offset, p: entryPlace(w.a, w.path, e.Name)})
		}
	}
	for _, e := range w.watched {
		if e.s == nil {
			e.s, e.err = openEntry(e.p, sketch.Kind(e.kind))
		}
	}
}

// close closes the structures it opened.
func (w *arenaWatcher) close() {
	for _, e := range w.watched {
		if e.s != nil {
			e.s.Close()
		}
	}
}

// arenaWatchLine is watch --json of an arena, one an interval.
type arenaWatchLine struct {
	Time       time.Time         `json:"time"`
	File       string            `json:"file"`
	Arena      sketch.ArenaStats `json:"arena"`
	Lock       *sketch.LockInfo  `json:"lock,omitempty"` // absent when the file could not be read
	Structures []watchedLine     `json:"structures"`
}

// watchedLine is one structure in an arenaWatchLine.
type watchedLine struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// PerSecond is absent the first time a structure is shown: a rate
	// takes two samples.
	PerSecond *float64 `json:"per_second,omitempty"`
	*sample
	Error string `json:"error,omitempty"` // why it did not open; no sample then
}

func (w *arenaWatcher) tick() error {
	w.discover()
	at := time.Now()
	line := arenaWatchLine{Time: at.UTC(), File: w.path, Arena: w.a.Stats(), Structures: []watchedLine{}}
	for _, e := range w.watched {
		wl := watchedLine{Name: e.name, Kind: e.kind}
		if e.s == nil {
			wl.Error = message(e.err)
			line.Structures = append(line.Structures, wl)
			continue
		}
		cur := e.s.sample()
		if !e.prevAt.IsZero() {
			ps := rateOf(e.prev, cur, at.Sub(e.prevAt))
			counterRates(e.prev, cur, at.Sub(e.prevAt))
			wl.PerSecond = &ps
		}
		e.prev, e.prevAt = cur, at
		wl.sample = &cur
		line.Structures = append(line.Structures, wl)
	}
	lock, lockText := lockState(w.path)
	line.Lock = lock
	if w.jsonOut {
		return printJSON(stdout, line)
	}
	head := fmt.Sprintf("%s: %s  (every %v; Ctrl-C stops)", w.path, arenaDescription(line.Arena), w.interval)
	if !w.scr.live {
		head = line.Time.Format(time.RFC3339) + "  " + w.path + ": " + arenaDescription(line.Arena)
	}
	if line.Arena.Frozen {
		head += ", frozen"
	}
	var table strings.Builder
	cols := [][]string{{"NAME", "KIND", "PER SECOND", "TOTAL", "STATE"}}
	for _, s := range line.Structures {
		cols = append(cols, watchedColumns(s))
	}
	printColumns(&table, cols)
	lines := []string{head, "lock: " + lockText}
	return w.scr.draw(append(lines, strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n")...))
}

// watchedColumns is a structure's row in the arena's view.
func watchedColumns(l watchedLine) []string {
	name := quoteName(l.Name)
	if l.sample == nil {
		return []string{name, l.Kind, "-", "-", "cannot open: " + l.Error}
	}
	ps := "-"
	if l.PerSecond != nil {
		ps = rate(*l.PerSecond)
	}
	return []string{name, l.Kind, ps, count(l.Total), strings.Join(figures(*l.sample), ", ")}
}

// figures are what a sample shows beside its total: a window's periods
// and when the current one started, the error bound, the fill, the
// estimated keys, a rate limiter's refusals and busy cells, the first
// watchCounters of a counters structure's counters with their rates, the
// loudest key of a candidate table, and whether it is frozen.
func figures(s sample) []string {
	var out []string
	if s.Current != nil && s.Oldest != nil {
		when := s.clock.noClock()
		if since, ok := s.clock.since(*s.Current); ok {
			when = "current " + since
		}
		out = append(out, fmt.Sprintf("periods %d-%d (%s)", *s.Oldest, *s.Current, when))
	}
	if s.ErrorBound != nil {
		out = append(out, "error bound "+count(*s.ErrorBound))
	}
	if s.Fill != nil {
		out = append(out, "fill "+percent(*s.Fill))
	}
	if s.Count != nil {
		out = append(out, "items about "+estimated(*s.Count))
	}
	if s.Refused != nil {
		out = append(out, "refused "+count(*s.Refused))
	}
	if s.Busy != nil {
		out = append(out, "busy "+percent(*s.Busy))
	}
	for i, c := range s.Counters {
		if i == watchCounters {
			out = append(out, fmt.Sprintf("and %d more counters", len(s.Counters)-i))
			break
		}
		out = append(out, quoteName(c.Name)+" "+counterText(c))
	}
	if len(s.Loudest) > 0 {
		h := s.Loudest[0]
		out = append(out, fmt.Sprintf("loudest %s (%s)", keyText(h), count(h.Estimate)))
	}
	if s.Frozen {
		out = append(out, "frozen")
	}
	return out
}

// watchCounters is how many of a counters structure's counters an
// arena's view shows on its line; watch FILE:NAME shows them all.
const watchCounters = 8
