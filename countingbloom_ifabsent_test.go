//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// cbfOnceCfg leaves false positives out of exact counts: at this load the
// chance that any of the keys is claimed by the others is about 1e-4.
var cbfOnceCfg = CountingBloomConfig{Capacity: 20_000, FPRate: 1e-8}

const envOnceResult = "SKETCH_TEST_ONCE_RESULT" // cbfonce: where the child writes how many it added

// TestCountingBloom_AddIfAbsent: banned twice, unbanned once; refused where
// the handle may not write.
func TestCountingBloom_AddIfAbsent(t *testing.T) {
	b, err := OpenCountingBloom(Memory(), cbfOnceCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i, want := range []bool{true, false, false} {
		if added, err := b.AddIfAbsentString("10.0.0.1"); added != want || err != nil {
			t.Fatalf("AddIfAbsent #%d = %v, %v, want %v", i+1, added, err, want)
		}
	}
	if got := b.EstimateString("10.0.0.1"); got != 1 {
		t.Fatalf("Estimate after three AddIfAbsent = %d, want 1", got)
	}
	if removed, err := b.RemoveString("10.0.0.1"); !removed || err != nil {
		t.Fatalf("Remove = %v, %v", removed, err)
	}
	if b.ContainsString("10.0.0.1") {
		t.Fatal("one Remove after AddIfAbsent twice left the key in")
	}
	// A key Add stored twice is present: AddIfAbsent leaves it at two.
	b.AddString("twice")
	b.AddString("twice")
	if added, err := b.AddIfAbsentString("twice"); added || err != nil || b.EstimateString("twice") != 2 {
		t.Fatalf("AddIfAbsent of a stored key = %v, %v, Estimate %d, want false, nil, 2", added, err, b.EstimateString("twice"))
	}
	if err := b.Freeze(); err != nil {
		t.Fatal(err)
	}
	if added, err := b.AddIfAbsentString("new"); added || !errors.Is(err, ErrReadOnly) && !errors.Is(err, ErrFrozen) {
		t.Fatalf("AddIfAbsent after Freeze = %v, %v, want a refusal", added, err)
	}
	b.Close()
	if _, err := b.AddIfAbsentString("new"); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddIfAbsent after Close = %v, want ErrClosed", err)
	}
}

// TestCountingBloom_AddIfAbsentGoroutines: of 8 goroutines asking for the
// same keys at once, exactly one adds each key.
func TestCountingBloom_AddIfAbsentGoroutines(t *testing.T) {
	b, err := OpenCountingBloom(Memory(), cbfOnceCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const keys, workers = 2000, 8
	var added [keys]int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				k := (i + w*keys/workers) % keys // each starts elsewhere, all meet
				ok, err := b.AddIfAbsent(cbfKey("once", k))
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					added[k]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for k, n := range added {
		if n != 1 || b.Estimate(cbfKey("once", k)) != 1 {
			t.Fatalf("key %d: added by %d goroutines, Estimate %d; want 1 and 1", k, n, b.Estimate(cbfKey("once", k)))
		}
	}
}

// TestCountingBloom_AddIfAbsentProcesses: four processes of both backends
// ask for the same keys at once; exactly one adds each, and every key is
// stored once.
func TestCountingBloom_AddIfAbsentProcesses(t *testing.T) {
	requireReexec(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "cbf")
	b, err := OpenCountingBloom(Path(path), cbfOnceCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const procs = 4
	runAdders(t, procs, "cbfonce", func(i int) []string {
		return envs(envPath, path, envCBFFirst, i, envOnceResult, filepath.Join(dir, fmt.Sprint("added-", i)))
	})
	total := 0
	for i := range procs {
		out, err := os.ReadFile(filepath.Join(dir, fmt.Sprint("added-", i)))
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(string(out))
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != cbfOnceKeys {
		t.Errorf("the processes added %d times for %d keys, want exactly %d", total, cbfOnceKeys, cbfOnceKeys)
	}
	for k := range cbfOnceKeys {
		if got := b.Estimate(cbfKey("once", k)); got != 1 {
			t.Fatalf("Estimate(key %d) = %d, want 1", k, got)
		}
	}
}

const cbfOnceKeys = 5000

var _ = role("cbfonce", childCBFOnce)

// childCBFOnce asks AddIfAbsent for every key, starting at an offset of
// its own so that the processes meet on every key, and writes how many it
// added.
func childCBFOnce() error {
	b, err := OpenCountingBloom(Path(os.Getenv(envPath)), cbfOnceCfg)
	if err != nil {
		return err
	}
	if err := childBarrier(); err != nil {
		return err
	}
	start, added := envInt(envCBFFirst)*cbfOnceKeys/4, 0
	for i := range cbfOnceKeys {
		ok, err := b.AddIfAbsent(cbfKey("once", (start+i)%cbfOnceKeys))
		if err != nil {
			return err
		}
		if ok {
			added++
		}
	}
	if err := os.WriteFile(os.Getenv(envOnceResult), []byte(strconv.Itoa(added)), 0o600); err != nil {
		return err
	}
	return b.Close()
}
