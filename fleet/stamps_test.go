package fleet

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// hitsPushKeys are pushCounts' keys for host a of syncedPair's sketch:
// the description, the hosts' set, a's counts, the push stamps.
var hitsPushKeys = []string{"{f/hits}:meta", "{f/hits}:hosts", "{f/hits}:host:a", "{f/hits}:stamps"}

// firstMeta is the description a's first structure pushes.
func firstMeta(a *Agent) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.members[0].meta
}

// TestSync_LatePushRefused: a push that lands after a newer one of the
// same host (a round that timed out with its push on the wire, or an
// agent killed with it there, then a newer round) is refused by Redis,
// so the host's older counts never replace its newer ones: the other
// host's estimate stays at the newer count. The late push is replayed
// with the very keys, value and stamp the first round sent.
func TestSync_LatePushRefused(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, cb := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)
	keys := hitsPushKeys

	first, err := rc.Get(ctx, keys[2]).Result()
	if err != nil {
		t.Fatal(err)
	}
	firstStamp, err := rc.HGet(ctx, keys[3], "a").Uint64()
	if err != nil {
		t.Fatalf("no push stamp of host a after its rounds: %v", err)
	}

	ca.AddN([]byte("ka"), 25) // 75 now
	mustSync(t, a)
	newer := rc.Get(ctx, keys[2]).Val()
	newerStamp, _ := rc.HGet(ctx, keys[3], "a").Uint64()
	if newer == first || newerStamp <= firstStamp {
		t.Fatalf("a's second push: value changed %v, stamp %d after %d", newer != first, newerStamp, firstStamp)
	}

	meta := firstMeta(a)
	res, err := pushCounts.Run(ctx, rc, keys, meta, first, "a", 0, firstStamp).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0] != "stale" || res[1] != strconv.FormatUint(newerStamp, 10) {
		t.Fatalf("the late push was answered %v, want [stale %d]", res, newerStamp)
	}
	if got := rc.Get(ctx, keys[2]).Val(); got != newer {
		t.Fatal("the late push replaced the host's newer counts")
	}
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 75 {
		t.Fatalf("b's estimate of ka after the late push = %d, want 75", got)
	}

	// The same push sent again with its own stamp is refused too, and
	// harmlessly: the counts it holds are stored already.
	res, err = pushCounts.Run(ctx, rc, keys, meta, newer, "a", 0, newerStamp).Slice()
	if err != nil || len(res) != 2 || res[0] != "stale" {
		t.Fatalf("a push sent again = %v, %v, want stale", res, err)
	}
	if got := rc.Get(ctx, keys[2]).Val(); got != newer {
		t.Fatal("the push sent again changed the host's counts")
	}
}

// TestSync_PushStampAhead: Redis holds a stamp of this host later than
// its clock (the clock went back, or another agent of the host ran
// ahead). The round's push is refused and the round fails, saying so;
// the next round's push goes past the stamp and lands. A stamp that is
// not up to 16 decimal digits, or is more than a day ahead of Redis's
// clock, is no stamp, so a neighbour cannot stop a host's pushes with
// one; a stamps key of another type fails the round (ErrMismatch) and
// writes nothing.
func TestSync_PushStampAhead(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, cb := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)

	ahead := uint64(time.Now().Add(time.Hour).UnixMicro())
	rc.HSet(ctx, "{f/hits}:stamps", "a", ahead)
	ca.AddN([]byte("ka"), 10) // 60
	err := a.Sync(ctx)
	if err == nil || errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "the next round pushes past it") {
		t.Fatalf("a round under a stamp an hour ahead = %v, want the push refused for this round", err)
	}
	if got, _ := rc.HGet(ctx, "{f/hits}:stamps", "a").Uint64(); got != ahead {
		t.Fatalf("the refused push changed a's stamp to %d", got)
	}
	mustSync(t, a, b)
	if got := cb.EstimateString("ka"); got != 60 {
		t.Fatalf("b's estimate of ka after a's push past a stamp ahead = %d, want 60", got)
	}
	if got, _ := rc.HGet(ctx, "{f/hits}:stamps", "a").Uint64(); got != ahead+stampLeap+1 {
		t.Fatalf("a's stamp = %d, want %d (past the stamp ahead)", got, ahead+stampLeap+1)
	}

	want := uint64(60)
	dayAhead := strconv.FormatUint(uint64(time.Now().Add(25*time.Hour).UnixMicro()), 10)
	for _, bad := range []string{"not a number", "1e30", "18446744073709551615", "9007199254740991", dayAhead, "9e15", "+9000000000000000", " 9000000000000000", "0x1fffffffffffff", "inf", "nan", "-1"} {
		rc.HSet(ctx, "{f/hits}:stamps", "a", bad)
		ca.AddN([]byte("ka"), 10)
		want += 10
		mustSync(t, a, b)
		if got := cb.EstimateString("ka"); got != want {
			t.Fatalf("b's estimate of ka after a's push over the stamp %q = %d, want %d", bad, got, want)
		}
	}

	rc.Del(ctx, "{f/hits}:stamps")
	rc.RPush(ctx, "{f/hits}:stamps", "x")
	before := rc.Get(ctx, "{f/hits}:host:a").Val()
	ca.AddN([]byte("ka"), 10)
	err = a.Sync(ctx)
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "push stamps key") {
		t.Fatalf("a round over a list in the stamps key = %v, want ErrMismatch naming the push stamps key", err)
	}
	if got := rc.Get(ctx, "{f/hits}:host:a").Val(); got != before {
		t.Fatal("a refused push wrote the host's counts")
	}
}

// TestSync_LateCandidatesRefused: a host's candidates push that lands
// after a newer one is refused as a counts push is, so the fleet's Top
// keeps the key the newer push named (a loud key that the older list
// lacks).
func TestSync_LateCandidatesRefused(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, _ := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)
	keys := []string{"{f/hits}:top:a", "{f/hits}:tophosts", "{f/hits}:topstamps"}
	first := rc.Get(ctx, keys[0]).Val()
	firstStamp, err := rc.HGet(ctx, keys[2], "a").Uint64()
	if first == "" || err != nil {
		t.Fatalf("no candidates or stamp of host a after its rounds: %q, %v", first, err)
	}

	ca.AddN([]byte("loud"), 500)
	mustSync(t, a)
	newer := rc.Get(ctx, keys[0]).Val()
	if newer == first {
		t.Fatal("a's candidates did not change after its loud key")
	}
	res, err := pushTop.Run(ctx, rc, keys, first, "a", 0, firstStamp).Slice()
	if err != nil || len(res) != 2 || res[0] != "stale" {
		t.Fatalf("the late candidates push = %v, %v, want stale", res, err)
	}
	if got := rc.Get(ctx, keys[0]).Val(); got != newer {
		t.Fatal("the late candidates push replaced the host's newer candidates")
	}
	mustSync(t, b)
	top, err := b.Top(ctx, "hits", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 1 || top[0].Key != "loud" || top[0].Estimate < 500 {
		t.Fatalf("b's fleet Top(1) = %+v, want loud at 500 or more", top)
	}

	// A candidates stamp ahead: that round's candidates are refused, the
	// next round's land.
	rc.HSet(ctx, keys[2], "a", uint64(time.Now().Add(time.Hour).UnixMicro()))
	ca.AddN([]byte("louder"), 900)
	syncAfterRefusal(t, a)
	mustSync(t, b)
	if top, err := b.Top(ctx, "hits", 1); err != nil || len(top) != 1 || top[0].Key != "louder" {
		t.Fatalf("b's fleet Top(1) after a's push past a stamp ahead = %+v, %v, want louder", top, err)
	}
}

// TestStamps_NumberLikeStampIgnored: a planted stamp that Redis's Lua
// reads as a number under 2^53 but that is not plain decimal digits
// ("9e15", hex, a sign, spaces, a fraction) is no stamp: the host's
// rounds push over it (were it taken, the agent could not read it back
// and every round would fail).
func TestStamps_NumberLikeStampIgnored(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, cb := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)

	want := cb.EstimateString("ka")
	// Forms of a time an hour ahead, within the day past Redis's clock
	// that a stamp may run ahead, and of one near 2^53.
	soon := uint64(time.Now().Add(time.Hour).UnixMicro())
	digits := strconv.FormatUint(soon, 10)
	near := []string{strconv.FormatFloat(float64(soon), 'e', 15, 64), "+" + digits, " " + digits, digits + " ", digits + ".5", "0x" + strconv.FormatUint(soon, 16), "0" + digits}
	for _, bad := range append(near, "9e15", "+9000000000000000", " 9000000000000000", "9000000000000000 ", "9000000000000000.5", "0x1fffffffffffff", "0X1P52") {
		rc.HSet(ctx, "{f/hits}:stamps", "a", bad)
		ca.AddN([]byte("ka"), 10)
		want += 10
		var err error
		for range 3 { // not a one-off: every round fails
			if err = a.Sync(ctx); err == nil {
				break
			}
		}
		if err != nil {
			t.Errorf("rounds of a over the planted stamp %q keep failing: %v", bad, err)
			rc.HDel(ctx, "{f/hits}:stamps", "a")
			mustSync(t, a)
		}
		mustSync(t, b)
		if got := cb.EstimateString("ka"); got != want {
			t.Errorf("b's estimate of ka after the planted stamp %q = %d, want %d", bad, got, want)
		}
	}
}

// TestStamps_FarAheadStampIgnored: a planted stamp just under 2^53 (far
// past Redis's clock) is no stamp. Were it taken, the agent would stamp
// past it, at 2^53 and more, where a Lua number no longer tells stamps
// apart, and a late push of that agent would be taken over a newer one
// for the agent's life.
func TestStamps_FarAheadStampIgnored(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, cb := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)
	keys := hitsPushKeys

	rc.HSet(ctx, keys[3], "a", "9007199254740991")
	ca.AddN([]byte("ka"), 10) // 60
	mustSync(t, a)
	late := rc.Get(ctx, keys[2]).Val()
	a.round.Lock()
	lateStamp := a.stamp
	a.round.Unlock()

	ca.AddN([]byte("ka"), 15) // 75
	mustSync(t, a, b)
	if got := cb.EstimateString("ka"); got != 75 {
		t.Fatalf("b's estimate of ka = %d, want 75", got)
	}

	meta := firstMeta(a)
	res, err := pushCounts.Run(ctx, rc, keys, meta, late, "a", 0, lateStamp).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0] != "stale" {
		t.Errorf("a late push of a (stamp %d, after one stamped %d) was answered %v, want stale", lateStamp, lateStamp+1, res[0])
	}
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 75 {
		t.Errorf("b's estimate of ka after a's late push = %d, want 75 (it read 75 a round before)", got)
	}
}

// delayFirstPush is a client whose first pushCounts call (EVALSHA or
// EVAL carrying a stamp) runs hold() before it is sent: the push is on
// the wire, stamped, and lands after whatever hold does.
func delayFirstPush(t *testing.T, rs *redistest.Server, hold func()) *redis.Client {
	c := rs.Client(t)
	var once sync.Once
	c.AddHook(pushDelay{fire: func(cmd redis.Cmder) {
		name := strings.ToLower(cmd.Name())
		if (name == "evalsha" || name == "eval") && len(cmd.Args()) == 3+4+5 {
			once.Do(hold)
		}
	}})
	return c
}

type pushDelay struct{ fire func(redis.Cmder) }

func (pushDelay) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h pushDelay) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.fire(cmd)
		return next(ctx, cmd)
	}
}

func (pushDelay) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestStamps_RefusedPushNotSentAgain: two agents of one host over one
// file (FLEET.md: "two agents of one host pushing the same counts change
// no sum"). Agent 1 reads the counts (60), stamps its push, and the push
// is held on the wire; agent 2 reads the newer counts (70), stamps later
// and lands; host b pulls 70. Agent 1's push then lands and is refused,
// and its round fails rather than send the older counts again past
// agent 2's stamp: b still reads 70.
func TestStamps_RefusedPushNotSentAgain(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinConfig{Rows: 4, Width: 256, Fleet: true, Seed: 0xa7}
	path := filepath.Join(t.TempDir(), "a")
	ca := mustOpen(t, sketch.OpenCountMin, sketch.Path(path), cfg)
	ca2 := mustOpen(t, sketch.OpenCountMin, sketch.Path(path), cfg)
	cb := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), cfg)
	ca.AddN([]byte("ka"), 50)

	b := newAgent(t, rs, "b")
	a2 := newAgent(t, rs, "a")
	if err := b.AddCountMin("hits", cb); err != nil {
		t.Fatal(err)
	}
	if err := a2.AddCountMin("hits", ca2); err != nil {
		t.Fatal(err)
	}
	var held []string
	client := delayFirstPush(t, rs, func() {
		ca.AddN([]byte("ka"), 10) // 70: agent 1's push holds 60
		if err := a2.Sync(context.Background()); err != nil {
			held = append(held, "agent 2: "+err.Error())
		}
		if err := b.Sync(context.Background()); err != nil {
			held = append(held, "b: "+err.Error())
		}
		if got := cb.EstimateString("ka"); got != 70 {
			held = append(held, "b read "+strconv.FormatUint(got, 10)+", not 70, after agent 2's push")
		}
	})
	a1, err := New(Config{Redis: client, Fleet: "f", Host: "a", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a1.Close() })
	if err := a1.AddCountMin("hits", ca); err != nil {
		t.Fatal(err)
	}
	ca.AddN([]byte("ka"), 10) // 60
	err = a1.Sync(context.Background())
	if len(held) > 0 {
		t.Fatalf("while agent 1's push was held: %v", held)
	}
	t.Logf("agent 1's round, its push landing after agent 2's: %v", err)
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 70 {
		t.Errorf("b's estimate of ka = %d after it read 70: agent 1's older counts were pushed again past agent 2's newer ones", got)
	}
}

// TestStamps_RestartPushesPastKilledPush: an agent whose stamps run
// ahead of its clock (a stamp ahead was planted, or the clock went back)
// stamps each push one past its last. Killed with a push on the wire
// (stamped L+1, its counts as of then), it is restarted: the new agent's
// first push, stamped by the clock, is refused as older than L, and its
// next goes well past L (stampLeap), so the killed agent's push, landing
// after it, is refused and does not put the older counts back.
func TestStamps_RestartPushesPastKilledPush(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, cb := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)
	keys := hitsPushKeys

	rc.HSet(ctx, keys[3], "a", uint64(time.Now().Add(time.Hour).UnixMicro()))
	// a's first round is refused; from its second on it stamps one past
	// its last.
	syncAfterRefusal(t, a)
	ca.AddN([]byte("ka"), 10) // 60: the killed agent's push carries this
	exp, err := exportWithAdds(ca)
	if err != nil {
		t.Fatal(err)
	}
	killed := encodeGrid(exp)
	a.round.Lock()
	killedStamp := a.stamp + 1
	a.round.Unlock()
	meta := firstMeta(a)
	a.Close()

	ca.AddN([]byte("ka"), 10) // 70, pushed by the restarted agent
	again := newAgent(t, rs, "a")
	if err := again.AddCountMin("hits", ca); err != nil {
		t.Fatal(err)
	}
	syncAfterRefusal(t, again)
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 70 {
		t.Fatalf("b's estimate of ka after the restart = %d, want 70", got)
	}
	again.round.Lock()
	t.Logf("the killed agent's push is stamped %d, the restarted agent's %d", killedStamp, again.stamp)
	again.round.Unlock()

	res, err := pushCounts.Run(ctx, rc, keys, meta, killed, "a", 0, killedStamp).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0] != "stale" {
		t.Errorf("the killed agent's push landing after the restarted agent's was answered %v, want stale", res[0])
	}
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 70 {
		t.Errorf("b's estimate of ka after the killed agent's push landed = %d, want 70", got)
	}
}

// TestStamps_GCRAForgottenHostLosesStamp: a rate limiter's host that
// stopped pushing is forgotten once its times key expired, its push
// stamp with it: the stamps hash, whose life every other host's push
// renews, would otherwise grow by a field for every host name ever seen
// (hosts named per instance).
func TestStamps_GCRAForgottenHostLosesStamp(t *testing.T) {
	rs := redistest.Start(t)
	agents := goneAndStays(t, rs)
	mustSync(t, agents...)
	c, ctx := rs.Client(t), context.Background()
	deadline := time.Now().Add(time.Minute)
	for c.SIsMember(ctx, "{f/fast}:hosts", "gone").Val() {
		if time.Now().After(deadline) {
			t.Fatal("host gone still listed a minute after its last push")
		}
		time.Sleep(10 * time.Millisecond)
		mustSync(t, agents[1])
	}
	if c.Exists(ctx, "{f/fast}:times:gone").Val() != 0 {
		t.Fatal("host gone forgotten while its times key lives")
	}
	if c.HExists(ctx, "{f/fast}:stamps", "gone").Val() {
		t.Errorf("host gone is forgotten (its times key expired, it left the hosts' set) but its push stamp stays, in a hash living %v", c.PTTL(ctx, "{f/fast}:stamps").Val())
	}
}

// syncAfterRefusal runs a's round that Redis refuses (it holds a later
// stamp of a's host), then one that succeeds.
func syncAfterRefusal(t *testing.T, a *Agent) {
	t.Helper()
	if err := a.Sync(context.Background()); err == nil || !strings.Contains(err.Error(), "the next round pushes past it") {
		t.Fatalf("host %s: a round under a later stamp = %v, want its push refused", a.cfg.Host, err)
	}
	mustSync(t, a)
}
