package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// attackPair is two hosts syncing one Count-Min sketch with candidates:
// host "a" counted "ka" 50 times, host "b" "kb" 30 times, one round each
// and another of a, so that both hold the fleet's counts.
func syncedPair(t *testing.T, rs *redistest.Server) (a, b *Agent, ca, cb *sketch.CountMin) {
	t.Helper()
	cfg := sketch.CountMinConfig{Rows: 4, Width: 256, Fleet: true, Seed: 0xa7, Candidates: 8}
	ca = mustOpen(t, sketch.OpenCountMin, sketch.Path(filepath.Join(t.TempDir(), "a")), cfg)
	cb = mustOpen(t, sketch.OpenCountMin, sketch.Path(filepath.Join(t.TempDir(), "b")), cfg)
	ca.AddN([]byte("ka"), 50)
	cb.AddN([]byte("kb"), 30)
	a, b = newAgent(t, rs, "a"), newAgent(t, rs, "b")
	for _, x := range []struct {
		a *Agent
		c *sketch.CountMin
	}{{a, ca}, {b, cb}} {
		if err := x.a.AddCountMin("hits", x.c); err != nil {
			t.Fatal(err)
		}
	}
	mustSync(t, a, b, a)
	if ca.EstimateString("kb") < 30 || cb.EstimateString("ka") < 50 {
		t.Fatalf("not synced: a sees kb %d, b sees ka %d", ca.EstimateString("kb"), cb.EstimateString("ka"))
	}
	return a, b, ca, cb
}

// TestSync_CraftedHostKeysRefused: keys a neighbour writes into the fleet's
// keys. A host key that is not counts fails the round (ErrMismatch) and
// lowers nothing; a hosts key that is not a set is refused; thousands of
// hosts listed with no key fail the round and lower nothing; a host named
// like another's key gets a key of its own (escaped), not the other's.
func TestSync_CraftedHostKeysRefused(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, _ := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)

	// A host key that is not counts: an unknown format, and a dense
	// value of the wrong length ("s..." would be a sparse value).
	rc.SAdd(ctx, "{f/hits}:hosts", "evil")
	for _, v := range []string{"wrong", "d-short"} {
		rc.Set(ctx, "{f/hits}:host:evil", v, 0)
		if err := a.Sync(ctx); !errors.Is(err, ErrMismatch) {
			t.Errorf("a round over a host key holding %q = %v, want ErrMismatch", v, err)
		}
		if got := ca.EstimateString("kb"); got < 30 {
			t.Errorf("a failed round lowered b's key to %d on a", got)
		}
		if st := a.Stats(); st.State != StateRefused {
			t.Errorf("after a round refused the agent says %q, want %q", st.State, StateRefused)
		}
	}
	rc.Del(ctx, "{f/hits}:host:evil")

	// Thousands of hosts in the set with no key: the round fails (a
	// listed host without counts) and lowers nothing; once they are
	// gone from the set, rounds succeed again.
	fake := make([]any, 5000)
	for i := range fake {
		fake[i] = fmt.Sprint("ghost-", i)
	}
	rc.SAdd(ctx, "{f/hits}:hosts", fake...)
	if err := a.Sync(ctx); err == nil {
		t.Error("a round over 5000 listed hosts without counts succeeded")
	}
	if got := ca.EstimateString("kb"); got < 30 {
		t.Errorf("fake hosts lowered b's key to %d on a", got)
	}
	rc.SRem(ctx, "{f/hits}:hosts", append(fake, "evil")...)
	mustSync(t, a)

	// A host name a neighbour listed with a line break and an escape in
	// it: the error names it quoted, so it cannot forge a log line.
	forged := "x\nfleet: forged\x1b[2J"
	rc.SAdd(ctx, "{f/hits}:hosts", forged)
	if err := a.Sync(ctx); err == nil || strings.ContainsAny(err.Error(), "\n\x1b") {
		t.Errorf("a round over a listed host named with a line break: %q, want an error on one line", err)
	}
	rc.SRem(ctx, "{f/hits}:hosts", forged)
	mustSync(t, a)

	// A host named like another's key: "b" escaped cannot be reached
	// by a host name holding the separator.
	for _, name := range []string{"x:host:b", "{f/hits}:host:b", "b%3A", "b:"} {
		if k := "{f/hits}:host:" + keyName(name); k == "{f/hits}:host:b" {
			t.Errorf("host %q's key is b's", name)
		}
	}

	// The hosts key of another type: refused, nothing written.
	rc.Del(ctx, "{f/hits}:hosts")
	rc.Set(ctx, "{f/hits}:hosts", "not a set", 0)
	if err := b.Sync(ctx); !errors.Is(err, ErrMismatch) {
		t.Errorf("a round over a hosts key that is a string = %v, want ErrMismatch", err)
	}
	if got := ca.EstimateString("kb"); got < 30 {
		t.Errorf("a refused round lowered b's key to %d on a", got)
	}
}

// TestTop_CraftedCandidatesRefused: a candidates key of a host listed by a
// neighbour: malformed content is refused (ErrMismatch); whole keys it
// names are estimated again here (at what this host counts, not what
// the neighbour claims); a prefix keeps the estimate it claims.
func TestTop_CraftedCandidatesRefused(t *testing.T) {
	rs := redistest.Start(t)
	a, _, _, _ := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)
	rc.SAdd(ctx, "{f/hits}:tophosts", "evil")
	rc.Set(ctx, "{f/hits}:top:evil", encodeTop([]sketch.HeavyHitter{
		{Key: "forged", Length: 6, Estimate: 1 << 62},
		{Key: "pre", Length: 300, Estimate: 1 << 40},
	}), 0)
	top, err := a.Top(ctx, "hits", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range top {
		switch h.Key {
		case "forged":
			if h.Estimate >= 1<<62 {
				t.Errorf("a forged whole key kept its claimed estimate %d", h.Estimate)
			}
		case "pre":
			t.Logf("a forged prefix is listed at its claimed estimate %d", h.Estimate)
		}
	}
	for _, bad := range []string{"\x05ab", strings.Repeat("\xff", 20), "\x01a\x00\x01"} {
		rc.Set(ctx, "{f/hits}:top:evil", bad, 0)
		if _, err := a.Top(ctx, "hits", 0); !errors.Is(err, ErrMismatch) {
			t.Errorf("Top over candidates %q = %v, want ErrMismatch", bad, err)
		}
	}
}

// TestSync_RenamedHostCountsTwice: an agent restarted under another
// host name, over the same file, pushes the same counters under a second
// key while the first stays (a plain sketch's keys never expire): every
// other host counts that host's adds twice until the old key is deleted
// and the other agents forget the old name (Forget).
func TestSync_RenamedHostCountsTwice(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, cb := syncedPair(t, rs)
	a.Close()
	a2 := newAgent(t, rs, "a-renamed")
	if err := a2.AddCountMin("hits", ca); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a2, b)
	got := cb.EstimateString("ka")
	t.Logf("after a's restart as a-renamed, b estimates a's key (50 adds) at %d", got)
	if got != 100 {
		t.Errorf("b estimates a's key at %d, want 100 (counted under both names)", got)
	}
	rs.Client(t).SRem(context.Background(), "{f/hits}:hosts", "a")
	rs.Client(t).Del(context.Background(), "{f/hits}:host:a")
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 100 {
		t.Errorf("after the old host's key is deleted, b estimates a's key at %d, want 100 until b forgets a", got)
	}
	b.Forget("a")
	mustSync(t, b)
	if got := cb.EstimateString("ka"); got != 50 {
		t.Errorf("after the old host's key is deleted and b forgot it, b estimates a's key at %d, want 50", got)
	}
}

// TestSync_SameHostNameHidesBoth: two agents with one host name overwrite one
// key and each takes the other's push for its own: neither counts the
// other's adds.
func TestSync_SameHostNameHidesBoth(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinConfig{Rows: 4, Width: 256, Fleet: true, Seed: 0xa7}
	c1 := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), cfg)
	c2 := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), cfg)
	c1.AddN([]byte("k1"), 10)
	c2.AddN([]byte("k2"), 20)
	a1, a2 := newAgent(t, rs, "same"), newAgent(t, rs, "same")
	a1.AddCountMin("hits", c1)
	a2.AddCountMin("hits", c2)
	mustSync(t, a1, a2, a1)
	t.Logf("two agents named alike: host 1 estimates k2 (20 adds on host 2) at %d, host 2 k1 (10 on host 1) at %d", c1.EstimateString("k2"), c2.EstimateString("k1"))
}

// TestSync_EmptiedRedisKeepsRemembered: a Redis that lost its data (a
// flush, a failover to an empty replica): the next round of a host,
// before the others pushed again, finds only itself in Redis and sums
// the others' remembered counts, so its answers stay exact; its Stats
// say it remembered one host, and no more once the other pushed again.
func TestSync_EmptiedRedisKeepsRemembered(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, _ := syncedPair(t, rs)
	rs.Client(t).FlushAll(context.Background())
	mustSync(t, a)
	if got := ca.EstimateString("kb"); got != 30 {
		t.Errorf("after a flush and a round of a, a estimates b's key (30 adds) at %d, want 30", got)
	}
	if got := remembered(t, a); got != 1 {
		t.Errorf("after a flush a's Stats say %d hosts remembered, want 1", got)
	}
	mustSync(t, b, a)
	if got := ca.EstimateString("kb"); got != 30 {
		t.Errorf("after b's round and a's, a estimates b's key at %d, want 30", got)
	}
	if got := remembered(t, a); got != 0 {
		t.Errorf("after b pushed again a's Stats say %d hosts remembered, want 0", got)
	}
}

// TestDecodeTop_LengthFitsInt: a candidate's whole-key length is
// refused past the largest int of a 32-bit build, where int(length)
// would turn negative.
func TestDecodeTop_LengthFitsInt(t *testing.T) {
	b := encodeTop([]sketch.HeavyHitter{{Key: "k", Length: 1, Estimate: 1}})
	b = append(b[:2], 0x80, 0x80, 0x80, 0x80, 0x08, 0x01) // length 2^31, estimate 1
	if _, err := decodeTop(b); err == nil {
		t.Error("a candidate of length 2^31 decoded")
	}
	b = encodeTop([]sketch.HeavyHitter{{Key: "k", Length: 1<<31 - 1, Estimate: 1}})
	if hh, err := decodeTop(b); err != nil || hh[0].Length != 1<<31-1 {
		t.Errorf("a candidate of length 2^31-1: %v, %v", hh, err)
	}
}

// TestDecodeTop_TooManyCandidates: a candidates key listing more keys than
// a table holds (2^14) is refused, not decoded into memory many times
// its size; 2^14 of them decode.
func TestDecodeTop_TooManyCandidates(t *testing.T) {
	hh := make([]sketch.HeavyHitter, maxTopCandidates+1)
	for i := range hh {
		hh[i] = sketch.HeavyHitter{Key: "k", Length: 1, Estimate: 1}
	}
	if _, err := decodeTop(encodeTop(hh)); err == nil {
		t.Error("2^14+1 candidates decoded")
	}
	if got, err := decodeTop(encodeTop(hh[:maxTopCandidates])); err != nil || len(got) != maxTopCandidates {
		t.Errorf("2^14 candidates: %d, %v", len(got), err)
	}
}

// TestSync_ListedHostKeyGone: a host listed in the fleet whose key is
// gone or not a string (MGET answers nil for both) is summed from the
// agent's memory: the round succeeds, the fleet part keeps the host's
// last counts, not a lower sum, and Stats say one host remembered until
// the host pushes again. An agent that never summed the host (here a
// new one) fails the round instead, storing nothing lower.
func TestSync_ListedHostKeyGone(t *testing.T) {
	rs := redistest.Start(t)
	a, b, ca, _ := syncedPair(t, rs)
	ctx := context.Background()
	rc := rs.Client(t)
	before := ca.EstimateString("kb")
	if before != 30 {
		t.Fatalf("a estimates b's key at %d before the test, want 30", before)
	}
	for _, spoil := range []func(){
		func() { rc.Del(ctx, "{f/hits}:host:b") },
		func() { rc.Del(ctx, "{f/hits}:host:b"); rc.RPush(ctx, "{f/hits}:host:b", "x") },
	} {
		spoil()
		mustSync(t, a)
		if got := ca.EstimateString("kb"); got != before {
			t.Errorf("a round over b's key gone changed a's estimate of b's key from %d to %d", before, got)
		}
		if s := a.Stats(); s.State != StateSynced || s.Structures[0].Remembered != 1 {
			t.Errorf("State = %s, remembered %d; want synced, 1", s.State, s.Structures[0].Remembered)
		}

		fresh := newAgent(t, rs, "a")
		if err := fresh.AddCountMin("hits", ca); err != nil {
			t.Fatal(err)
		}
		if err := fresh.Sync(ctx); err == nil {
			t.Error("a round of a new agent over a listed host without counts succeeded")
		}
		if got := ca.EstimateString("kb"); got != before {
			t.Errorf("a new agent's failed round changed a's estimate of b's key from %d to %d", before, got)
		}
		if s := fresh.Stats(); s.State != StateLocal {
			t.Errorf("the new agent's State = %s, want local", s.State)
		}
		fresh.Close()

		rc.Del(ctx, "{f/hits}:host:b")
		mustSync(t, b, a)
		if got := ca.EstimateString("kb"); got != 30 {
			t.Errorf("after b's next push, a estimates b's key at %d, want 30", got)
		}
		if got := remembered(t, a); got != 0 {
			t.Errorf("after b's next push a remembers %d hosts, want 0", got)
		}
	}
}
