package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// regionWords returns the words of c's region: 64 stripe lines, then the
// counters.
func regionWords(c *CountMin) []uint64 {
	b := c.m.entryBytes()
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// wantMerged is the region words of a merge: each counter and stripe the
// sum of the sources', saturating at 2^63; the recorded weight the
// largest, a merge started (with the source's unfinished ones) and
// finished for each source; the stripe lines' other words (the reset
// generation) stay the destination's.
func wantMerged(dst []uint64, srcs ...[]uint64) []uint64 {
	want := append([]uint64(nil), dst...)
	for _, src := range srcs {
		want[weightOff/8] = max(want[weightOff/8], src[weightOff/8])
		want[mergesOff/8] += 1 + src[mergesOff/8] - src[mergedOff/8]
		want[mergedOff/8]++
		for i := range want {
			if i < cells.StripesBytes/8 && i%(cells.StripeBytes/8) != 0 {
				continue
			}
			want[i] = satAdd(min(want[i], cells.MaxCount), min(src[i], cells.MaxCount))
		}
	}
	return want
}

// TestCountMin_Merge: merging sketches, among them a read-only view, a
// frozen one and the destination itself, leaves every counter and stripe
// the saturating sum, byte for byte, and a healthy Check.
func TestCountMin_Merge(t *testing.T) {
	cfg := CountMinConfig{Rows: 3, Width: 1 << 10, Seed: 7}
	dst := mustOpen(t, tempPath(t, "dst"), cfg)
	a := mustOpen(t, tempPath(t, "a"), cfg)
	bPath := tempPath(t, "b")
	b := mustOpen(t, bPath, cfg)
	for i, c := range []*CountMin{dst, a, b} {
		if err := applyOps(c, streamOps(10+i, 5000)); err != nil {
			t.Fatal(err)
		}
	}
	a.AddN([]byte("huge"), 3<<61) // a and dst together saturate it
	dst.AddN([]byte("huge"), 3<<61)
	if err := b.Freeze(); err != nil {
		t.Fatal(err)
	}
	bro := mustOpen(t, bPath, CountMinConfig{}, WithReadOnly())
	want := wantMerged(regionWords(dst), regionWords(a), regionWords(b), regionWords(b))
	if err := dst.Merge(a, b, bro); err != nil {
		t.Fatal(err)
	}
	if got := regionWords(dst); !slicesEqual(got, want) {
		t.Fatalf("merged region differs from the saturating sum of the sources")
	}
	if got := dst.Estimate([]byte("huge")); got != cells.MaxCount {
		t.Errorf("Estimate(huge) = %d, want the saturated %d", got, cells.MaxCount)
	}
	want = wantMerged(regionWords(dst), regionWords(dst))
	if err := dst.Merge(dst); err != nil {
		t.Fatal(err)
	}
	if !slicesEqual(regionWords(dst), want) {
		t.Errorf("a sketch merged into itself is not doubled")
	}
	if err := a.Merge(); err != nil {
		t.Errorf("Merge() = %v", err)
	}
}

// TestCountMin_Merge_Errors: another shape or seed is ErrIncompatible
// naming the difference and never a seed; a read-only or frozen
// destination refuses; a closed source is ErrInvalidArgument.
func TestCountMin_Merge_Errors(t *testing.T) {
	cfg := CountMinConfig{Rows: 3, Width: 1 << 10, Seed: 123456789}
	dstPath := tempPath(t, "dst")
	dst := mustOpen(t, dstPath, cfg)
	for _, tc := range []struct {
		name string
		cfg  CountMinConfig
		want string
	}{
		{"rows", CountMinConfig{Rows: 4, Width: 1 << 10, Seed: cfg.Seed}, "4 x 1024"},
		{"width", CountMinConfig{Rows: 3, Width: 1 << 11, Seed: cfg.Seed}, "3 x 2048"},
		{"seed", CountMinConfig{Rows: 3, Width: 1 << 10, Seed: 987654321}, "another seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := mustOpen(t, tempPath(t, "o"), tc.cfg)
			err := dst.Merge(o)
			if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dstPath) {
				t.Errorf("Merge = %v, want ErrIncompatible naming %q and the file", err, tc.want)
			}
			if strings.Contains(err.Error(), "123456789") || strings.Contains(err.Error(), "987654321") {
				t.Errorf("Merge error %q shows a seed", err)
			}
		})
	}
	src := mustOpen(t, tempPath(t, "src"), cfg)
	ro := mustOpen(t, dstPath, CountMinConfig{}, WithReadOnly())
	if err := ro.Merge(src); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Merge into a read-only view = %v, want ErrReadOnly", err)
	}
	closed := mustOpen(t, tempPath(t, "closed"), cfg)
	closed.Close()
	if err := dst.Merge(src, closed); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Merge of a closed sketch = %v, want ErrInvalidArgument", err)
	}
	if err := dst.Merge(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Merge(nil) = %v, want ErrInvalidArgument", err)
	}
	if err := dst.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := dst.Merge(src); !errors.Is(err, ErrFrozen) {
		t.Errorf("Merge into a frozen sketch = %v, want ErrFrozen", err)
	}
}

// mergeProcCfg is the shape and seed of the merge test's files.
var mergeProcCfg = CountMinConfig{Rows: 4, Width: 1 << 16, Seed: 0x6d657267}

var _ = role("mergepart", childMergePart)

// childMergePart writes stream envChild into its own file and freezes it.
func childMergePart() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), mergeProcCfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := childBarrier(); err != nil {
		return err
	}
	if err := applyOps(c, streamOps(envInt(envChild), envInt(envOps))); err != nil {
		return err
	}
	return c.Freeze()
}

// TestCountMin_MergeFrozenProcesses: four processes, two per backend where
// both build, each write a stream into a file of their own and freeze it;
// the frozen copies, opened read-only and merged, equal byte for byte one
// sketch fed every stream, and Check finds it healthy.
func TestCountMin_MergeFrozenProcesses(t *testing.T) {
	requireReexec(t)
	other := otherBackendExe(t)
	dir := t.TempDir()
	const children, nops = 4, 20000
	var specs []childSpec
	for i := range children {
		exe := ""
		if i%2 == 1 {
			exe = other
		}
		specs = append(specs, childSpec{exe: exe, name: fmt.Sprintf("part %d", i), role: "mergepart",
			env: envs(envPath, fmt.Sprintf("%s/part%d", dir, i), envChild, i, envOps, nops)})
	}
	for _, h := range startGroup(t, childContext(t), specs) {
		h.wait(t)
	}
	if t.Failed() {
		t.FailNow()
	}
	var parts []*CountMin
	for i := range children {
		parts = append(parts, mustOpen(t, fmt.Sprintf("%s/part%d", dir, i), CountMinConfig{}, WithReadOnly()))
		if !parts[i].Frozen() {
			t.Errorf("part %d is not frozen", i)
		}
	}
	merged := mustOpen(t, dir+"/merged", mergeProcCfg)
	if err := merged.Merge(parts...); err != nil {
		t.Fatal(err)
	}
	whole := mustOpen(t, dir+"/whole", mergeProcCfg)
	var streams [][]op
	for i := range children {
		streams = append(streams, streamOps(i, nops))
		if err := applyOps(whole, streams[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Byte for byte but the merges the merged sketch counted.
	mergedBytes := foldStripes(merged.m.entryBytes())
	clear(mergedBytes[mergesOff : mergedOff+8])
	if !bytes.Equal(mergedBytes, foldStripes(whole.m.entryBytes())) {
		t.Errorf("the merged frozen copies differ from one sketch fed every stream")
	}
	if err := merged.Check(); err != nil {
		t.Errorf("Check of the merge: %v", err)
	}
	truth, total, adds := truthOf(streams...)
	checkAgainstTruth(t, merged, truth, total, adds)
}
