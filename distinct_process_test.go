//go:build linux

package sketch

// Distinct counts shared by real processes of both backends: overlapping
// key sets added at once leave, register for register, what one process
// adding every key leaves; and so do adders killed with SIGKILL halfway
// and then run again, with nothing repaired in between.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const (
	envDistinctFirst = "SKETCH_TEST_DISTINCT_FIRST" // distinctadd: the child's first key
	envDistinctCount = "SKETCH_TEST_DISTINCT_COUNT" // how many keys it adds
	envDistinctRedis = "SKETCH_TEST_DISTINCT_REDIS" // 1: the Redis profile
)

// distinctProcCfg is the processes' config, in the profile redis says.
func distinctProcCfg(redis bool) DistinctConfig {
	if redis {
		return DistinctConfig{Redis: true}
	}
	return DistinctConfig{Precision: 14, Seed: 0xd15c}
}

var _ = role("distinctadd", childDistinctAdd)

// childDistinctAdd opens the count, waits at the barrier and adds its
// range.
func childDistinctAdd() error {
	d, err := OpenDistinct(Path(os.Getenv(envPath)), distinctProcCfg(os.Getenv(envDistinctRedis) == "1"))
	if err != nil {
		return err
	}
	defer d.Close()
	fmt.Printf("backend=%s\n", Backend)
	if err := childBarrier(); err != nil {
		return err
	}
	return distinctAddKeys(d, envInt(envDistinctFirst), envInt(envDistinctCount))
}

// distinctWant is the count one process makes of keys 0 .. n-1.
func distinctWant(t *testing.T, redis bool, n int) *Distinct {
	t.Helper()
	d := mustDistinct(t, distinctProcCfg(redis))
	if err := distinctAddKeys(d, 0, n); err != nil {
		t.Fatal(err)
	}
	return d
}

// sameRegisters fails the test when the file's registers are not want's.
func sameRegisters(t *testing.T, path string, want *Distinct) {
	t.Helper()
	got := mustIn(t, OpenDistinct, Path(path), DistinctConfig{}, WithReadOnly())
	if err := got.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
	if !bytes.Equal(registersOf(got), registersOf(want)) {
		diff := 0
		for j, r := range registersOf(got) {
			if r != registersOf(want)[j] {
				diff++
			}
		}
		t.Errorf("%d of %d registers differ from one process adding every key", diff, len(registersOf(want)))
	}
	if g, w := got.Count(), want.Count(); g != w {
		t.Errorf("Count() = %d, one process's %d", g, w)
	}
}

// TestDistinct_FourProcesses: four processes, two per backend where both
// can be built, add overlapping ranges (each shares half its keys with the
// next) to one file at once: the registers are those of one process
// adding the union.
func TestDistinct_FourProcesses(t *testing.T) {
	requireReexec(t)
	path := filepath.Join(t.TempDir(), "hll")
	const per = 20_000
	runAdders(t, 4, "distinctadd", func(i int) []string {
		return envs(envPath, path, envDistinctFirst, i*per, envDistinctCount, 2*per, envDistinctRedis, 0)
	})
	sameRegisters(t, path, distinctWant(t, false, 5*per))
}

// TestDistinct_KilledAdders: in the Redis profile, four adders of both
// backends are killed with SIGKILL at random moments while they add; four
// more then add the same ranges to the same file, opened as it was left.
// The registers are those of one process adding everything: a killed
// add leaves nothing to repair, and adds again change nothing.
func TestDistinct_KilledAdders(t *testing.T) {
	requireReexec(t)
	path := filepath.Join(t.TempDir(), "hll")
	const per = 100_000
	env := func(i int) []string {
		return envs(envPath, path, envDistinctFirst, i*per/2, envDistinctCount, per, envDistinctRedis, 1)
	}
	exe := bothBackends(t)
	specs := make([]childSpec, 4)
	for i := range specs {
		specs[i] = childSpec{exe: exe(i), name: fmt.Sprintf("killed adder %d", i), role: "distinctadd", env: env(i)}
	}
	hs := startGroup(t, childContext(t), specs)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for _, h := range hs {
		time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		h.cmd.Process.Kill()
	}
	for _, h := range hs {
		<-h.done
	}
	mid := mustIn(t, OpenDistinct, Path(path), DistinctConfig{}, WithReadOnly())
	t.Logf("after the kills: %d of %d registers set, count %d", len(registersOf(mid))-bytes.Count(registersOf(mid), []byte{0}), len(registersOf(mid)), mid.Count())
	runAdders(t, 4, "distinctadd", env)
	sameRegisters(t, path, distinctWant(t, true, 5*per/2))
}
