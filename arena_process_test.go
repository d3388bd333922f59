//go:build linux

package sketch

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

const (
	arRaceNames = 50
	arRaceSize  = 4 << 20
)

// arRaceName is the i-th name of the race: by i mod 3 a Count-Min
// sketch, a counting Bloom filter or a Bloom filter.
func arRaceName(i int) string { return fmt.Sprintf("name-%02d", i) }

var _ = role("arenarace", childArenaRace)

// childArenaRace opens the arena and asks for every name in an order of
// its own, adding its key to each structure.
func childArenaRace() error {
	child := envInt(envChild)
	if err := childBarrier(); err != nil {
		return err
	}
	a, err := OpenArena(Path(os.Getenv(envPath)), ArenaConfig{Size: arRaceSize})
	if err != nil {
		return err
	}
	defer a.Close()
	key := "child-" + strconv.Itoa(child)
	order := rand.New(rand.NewPCG(uint64(child), 7)).Perm(arRaceNames)
	for _, i := range order {
		switch i % 3 {
		case 0:
			c, err := OpenCountMin(a.Place(arRaceName(i)), arCMS)
			if err != nil {
				return err
			}
			if _, err := c.AddString(key); err != nil {
				return err
			}
			c.Close()
		case 1:
			b, err := OpenCountingBloom(a.Place(arRaceName(i)), arCBF)
			if err != nil {
				return err
			}
			if _, err := b.AddString(key); err != nil {
				return err
			}
			b.Close()
		case 2:
			b, err := OpenBloom(a.Place(arRaceName(i)), arBloom)
			if err != nil {
				return err
			}
			if _, err := b.AddString(key); err != nil {
				return err
			}
			b.Close()
		}
	}
	fmt.Printf("backend=%s\n", Backend)
	return nil
}

// TestArena_RaceToCreate has eight processes, on both backends, race to
// create the same 50 names in one new arena: every name must exist once,
// and every process's add must be in each structure.
func TestArena_RaceToCreate(t *testing.T) {
	requireReexec(t)
	exes := []string{selfExe(t)}
	other := map[string]string{"cgo": "purego", "purego": "cgo"}[Backend]
	if canBuildBackend(other) {
		exes = append(exes, backendBinary(t, other))
	} else {
		t.Logf("only the %s backend: no toolchain to build the %s one", Backend, other)
	}
	const procs = 8
	path := tempPath(t, "arena")
	ctx := childContext(t)
	var specs []childSpec
	for i := range procs {
		specs = append(specs, childSpec{exe: exes[i%len(exes)], name: fmt.Sprint("child ", i), role: "arenarace",
			env: envs(envPath, path, envChild, i)})
	}
	for _, h := range startGroup(t, ctx, specs) {
		h.wait(t)
	}
	if t.Failed() {
		t.FailNow()
	}
	a := mustOpenArena(t, path, 0)
	list := a.List()
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	var want []string
	for i := range arRaceNames {
		want = append(want, arRaceName(i))
	}
	if !slices.Equal(names, want) {
		t.Fatalf("%d names in the directory: %v, want each of the %d once", len(names), names, arRaceNames)
	}
	var missing int
	for i := range arRaceNames {
		switch i % 3 {
		case 0:
			c, err := OpenCountMin(a.Place(arRaceName(i)), arCMS)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Total(); got != procs {
				t.Errorf("%s: total %d, want %d (one add per process)", arRaceName(i), got, procs)
			}
			for p := range procs {
				if c.EstimateString(fmt.Sprint("child-", p)) == 0 {
					missing++
				}
			}
			if err := c.Check(); err != nil {
				t.Errorf("%s: Check() = %v", arRaceName(i), err)
			}
			c.Close()
		case 1:
			b, err := OpenCountingBloom(a.Place(arRaceName(i)), arCBF)
			if err != nil {
				t.Fatal(err)
			}
			for p := range procs {
				if !b.ContainsString(fmt.Sprint("child-", p)) {
					missing++
				}
			}
			b.Close()
		case 2:
			b, err := OpenBloom(a.Place(arRaceName(i)), arBloom)
			if err != nil {
				t.Fatal(err)
			}
			for p := range procs {
				if !b.ContainsString(fmt.Sprint("child-", p)) {
					missing++
				}
			}
			if st := b.Stats(); st.Adds != procs {
				t.Errorf("%s: %d adds counted, want %d", arRaceName(i), st.Adds, procs)
			}
			b.Close()
		}
	}
	if missing != 0 {
		t.Errorf("%d of %d adds are missing", missing, procs*arRaceNames)
	}
	t.Logf("%d processes on %d backends created %d names, %d adds, none lost", procs, len(exes), len(list), procs*arRaceNames)
}

var _ = role("arenakill", childArenaKill)

// childArenaKill stops inside the create of "victim", after writing the
// entry and before publishing it, holding the write lock; it tells the
// parent on fd 3 and waits to be killed.
func childArenaKill() error {
	a, err := OpenArena(Path(os.Getenv(envPath)), ArenaConfig{Size: 1 << 20})
	if err != nil {
		return err
	}
	arenaCreateHook = func() {
		os.NewFile(3, "ready").Write([]byte{1})
		time.Sleep(time.Hour)
	}
	_, err = OpenCountMin(a.Place("victim"), arCMS)
	return fmt.Errorf("the create returned (%v) instead of stopping", err)
}

// TestArena_KilledCreator kills a process in the middle of creating an
// entry: the arena still opens, the half-made entry is invisible, and the
// name can be created again.
func TestArena_KilledCreator(t *testing.T) {
	requireReexec(t)
	path := tempPath(t, "arena")
	a := mustOpenArena(t, path, 1<<20)
	first, err := OpenCountMin(a.Place("first"), arCMS)
	if err != nil {
		t.Fatal(err)
	}
	first.AddString("k")
	first.Close()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := startHelper(t, childContext(t), "", "killed creator", "arenakill", envs(envPath, path), w)
	w.Close()
	r.SetReadDeadline(time.Now().Add(childTimeout))
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatalf("the child never reached the create: %v", err)
	}
	h.cmd.Process.Kill()
	<-h.done

	if got := len(a.List()); got != 1 {
		t.Errorf("after the kill the directory lists %d entries, want 1", got)
	}
	b := mustOpenArena(t, path, 0)
	v, err := OpenCountMin(b.Place("victim"), arCMS)
	if err != nil {
		t.Fatalf("creating the name again: %v", err)
	}
	v.AddString("k")
	if got := v.EstimateString("k"); got != 1 {
		t.Errorf("the new victim: Estimate = %d, want 1", got)
	}
	v.Close()
	got := a.List()
	if len(got) != 2 || got[0].Name != "first" || got[1].Name != "victim" {
		t.Errorf("List() = %+v, want first and victim", got)
	}
	c, err := OpenCountMin(a.Place("first"), CountMinConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.EstimateString("k"); got != 1 {
		t.Errorf("first: Estimate = %d, want 1", got)
	}
	c.Close()
}
