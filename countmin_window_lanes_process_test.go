//go:build linux

package sketch

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Lanes of a Count-Min window in processes of both builds, as
// countmin_lanes_process_test.go's of a sketch: each process claims a
// lane of its own for the window, the sum of the lanes is one grid's,
// and a lane whose writer was killed is taken over, its counts kept.

var _ = role("countmin-window-lanes", childCountMinWindowLanes)

// childCountMinWindowLanes is childCountMinLanes on a window, attached
// with the zero config.
func childCountMinWindowLanes() error {
	w, err := OpenCountMinWindow(Path(os.Getenv(envPath)), CountMinWindowConfig{})
	if err != nil {
		return err
	}
	defer w.Close()
	st := w.Stats()
	return laneChild(w, st.Lane, st.LaneOwned)
}

// windowLanesCfg is a window of Rotate only, so that every add of a test
// lands in period 0: its estimates are one grid's of lanesCfg's shape.
func windowLanesCfg(lanes int) CountMinWindowConfig {
	cfg := lanesCfg
	cfg.Lanes = lanes
	return CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: cfg}
}

// TestCountMinWindowLanes_ProcessesBothBuilds: four processes, of both
// builds when the other can be built, add to a window of four lanes at
// once, each in a lane of its own, by blind batches and single adds;
// every estimate is then exactly one grid's fed the four streams.
func TestCountMinWindowLanes_ProcessesBothBuilds(t *testing.T) {
	requireReexec(t)
	exes := alternatingBuilds(t, 4)
	dir := t.TempDir()
	path := filepath.Join(dir, "win")
	mustWindowAt(t, path, windowLanesCfg(4)).Close() // created, no lane held
	view := mustWindowAt(t, path, CountMinWindowConfig{}, WithReadOnly())
	one := mustCountMin(t, Memory(), lanesCfg)
	const ops = 30000
	wantOwnLanes(t, runLaneChildren(t, "countmin-window-lanes", exes, path, ops, one))
	for i := range 900 {
		k := []byte("k" + strconv.Itoa(i))
		if got, want := view.Estimate(k), one.Estimate(k); got != want {
			t.Fatalf("Estimate(%q) = %d, one grid fed the four streams says %d", k, got, want)
		}
	}
	if got, want := view.Stats().Total, one.Stats().Total; got != want {
		t.Errorf("Total %d, one grid %d", got, want)
	}
	if err := view.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCountMinWindowLanes_TakeoverAfterKill: a writer SIGKILLed in its
// lane of a window leaves it to the next handle that finds no free lane,
// with its counts: the key it added reads what its logged adds made it,
// whole, never less, adds go on from there, and a turn of the period
// clears every lane of the slot it reuses.
func TestCountMinWindowLanes_TakeoverAfterKill(t *testing.T) {
	requireReexec(t)
	dir := t.TempDir()
	path, log := filepath.Join(dir, "win"), filepath.Join(dir, "log")
	mustWindowAt(t, path, windowLanesCfg(2)).Close()
	hs := startGroup(t, childContext(t), []childSpec{
		{name: "killed child", role: "countmin-window-lanes", env: envs(envPath, path, envChild, 0, envOps, 0, envLaneLog, log)},
	})
	waitLogLines(t, log, 3000)
	hs[0].cmd.Process.Kill()
	<-hs[0].done
	dead, owned := laneOf(t, log)
	if !owned {
		t.Fatal("the child did not own a lane")
	}
	b, _ := os.ReadFile(log)
	logged := uint64(strings.Count(string(b), "\n") - 1) // the adds logged, the last maybe not made
	free := mustWindowAt(t, path, CountMinWindowConfig{})
	heir := mustWindowAt(t, path, CountMinWindowConfig{})
	if fs, hs := free.Stats(), heir.Stats(); !fs.LaneOwned || fs.Lane == dead || !hs.LaneOwned || hs.Lane != dead {
		t.Fatalf("after the kill: the first handle has lane %d (owned %v), the second %d (owned %v); want the free lane, then the dead child's %d", fs.Lane, fs.LaneOwned, hs.Lane, hs.LaneOwned, dead)
	}
	got := heir.EstimateString("hot")
	if got+1 < logged || got > logged {
		t.Fatalf("the dead lane reads %d for hot, the child logged %d adds (the last maybe not made)", got, logged)
	}
	heir.AddString("hot")
	free.AddString("hot")
	if e := free.EstimateString("hot"); e != got+2 {
		t.Errorf("after an add in each lane hot reads %d, want %d", e, got+2)
	}
	if err := heir.Check(); err != nil && !errors.Is(err, ErrTornAdd) {
		t.Errorf("Check after the kill: %v, want nil or ErrTornAdd", err)
	}
	// Period 0 leaves the window after two turns; its slot, cleared for
	// period 3 at the third, holds nothing of any lane.
	for range 3 {
		if err := heir.Rotate(); err != nil {
			t.Fatal(err)
		}
	}
	if e := free.EstimateString("hot"); e != 0 {
		t.Errorf("three turns after the adds hot reads %d, want 0 (a clear leaves a lane's counts)", e)
	}
	heir.AddString("hot")
	if e, _ := free.AddString("hot"); e != 2 {
		t.Errorf("hot reads %d after an add in each lane of period 3, want 2", e)
	}
}
