package fleet

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// clusterStructures are a host's structures, one of every kind the agent
// syncs, in one arena: the additive kinds have a fleet part and the
// Count-Min ones a candidate table.
type clusterStructures struct {
	arena    *sketch.Arena
	clients  *sketch.Distinct
	seen     *sketch.Bloom
	ids      *sketch.BloomWindow
	visitors *sketch.DistinctWindow
	hits     *sketch.CountMin
	rate     *sketch.CountMinWindow
	bans     *sketch.CountingBloom
	api      *sketch.GCRA
}

// clusterNames are the structures' names in the arena: their hash tags,
// {f/name}, fall on every master of the test's cluster.
var clusterNames = []string{"clients", "seen", "ids", "visitors", "hits", "rate", "bans", "api"}

// openClusterArena creates the arena at a place, with one seed for every
// host, and the structures in it.
func openClusterArena(t *testing.T, at sketch.Place) *clusterStructures {
	t.Helper()
	ar := mustOpen(t, sketch.OpenArena, at, sketch.ArenaConfig{Size: 1 << 23, Seed: 0xc1a5})
	win := sketch.Window{Period: forever, Keep: 2}
	bloom := sketch.BloomConfig{Capacity: 20_000, FPRate: 0.001}
	cm := sketch.CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 16, Fleet: true}
	return &clusterStructures{
		arena:    ar,
		clients:  mustOpen(t, sketch.OpenDistinct, ar.Place("clients"), sketch.DistinctConfig{Precision: 14}),
		seen:     mustOpen(t, sketch.OpenBloom, ar.Place("seen"), bloom),
		ids:      mustOpen(t, sketch.OpenBloomWindow, ar.Place("ids"), sketch.BloomWindowConfig{Window: win, Bloom: bloom}),
		visitors: mustOpen(t, sketch.OpenDistinctWindow, ar.Place("visitors"), sketch.DistinctWindowConfig{Window: win, Distinct: sketch.DistinctConfig{Precision: 14}}),
		hits:     mustOpen(t, sketch.OpenCountMin, ar.Place("hits"), cm),
		rate:     mustOpen(t, sketch.OpenCountMinWindow, ar.Place("rate"), sketch.CountMinWindowConfig{Window: win, CountMin: cm}),
		bans:     mustOpen(t, sketch.OpenCountingBloom, ar.Place("bans"), sketch.CountingBloomConfig{Capacity: 10_000, Fleet: true}),
		api:      mustOpen(t, sketch.OpenGCRA, ar.Place("api"), sketch.GCRAConfig{Rate: slowRate, Burst: 4, Keys: 1024}),
	}
}

// add adds host h's keys: its distinct keys to every structure, each
// counted h+1 times, a loud key, and its bans.
func (s *clusterStructures) add(t *testing.T, h int) {
	t.Helper()
	first, n := hostKeys(h)
	for i := first; i < first+n; i++ {
		k := key(i)
		s.clients.AddString(k)
		s.seen.AddString(k)
		s.ids.AddString(k)
		s.visitors.AddString(k)
		s.hits.AddN([]byte(k), uint64(h+1))
		s.rate.AddN([]byte(k), uint64(h+1))
	}
	s.hits.AddN([]byte("loud"), uint64(1000*(h+1)))
	s.rate.AddN([]byte("loud"), uint64(1000*(h+1)))
	for i := range 200 {
		if _, err := s.bans.AddString(ban(h, i)); err != nil {
			t.Fatal(err)
		}
	}
}

func ban(h, i int) string { return fmt.Sprint("10.", h, ".0.", i) }

// clusterAgent is an agent of fleet "f" for host with a cluster client
// of its own, as a host has, closed at the test's end.
func clusterAgent(t *testing.T, c *redistest.Cluster, host string) *Agent {
	t.Helper()
	a, err := New(Config{Redis: c.Client(t), Fleet: "f", Host: host, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestSync_Cluster: three hosts' arenas, one structure of every synced
// kind each, synced through a Redis Cluster of three masters, with the
// structures' hash tags on every master. Every round of every host
// succeeds (no CROSSSLOT: a structure's keys share a slot), and after two
// rounds of each every host answers exactly as one structure fed every
// host's adds: the same registers and bits, the same estimates, bans and
// fleet Top, and the rate limiter refuses the key host 0 exhausted with
// host 0's decision. An unban on host 2 of host 0's bans reaches every
// host the same way.
func TestSync_Cluster(t *testing.T) {
	c := redistest.StartCluster(t)
	union := openClusterArena(t, sketch.Memory())
	var agents []*Agent
	var hosts []*clusterStructures
	for h := range 3 {
		path := filepath.Join(t.TempDir(), "sketches")
		s := openClusterArena(t, sketch.Path(path))
		s.add(t, h)
		union.add(t, h)
		a := clusterAgent(t, c, fmt.Sprint("host", h))
		add := func() error { return a.AddFile(path) }
		if h != 2 {
			add = func() error { return a.AddArena(s.arena) }
		}
		if err := add(); err != nil {
			t.Fatal(err)
		}
		agents, hosts = append(agents, a), append(hosts, s)
	}
	exhaust(t, hosts[0].api, "k")

	mustSync(t, agents...)
	mustSync(t, agents...)
	checkCluster(t, "after two rounds of every host", agents, hosts, union)
	checkSpread(t, c)

	// Host 2 unbans half of host 0's bans, which it holds none of.
	for i := 0; i < 200; i += 2 {
		if removed, err := hosts[2].bans.RemoveString(ban(0, i)); err != nil || !removed {
			t.Fatalf("host 2: Remove(%q) = %v, %v; want removed", ban(0, i), removed, err)
		}
		union.bans.RemoveString(ban(0, i))
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	checkCluster(t, "after host 2's unbans and two rounds of every host", agents, hosts, union)
}

// exhaust allows key's whole burst on g and checks the next is refused.
func exhaust(t *testing.T, g *sketch.GCRA, key string) {
	t.Helper()
	for i := range g.Config().Burst + 1 {
		if d, err := g.AllowString(key, 1); err != nil || !d.Allowed {
			t.Fatalf("request %d of an idle key: %+v, %v", i+1, d, err)
		}
	}
	if d, _ := g.AllowString(key, 1); d.Allowed {
		t.Fatal("a request past the burst allowed")
	}
}

// checkCluster checks every host answers as the union, one structure of
// each kind fed every host's adds.
func checkCluster(t *testing.T, when string, agents []*Agent, hosts []*clusterStructures, union *clusterStructures) {
	t.Helper()
	wantRegs, _ := union.clients.ExportRedis()
	wantBits, _ := union.seen.ExportBits()
	wantIDs, _ := union.ids.ExportPeriods()
	wantVisitors, _ := union.visitors.ExportPeriods()
	at := time.Now()
	wantAPI := mustAllow(t, hosts[0].api, "k", 0, at)
	for h, s := range hosts {
		if got, _ := s.clients.ExportRedis(); !bytes.Equal(got, wantRegs) || s.clients.Count() != union.clients.Count() {
			t.Errorf("%s: host %d: clients: Count() = %d, the union's %d (registers equal: %v)", when, h, s.clients.Count(), union.clients.Count(), bytes.Equal(got, wantRegs))
		}
		if got, _ := s.seen.ExportBits(); !bytes.Equal(got, wantBits) {
			t.Errorf("%s: host %d: seen: not the bits of every host's keys", when, h)
		}
		samePeriods(t, fmt.Sprintf("%s: host %d: ids", when, h), s.ids.ExportPeriods, wantIDs)
		samePeriods(t, fmt.Sprintf("%s: host %d: visitors", when, h), s.visitors.ExportPeriods, wantVisitors)
		if got, want := s.visitors.Count(), union.visitors.Count(); got != want {
			t.Errorf("%s: host %d: visitors: Count() = %d, the union's %d", when, h, got, want)
		}
		for i := range 3 * 3000 {
			k := key(i)
			if !s.seen.ContainsString(k) || !s.ids.ContainsString(k) {
				t.Fatalf("%s: host %d does not find %s in seen (%v) or ids (%v)", when, h, k, s.seen.ContainsString(k), s.ids.ContainsString(k))
			}
			sameEstimate(t, fmt.Sprintf("%s: host %d: hits", when, h), k, s.hits.EstimateString, union.hits.EstimateString)
			sameEstimate(t, fmt.Sprintf("%s: host %d: rate", when, h), k, s.rate.EstimateString, union.rate.EstimateString)
		}
		for b := range 3 {
			for i := range 200 {
				k := ban(b, i)
				if got, want := s.bans.EstimateString(k), union.bans.EstimateString(k); got != want || s.bans.ContainsString(k) != union.bans.ContainsString(k) {
					t.Fatalf("%s: host %d: bans: %q contains %v, estimate %d; the union's %v, %d", when, h, k, s.bans.ContainsString(k), got, union.bans.ContainsString(k), want)
				}
			}
		}
		sameTop(t, fmt.Sprintf("%s: host %d", when, h), agents[h], "hits", union.hits.EstimateString("loud"))
		sameTop(t, fmt.Sprintf("%s: host %d", when, h), agents[h], "rate", union.rate.EstimateString("loud"))
		if got := mustAllow(t, s.api, "k", 0, at); got != wantAPI || got.Allowed {
			t.Errorf("%s: host %d: api: %+v; host 0, which exhausted the key, %+v", when, h, got, wantAPI)
		}
	}
}

// samePeriods checks a window's periods hold the union's bytes.
func samePeriods(t *testing.T, what string, export func() ([]sketch.WindowPeriod, error), want []sketch.WindowPeriod) {
	t.Helper()
	got, err := export()
	if err != nil || len(got) != len(want) {
		t.Errorf("%s: %d periods (%v), the union's %d", what, len(got), err, len(want))
		return
	}
	for i := range got {
		if got[i].Period != want[i].Period || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("%s: period %d: not the union's period %d", what, got[i].Period, want[i].Period)
		}
	}
}

func sameEstimate(t *testing.T, what, k string, got, want func(string) uint64) {
	t.Helper()
	if g, w := got(k), want(k); g != w {
		t.Fatalf("%s: Estimate(%q) = %d, one sketch fed every host's adds says %d", what, k, g, w)
	}
}

// sameTop checks the fleet's loudest key of name, by a's Top, is the
// loud key every host added, at the union's estimate.
func sameTop(t *testing.T, what string, a *Agent, name string, want uint64) {
	t.Helper()
	top, err := a.Top(context.Background(), name, 1)
	if err != nil || len(top) != 1 || top[0].Key != "loud" || top[0].Estimate != want {
		t.Errorf("%s: Top(%q, 1) = %+v, %v; want loud at %d", what, name, top, err, want)
	}
}

// checkSpread checks that the keys of each structure share one slot, and
// that the structures' slots are on every master: the rounds crossed
// masters, each structure's keys on one.
func checkSpread(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	ctx := context.Background()
	cl := c.Client(t)
	var mu sync.Mutex
	found := map[string][]string{} // a node's address: its keys
	err := cl.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, "*").Result()
		mu.Lock()
		found[n.Options().Addr] = keys
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slots := map[string]map[int64]bool{} // a structure's tag: its keys' slots
	nodes := map[int]bool{}
	for i, addr := range c.Addrs {
		for _, k := range found[addr] {
			slot, err := cl.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatalf("CLUSTER KEYSLOT %s: %v", k, err)
			}
			tag, _, _ := strings.Cut(k, "}")
			if slots[tag] == nil {
				slots[tag] = map[int64]bool{}
			}
			slots[tag][slot] = true
			nodes[i] = true
		}
	}
	for _, name := range clusterNames {
		tag := "{f/" + name
		if len(slots[tag]) != 1 {
			t.Errorf("the keys of %q are in %d slots, want 1: %v", name, len(slots[tag]), slots[tag])
		}
		for slot := range slots[tag] {
			t.Logf("%q: slot %d, master %d", name, slot, c.Node(int(slot)))
		}
	}
	if len(slots) != len(clusterNames) || len(nodes) != len(c.Addrs) {
		t.Errorf("%d structures' keys on %d of %d masters, want %d on every master: %v", len(slots), len(nodes), len(c.Addrs), len(clusterNames), found)
	}
}
