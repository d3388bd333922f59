package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// lossSide is one structure of a Redis-loss test: a host's (synced) or
// the union's (fed every host's adds, no fleet part).
type lossSide struct {
	add    func(k string)
	est    func(k string) uint64
	rotate func() // nil for a structure without periods
}

// lossKinds are the kinds that combine by addition, each opened for a
// host (a is its agent) or for the union (a nil).
var lossKinds = []struct {
	name string
	open func(t *testing.T, a *Agent) lossSide
}{
	{"countmin", func(t *testing.T, a *Agent) lossSide {
		cfg := sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: a != nil, Seed: 0x1055}
		c := mustOpen(t, sketch.OpenCountMin, sketch.Path(filepath.Join(t.TempDir(), "hits")), cfg)
		if a != nil {
			if err := a.AddCountMin("hits", c); err != nil {
				t.Fatal(err)
			}
		}
		return lossSide{add: func(k string) { c.AddString(k) }, est: c.EstimateString}
	}},
	{"countminwindow", func(t *testing.T, a *Agent) lossSide {
		cfg := sketch.CountMinWindowConfig{Window: sketch.Window{Period: forever, Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: a != nil, Seed: 0x1055}}
		w := mustOpen(t, sketch.OpenCountMinWindow, sketch.Path(filepath.Join(t.TempDir(), "rate")), cfg)
		if a != nil {
			if err := a.AddCountMinWindow("rate", w); err != nil {
				t.Fatal(err)
			}
		}
		rotate := func() {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		return lossSide{add: func(k string) { w.AddString(k) }, est: w.EstimateString, rotate: rotate}
	}},
	{"countingbloom", func(t *testing.T, a *Agent) lossSide {
		cfg := sketch.CountingBloomConfig{Capacity: 10000, Seed: 0x1055, Fleet: a != nil}
		b := mustOpen(t, sketch.OpenCountingBloom, sketch.Path(filepath.Join(t.TempDir(), "bans")), cfg)
		if a != nil {
			if err := a.AddCountingBloom("bans", b); err != nil {
				t.Fatal(err)
			}
		}
		return lossSide{add: func(k string) { b.AddString(k) }, est: b.EstimateString}
	}},
}

// remembered is what the agent's Stats say of its only structure.
func remembered(t *testing.T, a *Agent) int {
	t.Helper()
	st := a.Stats().Structures
	if len(st) != 1 {
		t.Fatalf("host %s syncs %d structures, want 1", a.cfg.Host, len(st))
	}
	return st[0].Remembered
}

// TestSync_RedisLostKeepsFleetCounts: three hosts of each kind that
// combines by addition, synced (a window in two periods); Redis restarts
// empty. Host 0's round, the first after the loss, finds only itself in
// Redis, and still answers exactly as one structure fed every host's
// adds: it sums the other hosts' remembered counts, and its Stats say
// so. Adds made after the loss on every host are then counted exactly
// once on every host, once each has pushed again, and nothing is
// remembered any more.
func TestSync_RedisLostKeepsFleetCounts(t *testing.T) {
	for _, kind := range lossKinds {
		t.Run(kind.name, func(t *testing.T) {
			rs := redistest.Start(t)
			union := kind.open(t, nil)
			var agents []*Agent
			var sides []lossSide
			for h := range hosts {
				a := newAgent(t, rs, fmt.Sprint("host", h))
				agents, sides = append(agents, a), append(sides, kind.open(t, a))
			}
			keys := map[string]bool{}
			feed := func(h, from int) {
				for i := from; i < from+300; i++ {
					k := key(h*150 + i)
					sides[h].add(k)
					union.add(k)
					keys[k] = true
				}
			}
			check := func(when string, hs ...int) {
				t.Helper()
				for _, h := range hs {
					for k := range keys {
						if got, want := sides[h].est(k), union.est(k); got != want {
							t.Fatalf("%s: host %d: Estimate(%q) = %d; one structure fed every host's adds says %d", when, h, k, got, want)
						}
					}
				}
			}
			for h := range hosts {
				feed(h, 0)
			}
			if union.rotate != nil { // a second period, both in the window
				mustSync(t, agents...)
				for _, s := range append(sides, union) {
					s.rotate()
				}
				for h := range hosts {
					feed(h, 500)
				}
			}
			mustSync(t, agents...)
			mustSync(t, agents...)
			check("before the loss", 0, 1, 2)

			rs.Stop()
			rs.Start(t)
			mustSync(t, agents[0])
			check("after Redis restarted empty and a round of host 0 alone", 0)
			if got := remembered(t, agents[0]); got != 2 {
				t.Errorf("after the loss host 0's Stats say %d hosts remembered, want 2", got)
			}

			for h := range hosts {
				feed(h, 1000)
			}
			mustSync(t, agents[1], agents[2], agents[0])
			mustSync(t, agents...)
			check("after adds since the loss and two rounds of each", 0, 1, 2)
			for h, a := range agents {
				if got := remembered(t, a); got != 0 {
					t.Errorf("host %d remembers %d hosts once every host pushed again, want 0", h, got)
				}
			}
		})
	}
}

// TestSync_WindowForgetsPeriodsLeft: the counts a Count-Min window's
// agent remembers of a period are dropped once the period has left the
// window, so that its memory holds at most the window's periods.
func TestSync_WindowForgetsPeriodsLeft(t *testing.T) {
	rs := redistest.Start(t)
	var agents []*Agent
	var sides []lossSide
	for h := range 2 {
		a := newAgent(t, rs, fmt.Sprint("host", h))
		agents, sides = append(agents, a), append(sides, lossKinds[1].open(t, a))
	}
	periods := func() []uint64 {
		var ps []uint64
		for p := range agents[0].members[0].additiveWindow.seen {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		return ps
	}
	for range 4 {
		for _, s := range sides {
			s.add("k")
		}
		mustSync(t, agents...)
		for _, s := range sides {
			s.rotate()
		}
	}
	mustSync(t, agents...)
	if got, want := periods(), []uint64{3, 4}; !slices.Equal(got, want) {
		t.Errorf("host 0 remembers periods %v after 4 turns of a window of 2, want %v", got, want)
	}
}

// TestSync_RetiredHostKeptUntilForget: a host retired (its key and its
// member of the hosts set deleted) is still counted by the other hosts,
// from their memory, as after a Redis that lost its data, and their
// Stats say so; once Forget drops it, a round stops counting it.
func TestSync_RetiredHostKeptUntilForget(t *testing.T) {
	rs := redistest.Start(t)
	a, b, _, cb := syncedPair(t, rs)
	a.Close()
	ctx := context.Background()
	rc := rs.Client(t)
	rc.SRem(ctx, "{f/hits}:hosts", "a")
	rc.Del(ctx, "{f/hits}:host:a")
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 50 {
		t.Errorf("b estimates retired a's key at %d before Forget, want 50 (remembered)", got)
	}
	if got := remembered(t, b); got != 1 {
		t.Errorf("b's Stats say %d hosts remembered, want 1", got)
	}
	b.Forget("a")
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 0 {
		t.Errorf("b estimates retired a's key at %d after Forget, want 0", got)
	}
	if got := remembered(t, b); got != 0 {
		t.Errorf("b's Stats say %d hosts remembered after Forget, want 0", got)
	}
}

// TestSync_RestartedAgentAfterLoss: the limit of the memory. An agent
// restarted while Redis has lost its data remembers nothing, so its
// round stores what Redis holds (here nothing of the other host) until
// the other host pushes again.
func TestSync_RestartedAgentAfterLoss(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, _ := syncedPair(t, rs)
	a.Close()
	rs.Client(t).FlushAll(context.Background())
	again := newAgent(t, rs, "a")
	if err := again.AddCountMin("hits", ca); err != nil {
		t.Fatal(err)
	}
	mustSync(t, again)
	t.Logf("a restarted after a flush estimates b's key (30 adds) at %d until b pushes again", ca.EstimateString("kb"))
	if got := remembered(t, again); got != 0 {
		t.Errorf("a restarted agent remembers %d hosts, want 0", got)
	}
	mustSync(t, b, again)
	if got := ca.EstimateString("kb"); got != 30 {
		t.Errorf("after b pushed again a estimates b's key at %d, want 30", got)
	}
}
