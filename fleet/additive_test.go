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
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestSync_CountMin: three hosts' Count-Min sketches with a fleet part,
// synced: after a round of each host and another, every estimate of every
// host is exactly the estimate of one sketch fed every host's adds (the
// cells sum alike), so never below the fleet's true count; a round more
// changes nothing; a host's Reset reaches the others at their next round.
func TestSync_CountMin(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: true, Seed: 0xc0}
	union := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Seed: 0xc0})
	truth := map[string]uint64{}
	var agents []*Agent
	var sketches []*sketch.CountMin
	for h := range hosts {
		c := mustOpen(t, sketch.OpenCountMin, sketch.Path(filepath.Join(t.TempDir(), "hits")), cfg)
		first, n := hostKeys(h)
		for i := first; i < first+n; i++ {
			k := key(i % 4000)
			if _, err := c.AddN([]byte(k), uint64(h+1)); err != nil {
				t.Fatal(err)
			}
			union.AddN([]byte(k), uint64(h+1))
			truth[k] += uint64(h + 1)
		}
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddCountMin("hits", c); err != nil {
			t.Fatal(err)
		}
		agents, sketches = append(agents, a), append(sketches, c)
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	check := func(when string) {
		t.Helper()
		for h, c := range sketches {
			for k, n := range truth {
				got, want := c.EstimateString(k), union.EstimateString(k)
				if got != want || got < n {
					t.Fatalf("%s: host %d: Estimate(%q) = %d; one sketch fed every host's adds says %d, the true count is %d", when, h, k, got, want, n)
				}
			}
		}
	}
	check("after two rounds")
	mustSync(t, agents...)
	check("after a third round")

	// Host 0 starts over: its counts leave the others' answers at their
	// next round after its push.
	if err := sketches[0].Reset(); err != nil {
		t.Fatal(err)
	}
	union.Reset()
	truth = map[string]uint64{}
	for h := 1; h < hosts; h++ {
		first, n := hostKeys(h)
		for i := first; i < first+n; i++ {
			k := key(i % 4000)
			union.AddN([]byte(k), uint64(h+1))
			truth[k] += uint64(h + 1)
		}
	}
	mustSync(t, agents...)
	check("after host 0's Reset and a round")

	// A sketch without a fleet part is refused.
	plain := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), sketch.CountMinConfig{})
	if err := agents[0].AddCountMin("plain", plain); err == nil {
		t.Error("AddCountMin of a sketch without a fleet part succeeded")
	}
}

// TestSync_CountMinWindowAllow: the fleet decision. With a limit of 10 a
// period, host 0 admits 7 and pushes; host 1, after its round, admits
// exactly 3 more and refuses the next: a key is never allowed past its
// limit plus what the other hosts admitted since their last push.
func TestSync_CountMinWindowAllow(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinWindowConfig{Window: sketch.Window{Period: forever, Keep: 2}, CountMin: sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: true, Seed: 0xa1}}
	var agents []*Agent
	var wins []*sketch.CountMinWindow
	for h := range 2 {
		w := mustOpen(t, sketch.OpenCountMinWindow, sketch.Path(filepath.Join(t.TempDir(), "rate")), cfg)
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddCountMinWindow("rate", w); err != nil {
			t.Fatal(err)
		}
		agents, wins = append(agents, a), append(wins, w)
	}
	const limit = 10
	allowed := func(w *sketch.CountMinWindow) bool {
		t.Helper()
		d, err := w.AllowString("client-1", limit, false)
		if err != nil {
			t.Fatal(err)
		}
		return d.Allowed()
	}
	for i := range 7 {
		if !allowed(wins[0]) {
			t.Fatalf("host 0 refused request %d of a limit of %d", i+1, limit)
		}
	}
	mustSync(t, agents[0], agents[1])
	for i := range 3 {
		if !allowed(wins[1]) {
			t.Fatalf("host 1 refused request %d after host 0 admitted 7 of %d", i+1, limit)
		}
	}
	if allowed(wins[1]) {
		t.Fatal("host 1 admitted an 11th request of a limit of 10 after syncing host 0's 7")
	}
	// Host 0 learns host 1's 3 at its next round and refuses too.
	mustSync(t, agents[1], agents[0])
	if allowed(wins[0]) {
		t.Error("host 0 admitted an 11th request after syncing host 1's 3")
	}
	// A period later the key's count has not left the window (Keep 2);
	// two periods later it has, on both hosts.
	for range 2 {
		for _, w := range wins {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustSync(t, agents...)
	for h, w := range wins {
		if !allowed(w) {
			t.Errorf("host %d refused the key once its requests' periods left the window", h)
		}
	}
}

// runCountMinAgent is a child process: it syncs the Count-Min sketch at
// FLEET_TEST_FILE as host "killed", adding one to key "k" before each
// round, until it is killed.
func runCountMinAgent() int {
	c, err := sketch.OpenCountMin(sketch.Path(os.Getenv("FLEET_TEST_FILE")), sketch.CountMinConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client := childClient(os.Getenv("FLEET_TEST_SOCK"))
	a, err := New(Config{Redis: client, Fleet: "f", Host: "killed", Timeout: time.Minute})
	if err == nil {
		err = a.AddCountMin("hits", c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for {
		c.AddString("k")
		if err := a.Sync(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// TestSync_CountMinAgentKilled: an agent killed -9 at whatever point of
// its rounds, then restarted, counts nothing twice: the other host's
// estimate of the killed host's key is exactly the killed host's own
// count after a round of each, not more (a push is a whole SET of
// absolute counts, never an increment).
func TestSync_CountMinAgentKilled(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinConfig{Rows: 4, Width: 1 << 10, Fleet: true, Seed: 0x4b}
	path := filepath.Join(t.TempDir(), "hits")
	c := mustOpen(t, sketch.OpenCountMin, sketch.Path(path), cfg)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "FLEET_TEST_ROLE=countmin-agent", "FLEET_TEST_FILE="+path, "FLEET_TEST_SOCK="+rs.Sock)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	client := rs.Client(t)
	deadline := time.Now().Add(2 * time.Minute)
	for client.Exists(context.Background(), "{f/hits}:host:killed").Val() == 0 || c.EstimateString("k") < 200 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the agent process ran no rounds within 2 minutes; its output:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	// The agent process adds too, so the kill may cut its add short: a
	// torn add is what Check reports then, not damage.
	if err := c.Check(); errors.Is(err, sketch.ErrTornAdd) {
		t.Logf("the kill cut an add short: %v", err)
	} else if err != nil {
		t.Fatalf("Check after the agent was killed: %v", err)
	}

	again, other := newAgent(t, rs, "killed"), newAgent(t, rs, "other")
	theirs := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), cfg)
	if err := again.AddCountMin("hits", c); err != nil {
		t.Fatal(err)
	}
	if err := other.AddCountMin("hits", theirs); err != nil {
		t.Fatal(err)
	}
	own := c.EstimateString("k") // the fleet part holds nothing: no other host pushed
	mustSync(t, again, other)
	if got := theirs.EstimateString("k"); got != own {
		t.Errorf("the other host estimates the killed host's key at %d after the restart, the killed host counted %d", got, own)
	}
	if got := c.EstimateString("k"); got != own {
		t.Errorf("the restarted host estimates its own key at %d, it counted %d", got, own)
	}
}

// TestSync_CountMinTop: each host's loud key is loud only there; the
// fleet's Top on any host lists every host's loud key, loudest first,
// each with an estimate never below its fleet-wide count (exactly the
// estimate of one sketch fed every host's adds); hostile candidates in
// Redis are refused, never a panic.
func TestSync_CountMinTop(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.CountMinConfig{Rows: 4, Width: 1 << 12, Fleet: true, Seed: 0x70, Candidates: 16}
	union := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), sketch.CountMinConfig{Rows: 4, Width: 1 << 12, Seed: 0x70})
	truth := map[string]uint64{}
	var agents []*Agent
	for h := range hosts {
		c := mustOpen(t, sketch.OpenCountMin, sketch.Memory(), cfg)
		loud := fmt.Sprint("loud-", h)
		for range 500 * (h + 1) {
			c.AddString(loud)
			union.AddString(loud)
			truth[loud]++
		}
		for i := range 300 {
			k := key(i)
			c.AddString(k)
			union.AddString(k)
			truth[k]++
		}
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddCountMin("hits", c); err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	mustSync(t, agents...)
	mustSync(t, agents...)
	for h, a := range agents {
		top, err := a.Top(context.Background(), "hits", 3)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, x := range top {
			got = append(got, x.Key)
			if x.Estimate < truth[x.Key] || x.Estimate != union.EstimateString(x.Key) {
				t.Errorf("host %d: fleet Top gives %s at %d; its fleet-wide count is %d, one sketch fed every host's adds says %d", h, x.Key, x.Estimate, truth[x.Key], union.EstimateString(x.Key))
			}
			// Low is the estimate less the fleet's error bound, which
			// one sketch fed every host's adds has too.
			if bound := union.ErrorBound(); x.Low != x.Estimate-bound || x.Low > truth[x.Key] {
				t.Errorf("host %d: fleet Top gives %s a low end of %d; estimate %d less the fleet's bound %d, count %d", h, x.Key, x.Low, x.Estimate, bound, truth[x.Key])
			}
		}
		if want := []string{"loud-2", "loud-1", "loud-0"}; !slices.Equal(got, want) {
			t.Errorf("host %d: fleet Top(3) = %q, want %q", h, got, want)
		}
	}
	rs.Client(t).Set(context.Background(), "{f/hits}:top:host1", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 0)
	if _, err := agents[0].Top(context.Background(), "hits", 3); !errors.Is(err, ErrMismatch) {
		t.Errorf("Top over hostile candidates = %v, want ErrMismatch", err)
	}
	if _, err := agents[0].Top(context.Background(), "nothing", 3); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Top of a structure not synced = %v, want ErrInvalidConfig", err)
	}
}

// FuzzDecodeTop: any bytes decode or are refused, never a panic, and
// what decodes encodes back to the same bytes.
func FuzzDecodeTop(f *testing.F) {
	f.Add(encodeTop([]sketch.HeavyHitter{{Key: "a", Length: 1, Estimate: 7}, {Key: "pre", Length: 300, Estimate: 1 << 40}}))
	f.Add([]byte{0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		hh, err := decodeTop(b)
		if err != nil {
			return
		}
		if again := encodeTop(hh); len(b) > 0 && len(again) == 0 {
			t.Fatalf("decoded %d candidates from %d bytes, encoded to nothing", len(hh), len(b))
		}
	})
}
