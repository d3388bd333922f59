//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// scrapeName serves m's ?name= scrape of name and returns its status.
func scrapeName(t *testing.T, m *ArenaMetrics, name string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?"+url.Values{"name": {name}}.Encode(), nil))
	return rec.Code
}

// TestArenaMetrics_NameScrapeReleasesRemoved: a service scraped only with
// ?name= lets go of a removed structure's room at the next scrape that no
// longer finds it, whichever name that scrape asks for: a structure (a
// new name each round, as one a day would be) is made, scraped by name,
// and removed, more times than the arena holds rooms, which ends in
// ErrArenaFull if the metrics kept each removed room.
// The metrics are another handle's on the arena, as a monitoring
// service's would be.
func TestArenaMetrics_NameScrapeReleasesRemoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		// same: the scrape after the remove asks for the removed
		// structure (404), else for another one.
		same bool
	}{
		{"removed name", true},
		{"other name", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tempPath(t, "metrics.arena")
			a := mustOpenArena(t, path, 1<<20)
			mustIn(t, OpenCountMin, a.Place("other"), CountMinConfig{Rows: 1, Width: 64})
			// The monitor opens the arena apart from the worker that
			// makes and removes, as a monitoring service does.
			m := mustOpenArena(t, path, 0).Metrics()
			defer m.Close()
			cfg := CountMinConfig{Rows: 4, Width: 8192}
			const rounds = 8
			free := a.Stats().Free
			for round := range rounds {
				name := fmt.Sprintf("room-%d", round)
				c, err := OpenCountMin(a.Place(name), cfg)
				if errors.Is(err, ErrArenaFull) {
					t.Fatalf("round %d: %v: the metrics kept a removed structure's room", round, err)
				}
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if round == 0 {
					if size := a.List()[1].Bytes; rounds*size <= free {
						t.Fatalf("%d rounds of %d bytes fit in the %d bytes free: the test cannot fail", rounds, size, free)
					}
				}
				c.AddString("k")
				if code := scrapeName(t, m, name); code != http.StatusOK {
					t.Fatalf("?name=%s: %d, want 200", name, code)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				if err := a.Remove(name); err != nil {
					t.Fatalf("Remove(%s): %v", name, err)
				}
				ask, want := "other", http.StatusOK
				if tc.same {
					ask, want = name, http.StatusNotFound
				}
				if code := scrapeName(t, m, ask); code != want {
					t.Fatalf("?name=%s after removing %s: %d, want %d", ask, name, code, want)
				}
			}
		})
	}
}
