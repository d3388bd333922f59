package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

func TestOutputFault(t *testing.T) {
	for _, c := range []struct {
		name     string
		out      string
		wantJSON bool
		want     string
	}{
		{"json", `{"key":"\ufffd"}`, true, ""},
		{"not json", `{"key":`, true, "not valid JSON"},
		{"text where text is due", "sketch: metrics: no structure", false, ""},
		{"invalid utf-8 in json", "{\"key\":\"\xff\"}", true, "not valid UTF-8"},
		{"invalid utf-8 in text", "no structure \xc3", false, "not valid UTF-8"},
	} {
		if got := outputFault([]byte(c.out), c.wantJSON); got != c.want {
			t.Errorf("%s: outputFault(%q) = %q, want %q", c.name, c.out, got, c.want)
		}
	}
}

func TestJSONLinesFault(t *testing.T) {
	if f := jsonLinesFault([]byte("{\"a\":1}\n{\"a\":2}\n")); f != "" {
		t.Errorf("two JSON lines: %q, want none", f)
	}
	if f := jsonLinesFault([]byte("{\"a\":1}\nloudest #1 \x1b[2J\n")); !strings.Contains(f, "not valid JSON") {
		t.Errorf("a text line among JSON lines: %q, want not valid JSON", f)
	}
	if f := jsonLinesFault([]byte("{\"a\":\"\xc3\"}\n")); f != "not valid UTF-8" {
		t.Errorf("a cut rune: %q, want not valid UTF-8", f)
	}
}

// TestScrapeFile_Crafted: the crafted specimens scrape clean, and what
// was crafted reaches the scrape (the names as written, the keys in
// the outputs).
func TestScrapeFile_Crafted(t *testing.T) {
	dir := t.TempDir()
	specs, err := makeMetricsSpecimens(dir, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range specs {
		t.Run(sp.name, func(t *testing.T) {
			path := filepath.Join(dir, "copy-"+sp.name)
			if err := os.WriteFile(path, sp.data, 0o600); err != nil {
				t.Fatal(err)
			}
			var r scrapeResult
			scrapeFile(path, &r)
			if len(r.Bad) > 0 || len(r.Panics) > 0 {
				t.Errorf("bad outputs %q, panics %q; want none", r.Bad, r.Panics)
			}
			if sp.name == "candidates-arena-twice" {
				return // two structures of one name: the directory is refused
			}
			if r.Opened == 0 || r.Outputs == 0 {
				t.Errorf("%d opened, %d outputs checked; want some", r.Opened, r.Outputs)
			}
			if sp.name == "candidates-countmin" {
				c, err := sketch.OpenCountMin(sketch.Path(path), sketch.CountMinConfig{}, sketch.WithReadOnly())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				hs, err := c.Top(0)
				if err != nil {
					t.Fatal(err)
				}
				listed := map[string]bool{}
				for _, h := range hs {
					listed[h.Key] = true
				}
				for _, p := range metricsPrefixes {
					if !listed[string(p)] {
						t.Errorf("Top does not list the crafted prefix %q", p)
					}
				}
			}
			if sp.name == "candidates-arena" {
				if !r.Arena || !containsBytes(r.Names, metricsNames[0]) {
					t.Errorf("names listed %q, want the crafted %q among them", r.Names, metricsNames[0])
				}
			}
		})
	}
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}

// TestScraper_PlantedPanic: a panic in a step is recovered and reported,
// and the steps after it run.
func TestScraper_PlantedPanic(t *testing.T) {
	var r scrapeResult
	s := scraper{&r}
	s.step("planted", func() { panic("boom") })
	s.step("after", func() { s.output("after", []byte("{"), true) })
	if len(r.Panics) != 1 || !strings.Contains(r.Panics[0], "planted: boom") {
		t.Errorf("panics %q, want the planted one", r.Panics)
	}
	if len(r.Bad) != 1 {
		t.Errorf("bad outputs %q, want the non-JSON one after the panic", r.Bad)
	}
}

// fakeCLI is a shell script standing in for the CLI.
func fakeCLI(t *testing.T, script string) build {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sketch")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return build{path: path, backend: "fake"}
}

// TestRunWatch_Planted: a watch that prints text where JSON is due, dies
// of a signal, panics, or hangs is a violation; one that refuses the file
// with an error exit is an answer.
func TestRunWatch_Planted(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the stand-in CLI")
	}
	m := mutant{index: 7, what: "planted"}
	for _, c := range []struct {
		name, script string
		check        func(t *metricsTally) bool
	}{
		{"non-JSON output", `echo '{"total":1}'; echo 'loudest #1 x'`, func(t *metricsTally) bool { return t.bad == 1 && t.violations() == 1 }},
		{"no output", `exit 0`, func(t *metricsTally) bool { return t.bad == 1 }},
		{"signal", `kill -SEGV $$`, func(t *metricsTally) bool { return t.signals == 1 && t.violations() == 1 }},
		{"panic", `echo 'panic: boom' >&2; echo 'goroutine 1 [running]:' >&2; exit 2`, func(t *metricsTally) bool { return t.panics == 1 && t.violations() == 1 }},
		{"runtime crash", `echo 'fatal error: unexpected signal' >&2; exit 2`, func(t *metricsTally) bool { return t.violations() == 1 }},
		{"hang", `exec sleep 30`, func(t *metricsTally) bool { return t.hangs == 1 && t.violations() == 1 }},
		{"refused", `echo 'sketch: open x: not a sketch file' >&2; exit 1`, func(t *metricsTally) bool { return t.violations() == 0 && t.opened == 0 }},
		{"answered", `echo '{"total":1}'; echo '{"total":2}'`, func(t *metricsTally) bool { return t.violations() == 0 && t.opened == 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			tally := &metricsTally{what: "fake"}
			hang := time.Minute
			if c.name == "hang" {
				hang = 200 * time.Millisecond // the script sleeps far longer
			}
			runWatch(fakeCLI(t, c.script), "file", hang, tally, m)
			if !c.check(tally) {
				t.Errorf("tally %+v: not what a %s is", *tally, c.name)
			}
			if tally.violations() > 0 && !strings.HasPrefix(tally.first, "#7 (planted)") {
				t.Errorf("first violation %q, want the file named", tally.first)
			}
		})
	}
}
