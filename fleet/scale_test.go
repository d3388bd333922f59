package fleet

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// The scale simulation: N agents, each its own host with its own client,
// against one redis-server on a unix socket. Each round every host's
// workers add, then every host's Sync starts at once, each on its own
// goroutine (the worst case: the fleet's rounds in step). It runs only
// when asked, as it moves gigabytes (about three minutes on 2 cores):
//
//	cd fleet && FLEET_SCALE=1 go test -run '^TestScale$' -v -timeout 30m .
//
// FLEET_SCALE_HOSTS (default 10,50,100) and FLEET_SCALE_ROUNDS (default
// 3, after one round of warm-up that is not measured) set the sizes;
// FLEET_SCALE_MEM_GIB (default 6) bounds the memory the agents keep of
// each other's counts (N x (N-1) x a host's summed exports): a size past
// it is skipped, saying so. Each subtest logs its row of the table in
// docs/FLEET.md ("What a round costs, and where it stops") and each
// structure's payload.

// scaleSeed is the fleet's one seed: every host's structures hash alike.
const scaleSeed = 0x5ca1ab1e

// scaleTimeout bounds a host's round: far above a loaded machine's.
const scaleTimeout = 5 * time.Minute

// scaleHost is one simulated host: its agent and what its workers do
// between rounds.
type scaleHost struct {
	agent *Agent
	add   func(round int) error
}

// scaleProfile is a set of structures every host syncs.
type scaleProfile struct {
	name string
	// summed is a host's bytes of counts that every other host's agent
	// reads each round and keeps (the kinds that combine by addition).
	summed int64
	open   func(t *testing.T, a *Agent, host int) func(round int) error
}

// scaleProfiles: the gateway's structures at their default shapes, and
// the same without the two that combine by addition, whose pull grows
// with the fleet.
var scaleProfiles = []scaleProfile{
	// Summed: 6 periods of 5 x 4096 counters, 8 bytes each; the bans'
	// 2^20 counters of a byte, sent sparse: under 4 KiB for the few
	// dozen bans a host makes in a run.
	{name: "gateway", summed: 6*5*4096*8 + 4<<10, open: openGateway(true)},
	{name: "nosum", open: openGateway(false)},
}

// Gateway traffic a host sees between two rounds.
const (
	scaleRequests = 1000 // clients counted, limited and told apart
	scaleBans     = 10   // bans (counting Bloom filter adds)
)

// openGateway opens a host's structures, in memory, and adds them to a:
// a Count-Min window of requests and a counting Bloom filter of bans (when
// summed), a Bloom window of request ids, a distinct count of clients,
// a rate limiter. It returns what the host's workers add in a round.
func openGateway(summed bool) func(t *testing.T, a *Agent, host int) func(round int) error {
	return func(t *testing.T, a *Agent, host int) func(round int) error {
		var adds []func(i int, key string) error
		if summed {
			w := mustOpen(t, sketch.OpenCountMinWindow, sketch.Memory(), sketch.CountMinWindowConfig{
				Window:   sketch.Window{Period: 10 * time.Second, Keep: 6},
				CountMin: sketch.CountMinConfig{Fleet: true, Seed: scaleSeed},
			})
			bans := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), sketch.CountingBloomConfig{Capacity: 100000, Fleet: true, Seed: scaleSeed})
			must(t, a.AddCountMinWindow("requests", w))
			must(t, a.AddCountingBloom("bans", bans))
			adds = append(adds, func(_ int, k string) error { _, err := w.AddString(k); return err })
			adds = append(adds, func(i int, k string) error {
				if i%(scaleRequests/scaleBans) != 0 {
					return nil
				}
				_, err := bans.AddString(k)
				return err
			})
		}
		ids := mustOpen(t, sketch.OpenBloomWindow, sketch.Memory(), sketch.BloomWindowConfig{
			Window: sketch.Window{Period: time.Minute, Keep: 5},
			Bloom:  sketch.BloomConfig{Capacity: 200000, Seed: scaleSeed},
		})
		clients := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), sketch.DistinctConfig{Redis: true})
		limit := mustOpen(t, sketch.OpenGCRA, sketch.Memory(), sketch.GCRAConfig{Rate: sketch.Rate{Count: 10, Per: time.Second}, Burst: 20, Seed: scaleSeed})
		must(t, a.AddBloomWindow("request-ids", ids))
		must(t, a.AddDistinct("clients", clients))
		must(t, a.AddGCRA("per-client", limit))
		adds = append(adds,
			func(_ int, k string) error { _, err := ids.AddString(k); return err },
			func(_ int, k string) error { return clients.AddString(k) },
			// Each client spends its burst: busy for two seconds, so
			// that a round under that exports it, and a slower one
			// finds it expired (the limiter's bytes then shrink).
			func(_ int, k string) error { _, err := limit.AllowString(k, 20); return err },
		)
		return func(round int) error {
			for i := range scaleRequests {
				k := fmt.Sprintf("h%d-r%d-%d", host, round, i)
				for _, add := range adds {
					if err := add(i, k); err != nil {
						return err
					}
				}
			}
			return nil
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestScale runs the simulation (see above) when FLEET_SCALE=1.
func TestScale(t *testing.T) {
	if os.Getenv("FLEET_SCALE") != "1" || testing.Short() {
		t.Skip("the scale simulation moves gigabytes: FLEET_SCALE=1 runs it (and not with -short)")
	}
	hosts := scaleEnvInts(t, "FLEET_SCALE_HOSTS", []int{10, 50, 100})
	rounds := scaleEnvInts(t, "FLEET_SCALE_ROUNDS", []int{3})[0]
	memGiB := scaleEnvInts(t, "FLEET_SCALE_MEM_GIB", []int{6})[0]
	t.Logf("| profile | hosts | push+pull p50 | p99 | fleet's round | sent/host/round | received/host/round | calls/host/round | commands in scripts | Redis CPU | Redis CPU/host-round | agent CPU/host-round |")
	for _, p := range scaleProfiles {
		for _, n := range hosts {
			t.Run(fmt.Sprintf("%s/hosts=%d", p.name, n), func(t *testing.T) {
				if kept := int64(n) * int64(n-1) * p.summed; kept > int64(memGiB)<<30 {
					t.Skipf("the agents would keep %.1f GiB of each other's counts, past FLEET_SCALE_MEM_GIB=%d", float64(kept)/(1<<30), memGiB)
				}
				runScale(t, p, n, rounds)
			})
		}
	}
}

func scaleEnvInts(t *testing.T, name string, def []int) []int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want positive integers, comma-separated", name, s)
		}
		out = append(out, n)
	}
	return out
}

// runScale starts a redis-server and n hosts of profile p, runs a round of
// warm-up and then rounds measured rounds, and logs the figures.
func runScale(t *testing.T, p scaleProfile, n, rounds int) {
	rs := redistest.Start(t)
	payload := &payloadHook{sent: map[string]int64{}, recv: map[string]int64{}}
	hosts := make([]scaleHost, n)
	for i := range hosts {
		// Each host its own client, as on its own machine, with a modest
		// pool: a round's calls are one at a time. go-redis bounds a call
		// by the earlier of the context's deadline (the agent's Timeout)
		// and its own read and write timeouts: both are raised, so that a
		// round slower than a real fleet's timeout is measured, not cut.
		c := redis.NewClient(&redis.Options{
			Network: "unix", Addr: rs.Sock, PoolSize: 2, MaxRetries: -1, ContextTimeoutEnabled: true,
			ReadTimeout: scaleTimeout, WriteTimeout: scaleTimeout,
		})
		c.AddHook(payload)
		t.Cleanup(func() { c.Close() })
		a, err := New(Config{Redis: c, Fleet: "scale", Host: fmt.Sprint("host-", i), Timeout: scaleTimeout})
		must(t, err)
		t.Cleanup(func() { a.Close() })
		hosts[i] = scaleHost{agent: a, add: p.open(t, a, i)}
	}
	info := rs.Client(t)
	var m scaleMeasure
	for r := 0; r <= rounds; r++ {
		scaleAdd(t, hosts, r)
		before, cpu0 := readRedisStats(t, info), processCPU(t)
		start := time.Now()
		lat := scaleRound(t, hosts)
		wall := time.Since(start)
		if r == 0 {
			payload.on.Store(true)
			continue // the warm-up: keys created, scripts loaded
		}
		m.agentCPU += processCPU(t) - cpu0
		m.add(before, readRedisStats(t, info), wall, lat)
	}
	t.Logf("%s", m.row(p.name, n, rounds))
	t.Logf("payload a host-round, sent/received: %s", payload.summary(n*rounds))
}

// scaleAdd runs every host's adds of round r, each host on a goroutine.
func scaleAdd(t *testing.T, hosts []scaleHost, r int) {
	var wg sync.WaitGroup
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = h.add(r) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("host %d: adds of round %d: %v", i, r, err)
		}
	}
}

// scaleRound starts every host's Sync at once, each on its own goroutine,
// and returns how long each took.
func scaleRound(t *testing.T, hosts []scaleHost) []time.Duration {
	var wg sync.WaitGroup
	start := make(chan struct{})
	lat := make([]time.Duration, len(hosts))
	errs := make([]error, len(hosts))
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			errs[i] = h.agent.Sync(context.Background())
			lat[i] = time.Since(t0)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("host %d: Sync: %v", i, err)
		}
	}
	return lat
}

// redisStats are the server's counters that a run's figures come from.
type redisStats struct {
	in, out int64            // total_net_input_bytes, total_net_output_bytes
	calls   map[string]int64 // commandstats' calls, by command
	cpu     float64          // used_cpu_sys + used_cpu_user, seconds
}

func readRedisStats(t *testing.T, c *redis.Client) redisStats {
	t.Helper()
	text, err := c.Info(context.Background(), "stats", "commandstats", "cpu").Result()
	must(t, err)
	s := redisStats{calls: map[string]int64{}}
	for _, line := range strings.Split(text, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "total_net_input_bytes":
			s.in, _ = strconv.ParseInt(v, 10, 64)
		case k == "total_net_output_bytes":
			s.out, _ = strconv.ParseInt(v, 10, 64)
		case k == "used_cpu_sys", k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			s.cpu += f
		case strings.HasPrefix(k, "cmdstat_"):
			// calls=N,usec=...
			f, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			s.calls[strings.TrimPrefix(k, "cmdstat_")], _ = strconv.ParseInt(f, 10, 64)
		}
	}
	return s
}

// scaleMeasure sums the measured rounds.
type scaleMeasure struct {
	in, out       int64
	client, inner int64           // calls a host sent; commands its scripts ran
	cpu           float64         // Redis's, seconds
	agentCPU      float64         // this process's: every agent's, seconds
	wall          time.Duration   // the rounds' sync phases
	slowest       []time.Duration // of each round: the fleet's round
	lat           []time.Duration // every host's Sync of every round
}

// clientCalls are the commands a host sends; every other command (but
// INFO, the measure's own) runs inside the agent's scripts.
var clientCalls = map[string]bool{"evalsha": true, "eval": true, "mget": true, "script|load": true}

func (m *scaleMeasure) add(before, after redisStats, wall time.Duration, lat []time.Duration) {
	m.in += after.in - before.in
	m.out += after.out - before.out
	m.cpu += after.cpu - before.cpu
	m.wall += wall
	for cmd, n := range after.calls {
		switch d := n - before.calls[cmd]; {
		case cmd == "info":
		case clientCalls[cmd]:
			m.client += d
		default:
			m.inner += d
		}
	}
	m.slowest = append(m.slowest, slices.Max(lat))
	m.lat = append(m.lat, lat...)
}

// row is the run's line of the table: per host and round, and the
// server's CPU as a fraction of one core over the sync phases.
func (m *scaleMeasure) row(profile string, n, rounds int) string {
	slices.Sort(m.lat)
	slices.Sort(m.slowest)
	hr := float64(n * rounds)
	q := func(f float64) time.Duration { return m.lat[min(len(m.lat)-1, int(f*float64(len(m.lat))))] }
	return fmt.Sprintf("| %s | %d | %v | %v | %v | %s | %s | %.1f | %.1f | %.2f | %.1f ms | %.0f ms |",
		profile, n, q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond),
		m.slowest[len(m.slowest)/2].Round(time.Millisecond),
		scaleBytes(float64(m.in)/hr), scaleBytes(float64(m.out)/hr),
		float64(m.client)/hr, float64(m.inner)/hr,
		m.cpu/m.wall.Seconds(), m.cpu/hr*1000, m.agentCPU/hr*1000)
}

func scaleBytes(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

// payloadHook counts the payload of every call, by structure: the
// arguments' bytes a host sends (its exports) and the reply's bytes it
// reads (the fleet's state, the other hosts' counts), without the
// protocol's framing.
type payloadHook struct {
	on         atomic.Bool // counting: after the warm-up
	mu         sync.Mutex
	sent, recv map[string]int64 // by structure
}

func (h *payloadHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *payloadHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *payloadHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if !h.on.Load() {
			return err
		}
		var name string
		var sent int64
		for _, a := range cmd.Args() {
			switch v := a.(type) {
			case string:
				sent += int64(len(v))
				if i := strings.Index(v, "{scale/"); i >= 0 && name == "" {
					name, _, _ = strings.Cut(v[i+len("{scale/"):], "}")
				}
			case []byte:
				sent += int64(len(v))
			}
		}
		var recv int64
		switch c := cmd.(type) {
		case *redis.Cmd:
			recv = payloadSize(c.Val())
		case *redis.SliceCmd:
			recv = payloadSize(c.Val())
		}
		h.mu.Lock()
		h.sent[name] += sent
		h.recv[name] += recv
		h.mu.Unlock()
		return err
	}
}

// payloadSize is the bytes of the strings of a reply.
func payloadSize(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v))
	case []any:
		var n int64
		for _, e := range v {
			n += payloadSize(e)
		}
		return n
	}
	return 0
}

// summary is each structure's payload divided by the host-rounds.
func (h *payloadHook) summary(hostRounds int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(h.sent)) {
		out = append(out, fmt.Sprintf("%s %s/%s", name,
			scaleBytes(float64(h.sent[name])/float64(hostRounds)), scaleBytes(float64(h.recv[name])/float64(hostRounds))))
	}
	return strings.Join(out, ", ")
}
