//go:build linux

package sketch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
	"golang.org/x/sys/unix"
)

const (
	envAllowLimit  = "SKETCH_TEST_ALLOW_LIMIT"  // allow: the limit
	envAllowCalls  = "SKETCH_TEST_ALLOW_CALLS"  // allow: how many requests the child makes
	envAllowCount  = "SKETCH_TEST_ALLOW_COUNT"  // allow: "1" counts refused requests
	envAllowResult = "SKETCH_TEST_ALLOW_RESULT" // allow: where the child writes how many were allowed
	// With envAllowKeys set, the child sends envAllowCalls requests for each
	// of that many keys in turn (allowKey), at envAllowLimit for even keys
	// and envAllowOdd for odd ones, and logs each decision in the log
	// envChild of envAllowLogs (a list of paths, one per child).
	envAllowKeys = "SKETCH_TEST_ALLOW_KEYS"
	envAllowOdd  = "SKETCH_TEST_ALLOW_ODD"
	envAllowLogs = "SKETCH_TEST_ALLOW_LOGS"
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
					if d, err := w.Allow(key, limit, countRefused); err != nil || !d.Allowed() || !d.Counted() || d.Turns() != 0 || d.RetryAfter() != 0 {
						t.Fatalf("period %d: Allow = %+v, %v, want allowed and counted", p, d, err)
					}
				}
			}
			d, err := w.Allow(key, limit, countRefused)
			if err != nil || d.Allowed() {
				t.Fatalf("request 6 of limit 5: Allow = %+v, %v, want refused", d, err)
			}
			wantEst := uint64(5)
			if countRefused {
				wantEst = 6
			}
			// The window holds 2+2+1 (+1): one turn drops period 0's 2,
			// leaving 3 (4), under the limit: one more fits.
			if d.Counted() != countRefused || d.Estimate() != wantEst || d.Turns() != 1 || d.Period() != 2 {
				t.Fatalf("refusal = %+v, want counted %v, estimate %d, 1 turn, periods 0-2", d, countRefused, wantEst)
			}
			if d.Low() > d.Estimate() || d.Estimate()-d.Low() != w.ErrorBound() && d.Low() != 0 {
				t.Fatalf("Low %d: not Estimate %d less ErrorBound %d", d.Low(), d.Estimate(), w.ErrorBound())
			}
			if got := w.Estimate(key); got != wantEst {
				t.Fatalf("Estimate after the refusal = %d, want %d", got, wantEst)
			}
			w.Rotate()
			if d, err := w.Allow(key, limit, countRefused); err != nil || !d.Allowed() {
				t.Fatalf("after the turn the refusal named: Allow = %+v, %v, want allowed", d, err)
			}
			// Everything in the newest period: it takes every turn.
			for i := 0; ; i++ {
				if d, _ = w.Allow(key, limit, countRefused); !d.Allowed() {
					break
				}
				if i > limit {
					t.Fatalf("%d requests past the limit allowed", i)
				}
			}
			if d.Turns() < 1 || d.Turns() > 3 {
				t.Fatalf("Turns = %d, want 1 to Keep", d.Turns())
			}
			for range d.Turns() {
				w.Rotate()
			}
			if d, err := w.Allow(key, limit, countRefused); err != nil || !d.Allowed() {
				t.Fatalf("after the %d turns named: Allow = %+v, %v, want allowed", d.Turns(), d, err)
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
	for i := 0; d.Allowed() || d.Estimate() == 0; i++ {
		if d, err = w.Allow(key, 3, false); err != nil {
			t.Fatal(err)
		}
		if i > 3 {
			t.Fatalf("request %d of limit 3 allowed", i+1)
		}
	}
	if d.RetryAfter() <= 0 || d.RetryAfter() > time.Duration(d.Turns())*period {
		t.Fatalf("RetryAfter %v for %d turns of %v", d.RetryAfter(), d.Turns(), period)
	}
	// After RetryAfter a request fits. A handle's period moves by a timer,
	// which a loaded machine (or qemu) runs late, so a request right after
	// RetryAfter may still be refused: it then says how long is left, at
	// most a period, and is not counted (countRefused false); a few such
	// waits must end in an allowed request.
	wait := d.RetryAfter()
	for try := 0; ; try++ {
		time.Sleep(wait + 5*time.Millisecond)
		d2, err := w.Allow(key, 3, false)
		if err != nil {
			t.Fatal(err)
		}
		if d2.Allowed() {
			break
		}
		if try == 3 || d2.Counted() || d2.RetryAfter() > period {
			t.Fatalf("%d waits after RetryAfter %v: Allow = %+v, want allowed (or refused uncounted, with at most a period to wait)", try+1, d.RetryAfter(), d2)
		}
		wait = d2.RetryAfter()
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

var _ = role("allow", childAllow)

// childAllow makes envAllowCalls requests for "client" and writes how many
// were allowed; with envAllowKeys, it runs childAllowKeys instead.
func childAllow() error {
	if os.Getenv(envAllowKeys) != "" {
		w, err := OpenCountMinWindow(Path(os.Getenv(envPath)), CountMinWindowConfig{})
		if err != nil {
			return err
		}
		return childAllowKeys(w)
	}
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
		if d.Allowed() {
			allowed++
		}
	}
	if err := os.WriteFile(os.Getenv(envAllowResult), []byte(strconv.Itoa(allowed)), 0o600); err != nil {
		return err
	}
	return w.Close()
}

// Decisions in an allow log, one byte a request; 0 is a request not
// decided (yet).
const (
	logAllowed = 'a' // allowed, counted
	logRaced   = 'c' // refused, counted
	logRefused = 'r' // refused, not counted
)

// allowKey is the key of request i of a child of a group that sends calls
// requests for each key in turn: all of them ask for the same key at about
// the same time, so that they race at its limit.
func allowKey(i, calls int) int { return i / calls }

// childAllowKeys sends envAllowCalls requests for each of envAllowKeys
// keys in turn and writes each decision into its log, a file mapped
// shared, as soon as it is made, so that a parent that kills it knows
// every decision it made but the one it was making. It starts a key when
// every other child has decided the requests of the keys before, as their
// logs show, or was killed, so that all of them race at each key's limit.
func childAllowKeys(w *CountMinWindow) error {
	keys, calls, me := envInt(envAllowKeys), envInt(envAllowCalls), envInt(envChild)
	limits := [2]uint64{uint64(envInt(envAllowLimit)), uint64(envInt(envAllowOdd))}
	count := os.Getenv(envAllowCount) == "1"
	var logs [][]byte
	for _, path := range strings.Split(os.Getenv(envAllowLogs), ",") {
		log, err := mapAllowLog(path, keys*calls+1, true)
		if err != nil {
			return err
		}
		logs = append(logs, log)
	}
	log := logs[me]
	if err := childBarrier(); err != nil {
		return err
	}
	for i := range keys * calls {
		k := allowKey(i, calls)
		if i%calls == 0 {
			awaitPeers(logs, me, i)
		}
		d, err := w.Allow([]byte(fmt.Sprint("key-", k)), limits[k%2], count)
		if err != nil {
			return err
		}
		switch {
		case d.Allowed():
			log[i] = logAllowed
		case d.Counted():
			log[i] = logRaced
		default:
			log[i] = logRefused
		}
	}
	return w.Close()
}

// awaitPeers waits until every other child has decided its first n
// requests, or was killed (its log's last byte, which the parent sets).
func awaitPeers(logs [][]byte, me, n int) {
	for j, log := range logs {
		for spins := 0; j != me && n > 0 && log[n-1] == 0 && log[len(log)-1] == 0; spins++ {
			if spins%1024 == 1023 {
				time.Sleep(10 * time.Microsecond) // a peer may wait for a core
			}
		}
	}
}

// mapAllowLog maps an allow log of n bytes shared, to write or to read: a
// decision a request, then a byte the parent sets when it killed the
// child.
func mapAllowLog(path string, n int, write bool) ([]byte, error) {
	flag, prot := os.O_RDONLY, unix.PROT_READ
	if write {
		flag, prot = os.O_RDWR, unix.PROT_READ|unix.PROT_WRITE
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.Mmap(int(f.Fd()), 0, n, prot, unix.MAP_SHARED)
}

// allowKilledCfg is the shape of TestCountMinWindow_AllowKilled's window:
// wide enough, with this seed, that no key of the test shares its counter
// with another in every row, so that estimates are exact (the test checks
// it first).
var allowKilledCfg = CountMinConfig{Rows: 4, Width: 1 << 17, Seed: 0xa11055}

// TestCountMinWindow_AllowKilled: three processes of both backends send
// requests for many keys, each key in turn and all of them at once, at a
// limit the even keys just reach and the odd keys pass by the window's
// error bound; the previous period holds a few requests of each key. One
// process is killed with SIGKILL midway. Estimates are exact and every
// decision is logged as it is made, so the decisions are checked against
// the guarantee exactly: no key allowed past its limit, counting the dead
// process's allowed requests; none refused before limit - ErrorBound less
// one request a racing process (the dead one's last among them); the
// window holds exactly what the logs counted, but for the request the
// dead process was making, and Check finds nothing to repair.
func TestCountMinWindow_AllowKilled(t *testing.T) {
	requireReexec(t)
	exe := bothBackends(t)
	// calls: each process's requests per key; pre: the requests of each
	// key in the previous period.
	const procs, keys, calls, pre = 3, 1000, 20, 2
	exactKeys(t, allowKilledCfg, keys)
	for victim, count := range []string{"1", "0"} {
		t.Run("countRefused="+count, func(t *testing.T) {
			countRefused := count == "1"
			dir := t.TempDir()
			path := filepath.Join(dir, "w")
			w, err := OpenCountMinWindow(Path(path), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: allowKilledCfg})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// The bound at the most the window can count: odd keys get
			// that many requests more than their limit.
			bound := errorBound(procs*keys*calls+pre*keys, allowKilledCfg.Width)
			limits := [2]uint64{pre + procs*calls, pre + procs*calls - bound}
			for k := range keys {
				for range pre {
					if d, err := w.Allow([]byte(fmt.Sprint("key-", k)), limits[k%2], countRefused); err != nil || !d.Allowed() {
						t.Fatalf("period 0: Allow(key-%d) = %+v, %v, want allowed", k, d, err)
					}
				}
			}
			// Period 1, with period 0's slot held: the window of two
			// periods that Allow serves in one pass.
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
			logs := make([][]byte, procs)
			var paths []string
			for i := range procs {
				paths = append(paths, filepath.Join(dir, fmt.Sprint("log-", i)))
				if err := os.WriteFile(paths[i], make([]byte, keys*calls+1), 0o600); err != nil {
					t.Fatal(err)
				}
				if logs[i], err = mapAllowLog(paths[i], keys*calls+1, true); err != nil {
					t.Fatal(err)
				}
				defer unix.Munmap(logs[i])
			}
			specs := make([]childSpec, procs)
			for i := range procs {
				specs[i] = childSpec{exe: exe(i), name: fmt.Sprintf("adder %d", i), role: "allow",
					env: envs(envPath, path, envChild, i, envAllowKeys, keys, envAllowCalls, calls, envAllowCount, count,
						envAllowLimit, limits[0], envAllowOdd, limits[1], envAllowLogs, strings.Join(paths, ","))}
			}
			hs := startGroup(t, childContext(t), specs)
			// Kill the victim (this backend's, then the other's) once it
			// has decided a third of its requests.
			for decided(logs[victim]) < keys*calls/3 {
				select {
				case <-hs[victim].done:
					t.Fatalf("%s ended before it was killed: %v\n%s", hs[victim].name, hs[victim].err, hs[victim].stderr.String())
				case <-time.After(100 * time.Microsecond):
				}
			}
			if err := hs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-hs[victim].done
			logs[victim][keys*calls] = 1 // the others wait for it no more
			var ee *exec.ExitError
			if !errors.As(hs[victim].err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("%s: %v, want killed by SIGKILL", hs[victim].name, hs[victim].err)
			}
			for i, h := range hs {
				if i != victim {
					h.wait(t)
				}
			}
			if t.Failed() {
				t.FailNow()
			}
			for i := range logs {
				logs[i] = logs[i][:keys*calls] // the decisions
			}
			if n := decided(logs[victim]); n == keys*calls {
				t.Fatalf("%s decided all its requests before the kill", hs[victim].name)
			} else {
				t.Logf("%s killed after %d of %d decisions", hs[victim].name, n, keys*calls)
			}
			if err := w.Check(); err != nil {
				t.Errorf("Check after the kill: %v", err)
			}
			checkAllowLogs(t, w, logs, pre, calls, limits, countRefused)
			// The window goes on: a new key's requests are decided as
			// ever, and the period turns.
			for i := range 3 {
				if d, err := w.Allow([]byte("after"), 2, countRefused); err != nil || d.Allowed() != (i < 2) {
					t.Errorf("request %d of a new key at limit 2 after the kill: %+v, %v", i+1, d, err)
				}
			}
			if err := w.Rotate(); err != nil {
				t.Errorf("Rotate after the kill: %v", err)
			}
		})
	}
}

// exactKeys fails t unless every key of an allow group of n keys is
// estimated exactly in a sketch of cfg: no key shares its counter with
// another in every row.
func exactKeys(t *testing.T, cfg CountMinConfig, n int) {
	t.Helper()
	c := mustIn(t, OpenCountMin, Memory(), cfg)
	defer c.Close()
	for k := range n {
		c.AddString(fmt.Sprint("key-", k))
	}
	for k := range n {
		if got := c.EstimateString(fmt.Sprint("key-", k)); got != 1 {
			t.Fatalf("key-%d: estimate %d after one add each: the seed does not keep the keys apart", k, got)
		}
	}
}

// decided counts the decisions in an allow log, which fills in order.
func decided(log []byte) int {
	return sort.Search(len(log), func(i int) bool { return log[i] == 0 })
}

// checkAllowLogs checks the decisions of a group of childAllowKeys, one of
// which was killed, against the guarantee Allow documents, key by key, and
// the window's estimates against what the logs counted; each key had pre
// requests allowed before.
func checkAllowLogs(t *testing.T, w *CountMinWindow, logs [][]byte, pre, calls int, limits [2]uint64, countRefused bool) {
	t.Helper()
	type tally struct{ requests, allowed, counted uint64 }
	keys := make([]tally, len(logs[0])/calls)
	for k := range keys {
		keys[k] = tally{uint64(pre), uint64(pre), uint64(pre)}
	}
	for _, log := range logs {
		for i, b := range log {
			k := allowKey(i, calls)
			if b != 0 {
				keys[k].requests++
			}
			switch b {
			case logAllowed:
				keys[k].allowed++
				keys[k].counted++
			case logRaced:
				if !countRefused {
					keys[k].counted++
					continue
				}
				fallthrough
			case logRefused:
				if countRefused != (b == logRaced) {
					t.Fatalf("decision %q with countRefused %v", b, countRefused)
				}
				if countRefused {
					keys[k].counted++
				}
			}
		}
	}
	bound := w.ErrorBound()
	// Requests being counted at the same moment: one each of the other
	// processes, and the one the victim was making when it died.
	slack := uint64(len(logs) - 1 + 1)
	inFlight := uint64(0) // the victim's last request, counted or not
	for k, n := range keys {
		key := []byte(fmt.Sprint("key-", k))
		limit := limits[k%2]
		if n.allowed > limit {
			t.Errorf("key %d: %d requests allowed at limit %d", k, n.allowed, limit)
		}
		// A key asked at most limit times: estimates are exact, so no
		// request of it is refused, racing or not.
		if n.requests <= limit && n.allowed != n.requests {
			t.Errorf("key %d: %d of %d requests allowed at limit %d, want all", k, n.allowed, n.requests, limit)
		}
		// Refused only once the count reached limit-bound, but for the
		// slack: every request before is allowed.
		floor := min(n.requests, max(limit, bound+slack)-bound-slack)
		if countRefused && n.allowed < floor {
			t.Errorf("key %d: %d of %d requests allowed at limit %d, want at least %d (error bound %d)", k, n.allowed, n.requests, limit, floor, bound)
		}
		if !countRefused && n.allowed < n.requests && n.counted < max(limit, bound+slack)-bound-slack {
			t.Errorf("key %d: refused with %d counted at limit %d, want at least %d (error bound %d)", k, n.counted, limit, limit-bound-slack, bound)
		}
		est, _ := w.EstimateCovered(key)
		if est < n.counted || est > n.counted+1 {
			t.Errorf("key %d: the window holds %d requests, the logs counted %d", k, est, n.counted)
		}
		inFlight += est - min(est, n.counted)
	}
	if inFlight > 1 {
		t.Errorf("the window holds %d requests the logs did not count, want at most the victim's last", inFlight)
	}
	refusedEven, refusedOdd, raced := 0, 0, 0
	for _, log := range logs {
		raced += bytes.Count(log, []byte{logRaced})
	}
	if countRefused {
		raced = 0 // every refusal counts
	}
	for k, n := range keys {
		if n.allowed < n.requests {
			if k%2 == 0 {
				refusedEven++
			} else {
				refusedOdd++
			}
		}
	}
	t.Logf("keys with refusals: %d at the limit, %d past it by the bound %d; %d requests counted and refused (raced)", refusedEven, refusedOdd, bound, raced)
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
		} else if d.Allowed() {
			allowed++
		}
	}
	if allowed != 4 {
		t.Errorf("two handles allowed %d requests at limit 4, want 4", allowed)
	}
	wro, err := OpenCountMinWindow(Path(wpath), CountMinWindowConfig{}, WithReadOnly())
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
	bro, err := OpenCountingBloom(Path(cpath), CountingBloomConfig{}, WithReadOnly())
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
		for i := 0; d.Allowed() || d.Estimate() == 0; i++ {
			if d, err = w.Allow(key, 2, countRefused); err != nil {
				t.Fatal(err)
			}
		}
		w.ctl.clk.stop()
		time.Sleep(d.RetryAfter() + time.Millisecond)
		if d2, err := w.Allow(key, 2, countRefused); err != nil || !d2.Allowed() {
			t.Errorf("countRefused %v: after RetryAfter %v with the timer stopped: %+v, %v, want allowed", countRefused, d.RetryAfter(), d2, err)
		}
	}
}

// TestCountMinWindow_AllowAllocs: a decision allocates nothing, allowed
// or refused, counted or not, in a window of two periods (the one-pass
// way) and of more, up to the 16 a refusal counts on the stack.
func TestCountMinWindow_AllowAllocs(t *testing.T) {
	for _, keep := range []int{2, 3, 8, 16} {
		w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: keep}, CountMin: winCfg})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.AddString("old")
		if err := w.Rotate(); err != nil {
			t.Fatal(err)
		}
		for _, countRefused := range []bool{true, false} {
			for _, tc := range []struct {
				name  string
				limit uint64
			}{{"allowed", math.MaxUint64}, {"refused", 1}} {
				key := []byte(fmt.Sprint("k", keep, countRefused, tc.limit))
				w.Allow(key, tc.limit, countRefused)
				if n := testing.AllocsPerRun(100, func() { w.Allow(key, tc.limit, countRefused) }); n != 0 {
					t.Errorf("keep %d, countRefused %v, %s: %v allocations a decision", keep, countRefused, tc.name, n)
				}
			}
		}
	}
}

// TestCountMinWindow_AllowLastRow: in a window of two periods, Allow
// decides on the key's counters in the last row when they are within the
// limit, and reads the window again when other keys raised one of them
// past it (its own estimate still within): the limit-th request is
// allowed and the next refused either way, counted in the previous
// period's slot too.
func TestCountMinWindow_AllowLastRow(t *testing.T) {
	const limit = 6
	for _, raise := range []string{"none", "current", "previous"} {
		for _, countRefused := range []bool{true, false} {
			t.Run(fmt.Sprintf("raised=%s/countRefused=%v", raise, countRefused), func(t *testing.T) {
				w, err := OpenCountMinWindow(Memory(), CountMinWindowConfig{Window: Window{Keep: 2}, CountMin: winCfg})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				key := []byte("client")
				for range 2 { // period 0: 2 requests
					if d, err := w.Allow(key, limit, countRefused); err != nil || !d.Allowed() {
						t.Fatalf("period 0: %+v, %v", d, err)
					}
				}
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				// The key's counter in the last row of a slot, raised past
				// the limit as other keys would.
				lo, hi := cells.Hash(key, w.slots[0].Seed)
				l := &w.slots[w.ctl.slotOf(1)]
				if raise == "previous" {
					l = &w.slots[w.ctl.slotOf(0)]
				}
				last := (*uint64)(unsafe.Add(l.Cells, uintptr(l.Rows-1)*l.RowBytes+uintptr(cells.Spread(lo+uint64(l.Rows-1)*(hi|1))&l.Mask)*8))
				if raise != "none" {
					atomic.AddUint64(last, 100)
				}
				for i := 3; i <= limit+1; i++ {
					d, err := w.Allow(key, limit, countRefused)
					if err != nil {
						t.Fatal(err)
					}
					est := uint64(min(i, limit))
					if countRefused {
						est = uint64(i)
					}
					turns := 0
					if i > limit {
						turns = 1 // period 0's 2 leave: 4 (5) under 6
					}
					want := newDecision(i <= limit, i <= limit || countRefused, est, 0, turns, 0, 1)
					d = newDecision(d.Allowed(), d.Counted(), d.Estimate(), 0, d.Turns(), d.RetryAfter(), d.Period())
					if d != want {
						t.Fatalf("request %d of limit %d: Allow = %v, want %v", i, limit, d, want)
					}
				}
				if raise != "none" && atomic.LoadUint64(last) < 100 {
					t.Fatalf("the raised counter holds %d", atomic.LoadUint64(last))
				}
			})
		}
	}
}

// TestCountMinWindow_AllowString: AllowString decides as Allow does on the
// same key's bytes (they share counters), allocates nothing, and takes the
// empty key.
func TestCountMinWindow_AllowString(t *testing.T) {
	w := mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: Window{Keep: 3}, CountMin: CountMinConfig{Rows: 4, Width: 1 << 10}})
	for i := range 6 {
		var d Decision
		var err error
		if i%2 == 0 {
			d, err = w.AllowString("alice", 4, false)
		} else {
			d, err = w.Allow([]byte("alice"), 4, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 4; d.Allowed() != want || d.Estimate() != uint64(min(i+1, 4)) {
			t.Errorf("request %d: allowed %v estimate %d, want %v %d", i, d.Allowed(), d.Estimate(), want, min(i+1, 4))
		}
	}
	if d, err := w.AllowString("", 1, true); err != nil || !d.Allowed() {
		t.Errorf("AllowString(\"\") = %v, %v", d, err)
	}
	if _, err := w.AllowString("bob", 0, true); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("AllowString with limit 0: %v, want ErrInvalidArgument", err)
	}
	if n := testing.AllocsPerRun(100, func() { w.AllowString("carol", 1<<40, false) }); n != 0 {
		t.Errorf("AllowString allocates %v times a call", n)
	}
}

// TestDecision_FitsRegisters: a Decision stays a struct the compiler keeps
// in registers on 64-bit machines (at most four fields and 32 bytes), or
// every caller of Allow pays a copy through memory again (see Decision).
func TestDecision_FitsRegisters(t *testing.T) {
	if n, size := reflect.TypeFor[Decision]().NumField(), unsafe.Sizeof(Decision{}); n > 4 || size > 32 {
		t.Fatalf("Decision has %d fields in %d bytes, want at most 4 in 32 bytes", n, size)
	}
}

// TestDecision_Packs: every figure comes back as given, at the largest a
// window makes, and the zero Decision is a refusal of nothing.
func TestDecision_Packs(t *testing.T) {
	var zero Decision
	if zero.Allowed() || zero.Counted() || zero.Estimate() != 0 || zero.Low() != 0 || zero.Turns() != 0 || zero.RetryAfter() != 0 || zero.Period() != 0 {
		t.Fatalf("zero Decision = %v", zero)
	}
	for _, c := range []struct {
		allowed, counted bool
		est, low         uint64
		turns            int
		after            time.Duration
		period           uint64
	}{
		{true, true, 1, 0, 0, 0, 0},
		{false, true, cells.MaxCount, cells.MaxCount - 1, MaxWindowKeep, time.Duration(1<<63 - 1), maxPeriod},
		{false, false, 7, 3, 1, time.Second, 1<<47 - 1},
		{true, false, 0, 0, MaxWindowKeep - 1, 0, 12345},
	} {
		d := newDecision(c.allowed, c.counted, c.est, c.low, c.turns, c.after, c.period)
		if d.Allowed() != c.allowed || d.Counted() != c.counted || d.Estimate() != c.est || d.Low() != c.low ||
			d.Turns() != c.turns || d.RetryAfter() != c.after || d.Period() != c.period {
			t.Errorf("newDecision(%+v) reads back as %v", c, d)
		}
	}
}

// TestDecision_JSON: a decision marshals as what its methods say.
func TestDecision_JSON(t *testing.T) {
	d := newDecision(false, true, 12, 9, 2, 1500*time.Millisecond, 41)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"allowed":false,"counted":true,"estimate":12,"low":9,"turns":2,"retry_after":1500000000,"period":41}`
	if string(b) != want {
		t.Fatalf("json.Marshal = %s, want %s", b, want)
	}
	if got, want := d.String(), "refused, counted: estimate 12 (low 9) in period 41, 2 turns, retry after 1.5s"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}
