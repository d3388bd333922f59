package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/fleet/internal/redistest"
)

// Four hosts whose adds come from processes of both builds, synced period
// after period.

// procStructures are a host's structures in its arena, or the union's.
type procStructures struct {
	rate     *sketch.CountMinWindow
	visitors *sketch.DistinctWindow
	ids      *sketch.BloomWindow
	bans     *sketch.CountingBloom
}

var (
	procWindow = sketch.Window{Period: forever, Keep: 3}
	procCM     = sketch.CountMinConfig{Rows: 4, Width: 1 << 12, Candidates: 16}
	procBloom  = sketch.BloomConfig{Capacity: 20_000, FPRate: 0.001}
	procBans   = sketch.CountingBloomConfig{Capacity: 10_000}
	procSeed   = uint64(0x9057)
)

// openProcStructures opens (creating, with fleet parts when fleet) the
// structures at places of one seed.
func openProcStructures(place func(string) sketch.Place, fleet bool) (*procStructures, error) {
	cm, bans, bloom := procCM, procBans, procBloom
	cm.Fleet, bans.Fleet = fleet, fleet
	cm.Seed, bans.Seed, bloom.Seed = procSeed, procSeed, procSeed // the hosts' arenas' seed
	var s procStructures
	var err error
	if s.rate, err = sketch.OpenCountMinWindow(place("rate"), sketch.CountMinWindowConfig{Window: procWindow, CountMin: cm}); err != nil {
		return nil, err
	}
	if s.visitors, err = sketch.OpenDistinctWindow(place("visitors"), sketch.DistinctWindowConfig{Window: procWindow, Distinct: sketch.DistinctConfig{Precision: 14, Seed: procSeed}}); err != nil {
		return nil, err
	}
	if s.ids, err = sketch.OpenBloomWindow(place("ids"), sketch.BloomWindowConfig{Window: procWindow, Bloom: bloom}); err != nil {
		return nil, err
	}
	s.bans, err = sketch.OpenCountingBloom(place("bans"), bans)
	return &s, err
}

func (s *procStructures) rotate() {
	s.rate.Rotate()
	s.visitors.Rotate()
	s.ids.Rotate()
}

// procKey is key i of host h's adds in period p.
func procKey(h, p, i int) string { return "c" + strconv.Itoa((h*211+p*97+i)%1500) }

// procBan is the ban host h makes in period p; in each period after the
// first, host h lifts the ban host h+1 made in the period before.
func procBan(h, p int) string { return fmt.Sprintf("ban-%d-%d", h%hostsInProcs, p) }

const hostsInProcs = 4

// addPeriod makes host h's adds of period p to s.
func (s *procStructures) addPeriod(h, p int) error {
	for i := range 400 {
		k := []byte(procKey(h, p, i))
		if _, err := s.rate.Add(k); err != nil {
			return err
		}
		if err := s.visitors.Add(k); err != nil {
			return err
		}
		if _, err := s.ids.Add(k); err != nil {
			return err
		}
	}
	if _, err := s.rate.AddN([]byte(fmt.Sprint("loud-", h)), uint64(100+40*h)); err != nil {
		return err
	}
	if _, err := s.bans.AddString(procBan(h, p)); err != nil {
		return err
	}
	if p > 0 {
		removed, err := s.bans.RemoveString(procBan(h+1, p-1))
		if err == nil && !removed {
			err = fmt.Errorf("host %d could not lift %s, which host %d made a period before", h, procBan(h+1, p-1), (h+1)%hostsInProcs)
		}
		return err
	}
	return nil
}

// runHostAdds is a child: host FLEET_TEST_HOST's adds of period
// FLEET_TEST_PERIOD to the arena at FLEET_TEST_FILE. It prints its build.
func runHostAdds() int {
	h, _ := strconv.Atoi(os.Getenv("FLEET_TEST_HOST"))
	p, _ := strconv.Atoi(os.Getenv("FLEET_TEST_PERIOD"))
	ar, err := sketch.OpenArena(sketch.Path(os.Getenv("FLEET_TEST_FILE")), sketch.ArenaConfig{})
	if err == nil {
		defer ar.Close()
		var s *procStructures
		if s, err = openProcStructures(ar.Place, false); err == nil {
			err = s.addPeriod(h, p)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Print(sketch.Backend)
	return 0
}

// otherBuild builds this test binary in the other build (cgo or pure Go),
// or returns "" where it cannot (no go command, no C compiler, -short).
func otherBuild(t *testing.T) string {
	t.Helper()
	cgo := "1"
	if sketch.Backend == "cgo" {
		cgo = "0"
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	if _, err := os.Stat(goTool); err != nil || testing.Short() {
		return ""
	}
	if _, err := exec.LookPath("gcc"); cgo == "1" && err != nil {
		return ""
	}
	exe := filepath.Join(t.TempDir(), "fleet.test")
	cmd := exec.Command(goTool, "test", "-c", "-o", exe, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the other build: %v\n%s", err, out)
	}
	return exe
}

// TestSync_FourHostsInProcesses: four hosts, each an arena whose adds
// come from a child process of its own (of both builds, where the other
// can be built), synced through a real Redis, five periods of windows
// turned alike on every host. After each period's adds and two rounds of
// every agent, every host answers exactly as one structure of each kind
// fed every host's adds: Count-Min window estimates, distinct window
// counts, Bloom window answers, and the bans (each host lifts, in each
// period, a ban another host made the period before); every host's Top
// lists the loudest host's key at the union's estimate.
func TestSync_FourHostsInProcesses(t *testing.T) {
	rs := redistest.Start(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exes := []string{self, self}
	if other := otherBuild(t); other != "" {
		exes[1] = other
	}
	union, err := openProcStructures(func(string) sketch.Place { return sketch.Memory() }, false)
	if err != nil {
		t.Fatal(err)
	}
	var hostsS []*procStructures
	var agents []*Agent
	var paths []string
	for h := range hostsInProcs {
		path := filepath.Join(t.TempDir(), "arena")
		ar := mustOpen(t, sketch.OpenArena, sketch.Path(path), sketch.ArenaConfig{Size: 1 << 23, Seed: procSeed})
		s, err := openProcStructures(ar.Place, true)
		if err != nil {
			t.Fatal(err)
		}
		a := newAgent(t, rs, fmt.Sprint("host", h))
		if err := a.AddArena(ar); err != nil {
			t.Fatal(err)
		}
		hostsS, agents, paths = append(hostsS, s), append(agents, a), append(paths, path)
	}
	builds := map[string]bool{}
	for p := range 5 {
		if p > 0 {
			union.rotate()
			for _, s := range hostsS {
				s.rotate()
			}
		}
		for h := range hostsInProcs {
			cmd := exec.Command(exes[h%2], "-test.run=^$")
			cmd.Env = append(os.Environ(), "FLEET_TEST_ROLE=host-adds", "FLEET_TEST_FILE="+paths[h],
				"FLEET_TEST_HOST="+strconv.Itoa(h), "FLEET_TEST_PERIOD="+strconv.Itoa(p))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("period %d: host %d's adds: %v", p, h, err)
			}
			builds[string(out)] = true
			if err := union.addPeriod(h, p); err != nil {
				t.Fatal(err)
			}
		}
		mustSync(t, agents...)
		mustSync(t, agents...)
		for h, s := range hostsS {
			sameAsUnion(t, fmt.Sprintf("period %d: host %d", p, h), s, union)
			loudest := fmt.Sprint("loud-", hostsInProcs-1)
			top, err := agents[h].Top(context.Background(), "rate", 1)
			if err != nil || len(top) != 1 || top[0].Key != loudest || top[0].Estimate != union.rate.EstimateString(loudest) {
				t.Fatalf("period %d: host %d: Top(\"rate\", 1) = %+v, %v; want %s at %d", p, h, top, err, loudest, union.rate.EstimateString(loudest))
			}
		}
	}
	if len(builds) != 2 && exes[1] != self {
		t.Errorf("the children ran as %v, want both builds", slices.Collect(func(yield func(string) bool) {
			for b := range builds {
				yield(b)
			}
		}))
	}
	t.Logf("children's builds: %v", builds)
}

// sameAsUnion checks every answer of a host against the union's.
func sameAsUnion(t *testing.T, what string, s, u *procStructures) {
	t.Helper()
	if got, want := s.visitors.Count(), u.visitors.Count(); got != want {
		t.Fatalf("%s: distinct window counts %d, the union %d", what, got, want)
	}
	for i := range 1500 {
		k := []byte("c" + strconv.Itoa(i))
		if got, want := s.rate.Estimate(k), u.rate.Estimate(k); got != want {
			t.Fatalf("%s: Count-Min window estimates %q at %d, the union at %d", what, k, got, want)
		}
		if got, want := s.ids.Contains(k), u.ids.Contains(k); got != want {
			t.Fatalf("%s: the Bloom window says %v for %q, the union %v", what, got, k, want)
		}
	}
	for h := range hostsInProcs {
		for p := range 5 {
			b := procBan(h, p)
			if got, want := s.bans.EstimateString(b), u.bans.EstimateString(b); got != want {
				t.Fatalf("%s: %s estimated %d, the union %d", what, b, got, want)
			}
		}
	}
}
