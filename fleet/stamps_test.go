package fleet

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

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
	keys := []string{"{f/hits}:meta", "{f/hits}:hosts", "{f/hits}:host:a", "{f/hits}:stamps"}

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

	a.mu.Lock()
	meta := a.members[0].meta
	a.mu.Unlock()
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
