package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestRun_IntervalZero: -interval 0 means the agent's default (a second),
// as it does for fleet.Config: the command runs its rounds, logs the
// states, and exits 0 when its context ends, without a panic.
func TestRun_IntervalZero(t *testing.T) {
	rs := redistest.Start(t)
	path := filepath.Join(t.TempDir(), "b")
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
		done <- run(ctx, append(slow, "-redis", "unix://"+rs.Sock+"?"+slowURL, "-fleet", "f", "-host", "h", "-interval", "0", path), &stderr)
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), `bloom "b": synced`) {
		if time.Now().After(deadline) {
			t.Fatalf("no synced state logged within a minute: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}
