package fleet

import (
	"path/filepath"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// TestAddArena_ARecreatedStructureIsSynced: a structure of a synced arena
// that its owner removed and created again under the same name is the
// one the arena's processes read; a round either syncs it or says it
// did not, never reports synced while it syncs only the removed one
// (whose room the agent's handle also keeps from being reused).
func TestAddArena_ARecreatedStructureIsSynced(t *testing.T) {
	rs := redistest.Start(t)
	cfg := sketch.BloomConfig{Capacity: 1000, FPRate: 0.01}
	ar := mustOpen(t, sketch.OpenArena, sketch.Path(filepath.Join(t.TempDir(), "arena")), sketch.ArenaConfig{Size: 1 << 22, Seed: 1})
	b, err := sketch.OpenBloom(ar.Place("seen"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	a := newAgent(t, rs, "h")
	if err := a.AddArena(ar); err != nil {
		t.Fatal(err)
	}
	mustSync(t, a)
	if err := ar.Remove("seen"); err != nil {
		t.Fatal(err)
	}
	seen := mustOpen(t, sketch.OpenBloom, ar.Place("seen"), cfg)

	other := newAgent(t, rs, "other")
	theirs := mustOpen(t, sketch.OpenBloom, sketch.Memory(), sketch.BloomConfig{Capacity: 1000, FPRate: 0.01, Seed: 1})
	if err := other.AddBloom("seen", theirs); err != nil {
		t.Fatal(err)
	}
	theirs.AddString("from-other")
	mustSync(t, other)

	err = a.Sync(t.Context())
	if err == nil && a.Stats().State == StateSynced && !seen.ContainsString("from-other") {
		t.Error(`after a round reported synced, the arena's "seen" (created again) does not find the other host's key: the agent synced the removed one`)
	}
}
