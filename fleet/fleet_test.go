package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// newAgent is an agent of fleet "f" for host on s, closed at the test's end.
func newAgent(t testing.TB, s *redistest.Server, host string) *Agent {
	t.Helper()
	a, err := New(Config{Redis: s.Client(t), Fleet: "f", Host: host, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a.rotateAlike = true // the tests turn every host's windows alike
	t.Cleanup(func() { a.Close() })
	return a
}

func mustSync(t testing.TB, agents ...*Agent) {
	t.Helper()
	for _, a := range agents {
		if err := a.Sync(context.Background()); err != nil {
			t.Fatalf("host %s: Sync: %v", a.cfg.Host, err)
		}
	}
}

func mustOpen[C any, S interface{ Close() error }](t testing.TB, open func(sketch.Place, C, ...sketch.Option) (S, error), at sketch.Place, cfg C) S {
	t.Helper()
	s, err := open(at, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func key(i int) string { return fmt.Sprint("client-", i) }

// hostKeys are host h's keys: 3000 of its own, and 2000 it shares with the
// next host.
func hostKeys(h int) (first, n int) { return h * 3000, 5000 }

const hosts = 3

// TestSync_Distinct: three hosts' distinct counts, one file each, synced
// through a real Redis: after a round of each host and then another of
// each, every host holds exactly the registers of every host's keys (those
// of one count fed all keys), every process of the host reads them through
// its own handle, and Redis's PFCOUNT of the fleet's key agrees. A round
// more changes nothing: the merge is idempotent.
func TestSync_Distinct(t *testing.T) {
	rs := redistest.Start(t)
	for _, cfg := range []sketch.DistinctConfig{{Seed: 0xf1ee7}, {Redis: true}} {
		t.Run(fmt.Sprintf("redis=%v", cfg.Redis), func(t *testing.T) {
			union := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), cfg)
			var agents []*Agent
			var counts, readers []*sketch.Distinct
			for h := range hosts {
				path := filepath.Join(t.TempDir(), "clients")
				d := mustOpen(t, sketch.OpenDistinct, sketch.Path(path), cfg)
				first, n := hostKeys(h)
				for i := first; i < first+n; i++ {
					d.AddString(key(i))
					union.AddString(key(i))
				}
				a := newAgent(t, rs, fmt.Sprint("host", h))
				if err := a.AddDistinct(fmt.Sprintf("clients-%v", cfg.Redis), d); err != nil {
					t.Fatal(err)
				}
				agents, counts = append(agents, a), append(counts, d)
				readers = append(readers, mustOpen(t, sketch.OpenDistinct, sketch.Path(path), sketch.DistinctConfig{}))
			}
			mustSync(t, agents...)
			mustSync(t, agents...)
			want, _ := union.ExportRedis()
			for h := range hosts {
				got, _ := readers[h].ExportRedis()
				if !bytes.Equal(got, want) {
					t.Errorf("host %d after two rounds: not the registers of every host's keys", h)
				}
				if c, w := readers[h].Count(), union.Count(); c != w {
					t.Errorf("host %d: Count() = %d, the union's %d", h, c, w)
				}
			}
			fleetKey := agents[0].keys(agents[0].members[0], "pfmerge")[1]
			if got, want := rs.Client(t).PFCount(context.Background(), fleetKey).Val(), int64(union.Count()); got != want {
				t.Errorf("PFCOUNT of the fleet's key = %d, Count() = %d", got, want)
			}
			before := counts[0].Stats().RegisterChanges
			mustSync(t, agents...)
			if after := counts[0].Stats().RegisterChanges; after != before {
				t.Errorf("a third round raised %d registers", after-before)
			}
			if s := agents[0].Stats(); s.State != StateSynced || s.Rounds != 3 || s.Structures[0].Syncs != 3 {
				t.Errorf("Stats = %+v, want synced after 3 rounds", s)
			}
		})
	}
}

// TestSync_Bloom: a key added on any host is found on every host once
// that host's round and then this host's have run (the documented
// guarantee), and after a round of every host each filter holds exactly
// the bits of every host's keys.
func TestSync_Bloom(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.BloomConfig{Capacity: 20_000, FPRate: 0.001, Seed: 0xb10}
	union := mustOpen(t, sketch.OpenBloom, sketch.Memory(), cfg)
	var agents []*Agent
	var filters []*sketch.Bloom
	for h := range hosts {
		b := mustOpen(t, sketch.OpenBloom, sketch.Path(filepath.Join(t.TempDir(), "seen")), cfg)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddBloom("seen", b); err != nil {
			t.Fatal(err)
		}
		agents, filters = append(agents, a), append(filters, b)
	}
	// Host 0 adds; host 2 does not find it before host 0's round, and
	// finds it after host 0's round and its own.
	filters[0].AddString("replayed-id")
	union.AddString("replayed-id")
	mustSync(t, agents[2])
	if filters[2].ContainsString("replayed-id") {
		t.Fatal("host 2 found host 0's key before host 0 pushed it (a false positive at rate 0.001 in an almost empty filter)")
	}
	mustSync(t, agents[0], agents[2])
	if !filters[2].ContainsString("replayed-id") {
		t.Fatal("host 2 does not find host 0's key after host 0's round and then its own")
	}
	for h, b := range filters {
		first, n := hostKeys(h)
		for i := first; i < first+n; i++ {
			b.AddString(key(i))
			union.AddString(key(i))
		}
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	want, _ := union.ExportBits()
	for h, b := range filters {
		if got, _ := b.ExportBits(); !bytes.Equal(got, want) {
			t.Errorf("host %d after two rounds: not the bits of every host's keys", h)
		}
		for i := range hosts * 3000 {
			if !b.ContainsString(key(i)) {
				t.Fatalf("host %d does not find %s", h, key(i))
			}
		}
	}
}

// TestSync_Mismatch: a host whose structure has another seed, shape or
// kind than the fleet's is refused before it writes anything: the fleet's
// key is unchanged, the host's state is refused, and its file keeps its
// own answers.
func TestSync_Mismatch(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 1}
	good := mustOpen(t, sketch.OpenBloom, sketch.Memory(), cfg)
	good.AddString("a")
	first := newAgent(t, rs, "first")
	if err := first.AddBloom("seen", good); err != nil {
		t.Fatal(err)
	}
	mustSync(t, first)
	c := rs.Client(t)
	fleetKey := first.keys(first.members[0], "or")[1]
	before := c.Get(context.Background(), fleetKey).Val()

	otherSeed := cfg
	otherSeed.Seed = 2
	otherShape := cfg
	otherShape.Capacity = 2000
	for name, add := range map[string]func(a *Agent) error{
		"seed": func(a *Agent) error {
			return a.AddBloom("seen", mustOpen(t, sketch.OpenBloom, sketch.Memory(), otherSeed))
		},
		"shape": func(a *Agent) error {
			return a.AddBloom("seen", mustOpen(t, sketch.OpenBloom, sketch.Memory(), otherShape))
		},
		"kind": func(a *Agent) error {
			return a.AddDistinct("seen", mustOpen(t, sketch.OpenDistinct, sketch.Memory(), sketch.DistinctConfig{Seed: 1}))
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := newAgent(t, rs, "other-"+name)
			if err := add(a); err != nil {
				t.Fatal(err)
			}
			if err := a.Sync(context.Background()); !errors.Is(err, ErrMismatch) {
				t.Fatalf("Sync = %v, want ErrMismatch", err)
			}
			if s := a.Stats(); s.State != StateRefused || s.Structures[0].Failures != 1 {
				t.Errorf("Stats = %+v, want refused", s)
			}
			if after := c.Get(context.Background(), fleetKey).Val(); after != before {
				t.Error("the refused host changed the fleet's bits")
			}
		})
	}
}

// TestSync_RedisDown: with Redis killed, a round fails and changes nothing
// in the files: each host answers with its own keys and the fleet's as of
// its last round, and says so (local). A new, empty Redis is refilled by
// the next round of every host, which then hold the union again.
func TestSync_RedisDown(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.DistinctConfig{Seed: 7}
	union := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), cfg)
	var agents []*Agent
	var counts []*sketch.Distinct
	for h := range 2 {
		d := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), cfg)
		first, n := hostKeys(h)
		for i := first; i < first+n; i++ {
			d.AddString(key(i))
			union.AddString(key(i))
		}
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddDistinct("clients", d); err != nil {
			t.Fatal(err)
		}
		agents, counts = append(agents, a), append(counts, d)
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	synced := counts[0].Count()
	if synced != union.Count() {
		t.Fatalf("Count() = %d after two rounds, the union's %d", synced, union.Count())
	}

	rs.Stop()
	counts[0].AddString("added-while-down")
	union.AddString("added-while-down")
	generous := agents[0].cfg.Timeout
	agents[0].cfg.Timeout = 2 * time.Second // a round with Redis down fails, not waits
	if err := agents[0].Sync(context.Background()); err == nil {
		t.Fatal("Sync with Redis down succeeded")
	}
	agents[0].cfg.Timeout = generous
	s := agents[0].Stats()
	if s.State != StateLocal || s.Structures[0].LastError == "" {
		t.Errorf("Stats with Redis down = %+v, want local with the error", s)
	}
	if c := counts[0].Count(); c < synced {
		t.Errorf("Count() = %d with Redis down, %d before: lower", c, synced)
	}

	rs.Start(t)
	mustSync(t, agents...)
	mustSync(t, agents...)
	want, _ := union.ExportRedis()
	for h, d := range counts {
		if got, _ := d.ExportRedis(); !bytes.Equal(got, want) {
			t.Errorf("host %d after Redis came back empty and two rounds: not the union's registers", h)
		}
	}
	if s := agents[0].Stats(); s.State != StateSynced || s.Structures[0].LastError != "" {
		t.Errorf("Stats after Redis came back = %+v, want synced", s)
	}
}

// TestSync_HostileRedis: whatever the fleet's keys hold, a round fails
// with an error and leaves the file as it was; it never panics.
func TestSync_HostileRedis(t *testing.T) {
	rs := redistest.Start(t)
	c := rs.Client(t)
	ctx := context.Background()
	for name, bad := range map[string]string{
		"empty":     "",
		"garbage":   "not a structure",
		"long bits": strings.Repeat("\xff", 1<<16),
		"short":     "\xff",
	} {
		t.Run(name, func(t *testing.T) {
			d := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), sketch.DistinctConfig{Seed: 3})
			b := mustOpen(t, sketch.OpenBloom, sketch.Memory(), sketch.BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 3})
			d.AddString("x")
			b.AddString("x")
			a := newAgent(t, rs, "h")
			a.cfg.Fleet = "hostile-" + strings.ReplaceAll(name, " ", "-")
			if err := a.AddDistinct("d", d); err != nil {
				t.Fatal(err)
			}
			if err := a.AddBloom("b", b); err != nil {
				t.Fatal(err)
			}
			for _, m := range a.members {
				c.Set(ctx, a.keys(m, m.op)[1], bad, 0)
			}
			countBefore, bitsBefore := d.Count(), b.Stats().Set
			if err := a.Sync(ctx); err == nil {
				t.Fatal("Sync over hostile keys succeeded")
			}
			if d.Count() != countBefore || b.Stats().Set != bitsBefore {
				t.Errorf("a failed round changed the files: count %d -> %d, bits set %d -> %d", countBefore, d.Count(), bitsBefore, b.Stats().Set)
			}
			if s := a.Stats(); s.State != StateLocal && s.State != StateRefused {
				t.Errorf("State = %s, want local or refused", s.State)
			}
		})
	}
}

// TestMain runs a child's role when the test binary is started as one.
func TestMain(m *testing.M) {
	if role := os.Getenv("FLEET_TEST_ROLE"); role != "" {
		os.Exit(runRole(role))
	}
	os.Exit(m.Run())
}

// childClient is a child process's client of the test's redis-server:
// its reads and writes wait up to redistest.IOTimeout, as the test's
// clients do.
func childClient(sock string) *redis.Client {
	return redis.NewClient(&redis.Options{Network: "unix", Addr: sock, ReadTimeout: redistest.IOTimeout, WriteTimeout: redistest.IOTimeout, ContextTimeoutEnabled: true})
}

// runRole is a child process: "agent" syncs the distinct count at
// FLEET_TEST_FILE through the Redis at FLEET_TEST_SOCK, round after round,
// adding keys between rounds, until it is killed.
func runRole(role string) int {
	switch role {
	case "agent":
	case "countmin-agent":
		return runCountMinAgent()
	case "gcra-agent":
		return runGCRAAgent()
	case "host-adds":
		return runHostAdds()
	default:
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		return 2
	}
	d, err := sketch.OpenDistinct(sketch.Path(os.Getenv("FLEET_TEST_FILE")), sketch.DistinctConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := childClient(os.Getenv("FLEET_TEST_SOCK"))
	a, err := New(Config{Redis: c, Fleet: "f", Host: "killed", Timeout: time.Minute})
	if err == nil {
		err = a.AddDistinct("clients", d)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; ; i++ {
		d.AddString(key(100_000 + i))
		if err := a.Sync(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// TestSync_AgentKilled: an agent killed -9 in the middle of its rounds (a
// real process, killed at whatever point of a push or a merge it was)
// leaves its file valid (Check) and the fleet's key a HyperLogLog; a new
// agent on the file then brings every host to exactly the union of every
// key added on any host, counted once.
func TestSync_AgentKilled(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.DistinctConfig{Seed: 0x4b1}
	path := filepath.Join(t.TempDir(), "clients")
	d := mustOpen(t, sketch.OpenDistinct, sketch.Path(path), cfg)
	for i := range 20_000 {
		d.AddString(key(i))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "FLEET_TEST_ROLE=agent", "FLEET_TEST_FILE="+path, "FLEET_TEST_SOCK="+rs.Sock)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once it has run some rounds: its added keys reached the
	// file and the fleet.
	c := rs.Client(t)
	changes := d.Stats().RegisterChanges
	deadline := time.Now().Add(2 * time.Minute)
	for c.Exists(context.Background(), "{f/clients}:pfmerge").Val() == 0 || d.Stats().RegisterChanges < changes+50 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the agent process ran no rounds within 2 minutes; its output:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	if err := d.Check(); err != nil {
		t.Fatalf("Check after the agent was killed: %v", err)
	}

	other := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), cfg)
	for i := 10_000; i < 40_000; i++ {
		other.AddString(key(i))
	}
	again, b := newAgent(t, rs, "killed"), newAgent(t, rs, "other")
	if err := again.AddDistinct("clients", d); err != nil {
		t.Fatal(err)
	}
	if err := b.AddDistinct("clients", other); err != nil {
		t.Fatal(err)
	}
	// The union is the merge of both files as they are now: the killed
	// agent's keys are in d (it added them there before pushing them).
	union := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), cfg)
	if err := union.Merge(d, other); err != nil {
		t.Fatal(err)
	}
	mustSync(t, again, b, again)
	want, _ := union.ExportRedis()
	for name, s := range map[string]*sketch.Distinct{"restarted": d, "other": other} {
		if got, _ := s.ExportRedis(); !bytes.Equal(got, want) {
			t.Errorf("%s host: not exactly the union's registers after the restart", name)
		}
	}
	if got, want := c.PFCount(context.Background(), "{f/clients}:pfmerge").Val(), int64(union.Count()); got != want {
		t.Errorf("PFCOUNT of the fleet's key = %d, the union's Count() = %d", got, want)
	}
}

// forever is a window period that the clock never turns while tests run
// (period number 0 until 2262): the test turns every host's window with
// Rotate, the same number of times, so that the hosts agree on periods.
const forever = time.Duration(math.MaxInt64)

// TestSync_BloomWindow: a key added on one host in a period is found on
// another host, which added nothing in that period, once a round of each
// has run (the replay caught on any host), and not once the period has
// left the window; each period's key expires after Keep+1 periods.
func TestSync_BloomWindow(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.BloomWindowConfig{Window: sketch.Window{Period: forever, Keep: 3}, Bloom: sketch.BloomConfig{Capacity: 1000, FPRate: 0.001, Seed: 0xb1}}
	var agents []*Agent
	var wins []*sketch.BloomWindow
	for h := range 2 {
		w := mustOpen(t, sketch.OpenBloomWindow, sketch.Path(filepath.Join(t.TempDir(), "ids")), cfg)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddBloomWindow("ids", w); err != nil {
			t.Fatal(err)
		}
		agents, wins = append(agents, a), append(wins, w)
	}
	rotate := func() {
		t.Helper()
		for _, w := range wins {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wins[0].AddString("id-0")
	rotate()
	wins[0].AddString("id-1")
	if wins[1].ContainsString("id-0") || wins[1].ContainsString("id-1") {
		t.Fatal("host 1 finds host 0's ids before any round")
	}
	mustSync(t, agents[0], agents[1])
	for _, id := range []string{"id-0", "id-1"} {
		if !wins[1].ContainsString(id) {
			t.Errorf("host 1 does not find host 0's %s after a round of each", id)
		}
	}
	// Host 1's own id of period 1 reaches host 0.
	wins[1].AddString("id-1b")
	mustSync(t, agents[1], agents[0])
	if !wins[0].ContainsString("id-1b") {
		t.Error("host 0 does not find host 1's id-1b after a round of each")
	}
	c := rs.Client(t)
	ttl := c.PTTL(context.Background(), "{f/ids}:or:1").Val()
	if ttl <= 0 || ttl > maxKeyLife {
		t.Errorf("period 1's key lives %v, want a life up to %v", ttl, maxKeyLife)
	}
	// At period 4 the window is 2-4: periods 0 and 1 left it everywhere.
	rotate()
	rotate()
	rotate()
	mustSync(t, agents...)
	for h, w := range wins {
		for _, id := range []string{"id-0", "id-1", "id-1b"} {
			if w.ContainsString(id) {
				t.Errorf("host %d still finds %s once its period left the window", h, id)
			}
		}
	}
	// A window turned by Rotate only is refused.
	manual := mustOpen(t, sketch.OpenBloomWindow, sketch.Memory(), sketch.BloomWindowConfig{Window: sketch.Window{Keep: 2}, Bloom: cfg.Bloom})
	if err := agents[0].AddBloomWindow("manual", manual); !errors.Is(err, ErrNotSynced) {
		t.Errorf("AddBloomWindow of a window without a Period = %v, want ErrNotSynced", err)
	}
}

// TestSync_DistinctWindow: each host's counts of each period, synced, make
// every host count what one window fed every host's keys counts, period
// for period.
func TestSync_DistinctWindow(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.DistinctWindowConfig{Window: sketch.Window{Period: forever, Keep: 2}, Distinct: sketch.DistinctConfig{Seed: 0xd1}}
	union := mustOpen(t, sketch.OpenDistinctWindow, sketch.Memory(), cfg)
	var agents []*Agent
	var wins []*sketch.DistinctWindow
	for h := range hosts {
		w := mustOpen(t, sketch.OpenDistinctWindow, sketch.Memory(), cfg)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddDistinctWindow("clients", w); err != nil {
			t.Fatal(err)
		}
		agents, wins = append(agents, a), append(wins, w)
	}
	for period := range 3 {
		for h, w := range wins {
			first, n := hostKeys(h)
			for i := first; i < first+n; i += period + 1 {
				w.AddString(key(i))
				union.AddString(key(i))
			}
		}
		mustSync(t, agents...)
		mustSync(t, agents...)
		for h, w := range wins {
			if got, want := w.Count(), union.Count(); got != want {
				t.Errorf("period %d: host %d counts %d, a window fed every host's keys %d", period, h, got, want)
			}
		}
		for _, w := range append(wins, union) {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestPeriodKeyLife: Keep+1 periods, at most maxKeyLife, without
// overflowing for the longest period.
func TestPeriodKeyLife(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		keep   uint64
		want   time.Duration
	}{
		{time.Minute, 59, time.Hour},
		{time.Second, 1, 2 * time.Second},
		{forever, 1, maxKeyLife},
		{forever, 4096, maxKeyLife},
		{maxKeyLife / 2, 1, maxKeyLife},
	} {
		if got := periodKeyLife(c.period, c.keep); got != c.want {
			t.Errorf("periodKeyLife(%v, %d) = %v, want %v", c.period, c.keep, got, c.want)
		}
	}
}
