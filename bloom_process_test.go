//go:build linux

package sketch

// Bloom filters shared by real processes, of both backends: adds from
// four processes into one file, seen by all four; and frozen copies made
// by four processes, merged.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const (
	envBloomFirst = "SKETCH_TEST_BLOOM_FIRST" // bloom roles: the child's first key
	envBloomCount = "SKETCH_TEST_BLOOM_COUNT" // how many keys it adds
	envBloomAll   = "SKETCH_TEST_BLOOM_ALL"   // bloomadd: keys all children add
)

var bloomProcCfg = BloomConfig{Capacity: 200_000, FPRate: 0.01, Seed: 0xb10b}

// filterAdder is a filter's write path: a Bloom or a counting Bloom
// filter.
type filterAdder interface {
	Add(key []byte) (already bool, err error)
	AddBatch(keys [][]byte, already []bool) error
}

// bloomAddRange adds keys p-first .. p-(first+n-1) to a filter: even ones
// one by one, odd ones in one batch.
func bloomAddRange(b filterAdder, first, n int) error {
	var batch [][]byte
	for i := first; i < first+n; i++ {
		if i%2 == 0 {
			if _, err := b.Add(bloomKey("p", i)); err != nil {
				return err
			}
		} else {
			batch = append(batch, bloomKey("p", i))
		}
	}
	return b.AddBatch(batch, nil)
}

var _ = role("bloomadd", childBloomAdd)

// childBloomAdd adds its range, waits until every child's adds are counted
// (a count moves after its bits), then checks every child's keys.
func childBloomAdd() error {
	b, err := OpenBloom(Path(os.Getenv(envPath)), bloomProcCfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := childBarrier(); err != nil {
		return err
	}
	if err := bloomAddRange(b, envInt(envBloomFirst), envInt(envBloomCount)); err != nil {
		return err
	}
	all := envInt(envBloomAll)
	for {
		st := b.Stats()
		if st.Adds >= uint64(all) {
			break
		}
		time.Sleep(time.Millisecond) // the parent's context bounds this
	}
	for i := range all {
		if !b.Contains(bloomKey("p", i)) {
			return fmt.Errorf("key p-%d, added by another process, is missing", i)
		}
	}
	return nil
}

var _ = role("bloomfrozen", childBloomFrozen)

// childBloomFrozen creates its own filter file, adds its range and
// freezes the file.
func childBloomFrozen() error {
	b, err := OpenBloom(Path(os.Getenv(envPath)), bloomProcCfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := bloomAddRange(b, envInt(envBloomFirst), envInt(envBloomCount)); err != nil {
		return err
	}
	return b.Freeze()
}

// TestBloom_FourProcesses: four processes, two per backend where both can
// be built, add disjoint sets to one file: each process finds every key
// of all four, and so does the parent; the counts add up.
func TestBloom_FourProcesses(t *testing.T) {
	requireReexec(t)
	path := filepath.Join(t.TempDir(), "bloom")
	const per = 25_000
	runAdders(t, 4, "bloomadd", func(i int) []string {
		return envs(envPath, path, envBloomFirst, i*per, envBloomCount, per, envBloomAll, 4*per)
	})
	b, err := OpenBloom(Path(path), BloomConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 4 * per {
		if k := bloomKey("p", i); !b.Contains(k) {
			t.Fatalf("Check(%q) = false for a key a child added", k)
		}
	}
	if st := b.Stats(); st.Adds != 4*per || st.Adds-st.AddsPresent < 4*per*9/10 {
		t.Errorf("Stats() = %d adds, %d present, want %d adds, nearly all new", st.Adds, st.AddsPresent, 4*per)
	}
}

// TestBloom_MergeFrozenCopies: four processes (two per backend) each fill
// a file of their own and freeze it; the parent opens the copies
// read-only and merges them into a new filter, whose bits are byte for
// byte those of one filter fed every key. A frozen copy refuses a
// read-write open, and a merge into it.
func TestBloom_MergeFrozenCopies(t *testing.T) {
	requireReexec(t)
	dir := t.TempDir()
	exe := bothBackends(t)
	const per = 10_000
	ctx := childContext(t)
	var hs []*helper
	for i := range 4 {
		hs = append(hs, startHelper(t, ctx, exe(i), fmt.Sprintf("copy %d", i), "bloomfrozen",
			envs(envPath, filepath.Join(dir, fmt.Sprint(i)), envBloomFirst, i*per, envBloomCount, per)))
	}
	waitAll(t, hs)
	var copies []*Bloom
	for i := range 4 {
		path := filepath.Join(dir, fmt.Sprint(i))
		if _, err := OpenBloom(Path(path), bloomProcCfg); !errors.Is(err, ErrFrozen) {
			t.Errorf("read-write open of a frozen copy = %v, want ErrFrozen", err)
		}
		c, err := OpenBloom(Path(path), bloomProcCfg, WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if !c.Frozen() || !c.ReadOnly() {
			t.Errorf("copy %d: Frozen() = %v, ReadOnly() = %v", i, c.Frozen(), c.ReadOnly())
		}
		copies = append(copies, c)
	}
	merged := mustBloom(t, bloomProcCfg)
	if err := merged.Merge(copies...); err != nil {
		t.Fatal(err)
	}
	all := mustBloom(t, bloomProcCfg)
	if err := bloomAddRange(all, 0, 4*per); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bloomBits(merged), bloomBits(all)) {
		t.Error("the merge of four frozen copies differs from one filter fed every key")
	}
	if err := copies[0].Merge(copies[1]); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Merge into a read-only view = %v, want ErrReadOnly", err)
	}
}
