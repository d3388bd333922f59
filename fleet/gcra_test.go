package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// slowRate is a rate so slow that no request's time passes while a test
// runs: what a test decides depends on the requests only.
var slowRate = sketch.Rate{Count: 1, Per: time.Hour}

// gcraHosts are n agents of one fleet, each syncing its own limiter of
// cfg (in memory) under name.
func gcraHosts(t *testing.T, rs *redistest.Server, name string, cfg sketch.GCRAConfig, n int) ([]*Agent, []*sketch.GCRA) {
	t.Helper()
	var agents []*Agent
	var limiters []*sketch.GCRA
	for h := range n {
		g := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddGCRA(name, g); err != nil {
			t.Fatal(err)
		}
		agents, limiters = append(agents, a), append(limiters, g)
	}
	return agents, limiters
}

func mustAllow(t *testing.T, g *sketch.GCRA, key string, cost uint64, at time.Time) sketch.RateDecision {
	t.Helper()
	d, err := g.AllowAt([]byte(key), cost, at)
	if err != nil {
		t.Fatalf("AllowAt(%q, %d): %v", key, cost, err)
	}
	return d
}

// TestSync_GCRA: a key that exhausted its burst on host A is refused on
// host B once A pushed and B pulled, with A's RetryAfter to the
// nanosecond (both asked at one time); host C, which has not pulled yet,
// still allows it (what A allowed since C's last pull is the excess the
// guarantee allows), and refuses it after its round. A key idle
// everywhere is allowed everywhere.
func TestSync_GCRA(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 4, Seed: 0x6c}
	agents, gs := gcraHosts(t, rs, "api", cfg, 3)
	for i := range cfg.Burst + 1 {
		if d, _ := gs[0].AllowString("k", 1); !d.Allowed {
			t.Fatalf("host 0: request %d of an idle key refused", i+1)
		}
	}
	refusedA, _ := gs[0].AllowString("k", 1)
	if refusedA.Allowed {
		t.Fatal("host 0 allowed a request past the burst")
	}
	mustSync(t, agents[0], agents[1])
	at := time.Now()
	onA, onB := mustAllow(t, gs[0], "k", 0, at), mustAllow(t, gs[1], "k", 0, at)
	if onB != onA {
		t.Errorf("host 1 after host 0's round and its own decides %+v, host 0 %+v", onB, onA)
	}
	if onB.Allowed || onB.RetryAfter <= 0 {
		t.Errorf("host 1 allows the key host 0 exhausted: %+v", onB)
	}
	// Requests now, one on each host: B's RetryAfter is A's less the time
	// between the two, within a ms (the clock's resync).
	start := time.Now()
	dA, _ := gs[0].AllowString("k", 1)
	dB, _ := gs[1].AllowString("k", 1)
	between := time.Since(start)
	if dB.Allowed {
		t.Error("host 1 allowed a request of the key host 0 exhausted")
	} else if diff := dA.RetryAfter - dB.RetryAfter; diff < -time.Millisecond || diff > between+time.Millisecond {
		t.Errorf("host 1's RetryAfter %v, host 0's %v just before it (%v between)", dB.RetryAfter, dA.RetryAfter, between)
	}
	if dA.RetryAfter > refusedA.RetryAfter {
		t.Errorf("host 0's RetryAfter grew from %v to %v: a refused request counted", refusedA.RetryAfter, dA.RetryAfter)
	}
	if d := mustAllow(t, gs[2], "k", 0, time.Now()); !d.Allowed {
		t.Errorf("host 2, before any round, refuses the key: %+v", d)
	}
	mustSync(t, agents[2])
	if d := mustAllow(t, gs[2], "k", 0, at); d != onA {
		t.Errorf("host 2 after its round decides %+v, host 0 %+v", d, onA)
	}
	for h, g := range gs {
		if d, _ := g.AllowString(fmt.Sprint("idle-", h), 1); !d.Allowed || d.Remaining != cfg.Burst {
			t.Errorf("host %d: an idle key is decided %+v, want allowed with %d remaining", h, d, cfg.Burst)
		}
	}
	if s := agents[1].Stats(); s.State != StateSynced || s.Structures[0].Kind != "gcra" {
		t.Errorf("Stats = %+v, want a synced gcra", s)
	}
}

// TestSync_GCRAOneHostAtATime: hosts deciding one at a time, with a round
// of the host that decided and then of the next between them, decide
// every request exactly as one limiter fed them all: Allowed, Remaining,
// RetryAfter and ResetAfter. Requests are decided at given times
// (AllowAt), so both sides see the same.
func TestSync_GCRAOneHostAtATime(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: sketch.Rate{Count: 1, Per: 10 * time.Minute}, Burst: 5, Seed: 0x1}
	agents, gs := gcraHosts(t, rs, "turns", cfg, 3)
	one := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
	t0 := time.Now()
	// Which host decides each run of requests, and how many.
	runs := []struct{ host, n int }{{0, 2}, {1, 3}, {2, 2}, {0, 1}, {2, 4}, {1, 1}}
	last, step := -1, 0
	for _, r := range runs {
		if last >= 0 && last != r.host {
			mustSync(t, agents[last], agents[r.host])
		}
		last = r.host
		for range r.n {
			step++
			at := t0.Add(time.Duration(step) * time.Millisecond)
			for _, key := range []string{"k", fmt.Sprint("k-", step%3)} {
				got, want := mustAllow(t, gs[r.host], key, 1, at), mustAllow(t, one, key, 1, at)
				if got != want {
					t.Errorf("request %d of %q on host %d: %+v, one limiter decides %+v", step, key, r.host, got, want)
				}
			}
		}
	}
}

// TestSync_GCRAConcurrentHosts: two hosts deciding at once, between
// rounds, each allow a key's burst (the excess the guarantee names: what
// the other allowed since its last push this host pulled); after a round
// of each, both refuse it.
func TestSync_GCRAConcurrentHosts(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 2, Seed: 0x2}
	agents, gs := gcraHosts(t, rs, "api", cfg, 2)
	mustSync(t, agents...)
	for h, g := range gs {
		for i := range cfg.Burst + 1 {
			if d, _ := g.AllowString("k", 1); !d.Allowed {
				t.Fatalf("host %d: request %d refused before any host pushed it", h, i+1)
			}
		}
	}
	mustSync(t, agents[0], agents[1], agents[0])
	for h, g := range gs {
		if d, _ := g.AllowString("k", 1); d.Allowed {
			t.Errorf("host %d allows the key after both pushed and pulled", h)
		}
	}
}

// goneAndStays is two hosts, "gone" and "stays", each syncing a rate
// limiter "fast" of 100 requests a second (its times key living 50 ms
// after a push) every 10 ms, each having allowed "k" once.
func goneAndStays(t *testing.T, rs *redistest.Server) []*Agent {
	t.Helper()
	cfg := sketch.GCRAConfig{Rate: sketch.Rate{Count: 100, Per: time.Second}, Burst: 1, Seed: 0x3}
	var agents []*Agent
	for _, host := range []string{"gone", "stays"} {
		a, err := New(Config{Redis: rs.Client(t), Fleet: "f", Host: host, Interval: 10 * time.Millisecond, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		g := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
		if err := a.AddGCRA("fast", g); err != nil {
			t.Fatal(err)
		}
		g.AllowString("k", 1)
		agents = append(agents, a)
	}
	return agents
}

// TestSync_GCRAExpires: a host's times key lives the limiter's window
// plus three of the agent's intervals (PTTL right after a push is at most
// that), and is gone once that passed; the next round of another host
// then forgets the host (it leaves the hosts' set).
func TestSync_GCRAExpires(t *testing.T) {
	rs := redistest.Start(t)
	agents := goneAndStays(t, rs)
	const life = 20*time.Millisecond + 3*10*time.Millisecond // window (Burst+1 intervals of 10ms) + 3 intervals
	if got := agents[0].members[0].gcra.life; got != life {
		t.Fatalf("the times key's life is %v, want %v", got, life)
	}
	c, ctx := rs.Client(t), context.Background()
	key := "{f/fast}:times:gone"
	// The key lives 50 ms: a loaded machine may take that long between
	// the push and the PTTL read, and then finds the key gone (-2) or in
	// its last millisecond (0). Only that is pushed again; a key without
	// a TTL (-1) or one living longer fails at once.
	deadline := time.Now().Add(time.Minute)
	for {
		mustSync(t, agents[0])
		pttl, err := c.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if pttl == -2 || pttl == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("PTTL(%s): gone or expiring after every push for a minute", key)
			}
			continue
		}
		if pttl <= 0 || pttl > life {
			t.Errorf("PTTL(%s) = %v right after a push, want in (0, %v]", key, pttl, life)
		}
		break
	}
	deadline = time.Now().Add(time.Minute)
	for c.Exists(ctx, key).Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still there a minute after its push, PTTL %v", key, c.PTTL(ctx, key).Val())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The round's push gives the hosts' set the same 50 ms to live: a
	// read that comes later may find it expired, empty, and only that is
	// tried again.
	deadline = time.Now().Add(time.Minute)
	for {
		c.SAdd(ctx, "{f/fast}:hosts", "gone") // as if the set had outlived the key
		mustSync(t, agents[1])
		hosts, err := c.SMembers(ctx, "{f/fast}:hosts").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(hosts) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the hosts' set expired before every read for a minute")
			}
			continue
		}
		if !slices.Equal(hosts, []string{"stays"}) {
			t.Errorf("hosts after the round of another host = %q, want only %q", hosts, "stays")
		}
		break
	}
}

// TestSync_GCRAMismatch: a host whose limiter has another seed, rate,
// burst or shape than the fleet's, or a structure of another kind under
// the name, is refused before it writes anything.
func TestSync_GCRAMismatch(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 3, Rows: 4, Width: 1024, Seed: 7}
	first := newAgent(t, rs, "first")
	g := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
	g.AllowString("k", 1)
	if err := first.AddGCRA("api", g); err != nil {
		t.Fatal(err)
	}
	mustSync(t, first)
	c, ctx := rs.Client(t), context.Background()
	before := c.Get(ctx, "{f/api}:times:first").Val()
	other := func(change func(*sketch.GCRAConfig)) func(a *Agent) error {
		return func(a *Agent) error {
			o := cfg
			change(&o)
			return a.AddGCRA("api", mustOpen(t, sketch.OpenGCRA, sketch.Memory(), o))
		}
	}
	for name, add := range map[string]func(a *Agent) error{
		"seed":  other(func(c *sketch.GCRAConfig) { c.Seed = 8 }),
		"rate":  other(func(c *sketch.GCRAConfig) { c.Rate = sketch.Rate{Count: 60, Per: 60 * time.Hour} }),
		"burst": other(func(c *sketch.GCRAConfig) { c.Burst = 4 }),
		"shape": other(func(c *sketch.GCRAConfig) { c.Width = 2048 }),
		"kind": func(a *Agent) error {
			return a.AddBloom("api", mustOpen(t, sketch.OpenBloom, sketch.Memory(), sketch.BloomConfig{Capacity: 100, FPRate: 0.01, Seed: 7}))
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newAgent(t, rs, "other-"+name)
			if err := add(a); err != nil {
				t.Fatal(err)
			}
			err := a.Sync(ctx)
			if !errors.Is(err, ErrMismatch) {
				t.Fatalf("Sync = %v, want ErrMismatch", err)
			}
			if s := a.Stats(); s.State != StateRefused || !strings.Contains(s.Structures[0].LastError, "gcra rate=") {
				t.Errorf("Stats = %+v, want refused naming the fleet's limiter", s)
			}
			if n := c.Exists(ctx, "{f/api}:times:other-"+name, "{f/api}:or").Val(); n != 0 {
				t.Errorf("the refused host wrote %d keys", n)
			}
			if after := c.Get(ctx, "{f/api}:times:first").Val(); after != before {
				t.Error("the refused host changed the first host's times")
			}
			if hosts := c.SMembers(ctx, "{f/api}:hosts").Val(); !slices.Equal(hosts, []string{"first"}) {
				t.Errorf("hosts = %q, want only the first", hosts)
			}
		})
	}
}

// runGCRAAgent is a child process: it syncs the rate limiter at
// FLEET_TEST_FILE as host "killed", deciding a request of one of
// gcraKilledKeys keys before each round, until it is killed.
func runGCRAAgent() int {
	g, err := sketch.OpenGCRA(sketch.Path(os.Getenv("FLEET_TEST_FILE")), sketch.GCRAConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client := childClient(os.Getenv("FLEET_TEST_SOCK"))
	a, err := New(Config{Redis: client, Fleet: "f", Host: "killed", Timeout: time.Minute})
	if err == nil {
		err = a.AddGCRA("limits", g)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; ; i++ {
		g.AllowString(key(i%gcraKilledKeys), 1)
		if err := a.Sync(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

const gcraKilledKeys = 64

// TestSync_GCRAAgentKilled: an agent killed -9 at whatever point of its
// rounds leaves its limiter valid (Check); restarted, a round of it and
// then of another host bring the other host to decide every key exactly
// as the killed host's file does.
func TestSync_GCRAAgentKilled(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 1000, Rows: 4, Width: 1 << 10, Seed: 0x4c}
	path := filepath.Join(t.TempDir(), "limits")
	g := mustOpen(t, sketch.OpenGCRA, sketch.Path(path), cfg)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "FLEET_TEST_ROLE=gcra-agent", "FLEET_TEST_FILE="+path, "FLEET_TEST_SOCK="+rs.Sock)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	client := rs.Client(t)
	deadline := time.Now().Add(2 * time.Minute)
	for client.Exists(context.Background(), "{f/limits}:times:killed").Val() == 0 || g.Stats().Allowed < 300 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the agent process ran no rounds within 2 minutes; its output:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	if err := g.Check(); err != nil {
		t.Fatalf("Check after the agent was killed: %v", err)
	}

	again, other := newAgent(t, rs, "killed"), newAgent(t, rs, "other")
	theirs := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
	if err := again.AddGCRA("limits", g); err != nil {
		t.Fatal(err)
	}
	if err := other.AddGCRA("limits", theirs); err != nil {
		t.Fatal(err)
	}
	mustSync(t, again, other)
	at := time.Now()
	for i := range gcraKilledKeys + 1 { // and one key never used
		k := key(i)
		if got, want := mustAllow(t, theirs, k, 0, at), mustAllow(t, g, k, 0, at); got != want {
			t.Errorf("%s: the other host decides %+v, the killed host's file %+v", k, got, want)
		}
	}
}

// TestSync_GCRASendsOwnTimes: a host pushes only the times it decided,
// not those it merged from other hosts (which send them themselves), so
// its key grows with its own busy keys, not the fleet's; a host that
// pulls both keys later refuses every key either host made busy, as one
// limiter fed every request does.
func TestSync_GCRASendsOwnTimes(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 0, Rows: 4, Width: 1 << 16, Seed: 0x0e}
	agents, gs := gcraHosts(t, rs, "own", cfg, 3)
	one := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg)
	ten := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), cfg) // host 1's keys alone
	at := time.Now()
	for i := range 50 {
		mustAllow(t, gs[0], fmt.Sprint("a-", i), 1, at)
		mustAllow(t, one, fmt.Sprint("a-", i), 1, at)
	}
	mustSync(t, agents[0], agents[1])
	ctx := context.Background()
	rc := rs.Client(t)
	hostKey := func(h int) string { return fmt.Sprintf("{f/own}:times:host%d", h) }
	cellsIn := func(key string) int {
		t.Helper()
		v, err := rc.Get(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		timesCells([]byte(v), func(uint64, uint64) { n++ })
		return n
	}
	if n := cellsIn(hostKey(0)); n != 50*4 {
		t.Fatalf("host 0's key holds %d cells, want its 50 keys' 200", n)
	}
	mustSync(t, agents[1]) // pushes what it merged: nothing of its own
	if n := cellsIn(hostKey(1)); n != 0 {
		t.Errorf("host 1 decided nothing and pushed %d cells, want 0", n)
	}
	for i := range 10 {
		for _, g := range []*sketch.GCRA{gs[1], one, ten} {
			mustAllow(t, g, fmt.Sprint("b-", i), 1, at)
		}
	}
	mustSync(t, agents[1])
	exp, err := ten.ExportTimes()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	timesCells(exp, func(uint64, uint64) { want++ })
	if n := cellsIn(hostKey(1)); n != want {
		t.Errorf("host 1 pushed %d cells, want its 10 keys' %d", n, want)
	}
	// Host 2 pulls both keys and decides as one limiter fed every request.
	mustSync(t, agents[2])
	for _, k := range []string{"a-0", "a-49", "b-0", "b-9", "idle"} {
		if got, want := mustAllow(t, gs[2], k, 1, at), mustAllow(t, one, k, 1, at); got != want {
			t.Errorf("host 2 decides %q %+v, one limiter %+v", k, got, want)
		}
	}
}

// TestSync_GCRAOwnTimesAfterRestart: an agent restarted knows nothing it
// merged, so it pushes another host's busy times as its own; the two
// hosts must not then take turns leaving them out (each seeing them
// merged from the other), or for rounds no key would hold them and a
// third host pulling then would allow a key both had made busy.
func TestSync_GCRAOwnTimesAfterRestart(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.GCRAConfig{Rate: slowRate, Burst: 0, Rows: 4, Width: 1 << 10, Seed: 0x0f}
	agents, gs := gcraHosts(t, rs, "own", cfg, 3)
	at := time.Now()
	if !mustAllow(t, gs[0], "k", 1, at).Allowed {
		t.Fatal("host 0 refused k's first request")
	}
	mustSync(t, agents[0], agents[1], agents[0], agents[1])
	agents[1].Close()
	agents[1] = newAgent(t, rs, "host1")
	if err := agents[1].AddGCRA("own", gs[1]); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rc := rs.Client(t)
	cells := func(h int) int {
		v, _ := rc.Get(ctx, fmt.Sprintf("{f/own}:times:host%d", h)).Result()
		n := 0
		timesCells([]byte(v), func(uint64, uint64) { n++ })
		return n
	}
	for i, h := range []int{1, 0, 1, 0, 1, 0, 1, 0} {
		mustSync(t, agents[h])
		if cells(0)+cells(1) == 0 {
			t.Fatalf("after round %d (host %d) neither host's key holds k's busy time", i+1, h)
		}
	}
	mustSync(t, agents[2])
	if d := mustAllow(t, gs[2], "k", 1, at); d.Allowed {
		t.Errorf("host 2 allowed k, which host 0 made busy: %+v", d)
	}
}
