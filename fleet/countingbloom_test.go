package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestSync_CountingBloomBansAndUnbans: a ban list of three hosts, synced
// through a real Redis. Bans made on two hosts are found on every host
// after a round of each; unbans made on the third, of bans it never held,
// take them out on every host; after each round every host answers
// exactly as one filter fed every host's bans and unbans (the counters'
// fleet-wide counts alike); a ban made after a host's last round is not
// its to find yet, and is after the next rounds.
func TestSync_CountingBloomBansAndUnbans(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountingBloomConfig{Capacity: 10000, Seed: 0xba, Fleet: true}
	union := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), sketch.CountingBloomConfig{Capacity: 10000, Seed: 0xba})
	var agents []*Agent
	var filters []*sketch.CountingBloom
	for h := range hosts {
		b := mustOpen(t, sketch.OpenCountingBloom, sketch.Path(filepath.Join(t.TempDir(), "bans")), cfg)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddCountingBloom("bans", b); err != nil {
			t.Fatal(err)
		}
		agents, filters = append(agents, a), append(filters, b)
	}
	banned := map[string]bool{}
	ban := func(h, i int) {
		k := fmt.Sprint("10.1.", h, ".", i)
		if _, err := filters[h].AddString(k); err != nil {
			t.Fatal(err)
		}
		union.AddString(k)
		banned[k] = true
	}
	for i := range 200 {
		ban(0, i)
	}
	for i := range 100 {
		ban(1, i)
	}
	check := func(when string) {
		t.Helper()
		want := union.Stats().Set
		for h, b := range filters {
			if got := b.Stats().Set; got != want {
				t.Fatalf("%s: host %d has %d counters set fleet-wide, one filter of every host's bans %d", when, h, got, want)
			}
			for k, on := range banned {
				if b.ContainsString(k) != on || b.EstimateString(k) != union.EstimateString(k) {
					t.Fatalf("%s: host %d: %q contains %v, estimate %d; want %v, %d", when, h, k, b.ContainsString(k), b.EstimateString(k), on, union.EstimateString(k))
				}
			}
		}
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	check("after the bans and two rounds")

	// Host 2 unbans half of each host's bans: it holds none of them.
	for i := range 100 {
		h, j := i%2, i/2*2
		k := fmt.Sprint("10.1.", h, ".", j)
		if removed, err := filters[2].RemoveString(k); err != nil || !removed {
			t.Fatalf("unban of %q on host 2: %v, %v", k, removed, err)
		}
		union.RemoveString(k)
		banned[k] = false
	}
	mustSync(t, agents[2], agents[0], agents[1])
	check("after the unbans and a round of host 2, then of the others")

	// A ban after host 1's round reaches it at its next round after the
	// banning host's.
	ban(0, 500)
	mustSync(t, agents[1], agents[0])
	if filters[1].ContainsString("10.1.0.500") {
		t.Fatal("host 1 found a ban made after its round")
	}
	mustSync(t, agents[1], agents[2])
	check("after the late ban's rounds")
	mustSync(t, agents...)
	check("after one more round")
}

// TestSync_CountingBloomRedisDown: a round without Redis fails and leaves
// every answer as it was (local state, never a lower count); the next
// good round after Redis is back refills it.
func TestSync_CountingBloomRedisDown(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountingBloomConfig{Capacity: 1000, Seed: 0xbd, Fleet: true}
	a := newAgent(t, rs, "a")
	b := newAgent(t, rs, "b")
	fa := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), cfg)
	fb := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), cfg)
	if err := a.AddCountingBloom("bans", fa); err != nil {
		t.Fatal(err)
	}
	if err := b.AddCountingBloom("bans", fb); err != nil {
		t.Fatal(err)
	}
	fa.AddString("x")
	mustSync(t, a, b)
	if !fb.ContainsString("x") {
		t.Fatal("B does not find A's ban")
	}
	rs.Stop()
	if err := b.Sync(context.Background()); err == nil {
		t.Fatal("a round without Redis succeeded")
	}
	if s := b.Stats(); s.State != StateLocal || !fb.ContainsString("x") {
		t.Fatalf("after a failed round: state %q, contains %v; want local, true", s.State, fb.ContainsString("x"))
	}
	rs.Start(t)
	mustSync(t, a, b)
	if !fb.ContainsString("x") || fb.EstimateString("x") != 1 {
		t.Fatalf("after Redis came back empty and a round of each: contains %v, estimate %d", fb.ContainsString("x"), fb.EstimateString("x"))
	}

	// Another geometry under the same name is refused before anything is
	// written; a filter without a fleet part is not synced.
	other := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), sketch.CountingBloomConfig{Capacity: 5000, Seed: 0xbd, Fleet: true})
	c := newAgent(t, rs, "c")
	if err := c.AddCountingBloom("bans", other); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(context.Background()); !errors.Is(err, ErrMismatch) {
		t.Errorf("a filter of another geometry: %v, want ErrMismatch", err)
	}
	plain := mustOpen(t, sketch.OpenCountingBloom, sketch.Memory(), sketch.CountingBloomConfig{Capacity: 1000})
	if err := c.AddCountingBloom("plain", plain); !errors.Is(err, ErrNotSynced) {
		t.Errorf("a filter without a fleet part: %v, want ErrNotSynced", err)
	}
}
