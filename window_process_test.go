//go:build linux

package sketch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The window add counts' process tests: children of both backends adding
// while this process turns the window, and clearers killed with SIGKILL
// before and after their fold. The children run the roles below, with the
// window's kind in envWinAddsKind.

const (
	envWinAddsKind  = "SKETCH_TEST_WINADDS_KIND" // the window's kind's name
	winAddsPerChild = 20000
)

func winAddsKind(name string) (*windowKind, error) {
	for _, k := range windowKinds {
		if k.name == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no window kind %q", name)
}

// openWinAdds opens the window of kind envWinAddsKind at envPath.
func openWinAdds() (*windowKind, testWindow, error) {
	k, err := winAddsKind(os.Getenv(envWinAddsKind))
	if err != nil {
		return nil, nil, err
	}
	w, err := k.open(Path(os.Getenv(envPath)), Window{Keep: 3}, procCfgs)
	return k, w, err
}

var _ = role("addcounted", childAddCounted)

// childAddCounted adds its own keys, n of 1 to 3 each (a filter's add
// counts one), and says how many it counted and how many of its adds met
// a turn of the period: those may have landed in a slot being cleared,
// and be lost to the window and its count.
func childAddCounted() error {
	k, w, err := openWinAdds()
	if err != nil {
		return err
	}
	// It adds winAddsPerChild keys at least, and goes on until it has seen
	// three turns, so that the parent turns the window while it adds
	// however the two are scheduled.
	var total, turned uint64
	first := w.Current()
	for i := 0; i < winAddsPerChild || w.Current()-first < 3; i++ {
		n := uint64(1 + i%3)
		p := w.Current()
		if _, err := w.addN(fmt.Appendf(nil, "c%d-%d", os.Getpid(), i), n); err != nil {
			return err
		}
		total += k.counts(n)
		if w.Current() != p {
			turned++
		}
	}
	fmt.Printf("added %d %d\n", total, turned)
	return nil
}

var (
	_ = role("clearstop", func() error { return childStopInClear("clearstop", &testHookWindowClear) })
	_ = role("foldstop", func() error { return childStopInClear("foldstop", &testHookWindowFolded) })
)

// childStopInClear turns the window and stops inside the first clear it
// wins, where hook is called: before its fold (testHookWindowClear) or
// after the fold committed (testHookWindowFolded). It says "role slot
// period" and waits to be killed.
func childStopInClear(role string, hook *func(s, p uint64)) error {
	_, w, err := openWinAdds()
	if err != nil {
		return err
	}
	*hook = func(s, p uint64) {
		fmt.Printf("%s %d %d\n", role, s, p)
		time.Sleep(time.Hour)
	}
	return w.Rotate()
}

// startWinAddsChild starts exe (this test binary when "") in role on the
// window of kind k at path.
func startWinAddsChild(t *testing.T, exe, role string, k *windowKind, path string) *lockChild {
	t.Helper()
	if exe == "" {
		exe = selfExe(t)
	}
	return startLockChildCmd(t, childContext(t), role+" child", role, path,
		[]string{envWinAddsKind + "=" + k.name},
		[]string{exe, "-test.run=^TestHelperProcess$"})
}

// TestWindows_AddsProcesses: two processes, one of each backend, add while
// this process turns the window each time its Adds grew. Adds never
// drops between two reads by more than the adds that met a turn (those
// that may have landed in a slot being cleared), and at the end it is the
// children's adds, less at most those.
func TestWindows_AddsProcesses(t *testing.T) {
	requireReexec(t)
	exes := []string{selfExe(t), otherBackendExe(t)}
	forEachKind(t, func(t *testing.T, k *windowKind) {
		path := tempPath(t, "win")
		w := mustOpenKind(t, k, Path(path), Window{Keep: 3}, procCfgs)
		var hs []*lockChild
		for _, exe := range exes {
			hs = append(hs, startWinAddsChild(t, exe, "addcounted", k, path))
		}
		running := func() bool {
			for _, h := range hs {
				select {
				case <-h.done:
				default:
					return true
				}
			}
			return false
		}
		var last, drop, turns uint64
		deadline := time.Now().Add(childTimeout)
		for running() {
			if time.Now().After(deadline) {
				t.Fatal("the children did not finish")
			}
			got := countsOf(t, w.handle()).adds
			if got < last {
				drop = max(drop, last-got)
			}
			if got > last {
				last = got
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				turns++
			} else {
				time.Sleep(100 * time.Microsecond)
			}
		}
		var truth, turned uint64
		for _, h := range hs {
			line, err := h.out.ReadString('\n')
			f := strings.Fields(line)
			if err != nil || len(f) != 3 || f[0] != "added" {
				t.Fatalf("%s said %q (%v), want added N M; stderr:\n%s", h.name, line, err, h.stderr.String())
			}
			n, _ := strconv.ParseUint(f[1], 10, 64)
			m, _ := strconv.ParseUint(f[2], 10, 64)
			truth, turned = truth+n, turned+m
		}
		got := countsOf(t, w.handle())
		t.Logf("%d turns; Adds %d of %d, %d adds met a turn, largest drop %d", turns, got.adds, truth, turned, drop)
		if got.adds > truth || got.adds+turned < truth && !k.raisesOnly {
			t.Errorf("Adds = %d, want %d less at most the %d adds that met a turn", got.adds, truth, turned)
		}
		if drop > turned {
			t.Errorf("Adds dropped by %d between two reads, more than the %d adds that met a turn", drop, turned)
		}
		if got.turns != turns {
			t.Errorf("Turns = %d, want the %d Rotate calls", got.turns, turns)
		}
		if turns < 3 {
			t.Errorf("only %d turns while the children added", turns)
		}
	})
}

// TestWindows_AddsKillClearer: a clearer killed with SIGKILL before its
// fold, or after the fold committed and before the clear, leaves Adds
// exact while the slot waits, and the process that finishes the clear
// neither loses nor counts twice what the slot held.
func TestWindows_AddsKillClearer(t *testing.T) {
	requireReexec(t)
	other := otherBackendExe(t)
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, tc := range []struct{ role, exe string }{
			{role: "clearstop", exe: selfExe(t)}, {role: "foldstop", exe: selfExe(t)},
			{role: "clearstop", exe: other}, {role: "foldstop", exe: other},
		} {
			name := tc.role
			if tc.exe == other {
				name += "/other backend"
			}
			t.Run(name, func(t *testing.T) {
				path := tempPath(t, "win")
				w := mustOpenKind(t, k, Path(path), Window{Keep: 3}, procCfgs)
				ctl := &w.base().ctl
				// Periods 0 to 2, slots 0 to 2; Rotate clears ahead slot 3.
				var want uint64
				for p := range 3 {
					for i := range 4 + p {
						w.addN(fmt.Appendf(nil, "p%d-%d", p, i), 5)
						want += k.counts(5)
					}
					if p < 2 {
						if err := w.Rotate(); err != nil {
							t.Fatal(err)
						}
					}
				}
				// The child's Rotate turns to period 3 and clears slot 0
				// ahead for period 4; it stops there.
				child := startWinAddsChild(t, tc.exe, tc.role, k, path)
				child.expect(t, tc.role+" 0 4")
				if got := decodeSlotWord(atomic.LoadUint64(ctl.word(0))); !got.clearing || got.period != 4 || got.id == ctl.me {
					t.Fatalf("slot 0 is %+v, want cleared for period 4 by the child", got)
				}
				if got := countsOf(t, w.handle()).adds; got != want {
					t.Errorf("Adds = %d while the child clears, want %d", got, want)
				}
				child.cmd.Process.Signal(syscall.SIGKILL)
				<-child.done
				if got := countsOf(t, w.handle()).adds; got != want {
					t.Errorf("Adds = %d after the SIGKILL, want %d", got, want)
				}
				// Period 4's turn takes the slot over.
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				if got := atomic.LoadUint64(ctl.word(0)); got != heldWord(4) {
					t.Fatalf("slot 0 word %#x, want held(4)", got)
				}
				w.addN([]byte("new"), 1)
				want++
				if got := countsOf(t, w.handle()); got.adds != want || got.turns != 4 {
					t.Errorf("Adds, Turns = %d, %d after the takeover and one add, want %d, 4", got.adds, got.turns, want)
				}
			})
		}
	})
}
