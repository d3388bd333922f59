//go:build linux

package sketch

// Count-Min windows shared by real processes of both backends: periods
// turned by the clock and by Rotate from another process while everyone
// adds, and a clearer killed inside its clear.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	envWinPeriod = "SKETCH_TEST_WIN_PERIOD_MS" // winadd: the window's period
	envWinKeep   = "SKETCH_TEST_WIN_KEEP"      // winadd: the window's keep
	envWinRun    = "SKETCH_TEST_WIN_RUN_MS"    // winadd: the longest it adds
	envWinStop   = "SKETCH_TEST_WIN_STOP"      // winadd: a file whose creation says stop
)

// winAdderRun bounds how long a child adder runs when its parent never
// tells it to stop (a parent that failed): within childTimeout.
const winAdderRun = 45 * time.Second

// winSampling bounds how long a parent samples the periods of its adders;
// they keep adding until it has seen what it must.
const winSampling = 30 * time.Second

// winStop tells a child adder when to stop: once the parent has created
// the file at envWinStop (looked for every 50 steps), or after envWinRun
// ms.
type winStop struct {
	path     string
	deadline time.Time
	stopped  bool
}

func newWinStop() *winStop {
	return &winStop{path: os.Getenv(envWinStop), deadline: time.Now().Add(time.Duration(envInt(envWinRun)) * time.Millisecond)}
}

// now reports whether the adder should stop before step.
func (s *winStop) now(step int) bool {
	if step%50 == 0 && !s.stopped {
		_, err := os.Stat(s.path)
		s.stopped = err == nil || time.Now().After(s.deadline)
	}
	return s.stopped
}

// winAdderEnv is the environment of child adder i of the window w at path,
// which stops once stopPath exists.
func winAdderEnv(path, stopPath string, i int, w Window) []string {
	return envs(envPath, path, envChild, i, envWinPeriod, w.Period.Milliseconds(), envWinKeep, w.Keep, envWinRun, winAdderRun.Milliseconds(), envWinStop, stopPath)
}

// stopAdders tells the adders started with stopPath to stop.
func stopAdders(t *testing.T, stopPath string) {
	t.Helper()
	if err := os.WriteFile(stopPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func envWindow() Window {
	return Window{Period: time.Duration(envInt(envWinPeriod)) * time.Millisecond, Keep: envInt(envWinKeep)}
}

// childWinAdd adds its own keys until told to stop, in bursts, checking that
// every estimate (Add's and Estimate's) is at least its own count over the
// periods the estimate covers; then it prints its counts per period as
// "ref PERIOD KEY N" lines. Its keys are its own, so its counts are the
// truth for them.
func childWinAdd() error {
	w, err := OpenCountMinWindow(Path(os.Getenv(envPath)), CountMinWindowConfig{Window: envWindow(), CountMin: winCfg})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := childBarrier(); err != nil {
		return err
	}
	me := os.Getenv(envChild)
	ref := winRef{}
	stop := newWinStop()
	for i := 0; !stop.now(i); i++ {
		k := fmt.Sprintf("c%s-%d", me, i%20)
		lo, hi := hashString(k, w.slots[0].seed)
		est, addP, p, err := w.addOne(lo, hi, 1)
		if err != nil {
			return err
		}
		ref.add(addP, k, 1)
		if want := ref.over(k, w.ctl.first(p), p); est < want {
			return fmt.Errorf("period %d: Add(%q) = %d, want >= %d", p, k, est, want)
		}
		if i%50 == 0 {
			est, p := w.estimate(lo, hi)
			if want := ref.over(k, w.ctl.first(p), p); est < want {
				return fmt.Errorf("period %d: Estimate(%q) = %d, want >= %d", p, k, est, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for p, keys := range ref {
		for k, n := range keys {
			fmt.Printf("ref %d %s %d\n", p, k, n)
		}
	}
	return nil
}

// readRefs sums the children's "ref" lines.
func readRefs(t *testing.T, hs []*helper) winRef {
	t.Helper()
	ref := winRef{}
	for _, h := range hs {
		sc := bufio.NewScanner(bytes.NewReader(h.stdout.Bytes()))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "ref" {
				continue
			}
			p, err1 := strconv.ParseUint(f[1], 10, 64)
			n, err2 := strconv.ParseUint(f[3], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s printed %q", h.name, sc.Text())
			}
			ref.add(p, f[2], n)
		}
	}
	return ref
}

// winSample is what a window's file shows at one moment: each slot's word
// and what it counted (its first row's sum: a slot keeps no add count).
type winSample struct {
	epoch uint64
	words []uint64
	adds  []uint64
}

func sampleWindow(w *CountMinWindow) winSample {
	s := winSample{epoch: w.ctl.epoch()}
	sums := make([]uint64, w.slots[0].rows)
	for i := range w.slots {
		s.words = append(s.words, atomic.LoadUint64(w.ctl.word(uint64(i))))
		// The handle's core: C in cgo builds, which the race detector
		// does not slow down (the sampler must finish inside a period).
		w.core.rowSums(&w.slots[i], sums)
		s.adds = append(s.adds, sums[0])
	}
	return s
}

// grew reports whether any slot grew from sample a to b.
func grew(a, b winSample) bool {
	for i := range a.adds {
		if b.adds[i] > a.adds[i] {
			return true
		}
	}
	return false
}

// checkOneSlotGrew fails unless, between samples a and b taken inside
// period p, p's slot held p throughout and grew, and no other slot grew
// but the previous period's: an add that read its period before the turn
// may still land there.
func checkOneSlotGrew(t *testing.T, p uint64, a, b winSample) {
	t.Helper()
	n := uint64(len(a.words))
	s := p % n
	if a.words[s] != heldWord(p) || b.words[s] != heldWord(p) {
		t.Errorf("period %d: its slot %d held words %#x then %#x, want %#x", p, s, a.words[s], b.words[s], heldWord(p))
	}
	if b.adds[s] <= a.adds[s] {
		t.Errorf("period %d: its slot %d did not grow (%d then %d adds)", p, s, a.adds[s], b.adds[s])
	}
	for i := range a.adds {
		if uint64(i) != s && uint64(i) != (p+n-1)%n && b.adds[i] > a.adds[i] {
			t.Errorf("period %d: slot %d (word %#x) grew from %d to %d adds while slot %d serves", p, i, b.words[i], a.adds[i], b.adds[i], s)
		}
	}
}

// sampleClockPeriods samples the file of the clock-turned window c twice
// inside each period of the clock, once the period is published and its
// slot holds it, and checks with checkOneSlotGrew each period in which
// the adders added between the samples. It returns how many periods it
// checked: want, unless an adder stopped or winSampling ran out first. A
// period in which this sampler ran late, or nobody added, gives no
// verdict: on a loaded machine either happens.
func sampleClockPeriods(t *testing.T, c *windowCtl, hs []*helper, want int, sample func() winSample) int {
	t.Helper()
	period := c.period
	deadline := time.Now().Add(winSampling)
	checked := 0
	for checked < want && !anyDone(hs) && time.Now().Before(deadline) {
		p := time.Now().UnixNano()/period + 1 // the next whole period
		end := p*period + period*85/100
		sleepUntil(p*period + period*4/10)
		// Until some adder published p and prepared its slot, a late
		// timer's adds still go to the period before.
		for !c.held(uint64(p)%c.n, uint64(p)) || atomic.LoadUint64(c.latestWord()) < uint64(p) {
			if time.Now().UnixNano() >= end {
				break
			}
			time.Sleep(time.Millisecond)
		}
		a := sample()
		sleepUntil(end)
		b := sample()
		if time.Now().UnixNano() >= (p+1)*period || !grew(a, b) {
			continue
		}
		checkOneSlotGrew(t, uint64(p), a, b)
		checked++
	}
	return checked
}

// sampleRotatedPeriods turns the Rotate-only window c with rotate, samples
// its file twice between turns, and checks with checkOneSlotGrew each
// period in which the adders added between the samples. It returns how
// many periods it checked, as sampleClockPeriods.
func sampleRotatedPeriods(t *testing.T, c *windowCtl, hs []*helper, want int, rotate func() error, sample func() winSample) int {
	t.Helper()
	deadline := time.Now().Add(winSampling)
	checked := 0
	for checked < want && !anyDone(hs) && time.Now().Before(deadline) {
		if err := rotate(); err != nil {
			t.Fatal(err)
		}
		p := c.epoch()
		time.Sleep(15 * time.Millisecond)
		a := sample()
		time.Sleep(45 * time.Millisecond)
		b := sample()
		if a.epoch != p || b.epoch != p {
			t.Fatalf("epoch moved from %d to %d/%d without a Rotate", p, a.epoch, b.epoch)
		}
		if !grew(a, b) {
			continue
		}
		checkOneSlotGrew(t, p, a, b)
		checked++
	}
	return checked
}

// checkWindowTruth checks, for every child key, that the estimate over
// the window it covers is at least the children's count over those
// periods, and that nearly all are exact.
func checkWindowTruth(t *testing.T, w *CountMinWindow, ref winRef, children int) {
	t.Helper()
	exact, keys := 0, 0
	for c := range children {
		for j := range 20 {
			k := fmt.Sprintf("c%d-%d", c, j)
			lo, hi := hashString(k, w.slots[0].seed)
			est, p := w.estimate(lo, hi)
			want := ref.over(k, w.ctl.first(p), p)
			if est < want {
				t.Errorf("Estimate(%q) over periods %d..%d = %d, want >= %d", k, w.ctl.first(p), p, est, want)
			}
			if est == want {
				exact++
			}
			keys++
		}
	}
	if exact*100 < keys*95 {
		t.Errorf("only %d of %d keys estimated exactly", exact, keys)
	}
}

// winAdders starts children adders, alternating backends where both
// build; they add until stopAdders(t, stopPath).
func winAdders(t *testing.T, path, stopPath string, w Window, children int) []*helper {
	t.Helper()
	other := otherBackendExe(t)
	var specs []childSpec
	for i := range children {
		exe := ""
		if i%2 == 1 {
			exe = other
		}
		specs = append(specs, childSpec{exe: exe, name: fmt.Sprintf("adder %d", i), role: "winadd", env: winAdderEnv(path, stopPath, i, w)})
	}
	return startGroup(t, childContext(t), specs)
}

func anyDone(hs []*helper) bool {
	for _, h := range hs {
		select {
		case <-h.done:
			return true
		default:
		}
	}
	return false
}

// sleepUntil sleeps until the clock reads unix nanoseconds at.
func sleepUntil(at int64) { time.Sleep(time.Duration(at - time.Now().UnixNano())) }

// TestCountMinWindow_ClockProcesses: four processes, of both backends, add
// through 100 ms periods of the clock until six periods were checked.
// Inside every period the file shows one slot growing, the period's own;
// no estimate any child makes is below its own count over the periods it
// covers; and the children's counts, summed, are the truth the final
// estimates meet.
func TestCountMinWindow_ClockProcesses(t *testing.T) {
	requireReexec(t)
	win := Window{Period: 100 * time.Millisecond, Keep: 2}
	path := tempPath(t, "win")
	ro := mustOpenWindow(t, path, win, winCfg) // creates it before the children race
	const children, want = 4, 6
	stopPath := path + ".stop"
	hs := winAdders(t, path, stopPath, win, children)
	checked := sampleClockPeriods(t, &ro.ctl, hs, want, func() winSample { return sampleWindow(ro) })
	stopAdders(t, stopPath)
	for _, h := range hs {
		h.wait(t)
	}
	if checked < want {
		t.Errorf("checked %d periods in %v, want %d", checked, winSampling, want)
	}
	checkWindowTruth(t, ro, readRefs(t, hs), children)
	t.Logf("checked %d periods; stats %+v", checked, ro.Stats())
}

// TestCountMinWindow_RotateProcesses: four processes, of both backends,
// add while this process turns a Rotate-only window about every 60 ms,
// until eight periods were checked. Between two turns the file shows one
// slot growing, the new period's, and the estimates meet the children's
// counts as above.
func TestCountMinWindow_RotateProcesses(t *testing.T) {
	requireReexec(t)
	win := Window{Keep: 3}
	path := tempPath(t, "win")
	w := mustOpenWindow(t, path, win, winCfg)
	const children, want = 4, 8
	stopPath := path + ".stop"
	hs := winAdders(t, path, stopPath, win, children)
	checked := sampleRotatedPeriods(t, &w.ctl, hs, want, w.Rotate, func() winSample { return sampleWindow(w) })
	stopAdders(t, stopPath)
	for _, h := range hs {
		h.wait(t)
	}
	if checked < want {
		t.Errorf("checked %d periods in %v, want %d", checked, winSampling, want)
	}
	checkWindowTruth(t, w, readRefs(t, hs), children)
}

// childWinClear opens the Rotate-only window at envPath, stops inside the
// first clear it wins (saying "clearing SLOT PERIOD"), and waits there to
// be killed.
func childWinClear() error {
	w, err := OpenCountMinWindow(Path(os.Getenv(envPath)), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: winCfg})
	if err != nil {
		return err
	}
	testHookWindowClear = func(s, p uint64) {
		fmt.Printf("clearing %d %d\n", s, p)
		time.Sleep(time.Hour) // (select{} would be a deadlock to the runtime)
	}
	return w.Rotate()
}

// TestCountMinWindow_KillClearer: a process killed with SIGKILL inside the
// clear of a slot is finished by the next process that needs the slot,
// whether it was already waiting or came after: the slot ends up holding
// the new period, and what the slot held before is gone.
func TestCountMinWindow_KillClearer(t *testing.T) {
	requireReexec(t)
	other := otherBackendExe(t)
	for _, tc := range []struct {
		name   string
		exe    string
		parked bool
	}{
		{"parked", "", true},
		{"after/other backend", other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "win")
			w := mustOpenWindow(t, path, Window{Keep: 2}, winCfg)
			w.AddN([]byte("old"), 5) // period 0, slot 0
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
			w.AddN([]byte("old"), 7) // period 1, slot 1
			// The child's Rotate turns to period 2 and clears slot 0 ahead
			// for period 3; it stops inside that clear.
			exe := tc.exe
			if exe == "" {
				exe = selfExe(t)
			}
			child := startLockChildCmd(t, childContext(t), "clearer", "winclear", path, nil,
				[]string{exe, "-test.run=^TestHelperProcess$"})
			child.expect(t, "clearing 0 3")
			if got := decodeSlotWord(atomic.LoadUint64(w.ctl.word(0))); !got.clearing || got.period != 3 || got.id == w.ctl.me {
				t.Fatalf("slot 0 is %+v, want cleared for period 3 by the child", got)
			}
			// Period 3's turn needs slot 0.
			var done <-chan struct{}
			var rotErr error
			if tc.parked {
				done = mustBlock(t, func() { rotErr = w.Rotate() }, 50*time.Millisecond)
			}
			killed := time.Now()
			child.cmd.Process.Signal(syscall.SIGKILL)
			<-child.done
			if !tc.parked {
				ch := make(chan struct{})
				go func() { rotErr = w.Rotate(); close(ch) }()
				done = ch
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Rotate did not finish within 10s of the clearer's death")
			}
			if rotErr != nil {
				t.Fatal(rotErr)
			}
			t.Logf("finished %v after the SIGKILL", time.Since(killed))
			if p := w.Current(); p != 3 {
				t.Fatalf("Current() = %d, want 3", p)
			}
			if got := atomic.LoadUint64(w.ctl.word(0)); got != heldWord(3) {
				t.Errorf("slot 0 word %#x, want held(3)", got)
			}
			if got := w.EstimateString("old"); got != 0 {
				t.Errorf("Estimate(old) = %d in periods 2..3, want 0: the slot of period 0 was not cleared", got)
			}
			if est, err := w.AddString("new"); est != 1 || err != nil {
				t.Errorf("Add(new) = %d, %v; want 1", est, err)
			}
			if st := w.Stats(); st.Slots[0].Total != 1 {
				t.Errorf("slot 0 totals %+v, want the one new add", st.Slots[0])
			}
		})
	}
}
