package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestSync_NothingWrittenOverAnotherKindsState: a distinct count whose
// fleet key holds what is not a HyperLogLog (another kind's state, the
// description lost) fails its round and writes nothing: no description
// claiming the key for this kind, no scratch key left behind.
func TestSync_NothingWrittenOverAnotherKindsState(t *testing.T) {
	rs := redistest.Start(t)
	c := rs.Client(t)
	ctx := context.Background()
	a := newAgent(t, rs, "h")
	d := mustOpen(t, sketch.OpenDistinct, sketch.Memory(), sketch.DistinctConfig{Seed: 3})
	d.AddString("x")
	if err := a.AddDistinct("d", d); err != nil {
		t.Fatal(err)
	}
	keys := a.keys(a.members[0], "pfmerge")
	c.Set(ctx, keys[1], strings.Repeat("\xff", 1<<12), 0) // a Bloom filter's bits
	err := a.Sync(ctx)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Sync over a key that is not a HyperLogLog: %v, want ErrMismatch", err)
	}
	// The error says what Redis holds, not that it is the fleet's description.
	if want := "found in Redis: a state that is not a HyperLogLog"; !strings.Contains(err.Error(), want) {
		t.Errorf("the error %q does not say %q", err, want)
	}
	for _, k := range []string{keys[0], keys[2]} {
		if n := c.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("the failed round left %q (%d bytes)", k, c.StrLen(ctx, k).Val())
		}
	}
}
