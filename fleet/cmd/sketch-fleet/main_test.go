package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// slow are the command's arguments and the -redis URL's query that let a
// round wait a minute for Redis: the agent's -timeout (by default the
// interval, a second, or less) and go-redis's read and write timeouts (3s)
// would fail a good round on a loaded machine.
var slow = []string{"-timeout", "1m"}

const slowURL = "read_timeout=1m&write_timeout=1m"

// TestRun_Once: two hosts' files (an arena with a distinct count, a Bloom
// filter and a counting Bloom filter, which is not synced and is named; and a
// standalone Bloom filter) synced by the command's rounds against a real
// Redis: after a round of each host and another of the first, both hold
// each other's keys.
func TestRun_Once(t *testing.T) {
	rs := redistest.Start(t)
	url := "unix://" + rs.Sock + "?" + slowURL
	var arenas, filters []string
	for h := range 2 {
		dir := t.TempDir()
		path := filepath.Join(dir, "arena")
		ar, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: 1 << 22, Seed: 0xa2e4a})
		if err != nil {
			t.Fatal(err)
		}
		d, err := sketch.OpenDistinct(ar.Place("clients"), sketch.DistinctConfig{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := sketch.OpenBloom(ar.Place("seen"), sketch.BloomConfig{Capacity: 1000, FPRate: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		cm, err := sketch.OpenCountingBloom(ar.Place("bans"), sketch.CountingBloomConfig{Capacity: 1000, FPRate: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		d.AddString("client-" + string(rune('a'+h)))
		b.AddString("id-" + string(rune('a'+h)))
		standalone := filepath.Join(dir, "bans")
		sb, err := sketch.OpenBloom(sketch.Path(standalone), sketch.BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		sb.AddString("ban-" + string(rune('a'+h)))
		for _, c := range []interface{ Close() error }{d, b, cm, sb, ar} {
			c.Close()
		}
		arenas, filters = append(arenas, path), append(filters, standalone)
	}
	for _, h := range []int{0, 1, 0} {
		var stderr bytes.Buffer
		code := run(context.Background(), append(slow, "-redis", url, "-fleet", "test", "-host", string(rune('a'+h)), "-once", arenas[h], filters[h]), &stderr)
		if code != 0 {
			t.Fatalf("host %d: exit %d: %s", h, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), `"bans" (counting Bloom filter "bans" has no fleet part`) || !strings.Contains(stderr.String(), "not synced") {
			t.Errorf("host %d: the counting Bloom filter left out is not named: %s", h, stderr.String())
		}
	}
	for h := range 2 {
		ar, err := sketch.OpenArena(sketch.Path(arenas[h]), sketch.ArenaConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer ar.Close()
		d, err := sketch.OpenDistinct(ar.Place("clients"), sketch.DistinctConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		b, err := sketch.OpenBloom(ar.Place("seen"), sketch.BloomConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		sb, err := sketch.OpenBloom(sketch.Path(filters[h]), sketch.BloomConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		if c := d.Count(); c != 2 {
			t.Errorf("host %d: Count() = %d, want 2 (both hosts' clients)", h, c)
		}
		for _, k := range []string{"id-a", "id-b"} {
			if !b.ContainsString(k) {
				t.Errorf("host %d: %s not found in the arena's filter", h, k)
			}
		}
		for _, k := range []string{"ban-a", "ban-b"} {
			if !sb.ContainsString(k) {
				t.Errorf("host %d: %s not found in the standalone filter", h, k)
			}
		}
	}
}

// TestRun_Refuses: bad arguments exit 2 with a message; a file that is not
// a sketch file, or holds only kinds not synced, exits 1; a round that
// fails (no Redis) exits 1.
func TestRun_Refuses(t *testing.T) {
	dir := t.TempDir()
	cmPath := filepath.Join(dir, "cm")
	cm, err := sketch.OpenCountMin(sketch.Path(cmPath), sketch.CountMinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Close()
	bPath := filepath.Join(dir, "b")
	b, err := sketch.OpenBloom(sketch.Path(bPath), sketch.BloomConfig{Capacity: 100, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{nil, 2, "usage"},
		{[]string{"-fleet", "f"}, 2, "usage"},
		{[]string{bPath}, 2, "usage"},
		{[]string{"-fleet", "f", "-redis", "ftp://x", bPath}, 2, "-redis"},
		{[]string{"-fleet", "f", "-cluster", "-redis", "unix://" + filepath.Join(dir, "no.sock"), bPath}, 2, "-redis"},
		{[]string{"-fleet", "f\x00", bPath}, 2, "fleet name"},
		{[]string{"-fleet", "f", "-host", "", bPath}, 2, "host name"},
		{[]string{"-fleet", "f", "-interval", "-1s", bPath}, 2, "negative"},
		{[]string{"-fleet", "f", filepath.Join(dir, "missing")}, 1, "missing"},
		{[]string{"-fleet", "f", cmPath}, 1, "nothing to sync"},
		{[]string{"-fleet", "f", "-redis", "unix://" + filepath.Join(dir, "no.sock"), "-once", bPath}, 1, "redis"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), c.args, &stderr); code != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("sketch-fleet %q: exit %d, %q; want exit %d saying %q", c.args, code, stderr.String(), c.code, c.says)
		}
	}
}

// TestRun_Serves: without -once the command runs rounds until its context
// ends (SIGINT, SIGTERM), serves the agent's state at -metrics, logs the
// structures' states, and exits 0.
func TestRun_Serves(t *testing.T) {
	rs := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "seen")
	b, err := sketch.OpenBloom(sketch.Path(path), sketch.BloomConfig{Capacity: 100, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append(slow, "-redis", "unix://"+rs.Sock+"?"+slowURL, "-fleet", "f", "-host", "h", "-interval", "50ms", "-metrics", "127.0.0.1:0", path), &stderr)
	}()
	addr := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	deadline := time.Now().Add(time.Minute)
	var body string
	for {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			if resp, err := http.Get(m[1]); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
				if strings.Contains(body, `sketch_fleet_state{structure="seen",kind="bloom",state="synced"} 1`) {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no synced state served within a minute; stderr:\n%s\nlast scrape:\n%s", stderr.String(), body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after the context ended: %s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the command did not return within a minute of its context's end")
	}
	if !strings.Contains(stderr.String(), `bloom "seen": synced`) {
		t.Errorf("the state change is not logged: %s", stderr.String())
	}
}

// syncBuffer is a bytes.Buffer for one writer and one reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogChanges_Remembered: a round over a Redis that lost the other
// host's counts is logged with the hosts summed from memory, and the
// next round that reads them all again is logged as plain synced.
func TestLogChanges_Remembered(t *testing.T) {
	rs := redistest.Start(t)
	var agents []*fleet.Agent
	for _, host := range []string{"a", "b"} {
		a, err := fleet.New(fleet.Config{Redis: rs.Client(t), Fleet: "f", Host: host, Timeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		c, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Rows: 2, Width: 64, Fleet: true, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := a.AddCountMin("hits", c); err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	ctx := context.Background()
	syncAll := func(as ...*fleet.Agent) {
		t.Helper()
		for _, a := range as {
			if err := a.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, b := agents[0], agents[1]
	syncAll(a, b, a)
	seen := map[string]string{}
	var log bytes.Buffer
	logChanges(a, seen, &log)
	rs.Client(t).FlushAll(ctx)
	syncAll(a)
	logChanges(a, seen, &log)
	syncAll(b, a)
	logChanges(a, seen, &log)
	want := `sketch-fleet: countmin "hits": synced
sketch-fleet: countmin "hits": synced (1 host's counts from memory, its key gone from Redis)
sketch-fleet: countmin "hits": synced
`
	if got := log.String(); got != want {
		t.Errorf("the log:\n%s\nwant:\n%s", got, want)
	}
}
