//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A review of the candidate table: what a neighbour process and a
// demanding user can do to it.

// TestReview_MergeNarrowerKeys: merging a table that keeps fewer key bytes
// into one that keeps more must not write a prefix the wider table takes
// for a whole key (which would hash to nothing, be left out of Top and be
// reported by Check as damage).
func TestReview_MergeNarrowerKeys(t *testing.T) {
	wide := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 8, CandidateKeyBytes: 128, Seed: 7})
	narrow := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 8, CandidateKeyBytes: 64, Seed: 7})
	long := strings.Repeat("n", 99) + "!" // 100 bytes: a prefix in narrow, whole in wide
	for range 100 {
		narrow.AddString(long)
	}
	for range 10 {
		wide.AddString("short")
	}
	if err := wide.Merge(narrow); err != nil {
		t.Fatal(err)
	}
	if err := wide.Check(); err != nil {
		t.Errorf("Check after merging a narrower table: %v", err)
	}
	hs, err := wide.Top(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Key != "short" && h.Key != long {
			t.Errorf("Top lists %q (length %d), neither key", h.Key, h.Length)
		}
	}
	// The long key's next adds name it whole (an add past 64 goes on to
	// the table one time in 8: sampled).
	for range 8 {
		wide.AddString(long)
	}
	hs, _ = wide.Top(0)
	if got := topKeys(hs); !slices.Equal(got, []string{long, "short"}) || hs[0].Estimate != 108 {
		t.Errorf("Top after an add of the long key = %+v", hs)
	}
	// And the other way: a wider table into a narrower keeps a prefix.
	narrow2 := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 8, CandidateKeyBytes: 8, Seed: 7})
	if err := narrow2.Merge(wide); err != nil {
		t.Fatal(err)
	}
	hs, _ = narrow2.Top(0)
	if len(hs) != 2 || hs[0].Key != long[:8] || hs[0].Length != 100 || hs[0].Estimate != 108 {
		t.Errorf("a wide table merged into a narrow one: Top = %+v", hs)
	}
	if err := narrow2.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestReview_MergeShapes: merges with no table, with another K, and with
// itself keep a whole table listing the loud keys.
func TestReview_MergeShapes(t *testing.T) {
	cfg := CountMinConfig{Rows: 4, Width: 1 << 12, Seed: 3}
	with := func(k int) CountMinConfig { c := cfg; c.Candidates = k; return c }
	a := mustIn(t, OpenCountMin, Memory(), with(4))
	plain := mustIn(t, OpenCountMin, Memory(), cfg)
	big := mustIn(t, OpenCountMin, Memory(), with(64))
	for i := range 20 {
		for range 10 + i {
			big.AddString(fmt.Sprintf("big-%d", i))
		}
	}
	for range 500 {
		plain.AddString("plain")
	}
	for range 30 {
		a.AddString("a")
	}
	if err := a.Merge(plain, big); err != nil {
		t.Fatal(err)
	}
	hs, _ := a.Top(0)
	// "plain" has no table to name it: it is listed once an add names it.
	if got := topKeys(hs); !slices.Equal(got, []string{"a", "big-19", "big-18", "big-17"}) {
		t.Errorf("Top after merging no table and a larger table = %v", got)
	}
	for range 8 { // sampled: one add in 8 past 64 goes on to the table
		a.AddString("plain")
	}
	if hs, _ := a.Top(1); len(hs) != 1 || hs[0].Key != "plain" || hs[0].Estimate != 508 {
		t.Errorf("Top(1) after an add of plain = %+v", hs)
	}
	if err := a.Merge(a); err != nil {
		t.Fatal(err)
	}
	if hs, _ := a.Top(1); len(hs) != 1 || hs[0].Key != "plain" || hs[0].Estimate != 1016 {
		t.Errorf("Top(1) after merging with itself = %+v", hs)
	}
	// A sketch without a table merges one with a table.
	if err := plain.Merge(a); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*CountMin{a, plain, big} {
		if err := c.Check(); err != nil {
			t.Errorf("Check: %v", err)
		}
	}
}

// TestReview_Edges: K from 1 to 7 (one bucket), K at its most, keys of no
// bytes, the most key bytes and keys longer.
func TestReview_Edges(t *testing.T) {
	for k := 1; k <= 8; k++ {
		c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: k})
		for i := range 12 {
			for range 10 * (i + 1) {
				c.AddString(fmt.Sprintf("k%02d", i))
			}
		}
		hs, _ := c.Top(0)
		var want []string
		for i := 11; i > 11-k; i-- {
			want = append(want, fmt.Sprintf("k%02d", i))
		}
		if got := topKeys(hs); !slices.Equal(got, want) {
			t.Errorf("K=%d: Top = %v, want %v", k, got, want)
		}
		if err := c.Check(); err != nil {
			t.Errorf("K=%d: Check: %v", k, err)
		}
	}
	c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: maxCandidates, CandidateKeyBytes: maxCandidateKeyBytes})
	huge := strings.Repeat("h", 5000)
	whole := strings.Repeat("w", maxCandidateKeyBytes)
	for range 30 {
		c.AddString("")
		c.AddString(huge)
		c.Add([]byte(whole))
	}
	c.AddString("")
	c.AddString(huge)
	hs, _ := c.Top(0)
	if len(hs) != 3 || hs[0].Key != "" || hs[0].Length != 0 || hs[0].Estimate != 31 ||
		hs[1].Key != huge[:maxCandidateKeyBytes] || hs[1].Length != 5000 || hs[1].Estimate != 31 ||
		hs[2].Key != whole || hs[2].Length != maxCandidateKeyBytes || hs[2].Estimate != 30 {
		t.Errorf("Top with an empty key, a 5000-byte key and a whole 1024-byte key: %d listed", len(hs))
		for _, h := range hs {
			t.Logf("  %.20q length %d estimate %d", h.Key, h.Length, h.Estimate)
		}
	}
	if err := c.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestReview_AddBatchEstimates: AddBatch feeds the table with and without
// estimates, on both cores.
func TestReview_AddBatchEstimates(t *testing.T) {
	for _, withEst := range []bool{false, true} {
		for _, width := range []int{1 << 10, 1 << 18} { // in L2, and past it (the C core batches)
			c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: width, Candidates: 8})
			var keys [][]byte
			for i := range 2000 {
				if i%4 == 0 {
					keys = append(keys, []byte(fmt.Sprintf("loud-%d", i%16)))
				} else {
					keys = append(keys, []byte(fmt.Sprintf("quiet-%d", i)))
				}
			}
			var est []uint64
			if withEst {
				est = make([]uint64, len(keys))
			}
			for range 3 {
				if err := c.AddBatch(keys, est); err != nil {
					t.Fatal(err)
				}
			}
			hs, _ := c.Top(4)
			for _, h := range hs {
				if !strings.HasPrefix(h.Key, "loud-") || h.Estimate < 3*125 {
					t.Errorf("estimates %v, width %d: listed %s at %d", withEst, width, h.Key, h.Estimate)
				}
			}
			if len(hs) != 4 {
				t.Errorf("estimates %v, width %d: %d listed, want 4 (%v)", withEst, width, len(hs), topKeys(hs))
			}
		}
	}
}

// TestReview_ResetCutShort: a Reset cut short once the counters are
// cleared (a Close racing it; a kill) must not leave a floor from before
// the Reset, under which a key louder than any other is never admitted.
func TestReview_ResetCutShort(t *testing.T) {
	path := tempPath(t, "resetcut")
	c := mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1 << 10, Candidates: 8})
	for i := range 9 { // the 9th key's admission counts the others again
		for range 1000 * (1 + i/8) {
			c.AddString(fmt.Sprintf("before-%d", i))
		}
	}
	if f, _ := c.top.floor(); f < 900 {
		t.Fatalf("floor %d before the Reset, want about 1000", f)
	}
	testHookResetCleared = func() { c.Close() }
	defer func() { testHookResetCleared = nil }()
	if err := c.Reset(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reset closed half way: %v, want ErrClosed", err)
	}
	testHookResetCleared = nil
	d := mustOpen(t, path, CountMinConfig{})
	for range 100 {
		d.AddString("after")
	}
	if hs, _ := d.Top(0); len(hs) != 1 || hs[0].Key != "after" || hs[0].Estimate != 100 {
		t.Errorf("Top after a Reset cut short and 100 adds of the only key = %+v (floor %d)", hs, d.Stats().Candidates.Floor)
	}
}

// TestReview_CheckDuringMerge: Check never reports damage on a table that
// merges rewrite meanwhile (a way rewritten with the fingerprint it had).
func TestReview_CheckDuringMerge(t *testing.T) {
	c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 8, Candidates: 64})
	for i := range 64 {
		for range 10 + i {
			c.AddString(fmt.Sprintf("k%d", i))
		}
	}
	empty := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 4, Width: 1 << 8, Seed: c.l.Seed})
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := c.Merge(empty); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var bad error
	for range 20_000 {
		if err := c.top.check(); err != nil {
			bad = err
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	if bad != nil {
		t.Errorf("Check racing merges: %v", bad)
	}
}

// TestReview_AdmissionsOnStreams reports how often adds take the file's
// write lock on a uniform and on a Zipf stream, counted by a hook in
// admit and turn: admissions are not the only lock takes.
func TestReview_AdmissionsOnStreams(t *testing.T) {
	var locks atomic.Uint64
	testHookTableLock = func() { locks.Add(1) }
	defer func() { testHookTableLock = nil }()
	const n = 200_000
	for _, s := range []struct {
		name string
		key  func(r *rand.Rand, z *rand.Zipf) string
	}{
		{"uniform", func(r *rand.Rand, _ *rand.Zipf) string { return fmt.Sprintf("u%d", r.IntN(1_000_000)) }},
		{"uniform-10k", func(r *rand.Rand, _ *rand.Zipf) string { return fmt.Sprintf("u%d", r.IntN(10_000)) }},
		{"zipf-1.1", func(_ *rand.Rand, z *rand.Zipf) string { return fmt.Sprintf("z%d", z.Uint64()) }},
	} {
		locks.Store(0)
		c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Candidates: 100})
		r := rand.New(rand.NewPCG(1, 2))
		z := rand.NewZipf(r, 1.1, 1, 1_000_000)
		for range n {
			c.AddString(s.key(r, z))
		}
		st := c.Stats().Candidates
		share := float64(locks.Load()) / n
		t.Logf("%s: %d lock takes (%.3f%%), %d admissions", s.name, locks.Load(), 100*share, st.Admissions)
		if share > 0.02 {
			t.Errorf("%s: %d lock takes in %d adds (%.2f%%)", s.name, locks.Load(), n, 100*share)
		}
	}
}

// TestReview_WindowStorm: adders admitting keys while the period turns by
// Rotate, a handle closes mid-admission and another handle of the same
// process adds too: no deadlock, a whole table, the loud key listed at no
// less than its count, and a Freeze that waits for no admission forever.
func TestReview_WindowStorm(t *testing.T) {
	path := tempPath(t, "winstorm")
	cfg := CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: CountMinConfig{Rows: 4, Width: 1 << 10, Candidates: 16}}
	w := mustIn(t, OpenCountMinWindow, Path(path), cfg)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{})
				if err != nil {
					t.Error(err)
					return
				}
				defer h.Close()
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for i := range 30_000 {
					if g == 3 && i == 15_000 {
						h.Close() // mid-stream: its adds report ErrClosed from here on
					}
					key := fmt.Sprintf("q%d", r.IntN(500))
					if i%3 == 0 {
						key = "loud"
					}
					if _, err := h.AddString(key); err != nil && !errors.Is(err, ErrClosed) {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if err := w.Rotate(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("adders and Rotate did not finish in %v", patience)
	}
	for range 100 {
		w.AddString("loud")
	}
	hs, err := w.Top(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Key != "loud" || hs[0].Estimate < 100 {
		t.Errorf("Top(1) = %+v, want loud at 100 or more", hs)
	}
	if err := w.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	frozen := make(chan error, 1)
	go func() { frozen <- w.Freeze() }()
	select {
	case err := <-frozen:
		if err != nil {
			t.Errorf("Freeze: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("Freeze blocked")
	}
	if _, err := w.AddString("loud"); !errors.Is(err, ErrFrozen) && !errors.Is(err, ErrReadOnly) {
		t.Errorf("add after Freeze: %v", err)
	}
}

// TestReview_CloseDuringAdmissions: handles closed while their goroutines
// admit keys leave a table that a later handle lists and admits into (the
// lock a closed handle held is recovered).
func TestReview_CloseDuringAdmissions(t *testing.T) {
	path := tempPath(t, "closeadmit")
	c0 := mustOpen(t, path, CountMinConfig{Rows: 4, Width: 1 << 10, Candidates: 8})
	for round := range 5 {
		c := mustOpen(t, path, CountMinConfig{})
		var wg sync.WaitGroup
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), uint64(round)))
				for i := 0; ; i++ {
					// A flat stream over few keys: many admissions.
					if _, err := c.AddString(fmt.Sprintf("r%d-%d", round, r.IntN(64))); err != nil {
						return
					}
					if i == 5000 && g == 0 {
						c.Close()
					}
				}
			}()
		}
		wg.Wait()
		loud := fmt.Sprintf("loud-%d", round)
		end := time.Now().Add(patience)
		for range c0.Stats().Total + 100 {
			c0.AddString(loud)
			if time.Now().After(end) {
				t.Fatalf("round %d: adds of a loud key took more than %v", round, patience)
			}
		}
		if hs, _ := c0.Top(1); len(hs) != 1 || hs[0].Key != loud {
			t.Errorf("round %d: Top(1) = %+v, want %s", round, hs, loud)
		}
		if err := c0.Check(); err != nil && !errors.Is(err, ErrTornAdd) {
			t.Errorf("round %d: Check: %v", round, err)
		}
	}
}

// TestReview_CraftedLength: a slot whose length word says more than an
// int holds is listed with a length that is not negative (on 32-bit
// platforms 1<<31 is past an int).
func TestReview_CraftedLength(t *testing.T) {
	_, c := craftedTable(t)
	way := heldWay(t, c)
	atomic.StoreUint64(c.top.slotWord(way, 3), 1<<40) // a prefix, whose hash names it
	hs, err := c.Top(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Length < 0 {
			t.Errorf("%q listed with length %d", h.Key, h.Length)
		}
	}
}

// TestReview_TurnHerd: the adds that reach a window's turn do not wait
// for it: one add claims the turn and walks the table under the lock,
// the others go on without the table meanwhile.
func TestReview_TurnHerd(t *testing.T) {
	w := mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: Window{Keep: 2},
		CountMin: CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 8}})
	w.AddString("first")
	w.Rotate()
	inTurn, release := make(chan struct{}), make(chan struct{})
	testHookTurn = func() { close(inTurn); <-release }
	defer func() { testHookTurn = nil }()
	turned := make(chan struct{})
	go func() {
		defer close(turned)
		w.AddString("turner") // claims the turn, and holds the lock in it
	}()
	<-inTurn
	testHookTurn = nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			w.AddString("other")
		}
	}()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("adds waited for another add's turn of the table")
	}
	close(release)
	<-turned
	for range 8 {
		w.AddString("other")
	}
	if hs, _ := w.Top(0); len(hs) == 0 || hs[0].Key != "other" {
		t.Errorf("Top after the turn = %+v", hs)
	}
}
