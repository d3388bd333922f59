//go:build linux

package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch"
	"golang.org/x/sys/unix"
)

// arenaWatchOut is watch --json of an arena.
type arenaWatchOut struct {
	Time       string            `json:"time"`
	File       string            `json:"file"`
	Arena      sketch.ArenaStats `json:"arena"`
	Lock       *sketch.LockInfo  `json:"lock"`
	Structures []struct {
		Name       string     `json:"name"`
		Kind       string     `json:"kind"`
		PerSecond  *float64   `json:"per_second"`
		Total      uint64     `json:"total"`
		Adds       *uint64    `json:"adds"`
		ErrorBound *uint64    `json:"error_bound"`
		Fill       *float64   `json:"fill"`
		Count      *float64   `json:"count"`
		Current    *uint64    `json:"current"`
		Oldest     *uint64    `json:"oldest"`
		Start      *time.Time `json:"start"`
		Frozen     bool       `json:"frozen"`
		Error      string     `json:"error"`
	} `json:"structures"`
}

// watchedKinds is each structure's kind in a frame, by name.
func (f arenaWatchOut) kinds() map[string]string {
	m := map[string]string{}
	for _, s := range f.Structures {
		m[s.Name] = s.Kind
	}
	return m
}

// TestWatch_Arena: watch of an arena's FILE shows every structure, each
// with its kind's figures, and a structure made while it watches appears
// in a later frame, without a rate the first time.
func TestWatch_Arena(t *testing.T) {
	path := makeArena(t, t.TempDir(), "5")
	sk(t, "create", path+":hourly", "--kind", "bloomwindow", "--capacity", "1000", "--period", "7m", "--keep", "3").ok(t, "create")
	sk(t, "add", "-n", "1000", path+":clients", "k").ok(t, "add")
	sk(t, "add", path+":seen", "a", "b", "c").ok(t, "add")
	sk(t, "add", path+":banned", "x").ok(t, "add")
	sk(t, "add", path+":hourly", "h").ok(t, "add")

	cmd := exec.Command(bin, "watch", "--json", "--interval", "20ms", "--count", "1000000", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	next := func() arenaWatchOut {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("watch ended: %v", lines.Err())
		}
		var f arenaWatchOut
		decode(t, lines.Text(), &f)
		return f
	}

	first := next()
	want := map[string]string{"clients": "countmin", "seen": "bloom", "banned": "countingbloom", "recent": "countminwindow", "hourly": "bloomwindow"}
	if diff := cmp.Diff(want, first.kinds()); diff != "" || first.File != path || first.Lock == nil || first.Arena.Entries != 5 {
		t.Fatalf("the first frame of watch --json %s: file %q, lock %v, arena %+v; structures (-want +got):\n%s", path, first.File, first.Lock, first.Arena, diff)
	}
	for _, s := range first.Structures {
		var bad bool
		switch s.Name {
		case "clients":
			bad = s.Total != 1000 || s.ErrorBound == nil || s.Fill != nil || s.Current != nil
		case "seen":
			bad = s.Total != 3 || s.Fill == nil || *s.Fill == 0 || s.Count == nil || s.ErrorBound != nil
		case "banned":
			bad = s.Total != 1 || s.Fill == nil || s.Count == nil
		case "recent": // turned by rotate: no clock time
			bad = s.Current == nil || *s.Current != 0 || s.Oldest == nil || s.Start != nil || s.ErrorBound == nil
		case "hourly":
			bad = s.Total != 1 || s.Current == nil || s.Start == nil || !s.Start.Equal(time.Unix(0, int64(*s.Current)*int64(7*time.Minute)))
		}
		if bad || s.PerSecond == nil || s.Error != "" {
			t.Errorf("the first frame of watch --json: %s = %+v", s.Name, s)
		}
	}

	sk(t, "create", path+":late", "--kind", "bloom", "--capacity", "100").ok(t, "create while watching")
	sk(t, "add", path+":late", "l1", "l2").ok(t, "add")
	// Frames made before the create may wait in the pipe: read on until
	// one shows it, for as long as a busy machine may need.
	deadline := time.Now().Add(patience)
	for i := 0; ; i++ {
		f := next()
		if len(f.Structures) == 5 && time.Now().Before(deadline) {
			continue
		}
		last := f.Structures[len(f.Structures)-1]
		if len(f.Structures) != 6 || last.Name != "late" || last.Kind != "bloom" || last.PerSecond != nil {
			t.Fatalf("%d frames after create, watch shows %+v; want late last, with no rate yet", i+1, f.Structures)
		}
		// A rate needs a frame before: read at least the next one, and on
		// until its adds are in (they may come after the frame that found
		// it, or before it, when both commands ran between two frames).
		for j := 0; (j == 0 || f.Structures[5].Total != 2) && time.Now().Before(deadline); j++ {
			f = next()
		}
		if late := f.Structures[5]; late.PerSecond == nil || late.Total != 2 || late.Fill == nil || *late.Fill == 0 {
			t.Errorf("late, in the frames after it appeared: %+v, want its 2 adds and a rate", late)
		}
		break
	}
	// A structure removed while watched leaves the frames, and watch lets
	// its room go: the next structure of its size takes the same offset.
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	offset := func(name string) uint64 {
		for _, e := range a.List() {
			if e.Name == name {
				return e.Offset
			}
		}
		return 0
	}
	was := offset("late")
	sk(t, "rm", path+":late").ok(t, "rm while watching")
	for i, deadline := 0, time.Now().Add(patience); ; i++ {
		f := next()
		if len(f.Structures) == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d frames after rm, watch shows %+v", i+1, f.Structures)
		}
	}
	next() // a frame later, watch has closed it
	sk(t, "create", path+":again", "--kind", "bloom", "--capacity", "100").ok(t, "create after rm")
	if got := offset("again"); got != was {
		t.Errorf("a Bloom filter like the removed one went to offset %d, not its room at %d: watch still holds it", got, was)
	}
	cmd.Process.Signal(os.Interrupt)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Errorf("watch after an interrupt: %v, want exit 0", err)
	}
}

// TestWatch_ArenaText: to a pipe, watch of an arena prints whole frames,
// a blank line between them: the time, the arena and its lock, then a row
// a structure.
func TestWatch_ArenaText(t *testing.T) {
	path := makeArena(t, t.TempDir(), "6")
	sk(t, "add", "-n", "1234", path+":clients", "k").ok(t, "add")
	sk(t, "freeze", path).ok(t, "freeze")
	out := sk(t, "watch", "--count", "2", "--interval", "10ms", path).ok(t, "watch")
	frames := strings.Split(out, "\n\n")
	if len(frames) != 2 || !strings.HasSuffix(out, "\n") || strings.Contains(out, "\x1b") {
		t.Fatalf("watch of an arena to a pipe: %q, want two plain frames and a blank line between", out)
	}
	for _, f := range frames {
		lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
		if len(lines) != 7 {
			t.Errorf("a frame of %d lines, want 7:\n%s", len(lines), f)
			continue
		}
		if _, err := time.Parse(time.RFC3339, strings.Fields(lines[0])[0]); err != nil || !strings.HasSuffix(lines[0], path+": arena of 4194304 bytes, 4 of 1024 structures, frozen") {
			t.Errorf("a frame's first line: %q, want the time and the arena", lines[0])
		}
		for i, want := range []string{
			"lock: free, 0 read locks, 0 handles",
			`^NAME +KIND +PER SECOND +TOTAL +STATE$`,
			`^clients +countmin +0 +1,234 +error bound \d+, frozen$`,
			`^seen +bloom +0 +0 +fill 0%, items about 0, frozen$`,
			`^banned +countingbloom +0 +0 +fill 0%, items about 0, frozen$`,
			`^recent +countminwindow +0 +0 +periods 0-0 \(turned by rotate, no clock times\), error bound 0, frozen$`,
		} {
			if !regexp.MustCompile(want).MatchString(lines[i+1]) {
				t.Errorf("line %d of a frame: %q, want %q", i+2, lines[i+1], want)
			}
		}
	}
}

// periodRE finds a period number and the clock time beside it.
var periodRE = regexp.MustCompile(`period (\d+) \(since ([0-9:.-]+(?: [0-9:.]+)?)\)`)

// TestWatch_ClockTimes: a window turned by the clock shows when its
// periods started, on the local clock, in stats and watch: period q of P
// started at q×P after the Unix epoch. Once rotated, it says its periods
// have no clock times.
func TestWatch_ClockTimes(t *testing.T) {
	const period = 7 * time.Minute // neither a divisor of an hour nor of a day
	path := create(t, "w.cmsw", "--kind", "countminwindow", "--period", period.String(), "--keep", "3", "--rows", "2", "--width", "64")
	sk(t, "add", path, "x").ok(t, "add") // the current slot holds its period, the next one is made ready
	startOf := func(q uint64) time.Time { return time.Unix(0, int64(q)*int64(period)) }
	clock := func(q uint64) string { return startOf(q).Local().Format("15:04:05") }

	out := sk(t, "stats", path).ok(t, "stats")
	m := regexp.MustCompile(`periods +(\d+) to (\d+) \(current (\d+) since (.*)\)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("stats of a clock window: no periods row with the current period's start in\n%s", out)
	}
	q, _ := strconv.ParseUint(m[3], 10, 64)
	if now := uint64(time.Now().UnixNano() / int64(period)); q+1 < now || q > now {
		t.Errorf("stats: current period %d, want the clock's %d", q, now)
	}
	if !strings.HasSuffix(m[4], clock(q)) {
		t.Errorf("stats: period %d since %q, want %s", q, m[4], clock(q))
	}
	if want := "current  period " + m[3] + " (since " + m[4] + ")"; !strings.Contains(out, want) {
		t.Errorf("stats: no %q in\n%s", want, out)
	}

	w := decodeLines[watchOut](t, sk(t, "watch", "--json", "--count", "1", "--interval", "10ms", path).ok(t, "watch --json"))[0]
	if w.Current == nil || w.Start == nil || !w.Start.Equal(startOf(*w.Current)) || w.Start.Location() != time.UTC {
		t.Errorf("watch --json: current %v, start %v; want the start of the current period, in UTC", w.Current, w.Start)
	}
	line := sk(t, "watch", "--count", "1", "--interval", "10ms", path).ok(t, "watch")
	m = regexp.MustCompile(`periods=(\d+)-(\d+)  current_since=(\S+)  `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("watch to a pipe: %q, want periods= and current_since=", line)
	}
	q, _ = strconv.ParseUint(m[2], 10, 64)
	if since, err := time.Parse(time.RFC3339Nano, m[3]); err != nil || !since.Equal(startOf(q)) {
		t.Errorf("watch to a pipe: current %d since %q, want %s", q, m[3], startOf(q).UTC().Format(time.RFC3339))
	}

	sk(t, "rotate", path).ok(t, "rotate")
	out = sk(t, "stats", path).ok(t, "stats")
	if !strings.Contains(out, "; rotated, no clock times\n") || periodRE.MatchString(out) || strings.Contains(out, "(from ") {
		t.Errorf("stats of a rotated clock window: want no times, and why, in\n%s", out)
	}
	if line := sk(t, "watch", "--count", "1", "--interval", "10ms", path).ok(t, "watch"); !strings.Contains(line, "  current_since=-  ") {
		t.Errorf("watch of a rotated clock window: %q, want current_since=-", line)
	}
	if w := decodeLines[watchOut](t, sk(t, "watch", "--json", "--count", "1", "--interval", "10ms", path).ok(t, "watch --json"))[0]; w.Start != nil {
		t.Errorf("watch --json of a rotated clock window: start %v, want none", w.Start)
	}
}

// TestWatch_Terminal: on a terminal, watch of an arena redraws its frames
// in place, cut to the terminal's size, and gives the cursor back.
func TestWatch_Terminal(t *testing.T) {
	path := makeArena(t, t.TempDir(), "7")
	ptm, pts := openPty(t)
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 5, Col: 200}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "watch", "--count", "3", "--interval", "10ms", path)
	cmd.Stdout = pts
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pts.Close()
	var tty []byte
	buf := make([]byte, 4096)
	for {
		n, err := ptm.Read(buf) // EIO once the command exits
		tty = append(tty, buf[:n]...)
		if err != nil {
			if !errors.Is(err, unix.EIO) && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch on a terminal: %v\n%s", err, errb.String())
	}
	got := strings.ReplaceAll(string(tty), "\r\n", "\n") // the terminal's own newline
	if !strings.HasPrefix(got, "\x1b[?25l\x1b[H") || !strings.HasSuffix(got, "\x1b[J\x1b[?25h") || strings.Count(got, "\x1b[H") != 3 ||
		strings.Contains(got, "\x1b[2J") || strings.Contains(got, "\x1b[2K") {
		t.Fatalf("the terminal got %q, want 3 frames each from the top left, no whole screen or line cleared", got)
	}
	for _, frame := range strings.Split(strings.TrimPrefix(strings.TrimSuffix(got, "\x1b[?25h"), "\x1b[?25l\x1b[H"), "\x1b[H") {
		lines := strings.Split(strings.TrimSuffix(frame, "\x1b[J"), "\n")
		// 4 lines fit (the cursor's line is the fifth), then "".
		if len(lines) != 5 || lines[4] != "" || !strings.HasPrefix(lines[0], path+": arena of") || lines[1] != "lock: free, 0 read locks, 0 handles\x1b[K" ||
			!strings.HasPrefix(lines[2], "NAME ") || lines[3] != "... 4 more lines: a taller terminal shows them, --json has them all\x1b[K" {
			t.Errorf("a frame on a terminal of 5 lines: %q", lines)
		}
	}
}
