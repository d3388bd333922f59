//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Lanes in processes of both builds: each claims a lane of its own, and
// the sum of the lanes is one grid's; a lane whose writer was killed is
// taken over, its counts kept.

const envLaneLog = "SKETCH_TEST_LANE_LOG" // where a lanes child says its lane, then logs its adds

var _ = role("countmin-lanes", childCountMinLanes)

// laneOp is add i of child's stream: its key, its weight, and whether it
// goes in a blind batch (of 32, from i on) or alone with its answer.
func laneOp(child, i int) (key []byte, n uint64, batch bool) {
	return fmt.Appendf(nil, "k%d", (i*31+child*7)%900), uint64(i%3 + 1), (i/32)%3 != 2
}

// childCountMinLanes attaches with the zero config, writes its lane and
// whether it owns it as the log's first line, then adds its stream of
// envOps adds; with envOps 0 it adds "hot" forever, logging each add's
// index before making it.
func childCountMinLanes() error {
	c, err := OpenCountMin(Path(os.Getenv(envPath)), CountMinConfig{})
	if err != nil {
		return err
	}
	defer c.Close()
	st := c.Stats()
	return laneChild(c, st.Lane, st.LaneOwned)
}

// laneAdder is what a lanes child adds through: a CountMin or a
// CountMinWindow.
type laneAdder interface {
	AddBatch(keys [][]byte, estimates []uint64) error
	AddN(key []byte, n uint64) (uint64, error)
}

// laneChild is a lanes child's work once its handle is open: the log's
// first line, then its adds.
func laneChild(c laneAdder, lane int, owned bool) error {
	log, err := os.OpenFile(os.Getenv(envLaneLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	if _, err := fmt.Fprintf(log, "lane %d %v\n", lane, owned); err != nil {
		return err
	}
	if err := childBarrier(); err != nil {
		return err
	}
	child, ops := envInt(envChild), envInt(envOps)
	if ops == 0 {
		for i := 0; ; i++ {
			if _, err := fmt.Fprintln(log, i); err != nil {
				return err
			}
			if err := c.AddBatch([][]byte{[]byte("hot")}, nil); err != nil {
				return err
			}
		}
	}
	for i := 0; i < ops; {
		if _, _, batch := laneOp(child, i); batch {
			keys := make([][]byte, 0, 32)
			for ; len(keys) < 32 && i < ops; i++ {
				k, _, _ := laneOp(child, i)
				keys = append(keys, k)
			}
			if err := c.AddBatch(keys, nil); err != nil {
				return err
			}
			continue
		}
		k, n, _ := laneOp(child, i)
		if _, err := c.AddN(k, n); err != nil {
			return err
		}
		i++
	}
	return nil
}

// feedLaneStream adds child's stream of ops adds to one, as the child does.
func feedLaneStream(one interface {
	Add(key []byte) (uint64, error)
	AddN(key []byte, n uint64) (uint64, error)
}, child, ops int) {
	for i := 0; i < ops; {
		if _, _, batch := laneOp(child, i); batch {
			for j := 0; j < 32 && i < ops; j, i = j+1, i+1 {
				k, _, _ := laneOp(child, i)
				one.Add(k)
			}
			continue
		}
		k, n, _ := laneOp(child, i)
		one.AddN(k, n)
		i++
	}
}

// laneOf reads a lanes child's first log line: its lane and whether it
// owned it.
func laneOf(t *testing.T, log string) (int, bool) {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var lane int
	var owned bool
	first, _, _ := strings.Cut(string(b), "\n")
	if _, err := fmt.Sscanf(first, "lane %d %v", &lane, &owned); err != nil {
		t.Fatalf("%s: first line %q: %v", log, first, err)
	}
	return lane, owned
}

// runLaneChildren runs a child of role for each of exes on the file at
// path, each adding its stream of ops adds (laneOp), feeds one the same
// streams, waits for every child, and returns their logs.
func runLaneChildren(t *testing.T, role string, exes []string, path string, ops int, one *CountMin) []string {
	t.Helper()
	dir := t.TempDir()
	var specs []childSpec
	var logs []string
	for i, exe := range exes {
		log := filepath.Join(dir, fmt.Sprint("log-", i))
		logs = append(logs, log)
		specs = append(specs, childSpec{exe: exe, name: fmt.Sprint("child ", i), role: role,
			env: envs(envPath, path, envChild, i, envOps, ops, envLaneLog, log)})
		feedLaneStream(one, i, ops)
	}
	for _, h := range startGroup(t, childContext(t), specs) {
		h.wait(t)
	}
	return logs
}

// wantOwnLanes fails the test unless every child of logs owned a lane of
// its own.
func wantOwnLanes(t *testing.T, logs []string) {
	t.Helper()
	lanes := map[int]bool{}
	for _, log := range logs {
		lane, owned := laneOf(t, log)
		if !owned || lanes[lane] {
			t.Errorf("%s: lane %d, owned %v: want a lane of its own", log, lane, owned)
		}
		lanes[lane] = true
	}
}

// TestCountMinLanes_ProcessesBothBuilds: four processes, of both builds
// when the other can be built, add to a sketch of four lanes at once,
// each in a lane of its own, by blind batches and single adds; every
// estimate is then exactly one grid's fed the four streams, and Check
// passes.
func TestCountMinLanes_ProcessesBothBuilds(t *testing.T) {
	requireReexec(t)
	exes := alternatingBuilds(t, 4)
	dir := t.TempDir()
	path := filepath.Join(dir, "lanes")
	cfg := lanesCfg
	cfg.Lanes = 4
	mustCountMin(t, Path(path), cfg).Close() // created, no lane held
	view := mustCountMin(t, Path(path), CountMinConfig{}, WithReadOnly())
	one := mustCountMin(t, Memory(), lanesCfg)
	const ops = 30000
	wantOwnLanes(t, runLaneChildren(t, "countmin-lanes", exes, path, ops, one))
	for i := range 900 {
		k := []byte("k" + strconv.Itoa(i))
		if got, want := view.Estimate(k), one.Estimate(k); got != want {
			t.Fatalf("Estimate(%q) = %d, one grid fed the four streams says %d", k, got, want)
		}
	}
	if got, want := view.Stats().Total, one.Stats().Total; got != want {
		t.Errorf("Total %d, one grid %d", got, want)
	}
	if err := view.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestConservative_ProcessesBothBuilds: four processes, of both builds
// when the other can be built, add to a sketch of three lanes with
// conservative update at once: three raise in lanes of their own, the
// fourth adds to the shared lane. Every estimate is then at least the
// key's count in the four streams and at most one grid of plain adds'
// estimate, Total is the add count, and Check passes.
func TestConservative_ProcessesBothBuilds(t *testing.T) {
	requireReexec(t)
	exes := alternatingBuilds(t, 4)
	dir := t.TempDir()
	path := filepath.Join(dir, "cu")
	cfg := cuCfg
	cfg.Lanes = 3
	mustCountMin(t, Path(path), cfg).Close()
	view := mustCountMin(t, Path(path), CountMinConfig{}, WithReadOnly())
	one := mustCountMin(t, Memory(), lanesCfg)
	const ops = 30000
	logs := runLaneChildren(t, "countmin-lanes", exes, path, ops, one)
	exact := map[string]uint64{}
	for i := range exes {
		for j := range ops {
			k, n, batch := laneOp(i, j)
			if batch {
				n = 1
			}
			exact[string(k)] += n
		}
	}
	owners := 0
	for _, log := range logs {
		lane, owned := laneOf(t, log)
		if owned {
			owners++
		} else if lane != 3 {
			t.Errorf("%s: lane %d not owned: want the shared lane 3", log, lane)
		}
	}
	if owners != 3 {
		t.Errorf("%d processes owned a lane, want 3", owners)
	}
	var over, overPlain uint64
	for k, n := range exact {
		got, plain := view.EstimateString(k), one.EstimateString(k)
		if got < n || got > plain {
			t.Fatalf("Estimate(%q) = %d: count %d, one grid of plain adds %d", k, got, n, plain)
		}
		over, overPlain = over+got-n, overPlain+plain-n
	}
	if over >= overPlain {
		t.Errorf("over-estimates sum to %d, plain adds' %d: the raises lowered nothing", over, overPlain)
	}
	if got, want := view.Stats().Total, one.Stats().Total; got != want {
		t.Errorf("Total %d, one grid %d", got, want)
	}
	if err := view.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCountMinLanes_TakeoverAfterKill: a writer SIGKILLed in its lane
// leaves it to the next handle that finds no free lane, with its counts:
// the key it added reads what its logged adds made it, whole, never
// less, and adds go on from there; with plain adds and with conservative
// update.
func TestCountMinLanes_TakeoverAfterKill(t *testing.T) {
	for _, conservative := range []bool{false, true} {
		t.Run(fmt.Sprint("conservative=", conservative), func(t *testing.T) {
			testLaneTakeoverAfterKill(t, conservative)
		})
	}
}

func testLaneTakeoverAfterKill(t *testing.T, conservative bool) {
	requireReexec(t)
	dir := t.TempDir()
	path, log := filepath.Join(dir, "lanes"), filepath.Join(dir, "log")
	cfg := lanesCfg
	cfg.Lanes = 2
	cfg.ConservativeUpdate = conservative
	mustCountMin(t, Path(path), cfg).Close()
	hs := startGroup(t, childContext(t), []childSpec{
		{name: "killed child", role: "countmin-lanes", env: envs(envPath, path, envChild, 0, envOps, 0, envLaneLog, log)},
	})
	waitLogLines(t, log, 3000)
	hs[0].cmd.Process.Kill()
	<-hs[0].done
	dead, owned := laneOf(t, log)
	if !owned {
		t.Fatal("the child did not own a lane")
	}
	b, _ := os.ReadFile(log)
	logged := uint64(strings.Count(string(b), "\n") - 1) // the adds logged, the last maybe not made
	free := mustCountMin(t, Path(path), CountMinConfig{})
	heir := mustCountMin(t, Path(path), CountMinConfig{})
	if fs, hs := free.Stats(), heir.Stats(); !fs.LaneOwned || fs.Lane == dead || !hs.LaneOwned || hs.Lane != dead {
		t.Fatalf("after the kill: the first handle has lane %d (owned %v), the second %d (owned %v); want the free lane, then the dead child's %d", fs.Lane, fs.LaneOwned, hs.Lane, hs.LaneOwned, dead)
	}
	got := heir.EstimateString("hot")
	if got+1 < logged || got > logged {
		t.Fatalf("the dead lane reads %d for hot, the child logged %d adds (the last maybe not made)", got, logged)
	}
	heir.AddString("hot")
	free.AddString("hot")
	if e := free.EstimateString("hot"); e != got+2 {
		t.Errorf("after an add in each lane hot reads %d, want %d", e, got+2)
	}
	if err := heir.Check(); err != nil && !errors.Is(err, ErrTornAdd) {
		t.Errorf("Check after the kill: %v, want nil or ErrTornAdd (the add the kill cut)", err)
	}
}
