//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Counters in processes of both builds, one killed mid-adds, and on
// files: read-only views, and what a killed create leaves in an arena.

const envCtrLog = "SKETCH_TEST_CTR_LOG" // where a child logs each add before making it

// ctrProcNames are the counters of the process tests.
var ctrProcNames = []string{"200", "301", "404", "500", "GET /", "POST /login", "é", "other"}

// ctrOp is add i of child's stream: which counter, how much, and whether
// through a resolved Counter.
func ctrOp(child, i int) (name int, n uint64, resolved bool) {
	return (i*7 + child*3 + i/5) % len(ctrProcNames), uint64(i%13 + 1), (i+child)%2 == 0
}

// ctrWant adds the first ops adds of child's stream to want.
func ctrWant(want map[string]uint64, child, ops int) {
	for i := range ops {
		name, n, _ := ctrOp(child, i)
		want[ctrProcNames[name]] += n
	}
}

var _ = role("counters", childCounters)

// childCounters makes envOps adds of its stream (forever when 0),
// attached with the zero config. With envCtrLog set it writes each add's
// index to the log, in one write, before making it: a parent that kills
// it knows that every logged add but the last returned, and that the
// last was made whole or not at all.
func childCounters() error {
	c, err := OpenCounters(Path(os.Getenv(envPath)), CountersConfig{})
	if err != nil {
		return err
	}
	defer c.Close()
	var log *os.File
	if p := os.Getenv(envCtrLog); p != "" {
		if log, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return err
		}
		defer log.Close()
	}
	resolved := make([]Counter, len(ctrProcNames))
	for i, name := range ctrProcNames {
		if resolved[i], err = c.Counter(name); err != nil {
			return err
		}
	}
	if err := childBarrier(); err != nil {
		return err
	}
	child, ops := envInt(envChild), envInt(envOps)
	var buf []byte
	for i := 0; ops == 0 || i < ops; i++ {
		name, n, viaCounter := ctrOp(child, i)
		if log != nil {
			buf = strconv.AppendInt(buf[:0], int64(i), 10)
			if _, err := log.Write(append(buf, '\n')); err != nil {
				return err
			}
		}
		if viaCounter {
			err = resolved[name].Add(n)
		} else {
			err = c.Add(ctrProcNames[name], n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func mustCreateCounters(t *testing.T, path string) *Counters {
	t.Helper()
	return mustCounters(t, Path(path), CountersConfig{Names: ctrProcNames})
}

// ctrExpect compares every counter with want.
func ctrExpect(t *testing.T, c *Counters, want map[string]uint64) {
	t.Helper()
	for _, nv := range c.Values() {
		if nv.Value != want[nv.Name] {
			t.Errorf("%q = %d, want exactly %d", nv.Name, nv.Value, want[nv.Name])
		}
	}
}

// TestCounters_FourProcessesExact: four processes, of both builds when
// the other can be built, add to one file's counters at once, through
// names and resolved Counters; every counter is then exactly the sum of
// the adds.
func TestCounters_FourProcessesExact(t *testing.T) {
	requireReexec(t)
	exes := alternatingBuilds(t, 4)
	path := filepath.Join(t.TempDir(), "counters")
	c := mustCreateCounters(t, path)
	const ops = 100000
	var specs []childSpec
	want := map[string]uint64{}
	for i, exe := range exes {
		specs = append(specs, childSpec{exe: exe, name: fmt.Sprint("child ", i), role: "counters",
			env: envs(envPath, path, envChild, i, envOps, ops)})
		ctrWant(want, i, ops)
	}
	for _, h := range startGroup(t, childContext(t), specs) {
		h.wait(t)
	}
	ctrExpect(t, c, want)
	if err := c.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCounters_KillMidAdds: a child killed with SIGKILL while it adds,
// beside one that runs to its end, leaves every counter exactly what the
// adds that returned made it: the finished child's, and the killed one's
// logged adds, the last of which (in flight at the kill) whole or not at
// all.
func TestCounters_KillMidAdds(t *testing.T) {
	requireReexec(t)
	dir := t.TempDir()
	path, log := filepath.Join(dir, "counters"), filepath.Join(dir, "log")
	c := mustCreateCounters(t, path)
	const ops = 20000
	hs := startGroup(t, childContext(t), []childSpec{
		{name: "killed child", role: "counters", env: envs(envPath, path, envChild, 0, envOps, 0, envCtrLog, log)},
		{name: "finishing child", role: "counters", env: envs(envPath, path, envChild, 1, envOps, ops)},
	})
	waitLogLines(t, log, 5000)
	hs[0].cmd.Process.Kill()
	<-hs[0].done
	hs[1].wait(t)
	logged := ctrLogged(t, log)
	if logged == 0 {
		t.Fatal("the killed child logged no add")
	}
	want := map[string]uint64{}
	ctrWant(want, 1, ops)
	ctrWant(want, 0, logged-1) // returned before the last was logged
	name, n, _ := ctrOp(0, logged-1)
	last := ctrProcNames[name]
	if got, _ := c.Value(last); got == want[last]+n {
		want[last] += n // the add in flight was made
	}
	ctrExpect(t, c, want)
	if err := c.Check(); err != nil {
		t.Errorf("Check after a kill: %v", err)
	}
	t.Logf("the killed child logged %d adds", logged)
}

// ctrLogged is how many adds the log holds, its lines' indexes checked
// to run 0, 1, 2...; a partial last line (the write the kill cut) is not
// counted.
func ctrLogged(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	lines = lines[:len(lines)-1] // after the last newline: nothing, or a cut write
	for i, l := range lines {
		if l != strconv.Itoa(i) {
			t.Fatalf("log line %d is %q", i, l)
		}
	}
	return len(lines)
}

// TestCounters_ReadOnlyAndNames: a read-only view reads every counter
// and refuses adds and resets with ErrReadOnly; an explicit config of
// other names is ErrIncompatible saying the first difference.
func TestCounters_ReadOnlyAndNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "counters")
	c := mustCounters(t, Path(path), CountersConfig{Names: ctrNamesHTTP})
	c.Add("404", 4)
	fi := mustInspect(t, path)
	if len(fi.Entries) != 1 || fi.Entries[0].Kind != KindCounters || fi.Entries[0].Params["counters"] != float64(len(ctrNamesHTTP)) {
		t.Fatalf("Inspect = %+v, want one counters structure of %d counters", fi.Entries, len(ctrNamesHTTP))
	}
	if diff := cmp.Diff(CountersConfig{Names: ctrNamesHTTP}, fi.Entries[0].Config); diff != "" {
		t.Errorf("Inspect's config, with the names (-want +got):\n%s", diff)
	}
	ro := mustCounters(t, Path(path), CountersConfig{}, WithReadOnly())
	k, err := ro.Counter("404")
	if err != nil {
		t.Fatal(err)
	}
	for op, err := range map[string]error{"Add": ro.Add("404", 1), "Counter.Add": k.Add(1), "Reset": ro.Reset()} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only view = %v, want ErrReadOnly", op, err)
		}
	}
	if v, _ := ro.Value("404"); v != 4 || k.Value() != 4 {
		t.Errorf("the view reads %d and %d, want 4", v, k.Value())
	}
	for _, tc := range []struct {
		names []string
		says  string
	}{
		{[]string{"200", "404", "501", "GET /api/users", "é-ü"}, `name 2 is "501", the file's "500"`},
		{append(slices.Clone(ctrNamesHTTP), "x"), `it has no "x"`},
		{[]string{"200"}, `also has "404"`},
	} {
		_, err := OpenCounters(Path(path), CountersConfig{Names: tc.names})
		if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), path) {
			t.Errorf("open with names %q = %v, want ErrIncompatible naming the file and saying %s", tc.names, err, tc.says)
		}
	}
}

// TestCounters_ArenaKilledCreate: a counters create killed after it wrote
// its names but before it published its entry leaves bytes past the last
// region; the next create clears them, so that the structure it makes
// there, and every byte after it, is zero. A counters structure removed
// and made again with other names in its room opens with the new names.
func TestCounters_ArenaKilledCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arena")
	a := mustOpenArena(t, path, 1<<20)
	mustIn(t, OpenCountMin, a.Place("cm"), CountMinConfig{Rows: 2, Width: 64}).AddString("k")
	names := make([]string, 40)
	for i := range names {
		names[i] = fmt.Sprint("counter-", i)
	}
	mustCounters(t, a.Place("ctr"), CountersConfig{Names: names})
	// What the killed create left: its slot and its names, not counted.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	native.PutUint32(b[offDirCount:], native.Uint32(b[offDirCount:])-1)
	otRewrite(t, path, b)

	a = mustOpenArena(t, path, 1<<20)
	if _, err := OpenCounters(a.Place("ctr"), CountersConfig{}); err == nil {
		t.Fatal("the uncounted structure opens")
	}
	// Smaller than the counters' own words: the names lie past it.
	d := mustIn(t, OpenDistinct, a.Place("small"), DistinctConfig{Precision: 4})
	if d.Count() != 0 {
		t.Errorf("the structure made over the killed create's bytes counts %d", d.Count())
	}
	if tail := d.m.data[d.m.ent.off:]; slices.ContainsFunc(tail, func(b byte) bool { return b != 0 }) {
		t.Error("bytes the killed create wrote are left in or past the new structure's region")
	}

	// Removed, and made again in its room with other names.
	old := mustCounters(t, a.Place("ctr2"), CountersConfig{Names: names})
	old.Add("counter-3", 3)
	old.Close()
	if err := a.Remove("ctr2"); err != nil {
		t.Fatal(err)
	}
	c := mustCounters(t, a.Place("ctr3"), CountersConfig{Names: []string{"x", "y"}})
	if c.m.ent.off != old.m.ent.off {
		t.Fatalf("the new structure is at %d, not in the removed room at %d", c.m.ent.off, old.m.ent.off)
	}
	if got := c.Names(); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("the structure made in a removed room has names %q", got)
	}
	if v, _ := c.Value("x"); v != 0 {
		t.Errorf("a counter made in a removed room starts at %d", v)
	}
	if err := a.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}
