//go:build linux

package sketch

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
)

// Labels of candidate keys: a key kept whole is checked against its
// slot's hash wherever the table is read (Check, Top, Merge, Snapshot); a
// key kept as a prefix cannot be, and its label proves only what the
// table's writer wrote.

// wayOf is the way of c's table holding key, or fails the test.
func wayOf(t *testing.T, c *CountMin, key string) uint64 {
	t.Helper()
	for way := range c.top.ways {
		if cand, ok := c.top.read(way); ok && string(cand.key) == key {
			return way
		}
	}
	t.Fatalf("no way holds %q", key)
	return 0
}

// relabel overwrites the key bytes of a way, keeping its hash and length,
// as a writer of the file could.
func relabel(tb *candidateTable, way uint64, label string) {
	b := make([]byte, roundUp(uint64(len(label)), 8))
	copy(b, label)
	for i := 0; i < len(b); i += 8 {
		atomic.StoreUint64(tb.slotWord(way, 4+uintptr(i/8)), native.Uint64(b[i:]))
	}
}

// TestCandidates_CraftedLabelMerge: a whole key relabelled (the loudest
// key's hash under another key of its length) is ErrCorrupt to Check of
// its sketch, and a Merge or Snapshot of that sketch leaves the entry out
// (and its counters in): the merged table and the copy never list the
// label, and check sound.
func TestCandidates_CraftedLabelMerge(t *testing.T) {
	_, src := craftedTable(t)
	way := wayOf(t, src, "delta") // the loudest: 40 adds
	relabel(src.top, way, "evil!")
	if err := src.Check(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not hash") {
		t.Fatalf("Check of the relabelled table = %v, want ErrCorrupt", err)
	}
	dst := mustOpen(t, tempPath(t, "dst"), craftedCandCfg)
	if err := dst.Merge(src); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	snap, err := src.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	for name, c := range map[string]*CountMin{"merged": dst, "snapshot": snap} {
		if err := c.Check(); err != nil {
			t.Errorf("%s: Check = %v", name, err)
		}
		top, err := c.Top(0)
		if err != nil {
			t.Fatal(err)
		}
		if len(top) == 0 {
			t.Errorf("%s: Top lists nothing", name)
		}
		for _, h := range top {
			if h.Key == "evil!" || c.EstimateString(h.Key) != h.Estimate {
				t.Errorf("%s: Top lists %+v, which is not its key's own", name, h)
			}
		}
		if got := c.EstimateString("delta"); got < 40 {
			t.Errorf("%s: Estimate(delta) = %d, want >= 40 (the counters merge whole)", name, got)
		}
	}
}

// TestCandidates_PrefixLabel: a key longer than the slot keeps is listed
// as its prefix with its whole length and the estimate of its whole hash;
// a writer of the file can pair any prefix with any hash, which no reader
// can check, so the label of such a key (Length > len(Key)) proves only
// what the writer wrote, while a whole key's label is its own.
func TestCandidates_PrefixLabel(t *testing.T) {
	_, c := craftedTable(t)
	long := strings.Repeat("L", 100) // kept as its first 64 bytes
	for range 50 {
		c.AddString(long)
	}
	top, err := c.Top(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 1 || top[0].Key != long[:64] || top[0].Length != 100 || top[0].Estimate != c.EstimateString(long) {
		t.Fatalf("Top(1) = %+v, want the long key's prefix, length 100, and its own estimate", top)
	}
	// Another prefix over the same hash and length: nothing tells.
	forged := strings.Repeat("F", 64)
	relabel(c.top, wayOf(t, c, long[:64]), forged)
	if err := c.Check(); err != nil {
		t.Errorf("Check of a relabelled prefix = %v: a prefix cannot be checked, want nil", err)
	}
	top, _ = c.Top(1)
	if len(top) != 1 || top[0].Key != forged || top[0].Estimate != c.EstimateString(long) || c.EstimateString(forged) >= top[0].Estimate {
		t.Errorf("Top(1) = %+v: want the forged prefix with the long key's estimate", top)
	}
}
