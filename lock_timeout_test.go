//go:build linux

package sketch

// Tests of the bound on lock waits (lock_linux.go, csrc/lock.c): a holder
// that is alive, and so is never recovered from, makes waiters fail with
// ErrTimeout after WithLockTimeout rather than block for good, through
// either core, and a writer that gives up leaves nothing held.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// ltCfg is a counting Bloom filter whose adds and removes take the lock.
var ltCfg = CountingBloomConfig{Capacity: 1000, FPRate: 0.01}

// ltBound is the short bound the tests give; ltPatience how long any call
// may take before the test calls it hung.
const (
	ltBound    = 200 * time.Millisecond
	ltPatience = 60 * time.Second
)

var _ = role("lockwedge", childLockWedge)

// childLockWedge opens the counting Bloom filter at envPath, takes its
// lock (write or read, envLockMode; through the core envLockCore picks),
// says "held", and keeps it, alive, until stdin closes.
func childLockWedge() error {
	b, err := OpenCountingBloom(Path(os.Getenv(envPath)), CountingBloomConfig{})
	if err != nil {
		return err
	}
	if err := b.m.joinLock(); err != nil {
		return err
	}
	ops := childLockOps(b.m.lk)
	write := os.Getenv(envLockMode) == "w"
	take := ops.rlock
	if write {
		take = ops.lock
	}
	if err := take(); err != nil {
		return err
	}
	fmt.Printf("held %d\n", b.m.lk.id)
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			break
		}
	}
	if write {
		return ops.unlock()
	}
	ops.runlock()
	return nil
}

// ltTimesOut runs call and fails unless it returns an error wrapping
// ErrTimeout no sooner than the bound (the holder is alive throughout, so
// nothing could give it the lock) and without hanging.
func ltTimesOut(t *testing.T, what string, call func() error) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("%s = %v, want ErrTimeout", what, err)
		}
		if took := time.Since(start); took < ltBound {
			t.Errorf("%s gave up after %v, before the bound %v", what, took, ltBound)
		}
		if !strings.Contains(err.Error(), "WithLockTimeout") {
			t.Errorf("%s: error %q does not name WithLockTimeout", what, err)
		}
	case <-time.After(ltPatience):
		t.Fatalf("%s still waits after %v with a lock timeout of %v", what, ltPatience, ltBound)
	}
}

// TestLock_ErrTimeoutLiveWriter: a child process holds the write lock of a
// counting Bloom filter and never lets go, alive. Every wait of the
// parent (an Add, a batch that takes the lock in the C core where it is
// built, a Remove, Freeze, the lock taken through each core) fails with
// ErrTimeout after WithLockTimeout; once the child lets go, the same
// handle works.
func TestLock_ErrTimeoutLiveWriter(t *testing.T) {
	for _, core := range []string{"go", "c"} {
		t.Run("child locks in "+core, func(t *testing.T) {
			path := tempPath(t, "cbf")
			b, err := OpenCountingBloom(Path(path), ltCfg, WithLockTimeout(ltBound))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, err := b.AddString("before"); err != nil {
				t.Fatal(err)
			}
			child := startLockChild(t, childContext(t), "lockwedge", path, envs(envLockMode, "w", envLockCore, core))
			child.expect(t, "held 1")

			ltTimesOut(t, "Add", func() error { _, err := b.AddString("key"); return err })
			keys := make([][]byte, 16)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("batch %d", i))
			}
			ltTimesOut(t, "AddBatch(16 keys)", func() error { return b.AddBatch(keys, nil) })
			ltTimesOut(t, "Remove", func() error { _, err := b.RemoveString("before"); return err })
			ltTimesOut(t, "Freeze", b.Freeze)
			l := b.m.lk
			ltTimesOut(t, "Go rlock", l.rlock)
			ltTimesOut(t, "Go lock", l.lock)
			if ops, ok := cLockOps(l); ok {
				ltTimesOut(t, "C rlock", ops.rlock)
				ltTimesOut(t, "C lock", ops.lock)
			}

			child.stdin.Close()
			child.wait(t)
			if _, err := b.AddString("after"); err != nil {
				t.Fatalf("Add once the writer let go: %v", err)
			}
			if !b.ContainsString("after") {
				t.Errorf("Contains(after) = false")
			}
			if err := b.AddBatch(keys, nil); err != nil {
				t.Fatalf("AddBatch once the writer let go: %v", err)
			}
			if removed, err := b.RemoveString("before"); err != nil || !removed {
				t.Fatalf("Remove once the writer let go = %v, %v", removed, err)
			}
		})
	}
}

// TestLock_ErrTimeoutLiveReader: a child holds a read lock and never lets
// go; a writer waiting for it to leave gives up with ErrTimeout, through
// either core, and lets go of what it claimed: readers get in at once
// while the child still reads.
func TestLock_ErrTimeoutLiveReader(t *testing.T) {
	path := tempPath(t, "cbf")
	b, err := OpenCountingBloom(Path(path), ltCfg, WithLockTimeout(ltBound))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.m.joinLock(); err != nil {
		t.Fatal(err)
	}
	l := b.m.lk
	child := startLockChild(t, childContext(t), "lockwedge", path, envs(envLockMode, "r"))
	child.expect(t, "held 1")
	// A reader waits for nobody: it would wait a bound if the writer
	// that gave up had left W set.
	readsAtOnce := func(t *testing.T) {
		t.Helper()
		start := time.Now()
		if _, err := b.AddString("reader"); err != nil {
			t.Fatalf("Add after the writer gave up: %v (after %v)", err, time.Since(start))
		}
	}
	ltTimesOut(t, "Remove", func() error { _, err := b.RemoveString("x"); return err })
	readsAtOnce(t)
	ltTimesOut(t, "Go lock", l.lock)
	readsAtOnce(t)
	if ops, ok := cLockOps(l); ok {
		ltTimesOut(t, "C lock", ops.lock)
		readsAtOnce(t)
	}
	child.stdin.Close()
	child.wait(t)
	if _, err := b.RemoveString("reader"); err != nil {
		t.Fatalf("Remove once the reader let go: %v", err)
	}
}

// TestWithLockTimeout_Invalid: a bound that is not positive is refused.
func TestWithLockTimeout_Invalid(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := OpenCountingBloom(Memory(), ltCfg, WithLockTimeout(d))
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("WithLockTimeout(%v) = %v, want ErrInvalidConfig", d, err)
		}
	}
}
