package fleet_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
	"github.com/shmsketch/sketch/httplimit"
)

// The gateway of two hosts: each host's arena holds the same five
// structures, created with one fleet seed, behind httplimit's middleware,
// and an agent syncs the arena through one Redis.

// fleetSeed is every host's arena seed: the fleet refuses a host whose
// structures hash otherwise.
const fleetSeed = 0x5eed

// perClient is what a client may send in the window, fleet-wide.
const perClient = 20

var (
	// "requests" counts each client's requests over 5 minutes (a period a
	// minute): the per-client limit, and the loudest clients. Fleet: true
	// gives it the part where the agent stores the other hosts' counts.
	requestsConfig = sketch.CountMinWindowConfig{
		Window:   sketch.Window{Period: time.Minute, Keep: 5},
		CountMin: sketch.CountMinConfig{Rows: 4, Width: 1024, Candidates: 16, Fleet: true},
	}
	// "burst" is a rate limiter of 10 a second, and 30 at once from idle:
	// more than any client here sends, so that only the window refuses.
	burstConfig = sketch.GCRAConfig{Rate: sketch.Rate{Count: 10, Per: time.Second}, Burst: 29, Keys: 1024}
	// "bans" is a counting Bloom filter, so that a ban can be lifted;
	// Fleet: true, so that it is lifted on every host.
	bansConfig = sketch.CountingBloomConfig{Capacity: 1000, Fleet: true}
	// "replays" remembers request nonces for 4 to 5 minutes.
	replaysConfig = sketch.BloomWindowConfig{
		Window: sketch.Window{Period: time.Minute, Keep: 5},
		Bloom:  sketch.BloomConfig{Capacity: 1000, FPRate: 0.001},
	}
	// "clients" counts the distinct clients served.
	clientsConfig = sketch.DistinctConfig{}
)

// clientHeader names the client, as a proxy in front would vouch for it
// (httplimit.RemoteIP keys by address instead).
const clientHeader = "X-Client"

// clientKey is the middleware's key: a request without one is answered
// 400.
func clientKey(r *http.Request) (string, error) {
	if c := r.Header.Get(clientHeader); c != "" {
		return c, nil
	}
	return "", errors.New("no " + clientHeader)
}

// gatewayHost is one host: its agent, its server's URL, and the handles
// the test changes or reads directly.
type gatewayHost struct {
	agent   *fleet.Agent
	url     string
	bans    *sketch.CountingBloom
	clients *sketch.Distinct
}

func newGatewayHost(t *testing.T, rs *redistest.Server, name string) *gatewayHost {
	t.Helper()
	arena := mustOpen(t, sketch.OpenArena, sketch.Path(filepath.Join(t.TempDir(), "gateway.arena")), sketch.ArenaConfig{Size: 8 << 20, Seed: fleetSeed})
	requests := mustOpen(t, sketch.OpenCountMinWindow, arena.Place("requests"), requestsConfig)
	burst := mustOpen(t, sketch.OpenGCRA, arena.Place("burst"), burstConfig)
	bans := mustOpen(t, sketch.OpenCountingBloom, arena.Place("bans"), bansConfig)
	replays := mustOpen(t, sketch.OpenBloomWindow, arena.Place("replays"), replaysConfig)
	clients := mustOpen(t, sketch.OpenDistinct, arena.Place("clients"), clientsConfig)

	// The agent syncs every structure of the arena. The test runs its
	// rounds (Sync) itself; a host would run agent.Run(ctx).
	agent, err := fleet.New(fleet.Config{
		Redis:   rs.Client(t),
		Fleet:   "gateway",
		Host:    name,
		Timeout: 30 * time.Second, // generous, for a loaded machine
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Close() }) // before the arena closes
	if err := agent.AddArena(arena); err != nil {
		t.Fatal(err)
	}

	window, err := httplimit.Window(requests, perClient, "requests")
	if err != nil {
		t.Fatal(err)
	}
	rate, err := httplimit.GCRA(burst, "burst")
	if err != nil {
		t.Fatal(err)
	}
	limits, err := httplimit.New(httplimit.Config{
		Key:      clientKey,
		Limiters: []httplimit.Limiter{rate, window}, // 429
		Banned: func(key string, _ *http.Request) bool { // 403
			return bans.ContainsString(key)
		},
		Replay: func(_ string, r *http.Request) bool { // 409
			nonce := r.Header.Get("Idempotency-Key")
			if nonce == "" {
				return false
			}
			seen, err := replays.AddString(nonce)
			return err != nil || seen // never accept what was not remembered
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clients.AddString(r.Header.Get(clientHeader))
		io.WriteString(w, "ok\n")
	})
	srv := httptest.NewServer(limits.Wrap(api))
	t.Cleanup(srv.Close)
	return &gatewayHost{agent: agent, url: srv.URL, bans: bans, clients: clients}
}

// oneGateway is what a single gateway in front of both hosts would have
// counted: one window and one distinct count fed every request served,
// and the true counts.
type oneGateway struct {
	requests *sketch.CountMinWindow
	clients  *sketch.Distinct
	served   map[string]uint64
}

// httpClient sends the test's requests; a deadline, so that a stuck server
// fails the test rather than hangs it.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// request sends one request of client to h (with an Idempotency-Key when
// nonce is set), checks its status, and counts it in one when served.
func (one *oneGateway) request(t *testing.T, h *gatewayHost, client, nonce string, status int) http.Header {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(clientHeader, client)
	if nonce != "" {
		req.Header.Set("Idempotency-Key", nonce)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("%s %s (nonce %q): %d, want %d", h.url, client, nonce, resp.StatusCode, status)
	}
	if status == http.StatusOK {
		one.requests.AddString(client)
		one.clients.AddString(client)
		one.served[client]++
	}
	return resp.Header
}

// rounds runs a round of each host in order: what the first changed
// reaches the next.
func rounds(t *testing.T, hosts ...*gatewayHost) {
	t.Helper()
	for _, h := range hosts {
		if err := h.agent.Sync(t.Context()); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
}

// TestGateway_TwoHosts: two hosts of a gateway, synced through a real
// Redis, decide as one: a client's limit, a ban and its lifting, a
// replayed nonce, the loudest clients and the distinct clients are the
// fleet's, each after a round of the host that saw it and then one of
// the host that asks.
func TestGateway_TwoHosts(t *testing.T) {
	rs := redistest.Start(t)
	a := newGatewayHost(t, rs, "a")
	b := newGatewayHost(t, rs, "b")
	requests := requestsConfig
	requests.CountMin.Seed = fleetSeed
	one := &oneGateway{
		requests: mustOpen(t, sketch.OpenCountMinWindow, sketch.Memory(), requests),
		clients:  mustOpen(t, sketch.OpenDistinct, sketch.Memory(), sketch.DistinctConfig{Seed: fleetSeed}),
		served:   map[string]uint64{},
	}

	// 1. The limit is the fleet's: alice sends 12 requests to host A;
	// after a round of A and then one of B, host B allows her the 8 left
	// of her 20 and refuses the next with 429.
	const k = 12
	for range k {
		one.request(t, a, "alice", "", http.StatusOK)
	}
	rounds(t, a, b)
	for range perClient - k {
		one.request(t, b, "alice", "", http.StatusOK)
	}
	refused := one.request(t, b, "alice", "", http.StatusTooManyRequests)
	t.Logf("host B refused alice: Retry-After: %s, RateLimit: %s", refused.Get("Retry-After"), refused.Get("RateLimit"))
	retry, err := strconv.Atoi(refused.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 5*60 { // when her requests have left the window
		t.Errorf("Retry-After: %q, want 1 to 300 seconds", refused.Get("Retry-After"))
	}
	if got, want := refused.Get("RateLimit"), fmt.Sprintf(`"requests";r=0;t=%d`, retry); got != want {
		t.Errorf("RateLimit: %s, want %s", got, want)
	}
	if got, want := refused.Get("RateLimit-Policy"), `"burst";q=30;w=3, "requests";q=20;w=300`; got != want {
		t.Errorf("RateLimit-Policy: %s, want %s", got, want)
	}

	// 2. A ban made on host A holds on host B (403); lifted on host B, it
	// is lifted on both.
	if _, err := a.bans.AddString("mallory"); err != nil {
		t.Fatal(err)
	}
	rounds(t, a, b)
	one.request(t, b, "mallory", "", http.StatusForbidden)
	if removed, err := b.bans.RemoveString("mallory"); err != nil || !removed {
		t.Fatalf("host B's unban: removed %v, %v", removed, err)
	}
	rounds(t, b, a)
	one.request(t, a, "mallory", "", http.StatusOK)
	one.request(t, b, "mallory", "", http.StatusOK)

	// 3. A nonce used on host A is a replay on host B (409).
	one.request(t, a, "bob", "order-7", http.StatusOK)
	rounds(t, a, b)
	one.request(t, b, "bob", "order-7", http.StatusConflict)
	one.request(t, b, "bob", "order-8", http.StatusOK)

	// 4. The loudest clients are the fleet's: client-i sends i requests,
	// the odd ones all to host A, the even ones half to each host, so
	// that host B alone knows neither the loudest clients nor all of
	// them. After a round of A and then one of B, host B's agent lists
	// the fleet's 10 loudest, as one window fed every request lists
	// them, never below their counts.
	for i := 1; i <= 16; i++ {
		client := fmt.Sprint("client-", i)
		for j := range i {
			host := a
			if i%2 == 0 && j%2 == 1 {
				host = b
			}
			one.request(t, host, client, "", http.StatusOK)
		}
	}
	rounds(t, a, b)
	top, err := b.agent.Top(t.Context(), "requests", 10)
	if err != nil {
		t.Fatal(err)
	}
	want, err := one.requests.Top(10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(top), keysOf(want); !slices.Equal(got, want) {
		t.Errorf("host B's Top(10): %v, one window's: %v", got, want)
	}
	if got, want := keysOf(top), []string{"alice", "client-16", "client-15", "client-14", "client-13", "client-12", "client-11", "client-10", "client-9", "client-8"}; !slices.Equal(got, want) {
		t.Errorf("host B's Top(10): %v, want %v", got, want)
	}
	for _, hh := range top {
		if hh.Estimate < one.served[hh.Key] {
			t.Errorf("host B's Top: %s at %d, below the %d served", hh.Key, hh.Estimate, one.served[hh.Key])
		}
	}

	// 5. Host B counts the distinct clients of both hosts, as one distinct
	// count fed every client does.
	if got, want := b.clients.Count(), one.clients.Count(); got != want {
		t.Errorf("host B's distinct clients: %d, one count's: %d (of %d served)", got, want, len(one.served))
	}
}

func keysOf(hh []sketch.HeavyHitter) []string {
	keys := make([]string, len(hh))
	for i, h := range hh {
		keys[i] = h.Key
	}
	return keys
}

func mustOpen[C any, S interface{ Close() error }](t *testing.T, open func(sketch.Place, C, ...sketch.Option) (S, error), at sketch.Place, cfg C) S {
	t.Helper()
	s, err := open(at, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
