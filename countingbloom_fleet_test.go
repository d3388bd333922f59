package sketch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// fleetCBFs opens n counting Bloom filters with fleet parts and one seed,
// one a host.
func fleetCBFs(t *testing.T, n int, capacity uint64) []*CountingBloom {
	t.Helper()
	dir := t.TempDir()
	hosts := make([]*CountingBloom, n)
	for i := range hosts {
		b, err := OpenCountingBloom(Path(filepath.Join(dir, fmt.Sprint("host", i))), CountingBloomConfig{Capacity: capacity, Seed: 77, Fleet: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		hosts[i] = b
	}
	return hosts
}

// syncCBFs is one round of a fleet agent on every host: each pushes its
// counts, then each stores the sum of the others'.
func syncCBFs(t *testing.T, hosts []*CountingBloom) {
	t.Helper()
	exports := make([][]byte, len(hosts))
	for i, h := range hosts {
		e, err := h.ExportCounts()
		if err != nil {
			t.Fatal(err)
		}
		exports[i] = e
	}
	for i, h := range hosts {
		var others [][]byte
		for j, e := range exports {
			if j != i {
				others = append(others, e)
			}
		}
		sum, err := h.SumFleetCounts(others...)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.SetFleetCounts(sum); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCountingBloomFleet_BanAndUnbanOnAnyHost: a ban made on one host is
// found on every host once synced, and an unban made on another host, of
// a copy it never held, takes it out on every host.
func TestCountingBloomFleet_BanAndUnbanOnAnyHost(t *testing.T) {
	h := fleetCBFs(t, 3, 1000)
	a, b, c := h[0], h[1], h[2]
	if already, err := a.AddString("10.0.0.1"); err != nil || already {
		t.Fatalf("ban on A: already %v, %v", already, err)
	}
	if b.ContainsString("10.0.0.1") {
		t.Fatal("B finds the ban before any sync")
	}
	syncCBFs(t, h)
	for i, x := range h {
		if !x.ContainsString("10.0.0.1") || x.EstimateString("10.0.0.1") != 1 {
			t.Fatalf("host %d after the sync: contains %v, estimate %d, want true and 1", i, x.ContainsString("10.0.0.1"), x.EstimateString("10.0.0.1"))
		}
	}
	// A ban again on C is not new fleet-wide.
	if already, err := c.AddString("10.0.0.1"); err != nil || !already {
		t.Fatalf("second ban on C: already %v, %v; want true", already, err)
	}
	if added, err := b.AddIfAbsentString("10.0.0.1"); err != nil || added {
		t.Fatalf("AddIfAbsent on B of a fleet's key: added %v, %v", added, err)
	}
	syncCBFs(t, h)
	if n := b.EstimateString("10.0.0.1"); n != 2 {
		t.Fatalf("B's estimate of two bans: %d", n)
	}
	// Two unbans on B, which holds no copy of its own.
	for i := range 2 {
		if removed, err := b.RemoveString("10.0.0.1"); err != nil || !removed {
			t.Fatalf("unban %d on B: %v, %v", i, removed, err)
		}
	}
	if b.ContainsString("10.0.0.1") {
		t.Fatal("B still finds the key it unbanned")
	}
	if removed, _ := b.RemoveString("10.0.0.1"); removed {
		t.Fatal("a third unban on B removed a copy that is not there")
	}
	if !a.ContainsString("10.0.0.1") {
		t.Fatal("A lost the ban before B's unban was synced")
	}
	syncCBFs(t, h)
	for i, x := range h {
		if x.ContainsString("10.0.0.1") || x.Stats().Set != 0 {
			t.Fatalf("host %d after the unban's sync: contains %v, %d counters set", i, x.ContainsString("10.0.0.1"), x.Stats().Set)
		}
	}
}

// TestCountingBloomFleet_MatchesReference: random bans and unbans on 3
// hosts, synced every few operations, against a reference count of each
// key: after a sync every host finds every key the fleet holds, never
// estimates it low, and once every copy is removed every counter of
// every host is zero fleet-wide.
func TestCountingBloomFleet_MatchesReference(t *testing.T) {
	h := fleetCBFs(t, 3, 4000)
	rng := rand.New(rand.NewPCG(5, 6))
	ref := map[string]int{}
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("client-%d", i)
	}
	check := func(round int) {
		t.Helper()
		for k, n := range ref {
			for i, x := range h {
				if n > 0 && (!x.ContainsString(k) || x.EstimateString(k) < uint64(min(n, 15))) {
					t.Fatalf("round %d: host %d: %q held %d times fleet-wide: contains %v, estimate %d", round, i, k, n, x.ContainsString(k), x.EstimateString(k))
				}
			}
		}
	}
	removes := 0
	for op := range 6000 {
		x, k := h[rng.IntN(3)], keys[rng.IntN(len(keys))]
		if rng.IntN(2) == 0 && ref[k] < 3 {
			if _, err := x.AddString(k); err != nil {
				t.Fatal(err)
			}
			ref[k]++
		} else if ref[k] > 0 {
			removed, err := x.RemoveString(k)
			if err != nil {
				t.Fatal(err)
			}
			if removed {
				ref[k]--
				removes++
			}
		}
		if op%7 == 6 {
			syncCBFs(t, h)
			check(op)
		}
	}
	// Take out every copy left, each on a random host.
	syncCBFs(t, h)
	for k, n := range ref {
		for ; n > 0; n-- {
			if removed, err := h[rng.IntN(3)].RemoveString(k); err != nil || !removed {
				t.Fatalf("removing %q: %v, %v", k, removed, err)
			}
			syncCBFs(t, h)
		}
	}
	for i, x := range h {
		if s := x.Stats(); s.Set != 0 || !s.Fleet {
			t.Errorf("host %d with every copy removed: %d counters set fleet-wide, fleet %v", i, s.Set, s.Fleet)
		}
	}
	if removes < 1000 {
		t.Errorf("only %d removes: the test did not exercise unbans", removes)
	}
}

// TestCountingBloomFleet_SaturationNeverLow: a counter saturated on one
// host stays found on every host, whatever another removes.
func TestCountingBloomFleet_SaturationNeverLow(t *testing.T) {
	h := fleetCBFs(t, 2, 1000)
	for range 20 {
		h[0].AddString("loud")
	}
	syncCBFs(t, h)
	for range 15 {
		if removed, err := h[1].RemoveString("loud"); err != nil || !removed {
			t.Fatalf("remove on B: %v, %v", removed, err)
		}
	}
	syncCBFs(t, h)
	for i, x := range h {
		if !x.ContainsString("loud") || x.EstimateString("loud") != 15 {
			t.Errorf("host %d: 20 adds, 15 removes: contains %v, estimate %d; want true, 15", i, x.ContainsString("loud"), x.EstimateString("loud"))
		}
	}
}

// TestCountingBloomFleet_ResetKeepsTheFleet: Reset empties the host's own
// counters and unheld removes, not the other hosts' counts.
func TestCountingBloomFleet_ResetKeepsTheFleet(t *testing.T) {
	h := fleetCBFs(t, 2, 1000)
	h[0].AddString("a")
	h[1].AddString("b")
	syncCBFs(t, h)
	h[1].RemoveString("a") // an unheld remove on B
	if err := h[1].Reset(); err != nil {
		t.Fatal(err)
	}
	if !h[1].ContainsString("a") || h[1].ContainsString("b") {
		t.Fatalf("B after Reset: a %v (A's, want true), b %v (its own, want false)", h[1].ContainsString("a"), h[1].ContainsString("b"))
	}
	syncCBFs(t, h)
	if !h[0].ContainsString("a") || h[0].ContainsString("b") {
		t.Fatalf("A after B's Reset is synced: a %v, b %v; want true, false", h[0].ContainsString("a"), h[0].ContainsString("b"))
	}
}

// TestCountingBloomFleet_BatchesAndSnapshot: AddBatch's answers are
// fleet-wide in both builds, and a snapshot answers as its filter did.
func TestCountingBloomFleet_BatchesAndSnapshot(t *testing.T) {
	h := fleetCBFs(t, 2, 1000)
	h[0].AddString("seen")
	syncCBFs(t, h)
	keys := [][]byte{[]byte("seen"), []byte("fresh")}
	for range 4 { // 8 keys and more go to the C core in the cgo build
		keys = append(keys, keys...)
	}
	already := make([]bool, len(keys))
	if err := h[1].AddBatch(keys, already); err != nil {
		t.Fatal(err)
	}
	if !already[0] || already[1] {
		t.Fatalf("AddBatch on B: already seen %v, fresh %v; want true, false", already[0], already[1])
	}
	snap, err := h[1].Snapshot(Path(filepath.Join(t.TempDir(), "snap")))
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if got, want := snap.EstimateString("seen"), h[1].EstimateString("seen"); got != want || got != 15 {
		t.Fatalf("snapshot's estimate of seen: %d, B's %d, want 15 (1 on A, 16 on B: saturated)", got, want)
	}
	if got, want := snap.EstimateString("fresh"), h[1].EstimateString("fresh"); got != want || got < 15 {
		t.Fatalf("snapshot's estimate of fresh: %d, B's %d", got, want)
	}
	if !snap.Config().Fleet || !snap.Stats().Fleet {
		t.Fatal("the snapshot lost the fleet part")
	}
}

// TestCountingBloomFleet_Refusals: the fleet verbs' errors, and the
// config's fleet flag on attach.
func TestCountingBloomFleet_Refusals(t *testing.T) {
	dir := t.TempDir()
	plain, err := OpenCountingBloom(Path(filepath.Join(dir, "plain")), CountingBloomConfig{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.ExportCounts(); !errors.Is(err, ErrIncompatible) {
		t.Errorf("ExportCounts without a fleet part: %v", err)
	}
	if err := plain.SetFleetCounts(make([]byte, plain.Counters())); !errors.Is(err, ErrIncompatible) {
		t.Errorf("SetFleetCounts without a fleet part: %v", err)
	}
	if _, err := OpenCountingBloom(Path(filepath.Join(dir, "plain")), CountingBloomConfig{Capacity: 100, Fleet: true}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Fleet asked of a filter without one: %v", err)
	}
	path := filepath.Join(dir, "fleet")
	f, err := OpenCountingBloom(Path(path), CountingBloomConfig{Capacity: 100, Fleet: true})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := f.Counters()
	if err := f.SetFleetCounts(make([]byte, m-1)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("SetFleetCounts of m-1 counts: %v", err)
	}
	if _, err := f.SumFleetCounts(make([]byte, m), make([]byte, m+1)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("SumFleetCounts of a short export: %v", err)
	}
	again, err := OpenCountingBloom(Path(path), CountingBloomConfig{Capacity: 100})
	if err != nil {
		t.Fatalf("attach without Fleet: %v", err)
	}
	if !again.Config().Fleet {
		t.Fatalf("attach without Fleet: config %+v", again.Config())
	}
	again.Close()
	ro, err := OpenCountingBloom(Path(path), CountingBloomConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.SetFleetCounts(make([]byte, m)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("SetFleetCounts on a read-only handle: %v", err)
	}
	if _, err := ro.ExportCounts(); err != nil {
		t.Errorf("ExportCounts on a read-only handle: %v", err)
	}
	f.Close()
	if _, err := f.ExportCounts(); !errors.Is(err, ErrClosed) {
		t.Errorf("ExportCounts after Close: %v", err)
	}
	if err := f.SetFleetCounts(make([]byte, m)); !errors.Is(err, ErrClosed) {
		t.Errorf("SetFleetCounts after Close: %v", err)
	}
	var zero CountingBloom
	if err := zero.SetFleetCounts(nil); err == nil {
		t.Error("SetFleetCounts on a zero handle: no error")
	}
	if _, err := zero.ExportCounts(); err == nil {
		t.Error("ExportCounts on a zero handle: no error")
	}
}

// TestCountingBloomFleet_SumHosts: the sum of exports, exactly: whole
// sums clamped once, saturation sticky.
func TestCountingBloomFleet_SumHosts(t *testing.T) {
	h := fleetCBFs(t, 1, 100)
	m := int(h[0].Counters())
	mk := func(v ...int8) []byte {
		b := make([]byte, m)
		for i, x := range v {
			b[i] = byte(x)
		}
		return b
	}
	sum, err := h[0].SumFleetCounts(mk(100, -100, 127, 5, -128), mk(100, -100, 3, -5, -128), mk(-100, 100, -50, 0, -128))
	if err != nil {
		t.Fatal(err)
	}
	want := []int8{100, -100, 127, 0, -128}
	for i, w := range want {
		if int8(sum[i]) != w {
			t.Errorf("counter %d: sum %d, want %d", i, int8(sum[i]), w)
		}
	}
	if sum, _ := h[0].SumFleetCounts(); len(sum) != m || sum[0] != 0 {
		t.Errorf("no exports: %d bytes", len(sum))
	}
	big, _ := h[0].SumFleetCounts(mk(120), mk(120))
	if int8(big[0]) != 126 {
		t.Errorf("120 + 120: %d, want 126 (below the saturation mark)", int8(big[0]))
	}
}
