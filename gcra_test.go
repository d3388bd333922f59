package sketch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/shmsketch/sketch/internal/cells"
)

// gcraModel is the algorithm for one key at a time, exact, in a map: what
// a limiter without collisions must answer.
type gcraModel struct {
	interval, window uint64
	tat              map[string]uint64
}

func newGCRAModel(r Rate, burst uint64) *gcraModel {
	iv, _ := r.interval()
	return &gcraModel{interval: iv, window: (burst + 1) * iv, tat: map[string]uint64{}}
}

// decide is GCRA.AllowAt's answer, from the model.
func (m *gcraModel) decide(key string, cost, now uint64) RateDecision {
	peek := cost == 0
	if peek {
		cost = 1
	}
	base := max(m.tat[key], now)
	next := base + cost*m.interval
	d := RateDecision{Allowed: next-now <= m.window}
	if d.Allowed && !peek {
		m.tat[key] = next
		base = next
	}
	d.ResetAfter = time.Duration(base - now)
	if base-now <= m.window {
		d.Remaining = (m.window - (base - now)) / m.interval
	}
	if !d.Allowed {
		d.RetryAfter = time.Duration(next - now - m.window)
	}
	return d
}

func mustGCRA(t testing.TB, cfg GCRAConfig) *GCRA {
	t.Helper()
	g, err := OpenGCRA(Memory(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestGCRA_MatchesModel: with a grid far wider than the keys, every
// answer (allowed, remaining, retry-after, reset-after) is the exact
// algorithm's, over bursts, idle gaps, costs and peeks, and the counts
// in Stats are the decisions'.
func TestGCRA_MatchesModel(t *testing.T) {
	for _, tc := range []struct {
		rate  Rate
		burst uint64
	}{
		{Rate{10, time.Second}, 20},
		{Rate{1, time.Minute}, 0},
		{Rate{3, time.Second}, 5}, // an interval of 333,333,333.3 ns, kept as ...334
		{Rate{1000, time.Second}, 1},
	} {
		t.Run(fmt.Sprintf("%v burst %d", tc.rate, tc.burst), func(t *testing.T) {
			g := mustGCRA(t, GCRAConfig{Rate: tc.rate, Burst: tc.burst, Rows: 4, Width: 1 << 16})
			m := newGCRAModel(tc.rate, tc.burst)
			r := rand.New(rand.NewPCG(1, 2))
			now := uint64(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC).UnixNano())
			var allowed, refused, cost uint64
			for i := range 20000 {
				switch r.IntN(100) {
				case 0: // an idle gap of up to two windows
					now += r.Uint64N(2 * m.window)
				case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10:
					now += r.Uint64N(m.interval)
				}
				key := fmt.Sprint("client-", r.IntN(8))
				c := r.Uint64N(min(tc.burst+2, 4))
				want := m.decide(key, c, now)
				got, err := g.AllowAt([]byte(key), c, time.Unix(0, int64(now)))
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("decision %d, AllowAt(%q, %d, %d): (-want +got)\n%s", i, key, c, now, diff)
				}
				switch {
				case c == 0:
				case got.Allowed:
					allowed, cost = allowed+1, cost+c
				default:
					refused++
				}
			}
			s := g.Stats()
			if s.Allowed != allowed || s.Refused != refused || s.Cost != cost {
				t.Errorf("Stats counted %d allowed, %d refused, cost %d; want %d, %d, %d", s.Allowed, s.Refused, s.Cost, allowed, refused, cost)
			}
			if refused == 0 || allowed == 0 {
				t.Errorf("the stream had %d allowed and %d refused: it tests nothing", allowed, refused)
			}
		})
	}
}

// gcraBound checks the limiter's promise on a log of allowed decisions of
// one key, in the order of their times: over any span [a, b] of the
// decisions' times, the cost allowed is at most (b-a)/interval + burst+1.
func gcraBound(t *testing.T, key string, times, costs []uint64, interval, burst uint64) {
	t.Helper()
	for i := range times {
		var sum uint64
		for j := i; j < len(times); j++ {
			sum += costs[j]
			if sum*interval > times[j]-times[i]+(burst+1)*interval {
				t.Errorf("key %s: %d allowed between %d and %d ns, more than %d/interval + %d", key, sum, times[i], times[j], times[j]-times[i], burst+1)
				return
			}
		}
	}
}

// TestGCRA_CollisionsOnlyStricter: in a grid of 2 x 4 cells shared by 40
// keys, no key is ever allowed past the bound, and every refusal the
// exact algorithm would allow is a collision's (the key's cells all hold
// a later time than its own).
func TestGCRA_CollisionsOnlyStricter(t *testing.T) {
	rate, burst := Rate{100, time.Second}, uint64(3)
	g := mustGCRA(t, GCRAConfig{Rate: rate, Burst: burst, Rows: 2, Width: 4})
	m := newGCRAModel(rate, burst)
	r := rand.New(rand.NewPCG(3, 4))
	now := uint64(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC).UnixNano())
	times, costs := map[string][]uint64{}, map[string][]uint64{}
	stricter := 0
	for range 20000 {
		now += r.Uint64N(m.interval / 4)
		key := fmt.Sprint("k", r.IntN(40))
		lo, hi := cells.Hash([]byte(key), g.l.Seed)
		if tat := g.l.TAT(lo, hi); tat < m.tat[key] {
			t.Fatalf("key %s: the grid's time %d is below the key's own %d", key, tat, m.tat[key])
		}
		d, err := g.AllowAt([]byte(key), 1, time.Unix(0, int64(now)))
		if err != nil {
			t.Fatal(err)
		}
		alone := m.decide(key, 0, now).Allowed // peeks: what the key alone would get
		switch {
		case d.Allowed && !alone:
			t.Fatalf("key %s allowed at %d where alone it would not be", key, now)
		case d.Allowed:
			m.tat[key] = max(m.tat[key], now) + m.interval
			times[key], costs[key] = append(times[key], now), append(costs[key], 1)
		case alone:
			stricter++
		}
	}
	for key := range times {
		gcraBound(t, key, times[key], costs[key], m.interval, burst)
	}
	if stricter == 0 {
		t.Errorf("no collision made a key stricter: the grid is too wide to test it")
	}
	t.Logf("%d decisions stricter than the key alone would get", stricter)
}

// TestGCRA_RacingGoroutinesAtOneInstant: goroutines of two handles all
// deciding one key at one instant are allowed exactly Burst+1 requests
// between them, never one more: racing decisions are ordered.
func TestGCRA_RacingGoroutinesAtOneInstant(t *testing.T) {
	path := tempPath(t, "gcra")
	// Wide enough that a round's key shares no cell in every row with the
	// earlier rounds' busy keys: at 64 a row, one run in about 30 did (a
	// random seed), and its key was refused from the start.
	cfg := GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 99, Rows: 4, Width: 4096}
	var hs [2]*GCRA
	for i := range hs {
		g, err := OpenGCRA(Path(path), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		hs[i] = g
	}
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for round := range 20 {
		key := []byte(fmt.Sprint("key-", round))
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					d, err := hs[i%2].AllowAt(key, 1, at)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if n := allowed.Load(); n != 100 {
			t.Fatalf("round %d: %d of 400 racing requests allowed, want exactly burst+1 = 100", round, n)
		}
	}
}

// TestGCRA_BatchIsSingles: AllowBatch, in this build's core and in Go,
// leaves the grid and the answers that Allow of each key in turn does.
func TestGCRA_BatchIsSingles(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{50, time.Second}, Burst: 4, Rows: 3, Width: 32, Seed: 7}
	for _, core := range []cells.GCRACore{cells.GCRAGo{}, buildCores.GCRA} {
		t.Run(core.Name(), func(t *testing.T) {
			single, batch := mustGCRA(t, cfg), mustGCRA(t, cfg)
			batch.core = core
			r := rand.New(rand.NewPCG(5, 6))
			keys := make([][]byte, 300)
			for i := range keys {
				keys[i] = []byte(fmt.Sprint("k", r.IntN(60)))
			}
			at := uint64(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC).UnixNano())
			for round := range 5 {
				now := at + uint64(round)*30*uint64(time.Millisecond)
				allowed := make([]bool, len(keys))
				tats := make([]uint64, len(keys))
				core.DecideBatch(&batch.l, keys, now, uint64(round%2+1), allowed, tats)
				for i, k := range keys {
					lo, hi := cells.Hash(k, single.l.Seed)
					a, tat := single.l.Decide(lo, hi, now, uint64(round%2+1))
					if a != allowed[i] || tat != tats[i] {
						t.Fatalf("round %d key %d: batch (%v, %d), single (%v, %d)", round, i, allowed[i], tats[i], a, tat)
					}
				}
			}
			if diff := cmp.Diff(gcraCells(single), gcraCells(batch)); diff != "" {
				t.Errorf("grids differ (-single +batch)\n%s", diff)
			}
		})
	}
}

// TestGCRA_AllowBatchAnswers: a batch of one key asked many times is
// allowed its burst+1 and refused the rest, in order, in this build's
// core, and counted in Stats.
func TestGCRA_AllowBatchAnswers(t *testing.T) {
	g := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 4, Rows: 3, Width: 4096}) // three keys that share no cell
	keys := make([][]byte, 300)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("k", i%3))
	}
	out := make([]RateDecision, len(keys))
	if err := g.AllowBatch(keys, 1, out); err != nil {
		t.Fatal(err)
	}
	for i, d := range out {
		if want := i/3 < 5; d.Allowed != want {
			t.Fatalf("request %d (key %s): allowed %v, want %v", i, keys[i], d.Allowed, want)
		}
	}
	if s := g.Stats(); s.Allowed != 15 || s.Refused != 285 || s.Cost != 15 {
		t.Errorf("Stats: %d allowed, %d refused, cost %d; want 15, 285, 15", s.Allowed, s.Refused, s.Cost)
	}
	if err := g.AllowBatch(keys[:3], 0, out); err != nil || out[0].Allowed || out[0].RetryAfter <= 0 {
		t.Errorf("a peek batch after the burst: %+v, %v; want refused with a retry-after", out[0], err)
	}
}

// gcraCells is a copy of the limiter's grid.
func gcraCells(g *GCRA) []uint64 {
	n := uintptr(g.l.Rows) * g.l.RowBytes / 8
	return append([]uint64(nil), unsafe.Slice((*uint64)(g.l.Cells), n)...)
}

// TestGCRA_Peek: a cost of 0 answers as a request of cost 1 would be
// answered and changes nothing.
func TestGCRA_Peek(t *testing.T) {
	g := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Second}, Burst: 1, Rows: 2, Width: 16})
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	k := []byte("k")
	want := []RateDecision{
		{Allowed: true, Remaining: 2},                    // peek: the whole burst
		{Allowed: true, Remaining: 1, ResetAfter: 1e9},   // counted
		{Allowed: true, Remaining: 1, ResetAfter: 1e9},   // peek
		{Allowed: true, Remaining: 0, ResetAfter: 2e9},   // counted
		{Remaining: 0, ResetAfter: 2e9, RetryAfter: 1e9}, // peek: refused
		{Remaining: 0, ResetAfter: 2e9, RetryAfter: 1e9}, // refused
		{Remaining: 0, ResetAfter: 2e9, RetryAfter: 1e9}, // peek
	}
	for i, cost := range []uint64{0, 1, 0, 1, 0, 1, 0} {
		got, err := g.AllowAt(k, cost, at)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i], got); diff != "" {
			t.Errorf("call %d (cost %d): (-want +got)\n%s", i, cost, diff)
		}
	}
	if s := g.Stats(); s.Allowed != 2 || s.Refused != 1 {
		t.Errorf("Stats counted %d allowed, %d refused; want 2 and 1 (peeks uncounted)", s.Allowed, s.Refused)
	}
}

// TestGCRA_Refusals: what a limiter refuses, each with its sentinel and
// the file's name.
func TestGCRA_Refusals(t *testing.T) {
	path := tempPath(t, "gcra")
	g, err := OpenGCRA(Path(path), GCRAConfig{Rate: Rate{10, time.Second}, Burst: 2, Rows: 2, Width: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ro, err := OpenGCRA(Path(path), GCRAConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"cost past burst+1", func() error { _, err := g.Allow([]byte("k"), 4); return err }, ErrInvalidArgument},
		{"batch cost past burst+1", func() error { return g.AllowBatch(nil, 4, nil) }, ErrInvalidArgument},
		{"batch answers short", func() error { return g.AllowBatch(make([][]byte, 2), 1, make([]RateDecision, 1)) }, ErrInvalidArgument},
		{"before 1970", func() error { _, err := g.AllowAt([]byte("k"), 1, time.Unix(-1, 0)); return err }, ErrInvalidArgument},
		{"read-only allow", func() error { _, err := ro.Allow([]byte("k"), 1); return err }, ErrReadOnly},
		{"read-only batch", func() error { return ro.AllowBatch(make([][]byte, 1), 1, make([]RateDecision, 1)) }, ErrReadOnly},
		{"read-only reset", ro.Reset, ErrReadOnly},
		{"merge into read-only", func() error { return ro.Merge(g) }, ErrReadOnly},
		{"another rate", func() error {
			_, err := OpenGCRA(Path(path), GCRAConfig{Rate: Rate{20, time.Second}, Burst: 2})
			return err
		}, ErrIncompatible},
		{"another burst", func() error {
			_, err := OpenGCRA(Path(path), GCRAConfig{Rate: Rate{10, time.Second}, Burst: 3})
			return err
		}, ErrIncompatible},
		{"another shape", func() error { _, err := OpenGCRA(Path(path), GCRAConfig{Rows: 2, Width: 32}); return err }, ErrIncompatible},
		{"merge another rate", func() error {
			o := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Second}, Burst: 2, Rows: 2, Width: 16, Seed: g.l.Seed})
			return g.Merge(o)
		}, ErrIncompatible},
		{"merge another seed", func() error {
			o := mustGCRA(t, GCRAConfig{Rate: Rate{10, time.Second}, Burst: 2, Rows: 2, Width: 16, Seed: g.l.Seed + 1})
			return g.Merge(o)
		}, ErrIncompatible},
	} {
		err := tc.call()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
	if d, err := ro.Allow([]byte("k"), 0); err != nil || !d.Allowed || d.Remaining != 3 {
		t.Errorf("a read-only handle's peek: %+v, %v; want an idle key's whole burst", d, err)
	}
	// One instant for the burst and the peek: a token comes back every
	// 100 ms, and a busy machine may take that long to freeze.
	at := time.Now()
	if _, err := g.AllowAt([]byte("k"), 3, at); err != nil {
		t.Errorf("a cost of burst+1 is allowed on an idle key: %v", err)
	}
	if err := g.Freeze(); err != nil {
		t.Fatal(err)
	}
	if d, err := g.AllowAt([]byte("k"), 0, at); err != nil || d.Allowed || d.Remaining != 0 {
		t.Errorf("a frozen limiter's peek after the burst: %+v, %v; want refused, none left", d, err)
	}
}

// TestGCRAConfig_Invalid: configs that cannot make a limiter, each
// ErrInvalidConfig.
func TestGCRAConfig_Invalid(t *testing.T) {
	for _, cfg := range []GCRAConfig{
		{},                               // no rate: cannot create in memory
		{Burst: 1},                       // a burst without a rate
		{Rate: Rate{0, time.Second}},     // no count
		{Rate: Rate{1, 0}},               // no period
		{Rate: Rate{2, time.Nanosecond}}, // faster than one a nanosecond
		{Rate: Rate{1, time.Hour}, Burst: 1 << 40},
		{Rate: Rate{1, time.Second}, Keys: -1},
		{Rate: Rate{1, time.Second}, Keys: 10, Rows: 2, Width: 8},
		{Rate: Rate{1, time.Second}, Rows: 17, Width: 8},
		{Rate: Rate{1, time.Second}, Rows: 2},
	} {
		if _, err := OpenGCRA(Memory(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("OpenGCRA(%+v) error %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if n, err := (GCRAConfig{Rate: Rate{1, time.Second}}).Bytes(); err != nil || n < 1<<20 {
		t.Errorf("the default limiter needs %d bytes (%v), want at least 1 MiB", n, err)
	}
}

// TestParseRate: rates as nginx writes them, and what is refused.
func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{
		"10r/s": {10, time.Second}, "10/s": {10, time.Second}, "30r/m": {30, time.Minute},
		"1/m": {1, time.Minute}, "5/h": {5, time.Hour}, "100/10s": {100, 10 * time.Second},
		"7/1m30s": {7, 90 * time.Second},
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := ParseRate(got.String()); err != nil || back != got {
			t.Errorf("ParseRate(%q.String() = %q) = %v, %v", in, got.String(), back, err)
		}
	}
	for _, in := range []string{"", "10", "/s", "0/s", "-1/s", "10/x", "10/-1s", "10/0s", "x/s", "3/1ns", "10rr/s", "18446744073709551616/s"} {
		if r, err := ParseRate(in); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ParseRate(%q) = %v, %v; want ErrInvalidArgument", in, r, err)
		}
	}
}

// TestGCRA_MergeRefusesWhatEitherWould: after a merge, a key is as busy
// as in the busier limiter.
func TestGCRA_MergeRefusesWhatEitherWould(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{1, time.Second}, Burst: 2, Rows: 3, Width: 1024, Seed: 9}
	a, b := mustGCRA(t, cfg), mustGCRA(t, cfg)
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for range 3 {
		b.AllowAt([]byte("loud"), 1, at)
	}
	a.AllowAt([]byte("quiet"), 1, at)
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if d, _ := a.AllowAt([]byte("loud"), 1, at); d.Allowed {
		t.Errorf("after the merge, loud is allowed in a: %+v", d)
	}
	if d, _ := a.AllowAt([]byte("quiet"), 0, at); d.Remaining != 2 {
		t.Errorf("after the merge, quiet has %d left in a, want 2", d.Remaining)
	}
}

// TestGCRA_CheckDamage: a time no decision can leave is ErrDamaged.
func TestGCRA_CheckDamage(t *testing.T) {
	g := mustGCRA(t, GCRAConfig{Rate: Rate{1, time.Second}, Rows: 2, Width: 16})
	if _, err := g.Allow([]byte("k"), 1); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); err != nil {
		t.Fatalf("Check of a used limiter: %v", err)
	}
	atomic.StoreUint64((*uint64)(unsafe.Add(g.l.Cells, 8*5)), ^uint64(0))
	if err := g.Check(); !errors.Is(err, ErrDamaged) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check with a cell at 2^64-1: %v, want ErrDamaged", err)
	}
}

// TestGCRA_ZeroConfigAttaches: the zero config attaches to a limiter of
// any rate and reads it back in Config; it creates none.
func TestGCRA_ZeroConfigAttaches(t *testing.T) {
	path := tempPath(t, "gcra")
	cfg := GCRAConfig{Rate: Rate{3, time.Minute}, Burst: 7, Keys: 100}
	g, err := OpenGCRA(Path(path), cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	z, err := OpenGCRA(Path(path), GCRAConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	want := GCRAConfig{Rate: Rate{3, time.Minute}, Burst: 7, Rows: 4, Width: 1024}
	if diff := cmp.Diff(want, z.Config()); diff != "" {
		t.Errorf("Config (-want +got)\n%s", diff)
	}
	if _, err := OpenGCRA(Path(tempPath(t, "none")), GCRAConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("the zero config on no file: %v, want ErrInvalidConfig", err)
	}
}

// TestDivRecip: a decision's division by multiplication is the division,
// for random and edge dividends and divisors.
func TestDivRecip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ds := []uint64{1, 2, 3, 7, 1e6, 1e8, 333333334, 1<<32 - 1, 1 << 32, 1<<62 - 1, 1 << 62, 1<<63 + 5, ^uint64(0)}
	for range 200 {
		ds = append(ds, r.Uint64()>>r.IntN(64)|1)
	}
	for _, d := range ds {
		recip := ^uint64(0) / d
		xs := []uint64{0, 1, d - 1, d, d + 1, 2*d - 1, ^uint64(0), ^uint64(0) - 1, ^uint64(0) / d * d}
		for range 200 {
			xs = append(xs, r.Uint64()>>r.IntN(64))
		}
		for _, x := range xs {
			if got, want := divRecip(x, d, recip), x/d; got != want {
				t.Fatalf("divRecip(%d, %d) = %d, want %d", x, d, got, want)
			}
		}
	}
}

// TestGCRA_ExportTimesMerge: a limiter that merges another's busy times
// refuses what the other would, and its keys keep their own times; an
// idle grid exports only its header.
func TestGCRA_ExportTimesMerge(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 2, Rows: 3, Width: 1 << 14, Seed: 11}
	a, b := mustGCRA(t, cfg), mustGCRA(t, cfg)
	if x, err := a.ExportTimes(); err != nil || len(x) != gcraTimesHead {
		t.Fatalf("an idle limiter exports %d bytes (%v), want the %d of its header", len(x), err, gcraTimesHead)
	}
	for i := range 50 {
		b.AllowString(fmt.Sprint("b-", i), 3) // each b-i's whole burst
	}
	a.AllowString("a-own", 1)
	x, err := b.ExportTimes()
	if err != nil {
		t.Fatal(err)
	}
	if len(x) > gcraTimesHead+50*3*12 {
		t.Errorf("50 busy keys export %d bytes", len(x))
	}
	if err := a.MergeTimes(x); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if d, _ := a.AllowString(fmt.Sprint("b-", i), 1); d.Allowed {
			t.Fatalf("b-%d is allowed after the merge of b's times, which refuse it", i)
		}
	}
	if d, _ := a.AllowString("a-own", 0); d.Remaining != 2 {
		t.Errorf("a-own has %d left after the merge, want its own 2", d.Remaining)
	}
	if err := a.MergeTimes(x); err != nil {
		t.Errorf("merging the same times again: %v", err)
	}
}

// TestGCRA_MergeTimesRefuses: times of another shape or rate, and cut or
// crafted exports, change nothing.
func TestGCRA_MergeTimesRefuses(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 2, Rows: 2, Width: 64}
	a := mustGCRA(t, cfg)
	other := mustGCRA(t, GCRAConfig{Rate: Rate{2, time.Hour}, Burst: 2, Rows: 2, Width: 64})
	other.AllowString("k", 1)
	ox, _ := other.ExportTimes()
	if err := a.MergeTimes(ox); !errors.Is(err, ErrIncompatible) {
		t.Errorf("times of another rate: %v, want ErrIncompatible", err)
	}
	same := mustGCRA(t, cfg)
	same.AllowString("k", 1)
	sx, _ := same.ExportTimes()
	before := gcraCells(a)
	for name, bad := range map[string][]byte{
		"empty":       nil,
		"magic":       append([]byte("XXGCRAT1"), sx[8:]...),
		"cut index":   append(append([]byte(nil), sx[:gcraTimesHead]...), 0x80),
		"cut time":    append(append([]byte(nil), sx[:gcraTimesHead]...), 1),
		"past grid":   append(append([]byte(nil), sx[:gcraTimesHead]...), 128, 1, 5),
		"zero step":   append(append([]byte(nil), sx[:gcraTimesHead]...), 1, 5, 0, 5),
		"header only": sx[:gcraTimesHead-1],
	} {
		if err := a.MergeTimes(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if diff := cmp.Diff(before, gcraCells(a)); diff != "" {
		t.Errorf("a refused merge changed cells (-before +after)\n%s", diff)
	}
}

// TestGCRA_MergeTimesClampsTheFuture: a time further ahead than any
// decision leaves (a clock far ahead, or a crafted export) is taken as
// now plus the window: a key is never blocked past one window.
func TestGCRA_MergeTimesClampsTheFuture(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{1, time.Second}, Burst: 1, Rows: 1, Width: 4}
	a := mustGCRA(t, cfg)
	x := make([]byte, gcraTimesHead)
	copy(x, gcraTimesMagic)
	for i, v := range []uint64{1, 4, uint64(time.Second), uint64(2 * time.Second), uint64(time.Now().Add(24 * time.Hour).UnixNano())} {
		putLE64(x[8+8*i:], v)
	}
	x = append(x, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f) // cell 0, far ahead
	x = append(x, 1, 1, 1, 1, 1, 1)                                        // cells 1-3, a nanosecond after
	if err := a.MergeTimes(x); err != nil {
		t.Fatal(err)
	}
	limit := uint64(time.Now().Add(2 * time.Second).UnixNano())
	for i, v := range gcraCells(a) {
		if v > limit {
			t.Errorf("cell %d holds %d, past now plus the window (%d)", i, v, limit)
		}
	}
}

func putLE64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// FuzzGCRA_MergeTimes: any bytes merge or are refused; none panics, and
// no cell ends past now plus the window.
func FuzzGCRA_MergeTimes(f *testing.F) {
	cfg := GCRAConfig{Rate: Rate{10, time.Second}, Burst: 3, Rows: 2, Width: 16}
	src, err := OpenGCRA(Memory(), cfg)
	if err != nil {
		f.Fatal(err)
	}
	src.AllowString("x", 2)
	x, _ := src.ExportTimes()
	src.Close()
	f.Add(x)
	f.Add(x[:gcraTimesHead])
	f.Fuzz(func(t *testing.T, b []byte) {
		g := mustGCRA(t, cfg)
		g.MergeTimes(b)
		limit := uint64(time.Now().UnixNano()) + uint64(400*time.Millisecond)
		for i, v := range gcraCells(g) {
			if v > limit {
				t.Fatalf("cell %d at %d, past now plus the window", i, v)
			}
		}
	})
}
