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
	summary:    "a live view: writes per second, total, error bound or fill, lock",
	details: `
Watch shows the structure live, every interval, until interrupted: adds (or
operations) per second across every process, the total, a Count-Min
sketch's error bound, a Bloom or counting Bloom filter's fill and
estimated keys, a Count-Min window's periods, total and error bound (its
total drops as periods leave it: the rate shows 0 then), a Bloom
window's periods, adds and its current period's fill, a distinct
count's count (its total; the rate is new distinct keys per second),
whether it is frozen, and the state of the file's lock. On a terminal the
view is redrawn in place; otherwise it prints one line an interval. It
opens the file read-only.`,
	example: `sketch watch /dev/shm/clients.cms
sketch watch /dev/shm/web.arena:clients
sketch watch --interval 10s --json /dev/shm/clients.cms >> clients.log`,
	setup: func(fs *flag.FlagSet) func([]string) error {
		interval := fs.Duration("interval", time.Second, "time between samples")
		n := fs.Int("count", 0, "stop after `N` samples (0: until interrupted)")
		jsonOut := fs.Bool("json", false, `print JSON Lines: {"time", "file", "kind", "per_second", "total", "error_bound", "fill", "count", "current", "oldest" (those the kind has), "frozen", "lock"}`)
		return func(args []string) error {
			if len(args) != 1 {
				return usageError("want one FILE[:NAME]")
			}
			if *interval <= 0 {
				return usageError("--interval must be positive")
			}
			if *n < 0 {
				return usageError("--count must not be negative")
			}
			s, t, err := openTargetArg(args[0], false)
			if err != nil {
				return err
			}
			defer s.Close()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := &watcher{s: s, t: t, jsonOut: *jsonOut, live: !*jsonOut && isTerminal(os.Stdout), interval: *interval}
			return w.run(ctx, *n)
		}
	},
}

type watcher struct {
	s        structure
	t        target
	jsonOut  bool
	live     bool // redraw in place
	interval time.Duration
	drawn    int // lines of the view on screen
}

// watchLine is watch --json, one an interval.
type watchLine struct {
	Time      time.Time `json:"time"`
	File      string    `json:"file"`
	Kind      string    `json:"kind"`
	PerSecond float64   `json:"per_second"`
	sample
	Lock *sketch.LockInfo `json:"lock,omitempty"` // absent when the file could not be read
}

func (w *watcher) run(ctx context.Context, n int) error {
	prev, prevAt := w.s.sample(), time.Now()
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for i := 0; n == 0 || i < n; i++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur, at := w.s.sample(), time.Now()
		ps := 0.0
		if cur.Total >= prev.Total {
			ps = float64(cur.Total-prev.Total) / at.Sub(prevAt).Seconds()
		}
		prev, prevAt = cur, at
		line := watchLine{Time: at.UTC(), File: w.t.arg(), Kind: w.s.kind(), PerSecond: ps, sample: cur}
		var lockErr error
		if fi, err := sketch.Inspect(w.t.path); err == nil {
			line.Lock = &fi.Lock
		} else {
			lockErr = err
		}
		if err := w.show(line, lockErr); err != nil {
			return err
		}
		stdout.Flush()
	}
	return nil
}

func (w *watcher) show(l watchLine, lockErr error) error {
	if w.jsonOut {
		return printJSON(stdout, l)
	}
	var lock string
	if l.Lock != nil {
		lock = lockSummary(*l.Lock)
	} else {
		lock = "unreadable: " + message(lockErr)
	}
	rows := [][2]string{
		{l.what + "/s", rate(l.PerSecond)},
		{"total " + l.what, count(l.Total)},
	}
	if l.Current != nil && l.Oldest != nil {
		rows = append(rows, [2]string{"periods", fmt.Sprintf("%d-%d", *l.Oldest, *l.Current)})
	}
	if l.ErrorBound != nil {
		rows = append(rows, [2]string{"error bound", count(*l.ErrorBound) + " (each estimate is at most this high)"})
	}
	if l.Fill != nil {
		rows = append(rows, [2]string{"fill", percent(*l.Fill)})
	}
	if l.Count != nil {
		rows = append(rows, [2]string{"items", fmt.Sprintf("about %.0f", *l.Count)})
	}
	rows = append(rows, [2]string{"frozen", yesNo(l.Frozen)}, [2]string{"lock", lock})
	if !w.live {
		var b strings.Builder
		b.WriteString(l.Time.Format(time.RFC3339))
		for _, r := range rows {
			fmt.Fprintf(&b, "  %s=%s", strings.ReplaceAll(r[0], " ", "_"), strings.SplitN(r[1], " (", 2)[0])
		}
		fmt.Fprintln(stdout, b.String())
		return nil
	}
	if w.drawn > 0 {
		fmt.Fprintf(stdout, "\x1b[%dA", w.drawn) // back to the top of the view
	}
	var view strings.Builder
	fmt.Fprintf(&view, "%s: %s  (every %v; Ctrl-C stops)\n", w.t, w.s.describe(), w.interval)
	printTable(&view, rows)
	lines := strings.Split(strings.TrimSuffix(view.String(), "\n"), "\n")
	for _, ln := range lines {
		fmt.Fprintf(stdout, "\x1b[2K%s\n", ln)
	}
	w.drawn = len(lines)
	return nil
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
