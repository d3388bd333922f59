package fleet

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestSync_GCRAHostileNames: hosts and a structure whose names hold what
// delimits keys (braces, colons, slashes, percent signs) share their
// times as any others do, every key of the structure is in one Redis
// Cluster hash slot, and no key of another structure is touched.
func TestSync_GCRAHostileNames(t *testing.T) {
	rs := redistest.Start(t)
	c, ctx := rs.Client(t), context.Background()
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 1, Rows: 2, Width: 64, Seed: 9}
	name := "x}:times:y"
	var agents []*Agent
	var gs []*sketch.GCRA
	for _, host := range []string{"y}:meta", "%7D{h}/:hosts", "y"} {
		a := newAgent(t, rs, host)
		g := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
		if err := a.AddGCRA(name, g); err != nil {
			t.Fatal(err)
		}
		agents, gs = append(agents, a), append(gs, g)
	}
	// A structure "x" that host "y" would clash with, were names not escaped.
	bystander := newAgent(t, rs, "h")
	if err := bystander.AddGCRA("x", mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)); err != nil {
		t.Fatal(err)
	}
	mustSync(t, bystander)
	bystanderKeys := c.Keys(ctx, "{f/x}*").Val()

	gs[0].AllowString("k", 2)
	mustSync(t, agents...)
	for h, g := range gs {
		if d, _ := g.AllowString("k", 1); d.Allowed {
			t.Errorf("host %q allows the key host %q exhausted", agents[h].cfg.Host, agents[0].cfg.Host)
		}
	}
	keys := c.Keys(ctx, "*").Val()
	var ours []string
	for _, k := range keys {
		if !slices.Contains(bystanderKeys, k) {
			ours = append(ours, k)
		}
	}
	if len(ours) != 3+len(agents) { // meta, hosts, stamps, a times key a host
		t.Errorf("keys of %q: %q, want its description, hosts, push stamps and %d hosts' times", name, ours, len(agents))
	}
	for _, k := range ours {
		if keySlot(k) != keySlot(ours[0]) {
			t.Errorf("key %q in slot %d, %q in slot %d", k, keySlot(k), ours[0], keySlot(ours[0]))
		}
	}
	mustSync(t, bystander)
	if got := c.Keys(ctx, "{f/x}*").Val(); !equalSets(got, bystanderKeys) {
		t.Errorf("structure %q's keys %q became %q", "x", bystanderKeys, got)
	}
}

func equalSets(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestSync_GCRAHostileKeys: whatever another host's times key holds
// (garbage, a cut export, another shape's times, a Redis list), the round
// fails, never panics, merges the good hosts' times all the same, and
// lowers nothing; a listed host without a key is forgotten.
func TestSync_GCRAHostileKeys(t *testing.T) {
	rs := redistest.Start(t)
	c, ctx := rs.Client(t), context.Background()
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 1, Rows: 2, Width: 64, Seed: 10}
	otherShape := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), sketch.GCRAConfig{Rate: slowRate, Burst: 1, Rows: 2, Width: 128, Seed: 10})
	otherShape.AllowString("z", 1)
	wrongShape, _ := otherShape.ExportTimes()
	good := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
	good.AllowString("k", 1)
	whole, _ := good.ExportTimes()
	for name, set := range map[string]func(key string){
		"garbage":     func(key string) { c.Set(ctx, key, "not times", 0) },
		"empty":       func(key string) { c.Set(ctx, key, "", 0) },
		"cut":         func(key string) { c.Set(ctx, key, whole[:len(whole)-1], 0) },
		"other shape": func(key string) { c.Set(ctx, key, wrongShape, 0) },
		"a list":      func(key string) { c.RPush(ctx, key, "x") },
	} {
		t.Run(name, func(t *testing.T) {
			fleetName := "hostile-" + strings.ReplaceAll(name, " ", "-")
			var agents []*Agent
			var gs []*sketch.GCRA
			for _, host := range []string{"good", "me"} {
				a := newAgent(t, rs, host)
				a.cfg.Fleet = fleetName
				g := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
				if err := a.AddGCRA("api", g); err != nil {
					t.Fatal(err)
				}
				agents, gs = append(agents, a), append(gs, g)
			}
			gs[0].AllowString("k", 2)
			gs[1].AllowString("mine", 2)
			mustSync(t, agents[0])
			tag := "{" + fleetName + "/api}"
			c.SAdd(ctx, tag+":hosts", "bad", "no-key")
			set(tag + ":times:bad")
			err := agents[1].Sync(ctx)
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("Sync over a hostile host's key = %v, want ErrMismatch", err)
			}
			if s := agents[1].Stats(); s.State != StateRefused {
				t.Errorf("State = %s, want refused", s.State)
			}
			for _, key := range []string{"k", "mine"} {
				if d, _ := gs[1].AllowString(key, 1); d.Allowed {
					t.Errorf("%q allowed after the round: the good host's times not merged, or this host's lowered", key)
				}
			}
			hosts := c.SMembers(ctx, tag+":hosts").Val()
			if slices.Contains(hosts, "no-key") || !slices.Contains(hosts, "bad") {
				t.Errorf("hosts = %q: want the host without a key forgotten, the one with a hostile key kept", hosts)
			}
		})
	}
}

// TestSync_GCRARedisDown: with Redis down a round fails, the state is
// local, and each host goes on deciding with what it had: the key the
// other host exhausted stays refused, an idle key is allowed. A new,
// empty Redis is refilled by the next rounds, and times pushed then are
// shared again.
func TestSync_GCRARedisDown(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 1, Seed: 11}
	agents, gs := gcraHosts(t, rs, "api", cfg, 2)
	gs[0].AllowString("k", 2)
	mustSync(t, agents...)

	rs.Stop()
	generous := agents[1].cfg.Timeout
	agents[1].cfg.Timeout = 2 * time.Second // a round with Redis down fails, not waits
	if err := agents[1].Sync(context.Background()); err == nil {
		t.Fatal("Sync with Redis down succeeded")
	}
	agents[1].cfg.Timeout = generous
	if s := agents[1].Stats(); s.State != StateLocal || s.Structures[0].LastError == "" {
		t.Errorf("Stats with Redis down = %+v, want local with the error", s)
	}
	if d, _ := gs[1].AllowString("k", 1); d.Allowed {
		t.Error("with Redis down, host 1 allows the key host 0 exhausted before")
	}
	if d, _ := gs[1].AllowString("idle", 1); !d.Allowed {
		t.Error("with Redis down, host 1 refuses an idle key")
	}

	rs.Start(t)
	gs[0].AllowString("k2", 2)
	mustSync(t, agents[0], agents[1], agents[0])
	if d, _ := gs[1].AllowString("k2", 1); d.Allowed {
		t.Error("after Redis came back empty, host 1 allows the key host 0 exhausted since")
	}
	if d, _ := gs[0].AllowString("idle", 1); !d.Allowed || d.Remaining != 0 {
		t.Errorf("host 0 decides the key host 1 used once while Redis was down %+v, want allowed with none remaining", d)
	}
	if s := agents[1].Stats(); s.State != StateSynced || s.Structures[0].LastError != "" {
		t.Errorf("Stats after Redis came back = %+v, want synced", s)
	}
}

// TestAddArena_GCRA: a rate limiter in an arena is followed as the other
// kinds are (the kinds table's row), and shares its times with another
// host's arena.
func TestAddArena_GCRA(t *testing.T) {
	if !slices.Contains(SyncedKinds(), sketch.KindGCRA) {
		t.Fatalf("SyncedKinds() = %v, without %s", SyncedKinds(), sketch.KindGCRA)
	}
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 1}
	var agents []*Agent
	var gs []*sketch.GCRA
	for h := range 2 {
		ar := mustOpen(t, sketch.OpenArena, sketch.Path(filepath.Join(t.TempDir(), "arena")), sketch.ArenaConfig{Size: 1 << 22, Seed: 12})
		gs = append(gs, mustOpen(t, sketch.OpenGCRA, ar.Place("limits"), cfg))
		a := newAgent(t, rs, string(rune('a'+h)))
		if err := a.AddArena(ar); err != nil {
			t.Fatalf("AddArena: %v", err)
		}
		agents = append(agents, a)
	}
	gs[0].AllowString("k", 2)
	mustSync(t, agents...)
	if d, _ := gs[1].AllowString("k", 1); d.Allowed {
		t.Error("the second arena's limiter allows the key the first's exhausted")
	}
}

// TestMetrics_GCRA: a scrape lists a rate limiter as the other kinds,
// kind "gcra", synced after a round and local with Redis down.
func TestMetrics_GCRA(t *testing.T) {
	rs := redistest.Start(t)
	a := newAgent(t, rs, "h")
	if err := a.AddGCRA("api", mustOpen(t, sketch.OpenGCRA, sketch.Memory(), sketch.GCRAConfig{Rate: slowRate, Seed: 1})); err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		var b strings.Builder
		if err := a.WriteMetrics(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	mustSync(t, a)
	synced := scrape()
	for _, want := range []string{
		`sketch_fleet_state{structure="api",kind="gcra",state="synced"} 1` + "\n",
		`sketch_fleet_syncs_total{structure="api",kind="gcra"} 1` + "\n",
	} {
		if !strings.Contains(synced, want) {
			t.Errorf("the scrape after a round lacks %q:\n%s", want, synced)
		}
	}
	promtool(t, synced)
	rs.Stop()
	a.cfg.Timeout = 2 * time.Second // a round with Redis down fails, not waits
	if err := a.Sync(context.Background()); err == nil {
		t.Fatal("Sync with Redis down succeeded")
	}
	if down := scrape(); !strings.Contains(down, `sketch_fleet_state{structure="api",kind="gcra",state="local"} 1`+"\n") {
		t.Errorf("the scrape with Redis down does not say local:\n%s", down)
	}
}
