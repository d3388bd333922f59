//go:build linux

package sketch

// Bloom windows shared by real processes of both backends: periods turned
// by the clock and by Rotate from another process while everyone adds,
// and a clearer killed inside its clear.

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// bwinProcCfg holds every key the children add in a period with room to
// spare.
var bwinProcCfg = BloomConfig{Capacity: 50_000, FPRate: 0.01, Seed: 0xb1b1}

func bwinProcKey(child string, i int) []byte { return []byte(fmt.Sprintf("c%s-%d", child, i)) }

// childBloomWinAdd adds its own keys, c<child>-0, -1, …, until told to stop:
// mostly one by one, every 50th step a batch of 16. After each add it
// checks the key, and every 50 adds 20 random keys of its own: a key
// whose period is in the window the check covers must be found. Then it
// prints which period each run of keys went to, as "ref PERIOD FIRST
// LAST" lines. A batch is recorded under the period current before it,
// no later than the one it went to: a window that covers that one covers
// the batch's.
func childBloomWinAdd() error {
	w, err := OpenBloomWindow(Path(os.Getenv(envPath)), BloomWindowConfig{Window: envWindow(), Bloom: bwinProcCfg})
	if err != nil {
		return err
	}
	defer w.Close()
	if err := childBarrier(); err != nil {
		return err
	}
	me := os.Getenv(envChild)
	r := rand.New(rand.NewPCG(uint64(envInt(envChild)), 1))
	var period []uint64 // key i went to period[i] (or later)
	mustFind := func(i int) error {
		lo, hi := hashKey(bwinProcKey(me, i), w.slots[0].seed)
		found, p := w.lookup(lo, hi)
		if q := period[i]; !found && q >= w.ctl.first(p) && q <= p {
			return fmt.Errorf("%s: Check(%q) = false at period %d; it was added in period %d", Backend, bwinProcKey(me, i), p, q)
		}
		return nil
	}
	batch := make([][]byte, 16)
	stop := newWinStop()
	for step := 0; !stop.now(step); step++ {
		if step%50 == 49 {
			before := w.Current()
			for j := range batch {
				batch[j] = bwinProcKey(me, len(period))
				period = append(period, before)
			}
			if err := w.AddBatch(batch, nil); err != nil {
				return err
			}
			for i := len(period) - len(batch); i < len(period); i++ {
				if err := mustFind(i); err != nil {
					return err
				}
			}
			for range 20 {
				if err := mustFind(r.IntN(len(period))); err != nil {
					return err
				}
			}
			time.Sleep(time.Millisecond)
			continue
		}
		lo, hi := hashKey(bwinProcKey(me, len(period)), w.slots[0].seed)
		_, addP, err := w.add(lo, hi)
		if err != nil {
			return err
		}
		period = append(period, addP)
		if err := mustFind(len(period) - 1); err != nil {
			return err
		}
	}
	for i := 0; i < len(period); {
		j := i
		for j+1 < len(period) && period[j+1] == period[i] {
			j++
		}
		fmt.Printf("ref %d %d %d\n", period[i], i, j)
		i = j + 1
	}
	return nil
}

// bwinRefs is what the children printed: per period, the keys added in
// it.
type bwinRefs map[uint64][]string

func readBwinRefs(t *testing.T, hs []*helper) (bwinRefs, int) {
	t.Helper()
	refs, n := bwinRefs{}, 0
	for c, h := range hs {
		sc := bufio.NewScanner(bytes.NewReader(h.stdout.Bytes()))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 4 || f[0] != "ref" {
				continue
			}
			p, err1 := strconv.ParseUint(f[1], 10, 64)
			first, err2 := strconv.Atoi(f[2])
			last, err3 := strconv.Atoi(f[3])
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("%s printed %q", h.name, sc.Text())
			}
			for i := first; i <= last; i++ {
				refs[p] = append(refs[p], string(bwinProcKey(strconv.Itoa(c), i)))
				n++
			}
		}
	}
	return refs, n
}

// checkBwinTruth checks that every key the children added in a period of
// the window w covers now is found, and returns how many it checked.
func checkBwinTruth(t *testing.T, w *BloomWindow, refs bwinRefs) int {
	t.Helper()
	checked := 0
	for q, keys := range refs {
		for _, k := range keys {
			lo, hi := hashString(k, w.slots[0].seed)
			found, p := w.lookup(lo, hi)
			if q < w.ctl.first(p) || q > p {
				continue
			}
			checked++
			if !found {
				t.Errorf("Check(%q) = false at period %d; a child added it in period %d", k, p, q)
			}
		}
	}
	return checked
}

func sampleBloomWindow(w *BloomWindow) winSample {
	s := winSample{epoch: w.ctl.epoch()}
	for i := range w.slots {
		s.words = append(s.words, atomic.LoadUint64(w.ctl.word(uint64(i))))
		added, seen := w.slots[i].counts()
		s.adds = append(s.adds, added+seen)
	}
	return s
}

// bwinAdders starts children adders, alternating backends where both
// build; they add until stopAdders(t, stopPath).
func bwinAdders(t *testing.T, path, stopPath string, w Window, children int) []*helper {
	t.Helper()
	other := otherBackendExe(t)
	var specs []childSpec
	for i := range children {
		exe := ""
		if i%2 == 1 {
			exe = other
		}
		specs = append(specs, childSpec{exe: exe, name: fmt.Sprintf("adder %d", i), role: "bwinadd", env: winAdderEnv(path, stopPath, i, w)})
	}
	return startGroup(t, childContext(t), specs)
}

// TestBloomWindow_ClockProcesses: four processes, of both backends, add
// through 100 ms periods of the clock until six periods were checked.
// Inside every period the file shows one slot growing, the period's own;
// no child ever misses a key of its own whose period its check covers;
// and the keys of the periods the window still covers once the children
// are done (usually the last few) are all found here.
func TestBloomWindow_ClockProcesses(t *testing.T) {
	requireReexec(t)
	win := Window{Period: 100 * time.Millisecond, Keep: 4}
	path := tempPath(t, "bwin")
	w := mustOpenBloomWindow(t, path, win, bwinProcCfg) // creates it before the children race
	const children, want = 4, 6
	stopPath := path + ".stop"
	hs := bwinAdders(t, path, stopPath, win, children)
	sampled := sampleClockPeriods(t, &w.ctl, hs, want, func() winSample { return sampleBloomWindow(w) })
	stopAdders(t, stopPath)
	for _, h := range hs {
		h.wait(t)
	}
	if sampled < want {
		t.Errorf("sampled %d periods in %v, want %d", sampled, winSampling, want)
	}
	refs, n := readBwinRefs(t, hs)
	checked := checkBwinTruth(t, w, refs)
	t.Logf("sampled %d periods; %d keys added in %d periods, %d of them in the window at the end; stats %+v", sampled, n, len(refs), checked, w.Stats())
}

// TestBloomWindow_RotateProcesses: four processes, of both backends, add
// while this process turns a Rotate-only window about every 60 ms, until
// eight periods were checked. Between two turns the file shows one slot
// growing, the new period's; no child misses a key of its own in the
// window; and every key of the last three periods is found here.
func TestBloomWindow_RotateProcesses(t *testing.T) {
	requireReexec(t)
	win := Window{Keep: 3}
	path := tempPath(t, "bwin")
	w := mustOpenBloomWindow(t, path, win, bwinProcCfg)
	const children, periods = 4, 8
	stopPath := path + ".stop"
	hs := bwinAdders(t, path, stopPath, win, children)
	sampled := sampleRotatedPeriods(t, &w.ctl, hs, periods, w.Rotate, func() winSample { return sampleBloomWindow(w) })
	stopAdders(t, stopPath)
	for _, h := range hs {
		h.wait(t)
	}
	if sampled < periods {
		t.Errorf("sampled %d periods in %v, want %d", sampled, winSampling, periods)
	}
	refs, n := readBwinRefs(t, hs)
	p := w.Current()
	want := 0
	for q := w.ctl.first(p); q <= p; q++ {
		want += len(refs[q])
	}
	if checked := checkBwinTruth(t, w, refs); checked != want || checked == 0 {
		t.Errorf("checked %d keys of periods %d..%d, want all %d (and some)", checked, w.ctl.first(p), p, want)
	}
	t.Logf("sampled %d periods; %d keys added, %d in the window at the end", sampled, n, want)
}

// childBloomWinClear opens the Rotate-only window at envPath, stops
// inside the first clear it wins (saying "clearing SLOT PERIOD"), and
// waits there to be killed.
func childBloomWinClear() error {
	w, err := OpenBloomWindow(Path(os.Getenv(envPath)), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: bwinProcCfg})
	if err != nil {
		return err
	}
	testHookWindowClear = func(s, p uint64) {
		fmt.Printf("clearing %d %d\n", s, p)
		time.Sleep(time.Hour) // (select{} would be a deadlock to the runtime)
	}
	return w.Rotate()
}

// TestBloomWindow_KillClearer: a process killed with SIGKILL inside the
// clear of a slot is finished by the next process that needs the slot,
// whether it was already waiting or came after: the slot ends up holding
// the new period, empty of what it held before.
func TestBloomWindow_KillClearer(t *testing.T) {
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
			path := tempPath(t, "bwin")
			w := mustOpenBloomWindow(t, path, Window{Keep: 2}, bwinProcCfg)
			w.AddString("old") // period 0, slot 0
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
			w.AddString("old-1") // period 1, slot 1
			// The child's Rotate turns to period 2 and clears slot 0 ahead
			// for period 3; it stops inside that clear.
			exe := tc.exe
			if exe == "" {
				exe = selfExe(t)
			}
			child := startLockChildCmd(t, childContext(t), "clearer", "bwinclear", path, nil,
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
			if st := w.Stats().Slots[0]; st.Set != 0 || st.Added != 0 {
				t.Errorf("slot 0 of period 3 before any add: %+v, want it empty", st)
			}
			if w.ContainsString("old") || w.ContainsString("old-1") {
				t.Error("Check finds keys of periods 0 and 1 in periods 2..3")
			}
			if already, err := w.AddString("new"); already || err != nil {
				t.Errorf("Add(new) = %v, %v; want new", already, err)
			}
			if st := w.Stats().Slots[0]; st.Added != 1 || st.Seen != 0 || st.Set == 0 {
				t.Errorf("slot 0 counts %+v, want the one new add", st)
			}
		})
	}
}
