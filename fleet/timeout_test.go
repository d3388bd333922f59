package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestSync_TimeoutBoundsASlowRedis: Timeout bounds a round's Redis calls:
// with Redis paused for longer, Sync returns about Timeout later, failed,
// not once Redis answers or the client's own read timeout passes.
func TestSync_TimeoutBoundsASlowRedis(t *testing.T) {
	rs := redistest.Start(t)
	a, err := New(Config{Redis: rs.Client(t), Fleet: "f", Host: "h", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.AddBloom("b", mustOpen(t, sketch.OpenBloom, sketch.Memory(), sketch.BloomConfig{Capacity: 100, FPRate: 0.01, Seed: 1})); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a) // the script is loaded, the connection made
	if err := rs.Client(t).Do(context.Background(), "CLIENT", "PAUSE", 6000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Client(t).Do(context.Background(), "CLIENT", "UNPAUSE") })
	start := time.Now()
	err = a.Sync(context.Background())
	took := time.Since(start)
	if err == nil {
		t.Fatal("Sync against a paused Redis succeeded")
	}
	if took > 2*time.Second {
		t.Errorf("Sync with Timeout 300ms against a paused Redis took %v (%v)", took, err)
	}
}
