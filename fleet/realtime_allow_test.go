//go:build linux

package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
	"golang.org/x/sys/unix"
)

// The fleet's Allow in real time: four hosts, each a file of its own, an
// agent process syncing it every 100 ms and a decider process calling
// Allow on a few keys at a limit, while one agent and then Redis are
// killed -9 and restarted. Every decision and every agent round is
// logged with the system-wide CLOCK_MONOTONIC, which orders the events of
// all processes; the checks read the logs only, and no time is asserted.

const (
	rtHosts    = 4
	rtLimit    = 300
	rtPerPhase = 200                    // Allow calls of each decider on a phase's key
	rtPause    = 2 * time.Millisecond   // between a decider's calls: the limit is reached over several rounds
	rtInterval = 100 * time.Millisecond // the agents' rounds
	rtWait     = 2 * time.Minute        // a generous deadline for each condition awaited
)

// rtKeys are the keys decided: one a phase of the test (before the kills,
// during the agent's kill, during Redis's kill, after it), each phase
// also asking again, now and then, the keys of the phases before.
var rtKeys = []string{"client-before", "client-agent-killed", "client-redis-killed", "client-after"}

// rtConfig's windows turn every 50 years, so that the test runs in one
// period (period 1, from the end of 2019 to the end of 2069; the test
// skips if it turns under it), and the period before it is in the window
// too: each agent's round claims its slot (storing the fleet's nothing of
// it), and Allow then takes its usual way, one pass over the key's rows,
// as on every fleet whose windows have turned once.
var rtConfig = sketch.CountMinWindowConfig{
	Window:   sketch.Window{Period: 50 * 365 * 24 * time.Hour, Keep: 2},
	CountMin: sketch.CountMinConfig{Rows: 4, Width: 1 << 12, Fleet: true, Seed: 0x7a11},
}

// monotonic is CLOCK_MONOTONIC, the same clock in every process of the
// machine: it orders the events the processes log.
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// rtCells are the counters of each key in a grid of rtConfig's shape
// (ExportPeriods' and SetFleetPeriod's encoding), one a row. The keys
// share none, so every counter of a key counts that key only, and a
// key's estimate is its exact count: the checks below can be exact.
type rtCells [][]int

// rtKeyCells finds them by adding each key once to an empty window and
// reading which counters its export holds.
func rtKeyCells() (rtCells, error) {
	cells := make(rtCells, len(rtKeys))
	owner := map[int]string{}
	for i, k := range rtKeys {
		w, err := sketch.OpenCountMinWindow(sketch.Memory(), rtConfig)
		if err != nil {
			return nil, err
		}
		w.AddString(k)
		ps, err := w.ExportPeriods()
		w.Close()
		if err != nil || len(ps) != 1 {
			return nil, fmt.Errorf("export of one add: %v periods, %v", len(ps), err)
		}
		for j := 0; j+8 <= len(ps[0].Data); j += 8 {
			if binary.LittleEndian.Uint64(ps[0].Data[j:]) == 0 {
				continue
			}
			if o, ok := owner[j]; ok {
				return nil, fmt.Errorf("keys %q and %q share a counter: pick another seed", o, k)
			}
			owner[j] = k
			cells[i] = append(cells[i], j/8)
		}
		if len(cells[i]) != rtConfig.CountMin.Rows {
			return nil, fmt.Errorf("key %q has %d counters, want one in each of %d rows", k, len(cells[i]), rtConfig.CountMin.Rows)
		}
	}
	return cells, nil
}

// values reads each key's least and greatest counter in grid (nil: all
// zero). They differ only while an add is on its way through the rows.
func (c rtCells) values(grid []byte) (lo, hi []uint64) {
	lo, hi = make([]uint64, len(c)), make([]uint64, len(c))
	if grid == nil {
		return lo, hi
	}
	for k, cells := range c {
		lo[k] = ^uint64(0)
		for _, j := range cells {
			v := binary.LittleEndian.Uint64(grid[j*8:])
			lo[k], hi[k] = min(lo[k], v), max(hi[k], v)
		}
	}
	return lo, hi
}

func formatValues(lo, hi []uint64) string {
	var b strings.Builder
	for k := range lo {
		fmt.Fprintf(&b, " %d:%d", lo[k], hi[k])
	}
	return b.String()
}

func init() {
	// The children of TestSync_FleetAllowRealTime; TestMain's runRole
	// serves the other tests' children.
	switch os.Getenv("FLEET_TEST_ROLE") {
	case "allow-agent":
		os.Exit(runAllowAgent())
	case "allow-decider":
		os.Exit(runAllowDecider())
	}
}

// runAllowAgent is a child: the agent of host FLEET_TEST_HOST, syncing
// the window at FLEET_TEST_FILE through the Redis at FLEET_TEST_SOCK
// every rtInterval until it is killed. It logs to FLEET_TEST_LOG, each
// line written before the step it tells of goes on (so a kill loses no
// push or store that took effect):
//
//	push T0 T1 lo:hi...   its export, read between T0 and T1: what it pushes
//	store T lo:hi...      the fleet sum it stores from T on
//	stored T OK           the store ended at T
//	round T OK REMEMBERED a round ended at T (ok or fail)
func runAllowAgent() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	cells, err := rtKeyCells()
	if err != nil {
		return fail(err)
	}
	w, err := sketch.OpenCountMinWindow(sketch.Path(os.Getenv("FLEET_TEST_FILE")), rtConfig)
	if err != nil {
		return fail(err)
	}
	logFile, err := os.OpenFile(os.Getenv("FLEET_TEST_LOG"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	logLine := func(format string, args ...any) {
		if _, err := fmt.Fprintf(logFile, format+"\n", args...); err != nil {
			panic(err)
		}
	}
	client := redis.NewClient(&redis.Options{Network: "unix", Addr: os.Getenv("FLEET_TEST_SOCK"), MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	a, err := New(Config{Redis: client, Fleet: "rt", Host: os.Getenv("FLEET_TEST_HOST"), Interval: rtInterval, Timeout: 10 * time.Second})
	if err == nil {
		err = a.AddCountMinWindow("rate", w)
	}
	if err != nil {
		return fail(err)
	}
	// The round's own steps, wrapped to log what they move: the public
	// API shows the fleet part only added to this host's counts.
	aw := a.members[0].additiveWindow
	export, store := aw.window.export, aw.setPeriod
	period := w.Current() // the test's, or it skips
	aw.window.export = func() ([]sketch.WindowPeriod, error) {
		t0 := monotonic()
		ps, err := export()
		t1 := monotonic()
		var grid []byte
		for _, p := range ps {
			if p.Period == period {
				grid = p.Data
			}
		}
		logLine("push %d %d%s", t0, t1, formatValues(cells.values(grid)))
		return ps, err
	}
	aw.setPeriod = func(p uint64, counts []byte) (bool, error) {
		if p != period { // the period before: nobody adds to it
			return store(p, counts)
		}
		logLine("store %d%s", monotonic(), formatValues(cells.values(counts)))
		ok, err := store(p, counts)
		logLine("stored %d %v", monotonic(), err == nil && ok)
		return ok, err
	}
	tick := time.NewTicker(rtInterval)
	for {
		err := a.Sync(context.Background())
		result := "ok"
		if err != nil {
			result = "fail"
		}
		logLine("round %d %s %d", monotonic(), result, a.Stats().Structures[0].Remembered)
		<-tick.C
	}
}

// runAllowDecider is a child: a host's requests to the window at
// FLEET_TEST_FILE, the only process adding to it. It prints
// "ready BACKEND PERIOD", then for each line "KEY N OLDER" on its input makes N
// calls of Allow on key KEY, rtPause apart, every tenth also asking each
// key of the comma-separated OLDER ("-": none), and prints "done". Each
// decision goes to FLEET_TEST_LOG, written before "done":
//
//	d T0 T1 KEY ALLOWED COUNTED ESTIMATE   a call of Allow between T0 and T1
func runAllowDecider() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	w, err := sketch.OpenCountMinWindow(sketch.Path(os.Getenv("FLEET_TEST_FILE")), rtConfig)
	if err != nil {
		return fail(err)
	}
	defer w.Close()
	logFile, err := os.Create(os.Getenv("FLEET_TEST_LOG"))
	if err != nil {
		return fail(err)
	}
	log := bufio.NewWriter(logFile)
	bit := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	decide := func(k int) error {
		t0 := monotonic()
		d, err := w.AllowString(rtKeys[k], rtLimit, false)
		t1 := monotonic()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(log, "d %d %d %d %d %d %d\n", t0, t1, k, bit(d.Allowed()), bit(d.Counted()), d.Estimate())
		return err
	}
	fmt.Println("ready", sketch.Backend, w.Current())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var k, n int
		var olderList string
		if _, err := fmt.Sscan(in.Text(), &k, &n, &olderList); err != nil {
			return fail(fmt.Errorf("command %q: %v", in.Text(), err))
		}
		var older []int
		for _, o := range strings.Split(olderList, ",") {
			if i, err := strconv.Atoi(o); err == nil {
				older = append(older, i)
			}
		}
		for i := range n {
			if err := decide(k); err != nil {
				return fail(err)
			}
			if i%10 == 0 {
				for _, o := range older {
					if err := decide(o); err != nil {
						return fail(err)
					}
				}
			}
			time.Sleep(rtPause)
		}
		if err := log.Flush(); err != nil {
			return fail(err)
		}
		fmt.Println("done")
	}
	if err := log.Flush(); err != nil {
		return fail(err)
	}
	return 0
}

// rtChild is a child process of the test, killed (by its PID) or waited
// for at the test's end.
type rtChild struct {
	name   string
	cmd    *exec.Cmd
	stderr bytes.Buffer   // read only once it has exited
	lines  chan string    // its output, line by line (deciders)
	stdin  io.WriteCloser // deciders
	ended  bool
}

func (c *rtChild) kill() {
	if !c.ended {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		c.ended = true
	}
}

// rtFleet is the test's fleet of processes and their logs.
type rtFleet struct {
	t        *testing.T
	rs       *redistest.Server
	dir      string
	exes     [2]string // this build and the other (or this one again)
	files    [rtHosts]string
	agents   [rtHosts]*rtChild
	agentLog [rtHosts][]string // one log an agent process of the host
	deciders [rtHosts]*rtChild
	children []*rtChild
}

func (f *rtFleet) start(name, exe string, env ...string) *rtChild {
	f.t.Helper()
	c := &rtChild{name: name, cmd: exec.Command(exe, "-test.run=^$")}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stderr = &c.stderr
	f.children = append(f.children, c)
	return c
}

// startAgent starts a new agent process for host h, logging to a file
// of its own.
func (f *rtFleet) startAgent(h int) {
	f.t.Helper()
	log := filepath.Join(f.dir, fmt.Sprintf("agent-%d-%d.log", h, len(f.agentLog[h])))
	f.agentLog[h] = append(f.agentLog[h], log)
	c := f.start(filepath.Base(log), f.exes[(h+1)%2], "FLEET_TEST_ROLE=allow-agent", "FLEET_TEST_FILE="+f.files[h],
		"FLEET_TEST_SOCK="+f.rs.Sock, "FLEET_TEST_HOST="+fmt.Sprint("host", h), "FLEET_TEST_LOG="+log)
	c.cmd.Stdout = &c.stderr
	if err := c.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.agents[h] = c
}

// startDecider starts host h's decider and returns the build it runs and
// its window's period.
func (f *rtFleet) startDecider(h int) (build string, period uint64) {
	f.t.Helper()
	c := f.start(fmt.Sprint("host ", h, "'s decider"), f.exes[h%2], "FLEET_TEST_ROLE=allow-decider", "FLEET_TEST_FILE="+f.files[h],
		"FLEET_TEST_LOG="+f.deciderLog(h))
	out, err := c.cmd.StdoutPipe()
	if err == nil {
		c.stdin, err = c.cmd.StdinPipe()
	}
	if err == nil {
		err = c.cmd.Start()
	}
	if err != nil {
		f.t.Fatal(err)
	}
	c.lines = make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	f.deciders[h] = c
	ready := f.await(h, "ready ")
	if _, err := fmt.Sscan(strings.TrimPrefix(ready, "ready "), &build, &period); err != nil {
		f.fail("host %d's decider said %q: %v", h, ready, err)
	}
	return build, period
}

func (f *rtFleet) deciderLog(h int) string {
	return filepath.Join(f.dir, fmt.Sprintf("decider-%d.log", h))
}

// await waits for decider h's next line, which must start with prefix.
func (f *rtFleet) await(h int, prefix string) string {
	f.t.Helper()
	select {
	case line, ok := <-f.deciders[h].lines:
		if !ok || !strings.HasPrefix(line, prefix) {
			f.fail("host %d's decider said %q (ended: %v), want %q", h, line, !ok, prefix)
		}
		return line
	case <-time.After(rtWait):
		f.fail("host %d's decider did not say %q within %v", h, prefix, rtWait)
	}
	return ""
}

// phase starts every decider's calls on key k (asking the keys older
// too); done waits for them to end.
func (f *rtFleet) phase(k int, older ...int) {
	f.t.Helper()
	list := "-"
	for i, o := range older {
		if i == 0 {
			list = strconv.Itoa(o)
		} else {
			list += "," + strconv.Itoa(o)
		}
	}
	for h := range rtHosts {
		if _, err := fmt.Fprintf(f.deciders[h].stdin, "%d %d %s\n", k, rtPerPhase, list); err != nil {
			f.fail("host %d's decider: %v", h, err)
		}
	}
}

func (f *rtFleet) done() {
	f.t.Helper()
	for h := range rtHosts {
		f.await(h, "done")
	}
}

// waitFor polls cond until it holds: a condition, never a time, decides.
func (f *rtFleet) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(rtWait)
	for !cond() {
		if time.Now().After(deadline) {
			f.fail("waited %v for %s", rtWait, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fail ends the test, with every child's output once they have ended.
func (f *rtFleet) fail(format string, args ...any) {
	f.t.Helper()
	for _, c := range f.children {
		c.kill()
		if c.stderr.Len() > 0 {
			f.t.Logf("%s:\n%s", c.name, c.stderr.String())
		}
	}
	f.t.Fatalf(format, args...)
}

// rtPush, rtStore and rtRound are an agent's round as logged: its push,
// its store of the fleet sum (nil when it failed before), and its end
// (zero when the agent was killed during it).
type rtPush struct {
	t0, t1 int64
	lo, hi []uint64
}

type rtStore struct {
	begin, end int64 // end zero: killed during it
	lo, hi     []uint64
}

type rtRound struct {
	push       rtPush
	store      *rtStore
	end        int64
	ok         bool
	remembered int
}

// rounds reads host h's agents' logs, every process's in turn; a line
// still being written is left out.
func (f *rtFleet) rounds(h int) [][]rtRound {
	f.t.Helper()
	var all [][]rtRound
	for _, path := range f.agentLog[h] {
		var rounds []rtRound
		for _, fields := range readLog(f.t, path) {
			n := func(i int) int64 {
				v, err := strconv.ParseInt(fields[i], 10, 64)
				if err != nil {
					f.fail("%s: %q: %v", path, fields, err)
				}
				return v
			}
			values := func(from int) (lo, hi []uint64) {
				for _, s := range fields[from:] {
					var a, b uint64
					if _, err := fmt.Sscanf(s, "%d:%d", &a, &b); err != nil {
						f.fail("%s: %q: %v", path, fields, err)
					}
					lo, hi = append(lo, a), append(hi, b)
				}
				return lo, hi
			}
			last := len(rounds) - 1
			if last < 0 && fields[0] != "push" {
				f.fail("%s: a round's %q before its push", path, fields[0])
			}
			switch fields[0] {
			case "push":
				lo, hi := values(3)
				rounds = append(rounds, rtRound{push: rtPush{t0: n(1), t1: n(2), lo: lo, hi: hi}})
			case "store":
				lo, hi := values(2)
				rounds[last].store = &rtStore{begin: n(1), lo: lo, hi: hi}
			case "stored":
				if fields[2] != "true" {
					f.fail("%s: a store failed: %q", path, fields)
				}
				rounds[last].store.end = n(1)
			case "round":
				rounds[last].end, rounds[last].ok = n(1), fields[2] == "ok"
				rounds[last].remembered = int(n(3))
			}
		}
		all = append(all, rounds)
	}
	return all
}

// readLog reads a log's complete lines, split in fields.
func readLog(t *testing.T, path string) [][]string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var lines [][]string
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return lines // a line without its end is still being written
		}
		lines = append(lines, strings.Fields(string(b[:i])))
		b = b[i+1:]
	}
}

// agentRounds are the rounds of host h's current agent process.
func (f *rtFleet) agentRounds(h int) []rtRound {
	all := f.rounds(h)
	return all[len(all)-1]
}

// storesSince counts the stores of host h's current agent that began
// after t and ended.
func (f *rtFleet) storesSince(h int, t int64) int {
	n := 0
	for _, r := range f.agentRounds(h) {
		if r.push.t0 > t && r.store != nil && r.store.end != 0 {
			n++
		}
	}
	return n
}

// rtDecision is a call of Allow as its decider logged it, with what the
// test derives: the host's own count of the key before it (the decider
// is the only process adding to the host's file) and the fleet part it
// saw (its estimate less the own count, which counts this request too
// when it was counted: Allow's estimate is the key's, this request in
// when counted, and the keys share no counter).
type rtDecision struct {
	host, key               int
	t0, t1                  int64
	allowed, counted        bool
	estimate, own, fleetSaw uint64
}

// TestSync_FleetAllowRealTime: four hosts, each a Count-Min window file
// with a fleet part, its agent a process of its own syncing every 100 ms
// and its requests decided by a process of its own (of both builds: cgo
// and pure Go), call Allow on keys at a limit of 300. Midway host 1's
// agent is killed -9 and restarted, and later Redis is killed -9 and
// restarted empty. From the logs of every decision and every agent round,
// ordered by CLOCK_MONOTONIC (and never timed), it checks:
//
//   - no low answer: every decision saw a fleet part at least what its
//     host's agent stored before it began, and every store held at least
//     what it had stored before and what the other hosts had pushed before
//     its round began (and Redis held since);
//   - no double count: every decision's fleet part and every store is at
//     most the other hosts' requests counted by then, also after the
//     restarts, and once the deciders stop every host's fleet part is
//     exactly the other hosts' counts;
//   - the bound: a key's allowed requests are at most the limit plus what
//     the other hosts admitted that a host had not pulled at its last
//     allowed decision of the key, for each host;
//   - refusals before the limit only within that slack: a host refused
//     only when its own count plus what its agent had stored reached the
//     limit, and so only when the fleet's counted requests had;
//   - every push carried the host's decisions ended before it and none
//     begun after it.
func TestSync_FleetAllowRealTime(t *testing.T) {
	rs := redistest.Start(t)
	cells, err := rtKeyCells()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &rtFleet{t: t, rs: rs, dir: t.TempDir(), exes: [2]string{self, self}}
	var period uint64 // the windows' current period
	if other := otherBuild(t); other != "" {
		f.exes[1] = other
	}
	t.Cleanup(func() {
		for _, c := range f.children {
			c.kill()
		}
	})
	for h := range rtHosts {
		f.files[h] = filepath.Join(f.dir, fmt.Sprint("rate-", h))
		w, err := sketch.OpenCountMinWindow(sketch.Path(f.files[h]), rtConfig)
		if err != nil {
			t.Fatal(err)
		}
		period = w.Current()
		w.Close()
		f.startAgent(h)
	}
	for h := range rtHosts {
		f.waitFor(fmt.Sprintf("host %d's agent's first round", h), func() bool {
			return slices.ContainsFunc(f.agentRounds(h), func(r rtRound) bool { return r.ok })
		})
	}
	builds, periods := map[string]bool{}, map[uint64]bool{}
	for h := range rtHosts {
		build, p := f.startDecider(h)
		builds[build] = true
		periods[p] = true
	}

	// Before any kill.
	f.phase(0)
	f.done()

	// Host 1's agent killed -9 once it pushed some of the key's requests,
	// and restarted once another host's agent stored twice without it.
	f.phase(1, 0)
	pushed := func(h, k int) func() bool {
		return func() bool {
			return slices.ContainsFunc(f.agentRounds(h), func(r rtRound) bool { return r.push.lo[k] > 0 })
		}
	}
	f.waitFor("host 1's agent to push the key", pushed(1, 1))
	f.agents[1].kill()
	killed := monotonic()
	f.waitFor("two stores of host 0's agent after the kill", func() bool { return f.storesSince(0, killed) >= 2 })
	f.startAgent(1)
	f.done()
	f.waitFor("a store of host 1's restarted agent", func() bool { return f.storesSince(1, 0) > 0 })

	// Redis killed -9 once a host pushed some of the key's requests, and
	// restarted empty once every agent has failed a round.
	f.phase(2, 0, 1)
	f.waitFor("host 2's agent to push the key", pushed(2, 2))
	rs.Stop()
	redisLost := monotonic()
	for h := range rtHosts {
		f.waitFor(fmt.Sprintf("a failed round of host %d's agent", h), func() bool {
			return slices.ContainsFunc(f.agentRounds(h), func(r rtRound) bool { return r.end > redisLost && !r.ok })
		})
	}
	// Hosts 1 to 3's agents wait (SIGSTOP) until host 0's has run a round
	// on the empty Redis: that round finds no other host's key and sums
	// them from memory, which a machine stalling Redis's first requests
	// could otherwise let every agent's push overtake.
	for h := 1; h < rtHosts; h++ {
		f.agents[h].cmd.Process.Signal(unix.SIGSTOP)
	}
	rs.Start(t)
	f.waitFor("a round of host 0's agent summing hosts from memory after Redis lost its data", func() bool {
		return slices.ContainsFunc(f.agentRounds(0), func(r rtRound) bool { return r.push.t0 > redisLost && r.ok && r.remembered > 0 })
	})
	for h := 1; h < rtHosts; h++ {
		f.agents[h].cmd.Process.Signal(unix.SIGCONT)
	}
	f.done()

	// After it.
	f.phase(3, 0, 1, 2)
	f.done()

	// Quiet: every agent pushes its host's last counts, and then pulls
	// every other host's.
	quiet := monotonic()
	for _, step := range []string{"pushed", "pulled"} {
		var last int64
		for h := range rtHosts {
			f.waitFor(fmt.Sprintf("host %d's agent to have %s after the deciders ended", h, step), func() bool { return f.storesSince(h, quiet) > 0 })
			for _, r := range f.agentRounds(h) {
				if r.store != nil && r.store.end != 0 {
					last = max(last, r.store.end)
				}
			}
		}
		quiet = last
	}
	for h := range rtHosts {
		f.deciders[h].stdin.Close()
		if err := f.deciders[h].cmd.Wait(); err != nil {
			f.fail("host %d's decider: %v", h, err)
		}
		f.deciders[h].ended = true
	}
	for h := range rtHosts {
		f.agents[h].kill()
	}

	w, err := sketch.OpenCountMinWindow(sketch.Memory(), rtConfig)
	if err != nil {
		t.Fatal(err)
	}
	if periods[period] = true; len(periods) != 1 || w.Current() != period {
		t.Skipf("the windows' period turned during the test (periods %v, now %d): the checks count one period", periods, w.Current())
	}
	w.Close()
	rt := f.read(cells)
	rt.check(redisLost)
	if len(builds) != 2 && f.exes[1] != self {
		t.Errorf("the deciders ran as %v, want both builds", builds)
	}
	t.Logf("deciders' builds: %v; %s", builds, rt.summary())
}

// rtLogs are every process's logs, read once they have all ended.
type rtLogs struct {
	f         *rtFleet
	decisions [rtHosts][]rtDecision
	rounds    [rtHosts][][]rtRound
	// counted[h][k] are the begin and end times of host h's counted
	// requests of key k, in order (a decider is sequential).
	countedT0, countedT1 [rtHosts][][]int64
	counted, allowed     [rtHosts][]uint64
	// bound[k] is the tightest bound of key k's allowed requests, over
	// the hosts' last allowed decisions.
	bound []int64
}

func (f *rtFleet) read(cells rtCells) *rtLogs {
	rt := &rtLogs{f: f}
	for h := range rtHosts {
		rt.rounds[h] = f.rounds(h)
		rt.countedT0[h], rt.countedT1[h] = make([][]int64, len(rtKeys)), make([][]int64, len(rtKeys))
		rt.counted[h], rt.allowed[h] = make([]uint64, len(rtKeys)), make([]uint64, len(rtKeys))
		for _, fields := range readLog(f.t, f.deciderLog(h)) {
			if fields[0] != "d" {
				continue
			}
			var v [6]int64
			for i := range v {
				var err error
				if v[i], err = strconv.ParseInt(fields[i+1], 10, 64); err != nil {
					f.fail("host %d's decisions: %q: %v", h, fields, err)
				}
			}
			d := rtDecision{host: h, t0: v[0], t1: v[1], key: int(v[2]), allowed: v[3] == 1, counted: v[4] == 1, estimate: uint64(v[5])}
			d.own = rt.counted[h][d.key]
			in := d.own
			if d.counted {
				in++
				rt.counted[h][d.key]++
				rt.countedT0[h][d.key] = append(rt.countedT0[h][d.key], d.t0)
				rt.countedT1[h][d.key] = append(rt.countedT1[h][d.key], d.t1)
			}
			if d.allowed {
				rt.allowed[h][d.key]++
			}
			if d.estimate < in {
				f.fail("host %d: a decision on %s estimated %d, below the host's own %d requests counted", h, rtKeys[d.key], d.estimate, in)
			}
			d.fleetSaw = d.estimate - in
			rt.decisions[h] = append(rt.decisions[h], d)
		}
	}
	return rt
}

// countedBefore is how many of host g's requests of key k were counted by
// a decision that began before t (ended before t, with ended): at least
// what g could have pushed by t (at most what it surely had).
func (rt *rtLogs) countedBefore(g, k int, t int64, ended bool) uint64 {
	times := rt.countedT0[g][k]
	if ended {
		times = rt.countedT1[g][k]
	}
	return uint64(sort.Search(len(times), func(i int) bool { return times[i] >= t }))
}

// othersCountedBefore sums countedBefore over the hosts but h.
func (rt *rtLogs) othersCountedBefore(h, k int, t int64) uint64 {
	var n uint64
	for g := range rtHosts {
		if g != h {
			n += rt.countedBefore(g, k, t, false)
		}
	}
	return n
}

// stores are host h's stores of every agent process, in order.
func (rt *rtLogs) stores(h int) []*rtStore {
	var s []*rtStore
	for _, rounds := range rt.rounds[h] {
		for _, r := range rounds {
			if r.store != nil {
				s = append(s, r.store)
			}
		}
	}
	return s
}

// pulledBy is the least fleet part of key k that host h held surely at
// t: what the last store ended before t stored (the stores only rise,
// which check verifies).
func (rt *rtLogs) pulledBy(h, k int, t int64) uint64 {
	var v uint64
	for _, s := range rt.stores(h) {
		if s.end != 0 && s.end < t {
			v = max(v, s.lo[k])
		}
	}
	return v
}

// storedBy is the most the fleet part of key k of host h can have held
// at t: what the last store begun before t stored.
func (rt *rtLogs) storedBy(h, k int, t int64) uint64 {
	var v uint64
	for _, s := range rt.stores(h) {
		if s.begin < t {
			v = max(v, s.hi[k])
		}
	}
	return v
}

func (rt *rtLogs) check(redisLost int64) {
	f := rt.f
	// The violations, a few of each kind: one kind can be many.
	var errs []string
	seen := map[string]int{}
	report := func(format string, args ...any) {
		kind, _, _ := strings.Cut(format, ":")
		if seen[kind]++; seen[kind] <= 3 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	for h := range rtHosts {
		// The decisions.
		for _, d := range rt.decisions[h] {
			k := rtKeys[d.key]
			if d.allowed && (!d.counted || d.estimate > rtLimit) || !d.allowed && d.estimate < rtLimit {
				report("decision: host %d: %s allowed %v (counted %v) at an estimate of %d, limit %d", h, k, d.allowed, d.counted, d.estimate, rtLimit)
			}
			if low := rt.pulledBy(h, d.key, d.t0); d.fleetSaw < low {
				report("low answer: host %d decided %s on a fleet part of %d, its agent had stored %d before", h, k, d.fleetSaw, low)
			}
			if most := rt.othersCountedBefore(h, d.key, d.t1); d.fleetSaw > most {
				report("double count: host %d decided %s on a fleet part of %d, the other hosts had counted %d", h, k, d.fleetSaw, most)
			}
			if !d.allowed {
				if own, stored := d.own, rt.storedBy(h, d.key, d.t1); own+stored < rtLimit {
					report("refused early: host %d refused %s with %d of its own and %d stored by its agent, under the limit of %d", h, k, own, stored, rtLimit)
				}
				if fleet := d.own + rt.othersCountedBefore(h, d.key, d.t1); fleet < rtLimit {
					report("refused early: host %d refused %s when the fleet had counted %d, under the limit of %d", h, k, fleet, rtLimit)
				}
			}
		}

		// The agent's rounds.
		var prev *rtStore
		for _, rounds := range rt.rounds[h] {
			for _, r := range rounds {
				for k := range rtKeys {
					if least, most := rt.countedBefore(h, k, r.push.t0, true), rt.countedBefore(h, k, r.push.t1, false); r.push.lo[k] < least || r.push.hi[k] > most {
						report("push: host %d pushed %d:%d of %s, its requests counted before the export were %d, by its end %d", h, r.push.lo[k], r.push.hi[k], rtKeys[k], least, most)
					}
				}
				s := r.store
				if s == nil {
					continue
				}
				for k := range rtKeys {
					if most := rt.othersCountedBefore(h, k, s.begin); s.hi[k] > most {
						report("double count: host %d's agent stored %d of %s, the other hosts had counted %d", h, s.hi[k], rtKeys[k], most)
					}
					if prev != nil && (s.lo[k] < prev.lo[k] || s.hi[k] < prev.hi[k]) {
						report("dropped: host %d's agent stored %d:%d of %s after %d:%d", h, s.lo[k], s.hi[k], rtKeys[k], prev.lo[k], prev.hi[k])
					}
					if least, ok := rt.pushedBefore(h, k, r, redisLost); ok && s.lo[k] < least {
						report("low pull: host %d's agent stored %d of %s, the other hosts had pushed %d before its round", h, s.lo[k], rtKeys[k], least)
					}
				}
				prev = s
			}
		}
		last := prev
		if last == nil {
			report("coverage: host %d's agents stored nothing", h)
			continue
		}
		for k := range rtKeys {
			var others uint64
			for g := range rtHosts {
				if g != h {
					others += rt.counted[g][k]
				}
			}
			if last.lo[k] != others || last.hi[k] != others {
				report("not exact: once quiet host %d's fleet part of %s is %d:%d, the other hosts counted %d", h, rtKeys[k], last.lo[k], last.hi[k], others)
			}
		}
	}

	// The bound, key by key, from each host's last allowed decision.
	rt.bound = make([]int64, len(rtKeys))
	for k := range rtKeys {
		rt.bound[k] = math.MaxInt64
		var total, counted uint64
		for h := range rtHosts {
			total += rt.allowed[h][k]
			counted += rt.counted[h][k]
		}
		if counted < rtLimit {
			report("coverage: %s: the fleet counted %d requests, never reaching its limit of %d", rtKeys[k], counted, rtLimit)
		}
		for h := range rtHosts {
			var lastAllowed *rtDecision
			for i := range rt.decisions[h] {
				if d := &rt.decisions[h][i]; d.key == k && d.allowed {
					lastAllowed = d
				}
			}
			if lastAllowed == nil {
				continue
			}
			// Host h's own allowed are at most its count at lastAllowed,
			// which fits the limit with the fleet part it saw there, at
			// least what its agent had pulled: the rest is the others'.
			var othersAllowed int64
			for g := range rtHosts {
				if g != h {
					othersAllowed += int64(rt.allowed[g][k])
				}
			}
			unpulled := othersAllowed - int64(rt.pulledBy(h, k, lastAllowed.t0))
			rt.bound[k] = min(rt.bound[k], rtLimit+unpulled)
			if int64(total) > rtLimit+unpulled {
				report("bound: %s: %d allowed, past the limit %d plus the %d the other hosts admitted that host %d had not pulled at its last allowed decision", rtKeys[k], total, rtLimit, unpulled, h)
			}
		}
	}

	// What the test meant to happen did.
	remembered := false
	for h := range rtHosts {
		for _, rounds := range rt.rounds[h] {
			for _, r := range rounds {
				remembered = remembered || r.push.t0 > redisLost && r.ok && r.remembered > 0
			}
		}
	}
	if !remembered {
		report("coverage: no round after Redis lost its data summed a host from memory")
	}
	if len(errs) > 0 {
		f.t.Errorf("violations, by kind %v; the first of each:\n%s", seen, strings.Join(errs, "\n"))
	}
}

// pushedBefore is the least sum of key k that the other hosts had pushed
// before round r of host h began and Redis still held when r pulled: each
// other host's push of its last round whose store ended before r's push
// began, counted only when both are on the same side of Redis's loss
// (redisLost, which r's pull must not straddle). ok is false for a round
// that straddles it.
func (rt *rtLogs) pushedBefore(h, k int, r rtRound, redisLost int64) (least uint64, ok bool) {
	after := r.push.t0 > redisLost
	if !after && r.store.begin > redisLost {
		return 0, false
	}
	for g := range rtHosts {
		if g == h {
			continue
		}
		var v uint64
		for _, rounds := range rt.rounds[g] {
			for _, q := range rounds {
				if q.store != nil && q.store.end != 0 && q.store.end < r.push.t0 && (q.push.t0 > redisLost) == after {
					v = max(v, q.push.lo[k])
				}
			}
		}
		least += v
	}
	return least, true
}

// summary tells what happened, key by key.
func (rt *rtLogs) summary() string {
	var b strings.Builder
	for k, key := range rtKeys {
		var allowed, refused, counted uint64
		for h := range rtHosts {
			allowed += rt.allowed[h][k]
			counted += rt.counted[h][k]
			for _, d := range rt.decisions[h] {
				if d.key == k && !d.allowed {
					refused++
				}
			}
		}
		fmt.Fprintf(&b, "%s: %d allowed (limit %d, bound %d), %d refused, %d counted; ", key, allowed, rtLimit, rt.bound[k], refused, counted)
	}
	var rounds, failed int
	for h := range rtHosts {
		for _, rs := range rt.rounds[h] {
			for _, r := range rs {
				rounds++
				if !r.ok {
					failed++
				}
			}
		}
	}
	fmt.Fprintf(&b, "%d agent rounds, %d failed", rounds, failed)
	return b.String()
}
