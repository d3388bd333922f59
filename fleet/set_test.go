package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

var setTestConfig = sketch.SetConfig{Capacity: 200, KeyBytes: 16, Seed: 0x5e7}

// setHost is one host of the set tests: its agent and its set's file,
// which a new agent of the same host (a restart) opens again.
type setHost struct {
	name  string
	path  string
	agent *Agent
	set   *sketch.Set
}

func newSetHost(t *testing.T, rs *redistest.Server, name string, cfg sketch.SetConfig) *setHost {
	t.Helper()
	h := &setHost{name: name, path: filepath.Join(t.TempDir(), "bans")}
	h.set = mustOpen(t, sketch.OpenSet, sketch.Path(h.path), cfg)
	h.restart(t, rs)
	return h
}

// restart gives the host a new agent, which knows nothing of the last
// rounds but what Redis holds, as after a kill; the old one is closed.
func (h *setHost) restart(t *testing.T, rs *redistest.Server) {
	t.Helper()
	if h.agent != nil {
		h.agent.Close()
	}
	h.agent = newAgent(t, rs, h.name)
	if err := h.agent.AddSet("bans", h.set); err != nil {
		t.Fatal(err)
	}
}

// setMember is the host's member of "bans", for its hook.
func (h *setHost) setMember() *member { return h.agent.members[0] }

func sortedKeys(t *testing.T, s *sketch.Set) []string {
	t.Helper()
	ks, err := s.Keys()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	slices.Sort(out)
	return out
}

func sortedRef(ref map[string]bool) []string {
	var out []string
	for k, on := range ref {
		if on {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func fleetMembers(t *testing.T, rs *redistest.Server) []string {
	t.Helper()
	ms, err := rs.Client(t).SMembers(context.Background(), "{f/bans}:members").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ms)
	return ms
}

// setUniverse are the tests' keys: binary ones, the empty key, keys of
// exactly the key bytes, and plain ones.
func setUniverse() []string {
	u := []string{"", "\x00", "\x00\x00", "\xff\xfe\x00\x01", "10.0.0.1", "exactly16bytes!!", "\x00exactly16bytes", "ban:\n\r\t{x}"}
	for i := range 32 {
		u = append(u, fmt.Sprint("k", i))
	}
	return u
}

func showKeys(ks []string) string { return fmt.Sprintf("%q", ks) }

// TestSync_SetRandomRounds: three hosts add and remove keys at random
// (binary keys, the empty key, keys of exactly the key bytes), then run a
// round each, in a random order. The reference applies each host's adds
// and removes since its last round, at its round, in the rounds' order
// (the later round wins). After every round the host that ran it holds
// exactly the reference, and so does Redis; after a quiet round of every
// host, every host does; and a further quiet round writes nothing (no
// base is committed again).
func TestSync_SetRandomRounds(t *testing.T) {
	rs := redistest.Start(t)
	var hs []*setHost
	for i := range hosts {
		hs = append(hs, newSetHost(t, rs, fmt.Sprint("host", i), setTestConfig))
	}
	universe := setUniverse()
	rng := rand.New(rand.NewPCG(1, 2))
	ref := map[string]bool{}
	// pending are each host's changes since its last round.
	pending := make([]map[string]bool, hosts)
	for i := range pending {
		pending[i] = map[string]bool{}
	}
	round := func(i int, when string) {
		t.Helper()
		mustSync(t, hs[i].agent)
		for k, on := range pending[i] {
			ref[k] = on
		}
		clear(pending[i])
		want := sortedRef(ref)
		if got := sortedKeys(t, hs[i].set); !slices.Equal(got, want) {
			t.Fatalf("%s: host %d after its round holds %s, want %s", when, i, showKeys(got), showKeys(want))
		}
		if got := fleetMembers(t, rs); !slices.Equal(got, want) {
			t.Fatalf("%s: Redis holds %s after host %d's round, want %s", when, showKeys(got), i, showKeys(want))
		}
	}
	for it := range 40 {
		for i, h := range hs {
			for _, j := range rng.Perm(len(universe))[:6] {
				k := []byte(universe[j])
				if rng.IntN(2) == 0 {
					if added, err := h.set.Add(k); err != nil {
						t.Fatal(err)
					} else if added {
						pending[i][string(k)] = true
					}
				} else if removed, err := h.set.Remove(k); err != nil {
					t.Fatal(err)
				} else if removed {
					pending[i][string(k)] = false
				}
			}
		}
		order := rng.Perm(hosts)
		for _, i := range order {
			round(i, fmt.Sprintf("iteration %d", it))
		}
		if it%4 == 3 {
			for i := range hs {
				round(i, fmt.Sprintf("iteration %d, quiet round", it))
			}
			want := sortedRef(ref)
			for i, h := range hs {
				if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
					t.Fatalf("iteration %d: after a quiet round of every host, host %d holds %s, want %s", it, i, showKeys(got), showKeys(want))
				}
			}
		}
	}
	// Settled: a quiet round commits nothing (one call, nothing written).
	for i := range hs {
		round(i, "settling")
	}
	tokens := func() []string {
		var out []string
		for _, h := range hs {
			out = append(out, rs.Client(t).HGet(context.Background(), "{f/bans}:state:"+h.name, "token").Val())
		}
		return out
	}
	before := tokens()
	for i := range hs {
		round(i, "a quiet round")
	}
	if after := tokens(); !slices.Equal(before, after) {
		t.Errorf("a quiet round of settled hosts committed their bases again: tokens %q, then %q", before, after)
	}
}

// errCut is a round cut short by the test, as a kill would.
var errCut = errors.New("cut by the test")

// TestSync_SetCut: a host's round cut after its push (before it applied
// anything) or after its apply (before it settled), then the key flipped
// back by a third host before the cut host's next round, by an agent
// started again (it knows only what Redis holds) or by the same agent.
// The cut host takes no fleet change for its own: it never sends the
// flipped key back, and every host ends holding the reference; a key
// added locally on the cut host meanwhile goes out.
func TestSync_SetCut(t *testing.T) {
	for _, stage := range []string{"pushed", "applied"} {
		for _, restart := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/restart=%v", stage, restart), func(t *testing.T) {
				rs := redistest.Start(t)
				a := newSetHost(t, rs, "a", setTestConfig)
				b := newSetHost(t, rs, "b", setTestConfig)
				c := newSetHost(t, rs, "c", setTestConfig)
				all := []*setHost{a, b, c}
				syncAll := func() {
					t.Helper()
					for _, h := range all {
						mustSync(t, h.agent)
					}
				}
				check := func(when string, want ...string) {
					t.Helper()
					slices.Sort(want)
					for _, h := range all {
						if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
							t.Fatalf("%s: host %s holds %s, want %s", when, h.name, showKeys(got), showKeys(want))
						}
					}
				}
				mustAddKey(t, b.set, "unban-reban")
				mustAddKey(t, b.set, "stays")
				syncAll()
				syncAll()
				check("after the first bans", "unban-reban", "stays")

				// B unbans a key, C bans another; A's round is cut.
				mustRemoveKey(t, b.set, "unban-reban")
				mustSync(t, b.agent)
				mustAddKey(t, c.set, "ban-unban")
				mustSync(t, c.agent)
				a.setMember().set.cut = func(s string) error {
					if s == stage {
						return errCut
					}
					return nil
				}
				if err := a.agent.Sync(context.Background()); !errors.Is(err, errCut) {
					t.Fatalf("the cut round: %v, want the cut", err)
				}
				a.setMember().set.cut = nil

				// Before A's next round, C flips both keys back, and
				// A bans a key of its own.
				mustAddKey(t, c.set, "unban-reban")
				mustRemoveKey(t, c.set, "ban-unban")
				mustSync(t, c.agent)
				mustAddKey(t, a.set, "from-a")
				if restart {
					a.restart(t, rs)
				}
				mustSync(t, a.agent)
				syncAll()
				check("after the cut host's next rounds", "unban-reban", "stays", "from-a")
				if got, want := fleetMembers(t, rs), []string{"from-a", "stays", "unban-reban"}; !slices.Equal(got, want) {
					t.Fatalf("Redis holds %s, want %s", showKeys(got), showKeys(want))
				}
				for _, h := range all {
					if st := h.agent.Stats(); st.State != StateSynced {
						t.Errorf("host %s: state %q (%s), want synced", h.name, st.State, st.Structures[0].LastError)
					}
				}
			})
		}
	}
}

// TestSync_SetRedisRestarted: Redis restarted empty; each host pushes its
// set whole and removes nothing, so the hosts converge on the union of
// their sets, and later adds and removes sync as before. A remove made
// while Redis was empty, of a key another host still held and pushed
// again, is undone: the documented limit.
func TestSync_SetRedisRestarted(t *testing.T) {
	rs := redistest.Start(t)
	var hs []*setHost
	for i := range hosts {
		hs = append(hs, newSetHost(t, rs, fmt.Sprint("host", i), setTestConfig))
	}
	mustAddKey(t, hs[0].set, "a0")
	mustAddKey(t, hs[1].set, "a1")
	mustAddKey(t, hs[2].set, "a2")
	syncAll := func() {
		t.Helper()
		for _, h := range hs {
			mustSync(t, h.agent)
		}
	}
	syncAll()
	syncAll()
	rs.Stop()
	rs.Start(t)
	mustAddKey(t, hs[0].set, "during") // a ban while Redis was empty
	mustRemoveKey(t, hs[1].set, "a2")  // an unban then: undone by host 2's push
	for _, h := range hs {             // the first call on a dead connection may fail
		if err := h.agent.Sync(context.Background()); err != nil {
			mustSync(t, h.agent)
		}
	}
	syncAll()
	want := []string{"a0", "a1", "a2", "during"}
	for i, h := range hs {
		if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
			t.Fatalf("host %d after Redis restarted empty and two rounds: %s, want %s", i, showKeys(got), showKeys(want))
		}
	}
	if got := fleetMembers(t, rs); !slices.Equal(got, want) {
		t.Fatalf("Redis refilled with %s, want %s", showKeys(got), showKeys(want))
	}
	mustRemoveKey(t, hs[2].set, "a0")
	mustAddKey(t, hs[1].set, "after")
	syncAll()
	syncAll()
	want = []string{"a1", "a2", "after", "during"}
	for i, h := range hs {
		if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
			t.Fatalf("host %d: after a remove and an add past the restart: %s, want %s", i, showKeys(got), showKeys(want))
		}
	}
}

// TestSync_SetFull: hosts whose sets cannot hold the fleet's set refuse
// the keys that do not fit with ErrFull, counted in Stats and in the
// metrics, and evict none of their own; the keys stay in the fleet (a
// full host never takes one it could not add for its own remove), and
// once removes make room the next rounds add them.
func TestSync_SetFull(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.SetConfig{Capacity: 8, KeyBytes: 16}
	a := newSetHost(t, rs, "a", cfg)
	b := newSetHost(t, rs, "b", cfg)
	var mine [2][]string
	for i := range 5 {
		mine[0] = append(mine[0], fmt.Sprint("a", i))
		mine[1] = append(mine[1], fmt.Sprint("b", i))
		mustAddKey(t, a.set, mine[0][i])
		mustAddKey(t, b.set, mine[1][i])
	}
	mustSync(t, a.agent)
	for round := range 3 {
		for i, h := range []*setHost{b, a} {
			err := h.agent.Sync(context.Background())
			if !errors.Is(err, sketch.ErrFull) {
				t.Fatalf("round %d of host %s: %v, want ErrFull", round, h.name, err)
			}
			st := h.agent.Stats().Structures[0]
			if st.Refused != 2 || st.State != StateLocal || !strings.Contains(st.LastError, "capacity") {
				t.Fatalf("round %d of host %s: Stats %+v, want 2 refused, local", round, h.name, st)
			}
			own := mine[1-i]
			got := sortedKeys(t, h.set)
			for _, k := range own {
				if !slices.Contains(got, k) {
					t.Fatalf("round %d: host %s lost its own key %q (holds %s)", round, h.name, k, showKeys(got))
				}
			}
			if len(got) != 8 {
				t.Fatalf("round %d: host %s holds %d keys, want its capacity 8", round, h.name, len(got))
			}
			if fm := fleetMembers(t, rs); len(fm) != 10 {
				t.Fatalf("round %d of host %s: Redis holds %s, want all 10 keys", round, h.name, showKeys(fm))
			}
		}
	}
	rec := httptest.NewRecorder()
	a.agent.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `sketch_fleet_refused_keys{structure="bans",kind="set"} 2` + "\n"; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("the scrape lacks %q:\n%s", want, rec.Body.String())
	}

	// A lifts two of its bans: room for every key on both hosts.
	mustRemoveKey(t, a.set, "a0")
	mustRemoveKey(t, a.set, "a1")
	want := []string{"a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"}
	mustSync(t, a.agent, b.agent, a.agent)
	for _, h := range []*setHost{a, b} {
		if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
			t.Fatalf("after the removes: host %s holds %s, want %s", h.name, showKeys(got), showKeys(want))
		}
		if st := h.agent.Stats().Structures[0]; st.Refused != 0 || st.State != StateSynced {
			t.Errorf("after the removes: host %s Stats %+v, want none refused, synced", h.name, st)
		}
	}
}

// TestSync_SetHostile: what Redis holds that a host cannot take (a member
// longer than the key bytes, in the fleet's set or in the host's journal;
// another description; a key of another type) fails the round with
// ErrMismatch, and the host's set is left as it was; once the keys are
// fixed the next round syncs. A set of another capacity is refused.
func TestSync_SetHostile(t *testing.T) {
	rs := redistest.Start(t)
	ctx := context.Background()
	r := rs.Client(t)
	a := newSetHost(t, rs, "a", setTestConfig)
	b := newSetHost(t, rs, "b", setTestConfig)
	mustAddKey(t, a.set, "x")
	mustSync(t, a.agent, b.agent)
	long := strings.Repeat("L", setTestConfig.KeyBytes+1)

	refused := func(when string, want ...string) {
		t.Helper()
		err := b.agent.Sync(ctx)
		if !errors.Is(err, ErrMismatch) {
			t.Fatalf("%s: %v, want ErrMismatch", when, err)
		}
		if got := sortedKeys(t, b.set); !slices.Equal(got, want) {
			t.Fatalf("%s: host b holds %s, want %s as before", when, showKeys(got), showKeys(want))
		}
	}
	// A long member beside a good one: neither is taken.
	r.SAdd(ctx, "{f/bans}:members", long, "good")
	refused("a member longer than the key bytes", "x")
	if j := r.Exists(ctx, "{f/bans}:add:b", "{f/bans}:rem:b").Val(); j != 0 {
		t.Errorf("a refused push left a journal (%d keys)", j)
	}
	r.SRem(ctx, "{f/bans}:members", long)
	mustSync(t, b.agent)
	if got := sortedKeys(t, b.set); !slices.Equal(got, []string{"good", "x"}) {
		t.Fatalf("after the long member went: host b holds %s", showKeys(got))
	}

	// A journal tampered with: nothing of it is applied.
	b.setMember().set.token = "" // as after a restart: the next push reads the journal
	r.HSet(ctx, "{f/bans}:state:b", "journal", "1")
	r.SAdd(ctx, "{f/bans}:rem:b", "x")
	r.SAdd(ctx, "{f/bans}:add:b", long)
	refused("a journal with a long key", "good", "x")
	r.HSet(ctx, "{f/bans}:state:b", "journal", "0")
	r.Del(ctx, "{f/bans}:add:b", "{f/bans}:rem:b")

	// Another description: B's own ban is not pushed either.
	meta := r.Get(ctx, "{f/bans}:meta").Val()
	r.Set(ctx, "{f/bans}:meta", "set capacity=1 keybytes=16", 0)
	mustAddKey(t, b.set, "from-b")
	before := fleetMembers(t, rs)
	refused("another description", "from-b", "good", "x")
	if got := fleetMembers(t, rs); !slices.Equal(got, before) {
		t.Fatalf("a refused push wrote the fleet's set: %s, then %s", showKeys(before), showKeys(got))
	}
	r.Set(ctx, "{f/bans}:meta", meta, 0)

	// The fleet's set of another type.
	saved := fleetMembers(t, rs)
	r.Del(ctx, "{f/bans}:members")
	r.Set(ctx, "{f/bans}:members", "not a set", 0)
	refused("a string for the fleet's set", "from-b", "good", "x")
	r.Del(ctx, "{f/bans}:members")
	r.SAdd(ctx, "{f/bans}:members", toAny(saved)...)

	mustSync(t, b.agent, a.agent)
	for _, h := range []*setHost{a, b} {
		if got, want := sortedKeys(t, h.set), []string{"from-b", "good", "x"}; !slices.Equal(got, want) {
			t.Fatalf("after the keys were fixed: host %s holds %s, want %s", h.name, showKeys(got), showKeys(want))
		}
	}

	// Another capacity.
	c := newSetHost(t, rs, "c", sketch.SetConfig{Capacity: 100, KeyBytes: 16})
	if err := c.agent.Sync(ctx); !errors.Is(err, ErrMismatch) || c.agent.Stats().State != StateRefused {
		t.Errorf("a set of another capacity: %v, state %q; want ErrMismatch, refused", err, c.agent.Stats().State)
	}
}

func mustAddKey(t *testing.T, s *sketch.Set, k string) {
	t.Helper()
	if _, err := s.AddString(k); err != nil {
		t.Fatal(err)
	}
}

func mustRemoveKey(t *testing.T, s *sketch.Set, k string) {
	t.Helper()
	if _, err := s.RemoveString(k); err != nil {
		t.Fatal(err)
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// TestSync_SetFollowed: AddArena syncs an arena's exact set and names its
// exact set window as not synced; AddFile syncs a standalone set under
// its file's name; the agent's handles claim nothing the writers need,
// and a scrape shows the set.
func TestSync_SetFollowed(t *testing.T) {
	rs := redistest.Start(t)
	if !slices.Contains(SyncedKinds(), sketch.KindSet) || slices.Contains(SyncedKinds(), sketch.KindSetWindow) {
		t.Fatalf("SyncedKinds() = %v: want the set, not the set window", SyncedKinds())
	}
	dir := t.TempDir()
	ar := mustOpen(t, sketch.OpenArena, sketch.Path(filepath.Join(dir, "arena")), sketch.ArenaConfig{Size: 1 << 22, Seed: 7})
	// The arena's seed is not the other hosts': exact sets compare keys,
	// so seeds need not agree.
	arenaSet := sketch.SetConfig{Capacity: setTestConfig.Capacity, KeyBytes: setTestConfig.KeyBytes}
	inArena := mustOpen(t, sketch.OpenSet, ar.Place("bans"), arenaSet)
	mustOpen(t, sketch.OpenSetWindow, ar.Place("ids"), sketch.SetWindowConfig{Window: sketch.Window{Period: forever, Keep: 2}, Set: arenaSet})
	standalone := filepath.Join(dir, "allow")
	mustOpen(t, sketch.OpenSet, sketch.Path(standalone), setTestConfig)

	a := newAgent(t, rs, "a")
	err := a.AddArena(ar)
	if !errors.Is(err, ErrNotSynced) || !strings.Contains(err.Error(), `"ids" (setwindow)`) {
		t.Fatalf("AddArena: %v, want ErrNotSynced naming the set window", err)
	}
	if err := a.AddFile(standalone); err != nil {
		t.Fatal(err)
	}
	other := newSetHost(t, rs, "b", setTestConfig)
	otherAllow := mustOpen(t, sketch.OpenSet, sketch.Memory(), setTestConfig)
	if err := other.agent.AddSet("allow", otherAllow); err != nil {
		t.Fatal(err)
	}
	mustAddKey(t, other.set, "ban-from-b")
	mustAddKey(t, otherAllow, "allow-from-b")
	mustAddKey(t, inArena, "ban-from-a")
	mustSync(t, other.agent, a, other.agent)
	allow := mustOpen(t, sketch.OpenSet, sketch.Path(standalone), sketch.SetConfig{})
	if !inArena.ContainsString("ban-from-b") || !allow.ContainsString("allow-from-b") || !other.set.ContainsString("ban-from-a") {
		t.Fatalf("not synced: arena set holds b's ban %v, standalone holds b's allow %v, b holds a's ban %v",
			inArena.ContainsString("ban-from-b"), allow.ContainsString("allow-from-b"), other.set.ContainsString("ban-from-a"))
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	scrape := rec.Body.String()
	for _, want := range []string{
		`sketch_fleet_state{structure="bans",kind="set",state="synced"} 1` + "\n",
		`sketch_fleet_syncs_total{structure="allow",kind="set"} 1` + "\n",
		`sketch_fleet_refused_keys{structure="bans",kind="set"} 0` + "\n",
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("the scrape lacks %q:\n%s", want, scrape)
		}
	}
	promtool(t, scrape)
}

// TestSync_SetWriterDuringRound: a local writer adds and removes keys
// while a round runs, after the round listed the set and before it
// applied the fleet's changes. The apply leaves those keys alone, and the
// next round sends them: the base is what the round listed and applied,
// not what the set holds after it.
func TestSync_SetWriterDuringRound(t *testing.T) {
	rs := redistest.Start(t)
	a := newSetHost(t, rs, "a", setTestConfig)
	b := newSetHost(t, rs, "b", setTestConfig)
	mustAddKey(t, b.set, "held")
	mustAddKey(t, b.set, "from-b")
	mustSync(t, b.agent, a.agent, b.agent)
	mustAddKey(t, b.set, "new-b")
	mustSync(t, b.agent)
	a.setMember().set.cut = func(stage string) error {
		if stage == "pushed" {
			mustAddKey(t, a.set, "late")
			mustRemoveKey(t, a.set, "held")
		}
		return nil
	}
	mustSync(t, a.agent)
	a.setMember().set.cut = nil
	if got, want := sortedKeys(t, a.set), []string{"from-b", "late", "new-b"}; !slices.Equal(got, want) {
		t.Fatalf("after the round with a writer: host a holds %s, want %s", showKeys(got), showKeys(want))
	}
	mustSync(t, a.agent, b.agent, a.agent)
	for _, h := range []*setHost{a, b} {
		if got, want := sortedKeys(t, h.set), []string{"from-b", "late", "new-b"}; !slices.Equal(got, want) {
			t.Fatalf("after the next rounds: host %s holds %s, want %s", h.name, showKeys(got), showKeys(want))
		}
	}
}

// TestSync_SetLarge: sets of many keys go through the scripts (whole,
// as a host's first push, and as differences) in pieces small enough
// for Lua, and come back whole.
func TestSync_SetLarge(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.SetConfig{Capacity: 30_000, KeyBytes: 16}
	a := newSetHost(t, rs, "a", cfg)
	b := newSetHost(t, rs, "b", cfg)
	var want []string
	for i := range 20_000 {
		k := fmt.Sprint("key-", i)
		mustAddKey(t, a.set, k)
		if i%2 == 0 {
			want = append(want, k)
		}
	}
	mustSync(t, a.agent, b.agent)
	if n := b.set.Len(); n != 20_000 {
		t.Fatalf("host b holds %d keys, want 20000", n)
	}
	for i := 1; i < 20_000; i += 2 {
		mustRemoveKey(t, b.set, fmt.Sprint("key-", i))
	}
	mustSync(t, b.agent, a.agent)
	slices.Sort(want)
	for _, h := range []*setHost{a, b} {
		if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
			t.Fatalf("host %s holds %d keys, want the %d even ones", h.name, len(got), len(want))
		}
	}
}

// TestSync_SetCluster: the set's keys share one hash slot, and two hosts
// sync a set through a Redis Cluster of three masters.
func TestSync_SetCluster(t *testing.T) {
	unused := redis.NewClient(&redis.Options{})
	defer unused.Close()
	probe, err := New(Config{Redis: unused, Fleet: "}x", Host: "{h}"})
	if err != nil {
		t.Fatal(err)
	}
	keys := probe.setKeys(&member{name: "a}b"})
	for _, k := range keys {
		if keySlot(k) != keySlot(keys[0]) {
			t.Fatalf("set keys %q in more than one slot", keys)
		}
	}
	c := redistest.StartCluster(t)
	var agents []*Agent
	var sets []*sketch.Set
	for h := range 2 {
		a := clusterAgent(t, c, fmt.Sprint("host", h))
		s := mustOpen(t, sketch.OpenSet, sketch.Memory(), setTestConfig)
		if err := a.AddSet("bans", s); err != nil {
			t.Fatal(err)
		}
		agents, sets = append(agents, a), append(sets, s)
	}
	mustAddKey(t, sets[0], "x")
	mustAddKey(t, sets[1], "y")
	mustSync(t, agents[0], agents[1], agents[0])
	mustRemoveKey(t, sets[1], "x")
	mustSync(t, agents[1], agents[0])
	for h, s := range sets {
		if got := sortedKeys(t, s); !slices.Equal(got, []string{"y"}) {
			t.Fatalf("host %d holds %s, want [y]", h, showKeys(got))
		}
	}
}

// TestSync_SetCreatedAgain: a host's set created again, empty, under its
// name (a standalone file, by a restarted agent; an arena's entry, by the
// agent that follows the arena) is taken for a new set, whose first
// round adds its keys and removes none: the fleet keeps its keys and the
// new set gets them, rather than the host's base being read as every key
// removed.
func TestSync_SetCreatedAgain(t *testing.T) {
	rs := redistest.Start(t)
	b := newSetHost(t, rs, "b", setTestConfig)
	a := newSetHost(t, rs, "a", setTestConfig)
	for i := range 20 {
		mustAddKey(t, b.set, fmt.Sprint("ban-", i))
	}
	mustSync(t, b.agent, a.agent)
	want := sortedKeys(t, b.set)

	// The standalone file, created again while its agent was down.
	a.agent.Close()
	a.set.Close()
	if err := a.set.Unlink(); err != nil {
		t.Fatal(err)
	}
	a.set = mustOpen(t, sketch.OpenSet, sketch.Path(a.path), setTestConfig)
	mustAddKey(t, a.set, "fresh")
	a.restart(t, rs)
	mustSync(t, a.agent, b.agent)
	want = append(want, "fresh")
	slices.Sort(want)
	for _, h := range []*setHost{a, b} {
		if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
			t.Fatalf("after a's set was created again: host %s holds %s, want %s", h.name, showKeys(got), showKeys(want))
		}
	}

	// An arena's set, removed and created again under the agent.
	ar := mustOpen(t, sketch.OpenArena, sketch.Path(filepath.Join(t.TempDir(), "arena")), sketch.ArenaConfig{Size: 1 << 22})
	arenaSet := sketch.SetConfig{Capacity: setTestConfig.Capacity, KeyBytes: setTestConfig.KeyBytes}
	first := mustOpen(t, sketch.OpenSet, ar.Place("bans"), arenaSet)
	first.Close()
	c := newAgent(t, rs, "c")
	if err := c.AddArena(ar); err != nil {
		t.Fatal(err)
	}
	mustSync(t, c)
	if err := ar.Remove("bans"); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, sketch.OpenSet, ar.Place("bans"), arenaSet)
	mustSync(t, c, b.agent)
	if got := sortedKeys(t, again); !slices.Equal(got, want) {
		t.Fatalf("the arena's set created again holds %s, want %s", showKeys(got), showKeys(want))
	}
	if got := sortedKeys(t, b.set); !slices.Equal(got, want) {
		t.Fatalf("after the arena's set was created again: host b holds %s, want %s", showKeys(got), showKeys(want))
	}
}

// The child of TestSync_SetKilled: an agent of host FLEET_SET_HOST syncs
// the set at FLEET_SET_FILE through the Redis at FLEET_SET_SOCK, and kills
// its own process at the round's stage FLEET_SET_CHILD. It runs before
// TestMain, so that the test binary is its own child.
func init() {
	if stage := os.Getenv("FLEET_SET_CHILD"); stage != "" {
		os.Exit(runSetChild(stage))
	}
}

func runSetChild(stage string) int {
	s, err := sketch.OpenSet(sketch.Path(os.Getenv("FLEET_SET_FILE")), sketch.SetConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cl := childClient(os.Getenv("FLEET_SET_SOCK"))
	a, err := New(Config{Redis: cl, Fleet: "f", Host: os.Getenv("FLEET_SET_HOST"), Timeout: 30 * time.Second})
	if err == nil {
		err = a.AddSet("bans", s)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	a.members[0].set.cut = func(at string) error {
		if at == stage {
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Kill()
			}
			select {}
		}
		return nil
	}
	fmt.Fprintln(os.Stderr, "not killed:", a.Sync(context.Background()))
	return 3
}

// TestSync_SetKilled: a host's agent killed (SIGKILL, its own process's)
// after its push, between its removes and its adds, and after its apply;
// meanwhile another host flips back the keys the killed round was to
// change. The agent started again takes no fleet change for its own, and
// every host ends holding the reference.
func TestSync_SetKilled(t *testing.T) {
	for _, stage := range []string{"pushed", "removed", "applied"} {
		t.Run(stage, func(t *testing.T) {
			rs := redistest.Start(t)
			a := newSetHost(t, rs, "a", setTestConfig)
			b := newSetHost(t, rs, "b", setTestConfig)
			c := newSetHost(t, rs, "c", setTestConfig)
			all := []*setHost{a, b, c}
			mustAddKey(t, b.set, "unban-reban")
			mustAddKey(t, b.set, "stays")
			for range 2 {
				for _, h := range all {
					mustSync(t, h.agent)
				}
			}
			a.agent.Close()
			mustRemoveKey(t, b.set, "unban-reban")
			mustSync(t, b.agent)
			mustAddKey(t, c.set, "ban-unban")
			mustSync(t, c.agent)

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "FLEET_SET_CHILD="+stage, "FLEET_SET_FILE="+a.path,
				"FLEET_SET_SOCK="+rs.Sock, "FLEET_SET_HOST=a")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 2 || exit.ExitCode() == 3 {
				t.Fatalf("the agent was not killed: %v\n%s", err, out)
			}

			mustAddKey(t, c.set, "unban-reban")
			mustRemoveKey(t, c.set, "ban-unban")
			mustSync(t, c.agent)
			a.restart(t, rs)
			for range 2 {
				for _, h := range all {
					mustSync(t, h.agent)
				}
			}
			want := []string{"stays", "unban-reban"}
			for _, h := range all {
				if got := sortedKeys(t, h.set); !slices.Equal(got, want) {
					t.Fatalf("after the killed host's next rounds: host %s holds %s, want %s", h.name, showKeys(got), showKeys(want))
				}
			}
		})
	}
}

// TestSync_SetLocalChangeAfterCut: a round ends after it applied part or
// all of the fleet's changes but before it settled (its settle call
// failed: a timeout), and the host changes an applied key once before
// its next round: that change is kept fleet-wide. The next round finishes
// the journal from where this agent stopped rather than applying it
// again, which would undo the change (an unban of a ban the journal
// added, a ban again of a key the journal removed).
func TestSync_SetLocalChangeAfterCut(t *testing.T) {
	for _, c := range []struct {
		stage, key string
		fleet      func(b *sketch.Set)
		local      func(a *sketch.Set)
		want       []string
	}{
		{"applied", "ban", func(b *sketch.Set) { mustAddKey(t, b, "ban") }, func(a *sketch.Set) { mustRemoveKey(t, a, "ban") }, []string{"stays"}},
		{"removed", "ban", func(b *sketch.Set) { mustRemoveKey(t, b, "ban") }, func(a *sketch.Set) { mustAddKey(t, a, "ban") }, []string{"ban", "stays"}},
	} {
		t.Run(c.stage, func(t *testing.T) {
			rs := redistest.Start(t)
			a := newSetHost(t, rs, "a", setTestConfig)
			b := newSetHost(t, rs, "b", setTestConfig)
			mustAddKey(t, b.set, "stays")
			if c.stage == "removed" {
				mustAddKey(t, b.set, c.key)
			}
			mustSync(t, b.agent, a.agent, b.agent)
			c.fleet(b.set) // B's change, which A's cut round applies
			mustSync(t, b.agent)
			a.setMember().set.cut = func(s string) error {
				if s == c.stage {
					return errCut
				}
				return nil
			}
			if err := a.agent.Sync(context.Background()); !errors.Is(err, errCut) {
				t.Fatalf("the cut round: %v, want the cut", err)
			}
			a.setMember().set.cut = nil
			c.local(a.set) // A changes the applied key once
			mustSync(t, a.agent, b.agent, a.agent, b.agent)
			for _, h := range []*setHost{a, b} {
				if got := sortedKeys(t, h.set); !slices.Equal(got, c.want) {
					t.Errorf("host %s holds %s, want %s", h.name, showKeys(got), showKeys(c.want))
				}
			}
			if got := fleetMembers(t, rs); !slices.Equal(got, c.want) {
				t.Errorf("Redis holds %s, want %s", showKeys(got), showKeys(c.want))
			}
		})
	}
}

// TestSync_SetJournalKeysGone: a pending journal whose keys a neighbour
// deleted is settled as empty, so the host's rounds go on (it was stuck,
// every round failing, before).
func TestSync_SetJournalKeysGone(t *testing.T) {
	rs := redistest.Start(t)
	a := newSetHost(t, rs, "a", setTestConfig)
	b := newSetHost(t, rs, "b", setTestConfig)
	mustSync(t, a.agent, b.agent)
	mustAddKey(t, b.set, "x")
	mustSync(t, b.agent)
	a.setMember().set.cut = func(s string) error {
		if s == "pushed" {
			return errCut
		}
		return nil
	}
	if err := a.agent.Sync(context.Background()); !errors.Is(err, errCut) {
		t.Fatalf("the cut round: %v, want the cut", err)
	}
	a.setMember().set.cut = nil
	rs.Client(t).Del(context.Background(), "{f/bans}:add:a", "{f/bans}:rem:a")
	for range 3 {
		mustSync(t, a.agent, b.agent)
	}
	if st := a.agent.Stats(); st.State != StateSynced {
		t.Errorf("host a: state %q (%s), want synced", st.State, st.Structures[0].LastError)
	}
	if ga, gb := sortedKeys(t, a.set), sortedKeys(t, b.set); !slices.Equal(ga, gb) {
		t.Errorf("hosts apart: a holds %s, b %s", showKeys(ga), showKeys(gb))
	}
}
