//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustFleetWindow(t testing.TB, keep int, cfg CountMinConfig, opts ...Option) *CountMinWindow {
	t.Helper()
	return mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: Window{Keep: keep}, CountMin: cfg}, opts...)
}

// syncFleet stores every period from's window holds into to's fleet part.
func syncFleet(t testing.TB, from, to *CountMinWindow) {
	t.Helper()
	ps, err := from.ExportPeriods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if ok, err := to.SetFleetPeriod(p.Period, p.Data); err != nil || !ok {
			t.Fatalf("SetFleetPeriod(%d) = %v, %v; want true, nil", p.Period, ok, err)
		}
	}
}

// TestCountMinWindow_FleetSumsHosts: host B's fleet parts holding host A's
// periods make every estimate of B, period by period and as the window
// turns, what one window fed both hosts' keys estimates (each slot's
// cells hold the same sums), never below the fleet's true count over the
// window. B adds only in the last period: the slots of the earlier ones,
// which B never used, are claimed for A's counts.
func TestCountMinWindow_FleetSumsHosts(t *testing.T) {
	const keep = 3
	cfg := CountMinConfig{Rows: 4, Width: 512, Seed: 0xf1ee7, Fleet: true}
	plain := cfg
	plain.Fleet = false
	a, b := mustFleetWindow(t, keep, cfg), mustFleetWindow(t, keep, cfg)
	both := mustFleetWindow(t, keep, plain)
	truth := winRef{}
	r := rand.New(rand.NewPCG(3, 4))
	var keys [][]byte
	for i := range 300 {
		keys = append(keys, []byte(fmt.Sprintf("key-%d", i)))
	}
	check := func(round int) {
		t.Helper()
		got := make([]uint64, len(keys))
		if err := b.EstimateBatch(keys, got); err != nil {
			t.Fatal(err)
		}
		p := b.ctl.current()
		for i, k := range keys {
			want := both.Estimate(k)
			if e := b.Estimate(k); e != want || got[i] != want {
				t.Fatalf("round %d: Estimate(%q) = %d, EstimateBatch %d, want %d (one window fed both hosts)", round, k, e, got[i], want)
			}
			var sum uint64
			for q := max(p+1, keep) - keep; q <= p; q++ {
				sum += truth[q][string(k)]
			}
			if want < sum {
				t.Fatalf("round %d: Estimate(%q) = %d, want >= %d", round, k, want, sum)
			}
		}
	}
	for round := range 7 {
		p := a.ctl.current()
		for range 400 {
			k := keys[r.IntN(len(keys))]
			truth.add(p, string(k), 1)
			a.Add(k)
			both.Add(k)
		}
		syncFleet(t, a, b) // this period's too, before B's adds
		if round >= keep-1 {
			for range 200 {
				k := keys[r.IntN(len(keys))]
				truth.add(p, string(k), 1)
				est, err := b.Add(k)
				if err != nil {
					t.Fatal(err)
				}
				if want, _ := both.Add(k); est != want {
					t.Fatalf("round %d: Add(%q) = %d, want %d", round, k, est, want)
				}
			}
		}
		syncFleet(t, a, b)
		syncFleet(t, a, b) // idempotent
		check(round)
		for _, w := range []*CountMinWindow{a, b, both} {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		check(round) // the period turned: the oldest slot's fleet part left with it
	}
	if !b.Stats().Fleet || !b.Config().CountMin.Fleet {
		t.Error("Stats or Config does not show the fleet part")
	}
	// The snapshot of the covered periods keeps their fleet parts.
	snap, err := b.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if !snap.Config().Fleet {
		t.Fatal("the window's snapshot has no fleet part")
	}
	for _, k := range keys {
		if got, want := snap.Estimate(k), b.Estimate(k); got < want {
			t.Fatalf("snapshot Estimate(%q) = %d, want >= %d", k, got, want)
		}
	}
	if err := b.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// TestCountMinWindow_FleetAllow: with the fleet part holding 7 for a key
// (in the current period or the one before), Allow with limit 10 allows 3
// local requests and refuses the next, in windows of 1, 2 and 3 periods
// (Keep 2 takes the pair's short way), and says when to retry; with 4
// rows and with 12 (past the rows whose fleet counters the short way
// keeps from its first pass).
func TestCountMinWindow_FleetAllow(t *testing.T) {
	for _, rows := range []int{4, 12} {
		t.Run(fmt.Sprintf("rows=%d", rows), func(t *testing.T) { fleetAllow(t, rows) })
	}
}

func fleetAllow(t *testing.T, rows int) {
	key := []byte("client")
	for _, keep := range []int{1, 2, 3} {
		for _, previous := range []bool{false, true} {
			if previous && keep == 1 {
				continue
			}
			for _, countRefused := range []bool{false, true} {
				t.Run(fmt.Sprintf("keep=%d/previous=%v/countRefused=%v", keep, previous, countRefused), func(t *testing.T) {
					cfg := CountMinConfig{Rows: rows, Width: 1024, Seed: 5, Fleet: true}
					a, b := mustFleetWindow(t, keep, cfg), mustFleetWindow(t, keep, cfg)
					for _, w := range []*CountMinWindow{a, b} {
						w.AddString("warm") // the current slot in use
						if previous {
							w.Rotate()
						}
						w.AddString("warm")
					}
					p := a.ctl.current()
					fleetP := p
					if previous {
						fleetP = p - 1
					}
					counts := make([]byte, rows*1024*8)
					src := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: rows, Width: 1024, Seed: 5})
					src.AddN(key, 7)
					own, _ := src.ExportCounts()
					copy(counts, own)
					if ok, err := b.SetFleetPeriod(fleetP, counts); !ok || err != nil {
						t.Fatalf("SetFleetPeriod(%d) = %v, %v", fleetP, ok, err)
					}
					if est := b.Estimate(key); est != 7 {
						t.Fatalf("Estimate = %d, want 7 (the fleet's)", est)
					}
					for i := range 3 {
						d, err := b.Allow(key, 10, countRefused)
						if err != nil || !d.Allowed() || d.Estimate() != uint64(8+i) {
							t.Fatalf("request %d: %v, %v; want allowed at %d", i+1, d, err, 8+i)
						}
					}
					d, err := b.Allow(key, 10, countRefused)
					wantEst := uint64(10)
					if countRefused {
						wantEst = 11
					}
					if err != nil || d.Allowed() || d.Estimate() != wantEst || d.Counted() != countRefused {
						t.Fatalf("request 4: %v, %v; want refused at %d", d, err, wantEst)
					}
					// The fleet's 7 leave with their period; the 3 local
					// requests stay while theirs is in the window.
					wantTurns := keep
					if previous {
						wantTurns = keep - 1
					}
					if countRefused && !previous {
						wantTurns = keep // 11 in the current period
					}
					if d.Turns() != wantTurns {
						t.Errorf("Turns() = %d, want %d", d.Turns(), wantTurns)
					}
				})
			}
		}
	}
}

// TestCountMinWindow_FleetPeriods: SetFleetPeriod stores into periods of
// the window only, claims a past slot never used, and a turn clears a
// slot's fleet part with its own counters.
func TestCountMinWindow_FleetPeriods(t *testing.T) {
	cfg := CountMinConfig{Rows: 2, Width: 64, Seed: 9, Fleet: true}
	w := mustFleetWindow(t, 2, cfg)
	for range 5 {
		w.Rotate()
	}
	src := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 2, Width: 64, Seed: 9})
	src.AddN([]byte("k"), 5)
	counts, _ := src.ExportCounts()
	p := w.ctl.current() // 5; the window is 4 and 5, and w used neither slot
	for _, q := range []uint64{p + 1, p - 2, 0} {
		if ok, err := w.SetFleetPeriod(q, counts); ok || err != nil {
			t.Errorf("SetFleetPeriod(%d) outside the window = %v, %v; want false, nil", q, ok, err)
		}
	}
	if est := w.EstimateString("k"); est != 0 {
		t.Fatalf("Estimate = %d after stores outside the window", est)
	}
	if ok, err := w.SetFleetPeriod(p-1, counts); !ok || err != nil {
		t.Fatalf("SetFleetPeriod(%d) = %v, %v; want true, nil", p-1, ok, err)
	}
	if ok, err := w.SetFleetPeriod(p, counts); !ok || err != nil {
		t.Fatalf("SetFleetPeriod(%d) = %v, %v; want true, nil", p, ok, err)
	}
	if est := w.EstimateString("k"); est != 10 {
		t.Fatalf("Estimate = %d, want 10", est)
	}
	// Error bounds count the covered slots' fleet totals, 5 each.
	if got, want := w.ErrorBound(), errorBound(10, 64); got != want || w.totals.fleet.Load() != 10 {
		t.Errorf("ErrorBound() = %d, want %d (fleet totals %d, want 10)", got, want, w.totals.fleet.Load())
	}
	if got, want := w.Stats().ErrorBound, errorBound(10, 64); got != want {
		t.Errorf("Stats().ErrorBound = %d, want %d", got, want)
	}
	ps, err := w.ExportPeriods()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]uint64{p, p - 1}, periodsOf(ps)); diff != "" {
		t.Errorf("ExportPeriods periods (-want +got):\n%s", diff)
	}
	for _, e := range ps {
		if !bytes.Equal(e.Data, make([]byte, len(counts))) {
			t.Errorf("period %d exports the fleet part: own counters are zero", e.Period)
		}
	}
	w.Rotate()
	if est := w.EstimateString("k"); est != 5 {
		t.Fatalf("after a turn: Estimate = %d, want 5", est)
	}
	w.Rotate()
	w.AddString("x") // the slot of p-1 cleared for p+2
	if est := w.EstimateString("k"); est != 0 {
		t.Fatalf("after two turns: Estimate = %d, want 0", est)
	}
	if w.ErrorBound(); w.totals.fleet.Load() != 0 {
		t.Errorf("after two turns: fleet totals %d, want 0 (cleared with their slots)", w.totals.fleet.Load())
	}
	fi := w.m.ent
	if fi.params[6] != 1 || countMinWindowEntryParams(fi)["fleet"] != 1 {
		t.Errorf("params %v", fi.params)
	}
}

// TestCountMinWindow_FleetRefusals: what SetFleetPeriod and ExportPeriods
// refuse.
func TestCountMinWindow_FleetRefusals(t *testing.T) {
	path := tempPath(t, "fleet.cmw")
	cfg := CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 64, Fleet: true}}
	w := mustIn(t, OpenCountMinWindow, Path(path), cfg)
	good := make([]byte, 2*64*8)
	for _, bad := range [][]byte{nil, good[:8], append(bytes.Clone(good), 1)} {
		if ok, err := w.SetFleetPeriod(0, bad); ok || !errors.Is(err, ErrIncompatible) {
			t.Errorf("SetFleetPeriod(%d bytes) = %v, %v; want ErrIncompatible", len(bad), ok, err)
		}
	}
	plain := mustFleetWindow(t, 2, CountMinConfig{Rows: 2, Width: 64})
	if ok, err := plain.SetFleetPeriod(0, good); ok || !errors.Is(err, ErrIncompatible) {
		t.Errorf("SetFleetPeriod without a fleet part = %v, %v; want ErrIncompatible", ok, err)
	}
	if ps, err := plain.ExportPeriods(); err != nil || len(ps) != 0 {
		t.Errorf("ExportPeriods of an unused window = %v, %v", ps, err)
	}
	plainPath := tempPath(t, "plain.cmw")
	mustIn(t, OpenCountMinWindow, Path(plainPath), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: CountMinConfig{Rows: 2, Width: 64}}).Close()
	if _, err := OpenCountMinWindow(Path(plainPath), cfg); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Open with Fleet of a window without = %v, want ErrIncompatible", err)
	}
	if _, err := OpenCountMinWindow(Path(plainPath), CountMinWindowConfig{CountMin: CountMinConfig{Fleet: true}}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Open (zero window) with Fleet of a window without = %v, want ErrIncompatible", err)
	}
	ro := mustIn(t, OpenCountMinWindow, Path(path), CountMinWindowConfig{}, WithReadOnly())
	if ok, err := ro.SetFleetPeriod(0, good); ok || !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only SetFleetPeriod = %v, %v; want ErrReadOnly", ok, err)
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if ok, err := w.SetFleetPeriod(0, good); ok || !errors.Is(err, ErrFrozen) {
		t.Errorf("frozen SetFleetPeriod = %v, %v; want ErrFrozen", ok, err)
	}
	w.Close()
	if ok, err := w.SetFleetPeriod(0, good); ok || !errors.Is(err, ErrClosed) {
		t.Errorf("closed SetFleetPeriod = %v, %v; want ErrClosed", ok, err)
	}
	if _, err := w.ExportPeriods(); !errors.Is(err, ErrClosed) {
		t.Errorf("closed ExportPeriods = %v, want ErrClosed", err)
	}
	var zero CountMinWindow
	mustNotPanic(t, "zero CountMinWindow", func() {
		zero.SetFleetPeriod(0, good)
		zero.ExportPeriods()
	})
}
