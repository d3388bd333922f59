package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shmsketch/sketch"
)

var watchCmd = &command{
	name:       "watch",
	opensFiles: true,
	args:       "FILE[:NAME]",
	summary:    "a live view: writes per second, total, error bound or fill, lock; an arena's, a line a structure",
	details: `
Watch shows the structure live, every interval, until interrupted: adds
(or new distinct keys) per second across every process, the total, a Count-Min
sketch's error bound, a Bloom or counting Bloom filter's fill and
estimated keys, a Count-Min window's periods, total and error bound, a
Bloom window's periods, adds and its current period's fill (a window's
rate is of its adds since it was made, which keep every period, while
its total drops as periods leave it), a distinct
count's count (its total; the rate is new distinct keys per second), a
rate limiter's decisions (its total; the rate is decisions per second),
refusals and busy cells,
whether it is frozen, and the state of the file's lock. A window's
current period shows when it started on the clock (a window turned by
rotate has no clock times). An arena (FILE alone) shows a line a
structure, with the same figures, and the structures made while it
watches as they appear. On a terminal the view is redrawn in place;
otherwise it prints one line an interval (an arena's view: a frame an
interval, after a blank line). It
opens the file read-only.`,
	example: `sketch watch /dev/shm/clients.cms
sketch watch /dev/shm/web.arena
sketch watch /dev/shm/web.arena:clients
sketch watch --interval 10s --json /dev/shm/clients.cms >> clients.log`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		interval := fs.Duration("interval", time.Second, "time between samples")
		n := fs.Int("count", 0, "stop after `N` samples (0: until interrupted)")
		jsonOut := fs.Bool("json", false, `print JSON Lines: {"time", "file", "kind", "per_second", "total", "adds", "error_bound", "fill", "count", "current", "oldest", "start" (those the kind has), "frozen", "lock"}; an arena's: {"time", "file", "arena", "lock", "structures": [{"name", "kind", "per_second", ...}]}`)
		return func(args []string) error {
			t, err := oneTarget(args)
			if err != nil {
				return err
			}
			if *interval <= 0 {
				return usageError("--interval must be positive")
			}
			if *n < 0 {
				return usageError("--count must not be negative")
			}
			s, a, err := openWhole(t, false)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			scr := &screen{w: stdout, live: !*jsonOut && isTerminal(os.Stdout), size: func() (int, int) { return termSize(os.Stdout) }}
			defer scr.close()
			if a != nil {
				defer a.Close()
				w := newArenaWatcher(a, t.path, scr, *jsonOut, *interval)
				defer w.close()
				return every(ctx, *interval, *n, w.tick)
			}
			defer s.Close()
			w := &watcher{s: s, t: t, scr: scr, jsonOut: *jsonOut, interval: *interval}
			w.prev, w.prevAt = s.sample(), time.Now()
			return every(ctx, *interval, *n, w.tick)
		}
	},
}

// every calls f at each tick of interval, n times (0: until ctx is done),
// and flushes what it printed.
func every(ctx context.Context, interval time.Duration, n int, f func() error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; n == 0 || i < n; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		err := f()
		stdout.Flush()
		if err != nil {
			return err
		}
	}
	return nil
}

// perSecond is the rate at which a total grew from prev to cur in d; 0
// when it dropped (a window's periods left it).
func perSecond(prev, cur uint64, d time.Duration) float64 {
	if cur < prev || d <= 0 {
		return 0
	}
	return float64(cur-prev) / d.Seconds()
}

// rateOf is the rate between two samples of one structure: of a window's
// adds since it was made when both samples have them, which keep every
// period, so that the rate stays steady across turns; else of the total.
func rateOf(prev, cur sample, d time.Duration) float64 {
	if prev.Adds != nil && cur.Adds != nil {
		return perSecond(*prev.Adds, *cur.Adds, d)
	}
	return perSecond(prev.Total, cur.Total, d)
}

// lockState is the file's lock as watch shows it, read anew.
func lockState(path string) (*sketch.LockInfo, string) {
	fi, err := sketch.Inspect(path)
	if err != nil {
		return nil, "unreadable: " + message(err)
	}
	return &fi.Lock, lockSummary(fi.Lock)
}

// watcher watches one structure.
type watcher struct {
	s        structure
	t        target
	scr      *screen
	jsonOut  bool
	interval time.Duration
	prev     sample
	prevAt   time.Time
}

// watchLine is watch --json of one structure, one an interval.
type watchLine struct {
	Time      time.Time `json:"time"`
	File      string    `json:"file"`
	Kind      string    `json:"kind"`
	PerSecond float64   `json:"per_second"`
	sample
	Lock *sketch.LockInfo `json:"lock,omitempty"` // absent when the file could not be read
}

func (w *watcher) tick() error {
	cur, at := w.s.sample(), time.Now()
	ps := rateOf(w.prev, cur, at.Sub(w.prevAt))
	counterRates(w.prev, cur, at.Sub(w.prevAt))
	w.prev, w.prevAt = cur, at
	lock, lockText := lockState(w.t.path)
	l := watchLine{Time: at.UTC(), File: w.t.arg(), Kind: w.s.kind(), PerSecond: ps, sample: cur, Lock: lock}
	if w.jsonOut {
		return printJSON(stdout, l)
	}
	rows := []viewRow{
		{name: l.what + "/s", value: rate(l.PerSecond)},
		{name: "total " + l.what, value: count(l.Total)},
	}
	if l.Adds != nil {
		rows = append(rows, viewRow{name: "adds since made", value: count(*l.Adds) + " (every period; the rate is of these)"})
	}
	if l.Current != nil && l.Oldest != nil {
		rows = append(rows, viewRow{name: "periods", value: fmt.Sprintf("%d-%d", *l.Oldest, *l.Current)})
		if at, ok := l.clock.at(*l.Current); ok {
			rows = append(rows, viewRow{name: "current since", value: at, plain: l.Start.Format(time.RFC3339Nano)})
		} else {
			rows = append(rows, viewRow{name: "current since", value: "- (" + l.clock.noClock() + ")"})
		}
	}
	if l.ErrorBound != nil {
		rows = append(rows, viewRow{name: "error bound", value: count(*l.ErrorBound) + " (each estimate is at most this high)"})
	}
	if l.Fill != nil {
		rows = append(rows, viewRow{name: "fill", value: percent(*l.Fill)})
	}
	if l.Count != nil {
		rows = append(rows, viewRow{name: "items", value: fmt.Sprintf("about %.0f", *l.Count)})
	}
	if l.Refused != nil {
		rows = append(rows, viewRow{name: "refused", value: count(*l.Refused) + " (of the decisions)"})
	}
	if l.Busy != nil {
		rows = append(rows, viewRow{name: "busy", value: percent(*l.Busy) + " of cells (keys there are not allowed their whole burst)"})
	}
	for _, c := range l.Counters {
		rows = append(rows, viewRow{name: "counter " + quoteName(c.Name), value: counterText(c), plain: fmt.Sprint(c.Value)})
	}
	for i, h := range l.Loudest {
		rows = append(rows, viewRow{name: fmt.Sprintf("loudest #%d", i+1), value: fmt.Sprintf("%s  %s (at least %s)", keyText(h), count(h.Estimate), count(h.Low)), plain: keyText(h) + ":" + fmt.Sprint(h.Estimate)})
	}
	rows = append(rows, viewRow{name: "frozen", value: yesNo(l.Frozen)}, viewRow{name: "lock", value: lockText})
	if !w.scr.live {
		return w.scr.draw([]string{l.Time.Format(time.RFC3339) + "  " + plainRows(rows)})
	}
	var view strings.Builder
	fmt.Fprintf(&view, "%s: %s  (every %v; Ctrl-C stops)\n", w.t, w.s.describe(), w.interval)
	printTable(&view, tableRows(rows))
	return w.scr.draw(strings.Split(strings.TrimSuffix(view.String(), "\n"), "\n"))
}

// viewRow is a row of the view of one structure: its name and value in
// the live view, and its value in the plain line, where "" means the value
// up to a parenthesis.
type viewRow struct{ name, value, plain string }

func tableRows(rows []viewRow) [][2]string {
	out := make([][2]string, len(rows))
	for i, r := range rows {
		out[i] = [2]string{r.name, r.value}
	}
	return out
}

// plainRows are the rows as NAME=VALUE words, the name's spaces made
// underscores.
func plainRows(rows []viewRow) string {
	words := make([]string, len(rows))
	for i, r := range rows {
		v := r.plain
		if v == "" {
			v = strings.SplitN(r.value, " (", 2)[0]
		}
		words[i] = strings.ReplaceAll(r.name, " ", "_") + "=" + v
	}
	return strings.Join(words, "  ")
}

// lockSummary is the lock's state in one line.
func lockSummary(l sketch.LockInfo) string {
	var parts []string
	switch {
	case l.Writer && l.WriterAlive:
		parts = append(parts, fmt.Sprintf("held by writer %d", l.WriterToken))
	case l.Writer:
		parts = append(parts, fmt.Sprintf("held by DEAD writer %d", l.WriterToken))
	default:
		parts = append(parts, "free")
	}
	parts = append(parts, fmt.Sprintf("%d read locks", l.Readers))
	if l.DeadReaderSlots > 0 {
		parts = append(parts, fmt.Sprintf("%d DEAD reader slots", l.DeadReaderSlots))
	}
	parts = append(parts, fmt.Sprintf("%d handles", l.Handles))
	return strings.Join(parts, ", ")
}
