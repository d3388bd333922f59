//go:build linux

package sketch

// Distinct windows shared by real processes of both backends, killed with
// SIGKILL while they add, and damaged files.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// envDWStep is what a dwinstep child does to the window: "add" or
// "rotate".
const envDWStep = "SKETCH_TEST_DW_STEP"

// dwProcCfg is the processes' window: Redis's profile, turned by Rotate.
var dwProcCfg = DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Redis: true}}

var _ = role("dwinadd", childDistinctWinAdd)

// childDistinctWinAdd opens the window, waits at the barrier and adds its
// range to the current period.
func childDistinctWinAdd() error {
	w, err := OpenDistinctWindow(Path(os.Getenv(envPath)), dwProcCfg)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := childBarrier(); err != nil {
		return err
	}
	return distinctAddKeys(w, envInt(envDistinctFirst), envInt(envDistinctCount))
}

var _ = role("dwinkeys", childDistinctWinKeys)

// childDistinctWinKeys is the window suite's adder of the distinct window
// (as childBloomWinAdd is the Bloom window's): it adds its own keys,
// c<child>-0, -1, …, until told to stop, each under the period current
// before it (no later than the one it went to), and checks after each add
// that the window finds it (its register: the suite's countAt). Then it
// prints which period each run of keys went to, as "ref PERIOD FIRST
// LAST" lines.
func childDistinctWinKeys() error {
	return inChildWindow(distinctWindowKind, func(tw testWindow, me string) error {
		ctl := &tw.base().ctl
		var period []uint64
		stop := newWinStop()
		for step := 0; !stop.now(step); step++ {
			key := bwinProcKey(me, len(period))
			q := tw.Current()
			if err := tw.(distinctWindow).Add(key); err != nil {
				return err
			}
			period = append(period, q)
			if found, p := tw.countAt(key); found == 0 && q >= ctl.first(p) && q <= p {
				return fmt.Errorf("%s: %q not found at period %d; it was added in period %d", Backend, key, p, q)
			}
		}
		printRefs(period)
		return nil
	})
}

// TestDistinctWindow_KilledAdders: in period 0, four adders of both
// backends are killed with SIGKILL at random moments, and four more then
// add the same ranges to the file as it was left; after a Rotate, four
// add other ranges in period 1. Each period's slot holds, register for
// register, what one process adding that period's keys makes, the
// window counts their union, and the file checks clean: nothing to
// repair.
func TestDistinctWindow_KilledAdders(t *testing.T) {
	requireReexec(t)
	path := filepath.Join(t.TempDir(), "dw")
	w := mustIn(t, OpenDistinctWindow, Path(path), dwProcCfg)
	const per = 40_000
	env := func(base int) func(i int) []string {
		return func(i int) []string {
			return envs(envPath, path, envDistinctFirst, base+i*per/2, envDistinctCount, per)
		}
	}
	exe := bothBackends(t)
	specs := make([]childSpec, 4)
	for i := range specs {
		specs[i] = childSpec{exe: exe(i), name: fmt.Sprintf("killed adder %d", i), role: "dwinadd", env: env(0)(i)}
	}
	hs := startGroup(t, childContext(t), specs)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for _, h := range hs {
		time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		h.cmd.Process.Kill()
	}
	for _, h := range hs {
		<-h.done
	}
	runAdders(t, 4, "dwinadd", env(0))
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	runAdders(t, 4, "dwinadd", env(per))
	if err := w.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
	model := func(first, n int) *Distinct {
		d := mustDistinct(t, dwProcCfg.Distinct)
		addRange(t, d, first, n)
		return d
	}
	p0, p1, union := model(0, 5*per/2), model(per, 5*per/2), model(0, 7*per/2)
	for s, want := range map[int]*Distinct{0: p0, 1: p1} {
		if !bytes.Equal(slotRegisters(w, s), registersOf(want)) {
			t.Errorf("period %d's slot differs from one process adding its keys", s)
		}
	}
	if got, want := w.Count(), union.Count(); got != want {
		t.Errorf("Count() = %d, one process's count of the union %d", got, want)
	}
	snap, err := w.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(registersOf(snap), registersOf(union)) {
		t.Error("the snapshot's registers are not the union's")
	}
	exp, err := w.ExportRedis()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := union.ExportRedis(); !bytes.Equal(exp, want) {
		t.Error("the window's Redis export is not the union's")
	}
}

// TestDistinctWindow_CorruptEntry: a period's count's parameters that do
// not fit the region are ErrCorrupt at open (the window's own, its keep,
// period and spare words, are the window suite's: TestWindows_Corrupt).
func TestDistinctWindow_CorruptEntry(t *testing.T) {
	for i, c := range []struct {
		param int
		value uint64
	}{{0, 19}, {0, 3}, {1, 3}, {1, 1}} {
		src := filepath.Join(t.TempDir(), fmt.Sprint("dw", i))
		w := mustIn(t, OpenDistinctWindow, Path(src), dwCfg(10, 2))
		w.Close()
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		paramSet(c.param, c.value)(data)
		path := src + ".bad"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenDistinctWindow(Path(path), DistinctWindowConfig{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("parameter %d set to %d: open = %v, want ErrCorrupt", c.param, c.value, err)
		}
	}
}

// TestDistinctWindow_CacheOtherProcess: a handle's cached Count
// follows what another process did since (adds, then a turn, then adds
// again): after each step it equals the Count of a handle opened afresh.
func TestDistinctWindow_CacheOtherProcess(t *testing.T) {
	requireReexec(t)
	path := filepath.Join(t.TempDir(), "dw")
	w := mustIn(t, OpenDistinctWindow, Path(path), dwCfg(10, 2))
	addRange(t, w, 0, 100)
	for _, step := range []string{"add", "rotate", "add", "rotate", "rotate", "add"} {
		before := w.Count() // cached from here
		h := startHelper(t, childContext(t), "", step+" child", "dwinstep", envs(envDWStep, step, envPath, path))
		h.wait(t)
		if t.Failed() {
			t.FailNow()
		}
		fresh := mustIn(t, OpenDistinctWindow, Path(path), DistinctWindowConfig{}, WithReadOnly())
		want, wantP := fresh.CountCovered()
		fresh.Close()
		if got, p := w.CountCovered(); got != want || p != wantP {
			t.Fatalf("after another process's %s: CountCovered() = %d, %+v (was %d); a fresh handle: %d, %+v", step, got, p, before, want, wantP)
		}
		if got := w.Count(); step == "add" && got <= before {
			t.Fatalf("after another process added 300 new keys, Count() = %d, was %d", got, before)
		}
	}
}

var _ = role("dwinstep", childDistinctWinStep)

// childDistinctWinStep adds 300 new keys to the window, or turns it
// (envDWStep).
func childDistinctWinStep() error {
	w, err := OpenDistinctWindow(Path(os.Getenv(envPath)), DistinctWindowConfig{})
	if err != nil {
		return err
	}
	defer w.Close()
	if os.Getenv(envDWStep) == "rotate" {
		return w.Rotate()
	}
	return distinctAddKeys(w, 1000+int(w.Current())*300, 300)
}
