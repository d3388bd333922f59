package fleet

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestMetrics: a scrape says each structure's state, rounds and last sync,
// with names a file's writer chose (quotes, backslashes, braces) escaped,
// and passes promtool check metrics; after Redis went down the state is
// local and the failures count.
func TestMetrics(t *testing.T) {
	rs := redistest.Start(t)
	a := newAgent(t, rs, "h")
	d := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), sketch.DistinctConfig{Seed: 1})
	b := mustOpen(t, sketch.OpenBloom, sketch.Memory(), sketch.BloomConfig{Capacity: 100, FPRate: 0.01, Seed: 1})
	odd := `a "quoted" \name {x}`
	if err := a.AddDistinct("clients", d); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBloom(odd, b); err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		t.Helper()
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
			t.Errorf("Content-Type %q", ct)
		}
		return rec.Body.String()
	}
	idle := scrape()
	for _, want := range []string{
		"sketch_fleet_rounds_total 0\n",
		`sketch_fleet_state{structure="clients",kind="distinct",state="idle"} 1` + "\n",
		`sketch_fleet_state{structure="a \"quoted\" \\name {x}",kind="bloom",state="idle"} 1` + "\n",
		`sketch_fleet_last_sync_timestamp_seconds{structure="clients",kind="distinct"} 0.000` + "\n",
	} {
		if !strings.Contains(idle, want) {
			t.Errorf("the scrape before a round lacks %q:\n%s", want, idle)
		}
	}
	promtool(t, idle)

	mustSync(t, a)
	synced := scrape()
	for _, want := range []string{
		"sketch_fleet_rounds_total 1\n",
		`sketch_fleet_state{structure="clients",kind="distinct",state="synced"} 1` + "\n",
		`sketch_fleet_syncs_total{structure="clients",kind="distinct"} 1` + "\n",
		`sketch_fleet_failures_total{structure="clients",kind="distinct"} 0` + "\n",
	} {
		if !strings.Contains(synced, want) {
			t.Errorf("the scrape after a round lacks %q:\n%s", want, synced)
		}
	}
	if strings.Contains(synced, `sketch_fleet_last_sync_timestamp_seconds{structure="clients",kind="distinct"} 0.000`) {
		t.Error("last sync still 0 after a good round")
	}
	promtool(t, synced)

	rs.Stop()
	a.cfg.Timeout = 2 * time.Second // a round with Redis down fails, not waits
	if err := a.Sync(context.Background()); err == nil {
		t.Fatal("Sync with Redis down succeeded")
	}
	down := scrape()
	for _, want := range []string{
		`sketch_fleet_state{structure="clients",kind="distinct",state="local"} 1` + "\n",
		`sketch_fleet_state{structure="clients",kind="distinct",state="synced"} 0` + "\n",
		`sketch_fleet_failures_total{structure="clients",kind="distinct"} 1` + "\n",
	} {
		if !strings.Contains(down, want) {
			t.Errorf("the scrape with Redis down lacks %q:\n%s", want, down)
		}
	}
	promtool(t, down)
}

// TestMetrics_Remembered: a round that summed remembered counts says how
// many hosts in sketch_fleet_remembered_hosts, and the scrape passes
// promtool check metrics.
func TestMetrics_Remembered(t *testing.T) {
	rs := redistest.Start(t)
	a, _, _, _ := syncedPair(t, rs)
	rs.Client(t).FlushAll(context.Background())
	mustSync(t, a)
	var sb strings.Builder
	if err := a.WriteMetrics(&sb); err != nil {
		t.Fatal(err)
	}
	want := `sketch_fleet_remembered_hosts{structure="hits",kind="countmin"} 1` + "\n"
	if !strings.Contains(sb.String(), want) {
		t.Errorf("the scrape after a round over an emptied Redis lacks %q:\n%s", want, sb.String())
	}
	promtool(t, sb.String())
}

// promtool checks a scrape with promtool check metrics: skipped without
// promtool, failed under CI=true (.ci/install-deps installs it).
func promtool(t *testing.T, scrape string) {
	t.Helper()
	exe, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found (%v), and CI=true runs everything", err)
		}
		t.Logf("promtool not found (%v): the scrape is not checked by it", err)
		return
	}
	cmd := exec.Command(exe, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nthe scrape:\n%s", err, out.String(), scrape)
	}
}
