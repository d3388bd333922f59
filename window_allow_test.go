//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const (
	envAllowLimit  = "SKETCH_TEST_ALLOW_LIMIT"  // allow: the limit
	envAllowCalls  = "SKETCH_TEST_ALLOW_CALLS"  // allow: how many requests the child makes
	envAllowCount  = "SKETCH_TEST_ALLOW_COUNT"  // allow: "1" counts refused requests
	envAllowResult = "SKETCH_TEST_ALLOW_RESULT" // allow: where the child writes how many were allowed
)

// TestCountMinWindow_Allow: exact decisions on a window wide enough that
// estimates are exact: the limit-th request is allowed, the next refused,
// with the turns until the window holds less than the limit, counted or
// not as asked.
func TestCountMinWindow_Allow(t *testing.T) {
	for _, countRefused := range []bool{true, false} {
		t.Run(fmt.Sprintf("countRefused=%v", countRefused), func(t *testing.T) {
			w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: winCfg})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			key := []byte("client")
			// Period 0: 2 requests; period 1: 2; period 2: 1, then the limit.
			const limit = 5
			for p, n := range []int{2, 2, 1} {
				if p > 0 {
					w.Rotate()
				}
				for range n {
					if d, err := w.Allow(key, limit, countRefused); err != nil || !d.Allowed || !d.Counted || d.Turns != 0 || d.RetryAfter != 0 {
						t.Fatalf("period %d: Allow = %+v, %v, want allowed and counted", p, d, err)
					}
				}
			}
			d, err := w.Allow(key, limit, countRefused)
			if err != nil || d.Allowed {
				t.Fatalf("request 6 of limit 5: Allow = %+v, %v, want refused", d, err)
			}
			wantEst := uint64(5)
			if countRefused {
				wantEst = 6
			}
			// The window holds 2+2+1 (+1): one turn drops period 0's 2,
			// leaving 3 (4), under the limit: one more fits.
			if d.Counted != countRefused || d.Estimate != wantEst || d.Turns != 1 || d.Periods != (Periods{Oldest: 0, Current: 2}) {
				t.Fatalf("refusal = %+v, want counted %v, estimate %d, 1 turn, periods 0-2", d, countRefused, wantEst)
			}
			if d.Low > d.Estimate || d.Estimate-d.Low != w.ErrorBound() && d.Low != 0 {
				t.Fatalf("Low %d: not Estimate %d less ErrorBound %d", d.Low, d.Estimate, w.ErrorBound())
			}
			if got := w.Estimate(key); got != wantEst {
				t.Fatalf("Estimate after the refusal = %d, want %d", got, wantEst)
			}
			w.Rotate()
			if d, err := w.Allow(key, limit, countRefused); err != nil || !d.Allowed {
				t.Fatalf("after the turn the refusal named: Allow = %+v, %v, want allowed", d, err)
			}
			// Everything in the newest period: it takes every turn.
			for i := 0; ; i++ {
				if d, _ = w.Allow(key, limit, countRefused); !d.Allowed {
					break
				}
				if i > limit {
					t.Fatalf("%d requests past the limit allowed", i)
				}
			}
			if d.Turns < 1 || d.Turns > 3 {
				t.Fatalf("Turns = %d, want 1 to Keep", d.Turns)
			}
			for range d.Turns {
				w.Rotate()
			}
			if d, err := w.Allow(key, limit, countRefused); err != nil || !d.Allowed {
				t.Fatalf("after the %d turns named: Allow = %+v, %v, want allowed", d.Turns, d, err)
			}
			if _, err := w.Allow(key, 0, countRefused); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("limit 0: %v, want ErrInvalidArgument", err)
			}
			w.Close()
			if _, err := w.Allow(key, limit, countRefused); !errors.Is(err, ErrClosed) {
				t.Fatalf("after Close: %v, want ErrClosed", err)
			}
		})
	}
}

// TestCountMinWindow_AllowRetryAfter: on a clock window, RetryAfter is the
// time until the turn named, and the request after it is allowed.
func TestCountMinWindow_AllowRetryAfter(t *testing.T) {
	const period = 200 * time.Millisecond
	w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Period: period, Keep: 2}, CountMin: winCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	key := []byte("k")
	var d Decision
	for i := 0; d.Allowed || d.Estimate == 0; i++ {
		if d, err = w.Allow(key, 3, false); err != nil {
			t.Fatal(err)
		}
		if i > 3 {
			t.Fatalf("request %d of limit 3 allowed", i+1)
		}
	}
	if d.RetryAfter <= 0 || d.RetryAfter > time.Duration(d.Turns)*period {
		t.Fatalf("RetryAfter %v for %d turns of %v", d.RetryAfter, d.Turns, period)
	}
	time.Sleep(d.RetryAfter + 5*time.Millisecond)
	if d2, err := w.Allow(key, 3, false); err != nil || !d2.Allowed {
		t.Fatalf("after RetryAfter %v: Allow = %+v, %v, want allowed", d.RetryAfter, d2, err)
	}
}

// TestCountMinWindow_AllowProcesses: three processes of both backends send
// requests for one key at one limit; the window is wide enough that
// estimates are exact, so no request past the limit is allowed, and at
// most one a racing process short of it, counting refused requests or not.
func TestCountMinWindow_AllowProcesses(t *testing.T) {
	requireReexec(t)
	for _, count := range []string{"1", "0"} {
		t.Run("countRefused="+count, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "w")
			w, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: winCfg})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			const procs, calls, limit = 3, 800, 1000
			runAdders(t, procs, "allow", func(i int) []string {
				return envs(envPath, path, envAllowLimit, limit, envAllowCalls, calls, envAllowCount, count,
					envAllowResult, filepath.Join(dir, fmt.Sprint("allowed-", i)))
			})
			allowed := 0
			for i := range procs {
				out, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("allowed-", i)))
				if err != nil {
					t.Fatal(err)
				}
				n, _ := strconv.Atoi(string(out))
				allowed += n
			}
			// Never past the limit; short of it by at most one request a
			// racing process (the allowed one reads again after its add).
			if allowed > limit || allowed < limit-(procs-1) {
				t.Errorf("%d of %d requests allowed at limit %d, want %d to %d", allowed, procs*calls, limit, limit-(procs-1), limit)
			}
			est := w.EstimateString("client")
			if count == "1" && est != procs*calls || count == "0" && (est < limit || est > limit+procs) {
				t.Errorf("the window counted %d requests (countRefused=%s)", est, count)
			}
		})
	}
}

// childAllow makes envAllowCalls requests for "client" and writes how many
// were allowed.
func childAllow() error {
	w, err := OpenCountMinWindow(Path(os.Getenv(envPath)), CountMinWindowConfig{CountMin: winCfg})
	if err != nil {
		return err
	}
	if err := childBarrier(); err != nil {
		return err
	}
	limit, count := uint64(envInt(envAllowLimit)), os.Getenv(envAllowCount) == "1"
	allowed := 0
	for range envInt(envAllowCalls) {
		d, err := w.Allow([]byte("client"), limit, count)
		if err != nil {
			return err
		}
		if d.Allowed {
			allowed++
		}
	}
	if err := os.WriteFile(os.Getenv(envAllowResult), []byte(strconv.Itoa(allowed)), 0o600); err != nil {
		return err
	}
	return w.Close()
}

// TestAllowAndAddIfAbsent_Neighbours: a read-only view refuses both calls
// without writing, and two handles of one file in one process share the
// limit and the once-only add.
func TestAllowAndAddIfAbsent_Neighbours(t *testing.T) {
	dir := t.TempDir()
	wpath, cpath := filepath.Join(dir, "w"), filepath.Join(dir, "cbf")
	w1, err := OpenCountMinWindow(Path(wpath), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: winCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	w2, err := OpenCountMinWindow(Path(wpath), CountMinWindowConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	allowed := 0
	for i := range 10 {
		h := []*CountMinWindow{w1, w2}[i%2]
		if d, err := h.Allow([]byte("k"), 4, true); err != nil {
			t.Fatal(err)
		} else if d.Allowed {
			allowed++
		}
	}
	if allowed != 4 {
		t.Errorf("two handles allowed %d requests at limit 4, want 4", allowed)
	}
	wro, err := OpenCountMinWindow(Path(wpath), CountMinWindowConfig{}, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer wro.Close()
	if _, err := wro.Allow([]byte("k"), 4, true); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Allow on a read-only view = %v, want ErrReadOnly", err)
	}
	if got := w1.EstimateString("k"); got != 10 {
		t.Errorf("after the read-only view's refusal the window holds %d, want 10", got)
	}

	b1, err := OpenCountingBloom(Path(cpath), cbfOnceCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b1.Close()
	b2, err := OpenCountingBloom(Path(cpath), CountingBloomConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if a1, _ := b1.AddIfAbsentString("ban"); !a1 {
		t.Fatal("first AddIfAbsent did not add")
	}
	if a2, _ := b2.AddIfAbsentString("ban"); a2 {
		t.Fatal("the second handle added a key the first had stored")
	}
	bro, err := OpenCountingBloom(Path(cpath), CountingBloomConfig{}, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer bro.Close()
	if _, err := bro.AddIfAbsentString("other"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("AddIfAbsent on a read-only view = %v, want ErrReadOnly", err)
	}
	if b1.ContainsString("other") || b1.EstimateString("ban") != 1 {
		t.Errorf("after the refusal: other present %v, ban stored %d times; want false, 1", b1.ContainsString("other"), b1.EstimateString("ban"))
	}
}

// TestCountMinWindow_AllowLateClock: a handle's period moves by a timer; a
// loaded machine runs it late, and a request retried after RetryAfter
// must still be allowed then (here the timer never runs).
func TestCountMinWindow_AllowLateClock(t *testing.T) {
	const period = 100 * time.Millisecond
	w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Period: period, Keep: 1}, CountMin: winCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, countRefused := range []bool{false, true} {
		key := []byte(fmt.Sprint("k", countRefused))
		var d Decision
		for i := 0; d.Allowed || d.Estimate == 0; i++ {
			if d, err = w.Allow(key, 2, countRefused); err != nil {
				t.Fatal(err)
			}
		}
		w.ctl.clk.stop()
		time.Sleep(d.RetryAfter + time.Millisecond)
		if d2, err := w.Allow(key, 2, countRefused); err != nil || !d2.Allowed {
			t.Errorf("countRefused %v: after RetryAfter %v with the timer stopped: %+v, %v, want allowed", countRefused, d.RetryAfter, d2, err)
		}
	}
}
