package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestSync_TimeoutBoundsASlowRedis: with a client made as Config.Redis
// says (ContextTimeoutEnabled) and no read timeout of its own, Timeout
// bounds a round's Redis calls: against a Redis paused for ten minutes,
// Sync returns, failed, well before the pause ends.
func TestSync_TimeoutBoundsASlowRedis(t *testing.T) {
	rs := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Network: "unix", Addr: rs.Sock, MaxRetries: -1, ReadTimeout: -1, WriteTimeout: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	a, err := New(Config{Redis: client, Fleet: "f", Host: "h", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if err := a.AddBloom("b", mustOpen(t, sketch.OpenBloom, sketch.Memory(), sketch.BloomConfig{Capacity: 100, FPRate: 0.01, Seed: 1})); err != nil {
		t.Fatal(err)
	}
	// The script is loaded, the connection made, by a round with a
	// generous Timeout (a loaded machine can take more than 300ms over
	// one); the round against the paused Redis has the 300ms again.
	a.cfg.Timeout = time.Minute
	mustSync(t, a)
	a.cfg.Timeout = 300 * time.Millisecond
	if err := rs.Client(t).Do(context.Background(), "CLIENT", "PAUSE", 600_000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	// The paused server is stopped first: nothing after needs it, and an
	// UNPAUSE waited out the client's read timeout.
	t.Cleanup(rs.Stop)
	done := make(chan error, 1)
	go func() { done <- a.Sync(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Sync against a paused Redis succeeded")
		}
		if s := a.Stats(); s.State != StateLocal {
			t.Errorf("State = %s after a timed-out round, want local", s.State)
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("Sync with Timeout 300ms still waits for a Redis paused for ten minutes, 5 minutes on")
	}
}
