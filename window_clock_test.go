//go:build linux

package sketch

import (
	"testing"
	"time"
)

// TestCountMinWindow_RotateWithLateTimer: in clock mode, a process
// whose timer has not fired yet follows the file's latest word (the
// period another process turned to by its clock). A Rotate through that
// process must still turn the period, for itself and for everyone: adds
// it makes after Rotate returned go to the new period, which every
// handle's estimate covers. Here the handle whose timer is late is
// simulated by moving the other handle's clock one period ahead (its
// timer fired first), with a period of an hour so the real clock stays
// put.
func TestCountMinWindow_RotateWithLateTimer(t *testing.T) {
	path := tempPath(t, "win")
	win := Window{Period: time.Hour, Keep: 1}
	late := mustOpenWindow(t, path, win, winCfg)
	early := mustOpenWindow(t, path, win, winCfg)
	start := late.ctl.clk.cur.Load()
	early.ctl.clk.cur.Add(1) // early's timer fired, late's has not yet
	if _, err := early.AddString("before"); err != nil {
		t.Fatal(err)
	}
	p := early.Current()
	if late.Current() != p {
		t.Fatalf("late handle at period %d, early at %d: latest should carry it", late.Current(), p)
	}
	if err := late.Rotate(); err != nil {
		t.Fatal(err)
	}
	if late.ctl.clk.cur.Load() != start {
		t.Skip("the hour turned during the test")
	}
	if got, want := late.Current(), p+1; got != want {
		t.Errorf("after its own Rotate, the rotating handle is at period %d, want %d (the other handle is at %d)", got, want, early.Current())
	}
	if late.Current() != early.Current() {
		t.Errorf("handles disagree on the period after Rotate: %d and %d", late.Current(), early.Current())
	}
	if _, err := late.AddString("after"); err != nil {
		t.Fatal(err)
	}
	// Keep 1: the window is the current period only, and the add was made
	// after Rotate returned.
	if got := early.EstimateString("after"); got != 1 {
		t.Errorf("an add made after Rotate returned: estimate %d through the other handle, want 1", got)
	}
	late.ctl.clk.cur.Add(1) // late's timer fires at last
	if got := late.EstimateString("after"); got != 1 {
		t.Errorf("an add made after Rotate returned: estimate %d through the rotating handle once its timer fired, want 1", got)
	}
}

// TestBloomWindow_RotateWithLateTimer: the same for a Bloom window,
// whose Check promises that a key added before it started is found.
func TestBloomWindow_RotateWithLateTimer(t *testing.T) {
	path := tempPath(t, "bwin")
	win := Window{Period: time.Hour, Keep: 1}
	open := func() *BloomWindow {
		w, err := OpenBloomWindow(Path(path), BloomWindowConfig{Window: win, Bloom: BloomConfig{Capacity: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return w
	}
	late, early := open(), open()
	start := late.ctl.clk.cur.Load()
	early.ctl.clk.cur.Add(1)
	if _, err := early.AddString("before"); err != nil {
		t.Fatal(err)
	}
	if err := late.Rotate(); err != nil {
		t.Fatal(err)
	}
	if _, err := late.AddString("after"); err != nil {
		t.Fatal(err)
	}
	if late.ctl.clk.cur.Load() != start {
		t.Skip("the hour turned during the test")
	}
	if late.Current() != early.Current() {
		t.Errorf("handles disagree on the period after Rotate: %d and %d", late.Current(), early.Current())
	}
	if !early.ContainsString("after") {
		t.Error("a key added after Rotate returned is not found through the other handle")
	}
}
