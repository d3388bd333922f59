//go:build linux

package sketch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The rate limiter in processes of both builds: racing decisions across
// processes are ordered as they are across goroutines.

const (
	envGCRAMode  = "SKETCH_TEST_GCRA_MODE"  // "instant" or "clock"
	envGCRACalls = "SKETCH_TEST_GCRA_CALLS" // decisions to make; 0: until killed
	envGCRALog   = "SKETCH_TEST_GCRA_LOG"   // where to log allowed decisions
)

// The limiters of the process tests: at one instant, exactly Burst+1 of
// every key's requests pass; by the clock, 2000 a second with a burst of
// 20, so that a few thousand decisions meet the limit many times.
var (
	gcraInstantCfg = GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 49, Rows: 4, Width: 1 << 12}
	gcraClockCfg   = GCRAConfig{Rate: Rate{2000, time.Second}, Burst: 20, Rows: 4, Width: 1 << 12}
	gcraInstant    = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	gcraProcKeys   = 6
)

// TestGCRA_ProcessesBothBuilds has two cgo and two pure-Go processes
// decide on one file: at one instant, every key is allowed exactly
// Burst+1 requests between them; by the clock, with one of them killed
// midway, no key is allowed more than elapsed/interval + Burst+1 over any
// span of the decisions' times, checked from a log of every allowed
// decision.
func TestGCRA_ProcessesBothBuilds(t *testing.T) {
	requireReexec(t)
	exes := map[string]string{Backend: selfExe(t)}
	dir := t.TempDir()
	for _, b := range []string{"cgo", "purego"} {
		if exes[b] == "" {
			exes[b] = buildTestBinary(t, dir, b)
		}
	}
	builds := []string{"cgo", "purego", "cgo", "purego"}
	t.Run("instant", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "gcra")
		mustCreateGCRA(t, path, gcraInstantCfg)
		hs, logs := startGCRAChildren(t, exes, builds, path, "instant", 300)
		for _, h := range hs {
			h.wait(t)
		}
		for key, times := range readGCRALogs(t, logs) {
			if len(times) != int(gcraInstantCfg.Burst+1) {
				t.Errorf("key %s: %d allowed at one instant by 4 processes, want exactly %d", key, len(times), gcraInstantCfg.Burst+1)
			}
		}
	})
	t.Run("clock, one killed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "gcra")
		g := mustCreateGCRA(t, path, gcraClockCfg)
		hs, logs := startGCRAChildren(t, exes, builds, path, "clock", 20000)
		waitLogLines(t, logs[0], 200)
		hs[0].cmd.Process.Kill()
		<-hs[0].done
		for _, h := range hs[1:] {
			h.wait(t)
		}
		iv, _ := gcraClockCfg.Rate.interval()
		allowed := 0
		for key, times := range readGCRALogs(t, logs) {
			allowed += len(times)
			gcraBound(t, key, times, slices.Repeat([]uint64{1}, len(times)), iv, gcraClockCfg.Burst)
		}
		s := g.Stats()
		if s.Refused == 0 || allowed == 0 {
			t.Errorf("%d allowed, %d refused: the processes never met the limit", allowed, s.Refused)
		}
		if err := g.Check(); err != nil {
			t.Errorf("Check after a kill: %v", err)
		}
		t.Logf("%d allowed (logged), %d refused, over %d keys", allowed, s.Refused, gcraProcKeys)
	})
}

func mustCreateGCRA(t *testing.T, path string, cfg GCRAConfig) *GCRA {
	t.Helper()
	g, err := OpenGCRA(Path(path), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// startGCRAChildren starts one "gcra" child per build, released at once.
func startGCRAChildren(t *testing.T, exes map[string]string, builds []string, path, mode string, calls int) ([]*helper, []string) {
	var specs []childSpec
	var logs []string
	for i, b := range builds {
		log := filepath.Join(filepath.Dir(path), fmt.Sprint("log-", i))
		n := calls
		if mode == "clock" && i == 0 {
			n = 0 // until killed
		}
		logs = append(logs, log)
		specs = append(specs, childSpec{exe: exes[b], name: fmt.Sprint(b, " child ", i), role: "gcra",
			env: envs(envPath, path, envChild, i, envGCRAMode, mode, envGCRACalls, n, envGCRALog, log)})
	}
	return startGroup(t, childContext(t), specs), logs
}

// waitLogLines waits, with a generous deadline, until the log has n lines.
func waitLogLines(t *testing.T, log string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	for {
		b, _ := os.ReadFile(log)
		if strings.Count(string(b), "\n") >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s has not logged %d decisions in %v", log, n, patience)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// readGCRALogs reads the children's logs: each key's allowed decisions'
// times, sorted.
func readGCRALogs(t *testing.T, logs []string) map[string][]uint64 {
	t.Helper()
	times := map[string][]uint64{}
	for _, log := range logs {
		f, err := os.Open(log)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			key, at, ok := strings.Cut(sc.Text(), " ")
			n, err := strconv.ParseUint(at, 10, 64)
			if !ok || err != nil {
				continue // the line a killed child was writing
			}
			times[key] = append(times[key], n)
		}
		f.Close()
	}
	for _, ts := range times {
		slices.Sort(ts)
	}
	return times
}

var _ = role("gcra", childGCRA)

// childGCRA decides envGCRACalls requests (forever when 0) over the keys
// in turn, every fourth time a batch of all of them at one time, and
// logs each allowed one's key and time with one write, so that a parent
// that kills it knows every allowed decision it returned.
func childGCRA() error {
	g, err := OpenGCRA(Path(os.Getenv(envPath)), GCRAConfig{})
	if err != nil {
		return err
	}
	defer g.Close()
	log, err := os.OpenFile(os.Getenv(envGCRALog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	if err := childBarrier(); err != nil {
		return err
	}
	keys := make([][]byte, gcraProcKeys)
	for i := range keys {
		keys[i] = []byte(fmt.Sprint("client-", i))
	}
	out := make([]RateDecision, len(keys))
	instant := os.Getenv(envGCRAMode) == "instant"
	calls := envInt(envGCRACalls)
	for i := 0; calls == 0 || i < calls; i += len(keys) {
		at := gcraInstant
		if !instant {
			at = time.Now()
		}
		if i%(4*len(keys)) == 0 {
			err = g.AllowBatchAt(keys, 1, at, out)
		} else {
			for j, k := range keys {
				if out[j], err = g.AllowAt(k, 1, at); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
		for j, d := range out {
			if d.Allowed {
				if _, err := fmt.Fprintf(log, "%s %d\n", keys[j], at.UnixNano()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
