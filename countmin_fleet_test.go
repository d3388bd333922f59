package sketch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fleetKeys draws n adds over keys key-0 .. key-(distinct-1), counting
// them in truth.
func fleetKeys(r *rand.Rand, n, distinct int, truth map[string]uint64) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		k := fmt.Sprintf("key-%d", r.IntN(distinct))
		keys[i] = []byte(k)
		truth[k]++
	}
	return keys
}

// TestCountMin_FleetSumsHosts: host B's fleet part holding host A's own
// counters makes every answer of B what one sketch fed both hosts' keys
// answers (their cells hold the same sums), never below the fleet's true
// count: Estimate, EstimateBatch, the estimates adds return, Top's.
func TestCountMin_FleetSumsHosts(t *testing.T) {
	const seed = 0xf1ee7
	shape := CountMinConfig{Rows: 4, Width: 256, Seed: seed}
	fleetCfg := shape
	fleetCfg.Fleet, fleetCfg.Candidates = true, 16
	a := mustIn(t, OpenCountMin, Path(tempPath(t, "a.cms")), fleetCfg)
	b := mustIn(t, OpenCountMin, Path(tempPath(t, "b.cms")), fleetCfg)
	both := mustIn(t, OpenCountMin, Memory(), shape)
	r := rand.New(rand.NewPCG(1, 2))
	ta, tb := map[string]uint64{}, map[string]uint64{}
	ka, kb := fleetKeys(r, 5000, 600, ta), fleetKeys(r, 3000, 600, tb)
	if err := a.AddBatch(ka, nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range kb {
		if _, err := b.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	for _, ks := range [][][]byte{ka, kb} {
		if err := both.AddBatch(ks, nil); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := a.ExportCounts()
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 * 256 * 8; len(counts) != want {
		t.Fatalf("ExportCounts: %d bytes, want %d", len(counts), want)
	}
	for range 2 { // idempotent: the second store changes nothing
		if err := b.SetFleetCounts(counts); err != nil {
			t.Fatal(err)
		}
		before := bytes.Clone(b.m.entryBytes())
		if err := b.SetFleetCounts(counts); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, b.m.entryBytes()) {
			t.Fatal("a repeated SetFleetCounts changed the file")
		}
	}
	// B's own counters are unchanged by the store: its export is its own.
	own, err := b.ExportCounts()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(own, counts) {
		t.Fatal("B exports A's counters")
	}
	var keys [][]byte
	for i := range 700 {
		keys = append(keys, []byte(fmt.Sprintf("key-%d", i)))
	}
	got := make([]uint64, len(keys))
	if err := b.EstimateBatch(keys, got); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		want := both.Estimate(k)
		if e := b.Estimate(k); e != want || got[i] != want {
			t.Fatalf("Estimate(%q) = %d, EstimateBatch %d, want %d (one sketch fed both hosts)", k, e, got[i], want)
		}
		if truth := ta[string(k)] + tb[string(k)]; want < truth {
			t.Fatalf("Estimate(%q) = %d, want >= %d", k, want, truth)
		}
	}
	// The estimates adds return count the fleet part too.
	for _, k := range keys[:50] {
		est, err := b.AddN(k, 3)
		if err != nil {
			t.Fatal(err)
		}
		wantEst, _ := both.AddN(k, 3)
		if est != wantEst {
			t.Fatalf("AddN(%q, 3) = %d, want %d", k, est, wantEst)
		}
	}
	est := make([]uint64, 50)
	if err := b.AddBatch(keys[50:100], est); err != nil {
		t.Fatal(err)
	}
	wantBatch := make([]uint64, 50)
	both.AddBatch(keys[50:100], wantBatch)
	if diff := cmp.Diff(wantBatch, est); diff != "" {
		t.Fatalf("AddBatch estimates (-want +got):\n%s", diff)
	}
	// Top re-estimates with the fleet part.
	hs, err := b.Top(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if want := both.Estimate([]byte(h.Key)); h.Estimate != want {
			t.Fatalf("Top: %q estimated %d, want %d", h.Key, h.Estimate, want)
		}
	}
	st := b.Stats()
	if !st.Fleet || st.FleetTotal != 5000 || st.Total != 3000+150+50 {
		t.Fatalf("Stats: Fleet %v, FleetTotal %d, Total %d; want true, 5000, 3200", st.Fleet, st.FleetTotal, st.Total)
	}
	// Error bounds count the fleet part's total with the own.
	if got, want := st.ErrorBound, errorBound(st.Total+st.FleetTotal, st.Width); got != want {
		t.Errorf("Stats().ErrorBound = %d, want %d", got, want)
	}
	if got, want := b.ErrorBound(), errorBound(b.Total()+5000, 256); got != want {
		t.Errorf("ErrorBound() = %d, want %d", got, want)
	}
	if err := b.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// TestCountMin_FleetPartRules: Reset clears the own counters only, Merge
// adds own counters only (a fleet part merged would count the fleet
// twice), Snapshot copies both parts and answers as its source.
func TestCountMin_FleetPartRules(t *testing.T) {
	cfg := CountMinConfig{Rows: 3, Width: 128, Seed: 7, Fleet: true}
	a := mustIn(t, OpenCountMin, Memory(), cfg)
	b := mustIn(t, OpenCountMin, Memory(), cfg)
	for i := range 300 {
		a.AddString(fmt.Sprintf("a-%d", i%40))
		b.AddString(fmt.Sprintf("b-%d", i%30))
	}
	fromA, _ := a.ExportCounts()
	if err := b.SetFleetCounts(fromA); err != nil {
		t.Fatal(err)
	}
	snap, err := b.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if !snap.Stats().Fleet || !snap.Config().Fleet {
		t.Fatal("the snapshot has no fleet part")
	}
	for i := range 60 {
		for _, k := range []string{fmt.Sprintf("a-%d", i), fmt.Sprintf("b-%d", i)} {
			if got, want := snap.EstimateString(k), b.EstimateString(k); got != want {
				t.Fatalf("snapshot Estimate(%q) = %d, want %d", k, got, want)
			}
		}
	}
	// Merge: the others' own counters, never their fleet parts.
	m := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 3, Width: 128, Seed: 7})
	if err := m.Merge(b); err != nil {
		t.Fatal(err)
	}
	ownB, _ := b.ExportCounts()
	got, _ := m.ExportCounts()
	if !bytes.Equal(got, ownB) {
		t.Fatal("Merge of a sketch with a fleet part did not add exactly its own counters")
	}
	if err := b.Merge(a); err != nil { // into a fleet sketch: its fleet part stays
		t.Fatal(err)
	}
	if st := b.Stats(); st.FleetTotal != 300 || st.Total != 600 {
		t.Fatalf("after Merge: FleetTotal %d, Total %d; want 300, 600", st.FleetTotal, st.Total)
	}
	// Reset: the own counters only; the fleet part answers alone.
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		k := fmt.Sprintf("a-%d", i)
		if got, want := b.EstimateString(k), a.EstimateString(k); got != want {
			t.Fatalf("after Reset: Estimate(%q) = %d, want %d (the fleet part's)", k, got, want)
		}
	}
	if st := b.Stats(); st.Total != 0 || st.FleetTotal != 300 {
		t.Fatalf("after Reset: Total %d, FleetTotal %d; want 0, 300", st.Total, st.FleetTotal)
	}
}

// TestCountMin_FleetSaturates: own + fleet stops at 2^63, never wraps.
func TestCountMin_FleetSaturates(t *testing.T) {
	c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 2, Width: 4, Seed: 1, Fleet: true})
	counts := make([]byte, 2*4*8)
	for i := 0; i < len(counts); i += 8 {
		binary.LittleEndian.PutUint64(counts[i:], ^uint64(0))
	}
	if err := c.SetFleetCounts(counts); err != nil {
		t.Fatal(err)
	}
	if est, err := c.AddN([]byte("k"), 5); err != nil || est != 1<<63 {
		t.Fatalf("AddN = %d, %v; want 2^63", est, err)
	}
	if est := c.Estimate([]byte("k")); est != 1<<63 {
		t.Fatalf("Estimate = %d, want 2^63", est)
	}
}

// TestCountMin_FleetRefusals: what SetFleetCounts, ExportCounts and a
// config with Fleet refuse, with errors.Is-able sentinels.
func TestCountMin_FleetRefusals(t *testing.T) {
	path := tempPath(t, "fleet.cms")
	cfg := CountMinConfig{Rows: 2, Width: 64, Fleet: true}
	c := mustIn(t, OpenCountMin, Path(path), cfg)
	good := make([]byte, 2*64*8)
	for _, bad := range [][]byte{nil, {}, good[:8], good[:len(good)-1], append(bytes.Clone(good), 0), append(bytes.Clone(good), make([]byte, 16)...)} {
		if err := c.SetFleetCounts(bad); !errors.Is(err, ErrIncompatible) {
			t.Errorf("SetFleetCounts(%d bytes) = %v, want ErrIncompatible", len(bad), err)
		}
	}
	plain := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 2, Width: 64})
	if err := plain.SetFleetCounts(good); !errors.Is(err, ErrIncompatible) {
		t.Errorf("SetFleetCounts without a fleet part = %v, want ErrIncompatible", err)
	}
	if got, err := plain.ExportCounts(); err != nil || len(got) != len(good) {
		t.Errorf("ExportCounts without a fleet part = %d bytes, %v", len(got), err)
	}
	ro := mustIn(t, OpenCountMin, Path(path), CountMinConfig{}, WithReadOnly())
	if err := ro.SetFleetCounts(good); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only SetFleetCounts = %v, want ErrReadOnly", err)
	}
	if _, err := ro.ExportCounts(); err != nil {
		t.Errorf("read-only ExportCounts = %v", err)
	}
	// Attaching: Fleet must match a file without one; the zero config and
	// a config without Fleet attach to either.
	plainPath := tempPath(t, "plain.cms")
	mustIn(t, OpenCountMin, Path(plainPath), CountMinConfig{Rows: 2, Width: 64}).Close()
	if _, err := OpenCountMin(Path(plainPath), cfg); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Open with Fleet of a file without = %v, want ErrIncompatible", err)
	}
	for _, attach := range []CountMinConfig{{}, {Rows: 2, Width: 64}, cfg} {
		d, err := OpenCountMin(Path(path), attach)
		if err != nil {
			t.Fatalf("Open(%+v) = %v", attach, err)
		}
		if got := d.Config(); !got.Fleet {
			t.Errorf("Config() = %+v, want Fleet", got)
		}
		d.Close()
	}
	if fi := mustInspect(t, path); fi.Entries[0].Params["fleet"] != 1 || fi.Entries[0].Bytes != 4096+2*2*64*8 {
		t.Errorf("Inspect: params %v, %d bytes", fi.Entries[0].Params, fi.Entries[0].Bytes)
	}
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetFleetCounts(good); !errors.Is(err, ErrFrozen) {
		t.Errorf("frozen SetFleetCounts = %v, want ErrFrozen", err)
	}
	c.Close()
	if err := c.SetFleetCounts(good); !errors.Is(err, ErrClosed) {
		t.Errorf("closed SetFleetCounts = %v, want ErrClosed", err)
	}
	if _, err := c.ExportCounts(); !errors.Is(err, ErrClosed) {
		t.Errorf("closed ExportCounts = %v, want ErrClosed", err)
	}
	var zero CountMin
	mustNotPanic(t, "zero CountMin", func() {
		zero.SetFleetCounts(good)
		zero.ExportCounts()
	})
}

// TestCountMin_FleetAddTotal: a host with conservative update raises rows
// by less than it adds, so the other hosts' row sums read low as their
// total; the add total sent after the counts is what FleetTotal and the
// error bounds count. Without it they take the largest row sum, below
// what was added.
func TestCountMin_FleetAddTotal(t *testing.T) {
	cfg := CountMinConfig{Rows: 4, Width: 256, Fleet: true, ConservativeUpdate: true, Seed: 0xadd5}
	a := mustIn(t, OpenCountMin, Memory(), cfg)
	b := mustIn(t, OpenCountMin, Memory(), cfg)
	if err := a.AddBatch(cuStream(3, 20000), nil); err != nil {
		t.Fatal(err)
	}
	counts, err := a.ExportCounts()
	if err != nil {
		t.Fatal(err)
	}
	adds := a.Total()
	rows := a.Stats()
	if adds != 20000 || rows.Adds != adds {
		t.Fatalf("host a's add total %d (Stats %d), want 20000", adds, rows.Adds)
	}
	var rowMax uint64
	for r := range 4 {
		var sum uint64
		for i := range 256 {
			sum += binary.LittleEndian.Uint64(counts[(r*256+i)*8:])
		}
		rowMax = max(rowMax, sum)
	}
	if rowMax >= adds {
		t.Fatalf("raised rows sum to %d of %d adds: the stream does not show the gap", rowMax, adds)
	}
	if err := b.SetFleetCounts(counts); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.FleetTotal != rowMax || b.ErrorBound() != errorBound(rowMax, 256) {
		t.Fatalf("counts alone: FleetTotal %d, ErrorBound %d; want the largest row sum %d, bound %d", st.FleetTotal, b.ErrorBound(), rowMax, errorBound(rowMax, 256))
	}
	if err := b.SetFleetCounts(binary.LittleEndian.AppendUint64(bytes.Clone(counts), adds)); err != nil {
		t.Fatal(err)
	}
	st := b.Stats()
	if st.FleetTotal != adds || st.ErrorBound != errorBound(adds, 256) || b.ErrorBound() != st.ErrorBound {
		t.Fatalf("with the add total: FleetTotal %d, ErrorBound %d / %d; want %d, %d", st.FleetTotal, st.ErrorBound, b.ErrorBound(), adds, errorBound(adds, 256))
	}
	// A total below the row sums (a host's export torn by a reset) never
	// lowers FleetTotal under them.
	if err := b.SetFleetCounts(binary.LittleEndian.AppendUint64(bytes.Clone(counts), 1)); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.FleetTotal != rowMax {
		t.Fatalf("a total of 1: FleetTotal %d, want the row sum %d", st.FleetTotal, rowMax)
	}
	// Estimates are the counts' either way.
	for _, k := range []string{"key-1", "key-2", "key-999"} {
		if got, want := b.EstimateString(k), a.EstimateString(k); got != want {
			t.Errorf("%s: host b estimates %d, host a %d", k, got, want)
		}
	}
}
