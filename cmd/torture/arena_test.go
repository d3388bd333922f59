package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch"
)

func skipUnlessLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("arenas need Linux")
	}
}

// testSet is a set of one name of each kind, the first two with a
// conflicting spec.
func testSet() []arenaName {
	var set []arenaName
	for i, k := range specKinds {
		s := structSpec{Kind: k, Rows: 2, Width: 256, Capacity: 100, FPRate: 0.01, Keep: 2}.only()
		n := arenaName{Name: fmt.Sprintf("n%d", i), Want: s}
		if i < 2 {
			c := conflictOf(s, i == 0)
			n.Conflict = &c
		}
		set = append(set, n)
	}
	return set
}

func listOf(set []arenaName) []sketch.ArenaEntry {
	var list []sketch.ArenaEntry
	for _, n := range set {
		list = append(list, sketch.ArenaEntry{Name: n.Name, Kind: n.Want.Kind, Config: n.Want.config()})
	}
	return list
}

func TestJudgeList(t *testing.T) {
	set := testSet()
	conflict := *set[1].Conflict
	n := len(set) // a name of each kind of the arena phases
	tests := []struct {
		name  string
		list  func() []sketch.ArenaEntry
		tally func(*arenaTally)
		want  listFindings
	}{
		{"every name once", func() []sketch.ArenaEntry { return listOf(set) },
			func(t *arenaTally) { t.opened[0], t.opened[4] = 3, 1 }, listFindings{Listed: n}},
		{"a name twice", func() []sketch.ArenaEntry { return append(listOf(set), listOf(set)[2]) },
			func(*arenaTally) {}, listFindings{Listed: n + 1, Dups: 1}},
		{"a name nobody asks for", func() []sketch.ArenaEntry {
			return append(listOf(set), sketch.ArenaEntry{Name: "stray", Kind: sketch.KindBloom, Config: sketch.BloomConfig{Capacity: 1}})
		}, func(*arenaTally) {}, listFindings{Listed: n + 1, Unknown: 1}},
		{"the conflicting spec stored", func() []sketch.ArenaEntry {
			l := listOf(set)
			l[1] = sketch.ArenaEntry{Name: set[1].Name, Kind: conflict.Kind, Config: conflict.config()}
			return l
		}, func(*arenaTally) {}, listFindings{Listed: n, BadConfig: 1}},
		{"a returned name not listed", func() []sketch.ArenaEntry { return listOf(set)[1:] },
			func(t *arenaTally) { t.opened[0] = 1 }, listFindings{Listed: n - 1, Lost: 1}},
		{"a name asked for but never returned, not listed", func() []sketch.ArenaEntry { return listOf(set)[1:] },
			func(*arenaTally) {}, listFindings{Listed: n - 1}},
		{"a refused name listed", func() []sketch.ArenaEntry { return listOf(set) },
			func(t *arenaTally) { t.full[3] = 2 }, listFindings{Listed: n, FullListed: 1}},
		{"a refused name not listed", func() []sketch.ArenaEntry { return listOf(set)[:3] },
			func(t *arenaTally) { t.full[3] = 2 }, listFindings{Listed: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tally := newArenaTally(len(set))
			tt.tally(tally)
			got, _ := judgeList(set, tt.list(), tally)
			got.First = ""
			if got != tt.want {
				t.Errorf("judgeList = %+v, want %+v", got, tt.want)
			}
			if (got.violations() == 0) != (tt.want == listFindings{Listed: tt.want.Listed}) {
				t.Errorf("violations() = %d for %+v", got.violations(), got)
			}
		})
	}
}

func TestLowAnswer(t *testing.T) {
	tests := []struct {
		kind             sketch.Kind
		recorded, answer uint64
		want             bool
	}{
		{sketch.KindCountMin, 5, 5, false},
		{sketch.KindCountMin, 5, 9, false},
		{sketch.KindCountMin, 5, 4, true},
		{sketch.KindCountMinWindow, 1, 0, true},
		{sketch.KindCountMinWindow, 0, 0, false},
		{sketch.KindBloom, 1, 0, true},
		{sketch.KindBloom, 0, 0, false},
		{sketch.KindBloom, 0, 1, false},
		{sketch.KindCountingBloom, 1, 1, false},
		{sketch.KindBloomWindow, 1, 0, true},
	}
	for _, tt := range tests {
		if got := lowAnswer(tt.kind, tt.recorded, tt.answer); got != tt.want {
			t.Errorf("lowAnswer(%s, recorded %d, answer %d) = %v, want %v", tt.kind, tt.recorded, tt.answer, got, tt.want)
		}
	}
	for _, k := range specKinds {
		if !lowAnswer(k, controlClaim(k), 0) {
			t.Errorf("a %s control claim is not caught by a zero answer", k)
		}
	}
}

func TestClassifyOpen(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("sketch: open x: %w", err) }
	tests := []struct {
		err  error
		want string
	}{
		{nil, outOK},
		{wrap(sketch.ErrInterruptedCreate), outInterrupted},
		{wrap(sketch.ErrTimeout), outTimeout},
		{wrap(sketch.ErrChecksum), outCorrupt},
		{wrap(sketch.ErrCorrupt), outCorrupt},
		{wrap(sketch.ErrIncompatible), outOther},
	}
	for _, tt := range tests {
		if got := classifyOpen(tt.err); got != tt.want {
			t.Errorf("classifyOpen(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestOpenAllowed(t *testing.T) {
	tests := []struct {
		route, state string
		afterKill    bool
		outcome      string
		want         bool
	}{
		{routePath, leftNothing, true, outOK, true},
		{routePath, leftComplete, true, outOK, true},
		{routePath, leftNothing, false, outInterrupted, false},
		{routePath, leftNothing, true, outTimeout, false},
		{routeAdopt, leftEmpty, true, outOK, true},
		{routeAdopt, leftAllZero, true, outOK, true},
		{routeAdopt, leftAllZero, true, outInterrupted, false},
		{routeAdopt, leftPartial, true, outInterrupted, true},
		{routeAdopt, leftPartial, true, outOK, false},
		{routeAdopt, leftEmpty, false, outInterrupted, true},
		{routeAdopt, leftEmpty, false, outOK, true},
		{routeAdopt, leftPartial, true, outCorrupt, false},
		{routeAdopt, leftEmpty, false, outTimeout, false},
	}
	for _, tt := range tests {
		if got := openAllowed(tt.route, tt.state, tt.afterKill, tt.outcome); got != tt.want {
			t.Errorf("openAllowed(%s, left %s, after kill %v, %s) = %v, want %v", tt.route, tt.state, tt.afterKill, tt.outcome, got, tt.want)
		}
	}
	for _, state := range []string{leftNothing, leftComplete} {
		if !leftoverAllowed(routePath, state) {
			t.Errorf("a new path may be left %s", state)
		}
	}
	for _, state := range []string{leftEmpty, leftAllZero, leftPartial, "damaged: x"} {
		if leftoverAllowed(routePath, state) {
			t.Errorf("a new path may not be left %s: a file at its path is always complete", state)
		}
	}
	if leftoverAllowed(routeAdopt, leftNothing) || leftoverAllowed(routeAdopt, "damaged: x") {
		t.Error("a prepared file cannot vanish or be damaged by its adopter's death")
	}
}

// The states a killed adopter can leave, made by hand, are classified as
// the rounds classify them, and the library's next open gives exactly the
// outcome openAllowed demands of an opener that comes after the kill.
func TestOpenAllowed_AgreesWithLibrary(t *testing.T) {
	skipUnlessLinux(t)
	const size = 1 << 20
	dir := t.TempDir()
	complete := filepath.Join(dir, "complete")
	a, err := sketch.OpenArena(sketch.Path(complete), sketch.ArenaConfig{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	whole, err := os.ReadFile(complete)
	if err != nil {
		t.Fatal(err)
	}
	partial := append([]byte(nil), whole...)
	clear(partial[:8]) // the magic, which a create stores last
	states := []struct {
		name  string
		bytes []byte
		want  string
	}{
		{"empty", nil, leftEmpty},
		{"all zero", make([]byte, len(whole)), leftAllZero},
		{"partial", partial, leftPartial},
		{"complete", whole, leftComplete},
	}
	for _, s := range states {
		t.Run(s.name, func(t *testing.T) {
			path := filepath.Join(dir, s.name+".arena")
			if err := os.WriteFile(path, s.bytes, 0o600); err != nil {
				t.Fatal(err)
			}
			state, err := leftover(path)
			if err != nil || state != s.want {
				t.Fatalf("leftover = %q, %v; want %q", state, err, s.want)
			}
			a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: size}, sketch.WithWaitTimeout(time.Second))
			if err == nil {
				a.Close()
			}
			if out := classifyOpen(err); !openAllowed(routeAdopt, state, true, out) {
				t.Errorf("OpenArena after a creator left %s: %s (%v), which the round would call a violation", state, out, err)
			}
		})
	}
	if state, err := leftover(filepath.Join(dir, "none")); err != nil || state != leftNothing {
		t.Errorf("leftover of no file = %q, %v", state, err)
	}
}

// A spec read back from an arena's listing is the spec it was created
// with, for every kind, and a conflicting spec is refused: the checkers
// compare listings with specs, and the workers count on the refusal.
func TestSpecOfEntry_RoundTrip(t *testing.T) {
	skipUnlessLinux(t)
	set := testSet()
	for i, l := range largeSpecs {
		set = append(set, arenaName{Name: fmt.Sprintf("large%d", i), Want: l})
	}
	size, err := arenaSizeFor(set)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sketch.OpenArena(sketch.Memory(), sketch.ArenaConfig{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, n := range set {
		s, err := n.Want.open(a, n.Name)
		if err != nil {
			t.Fatalf("open %s: %v", n.Name, err)
		}
		s.close()
		for _, other := range []bool{false, true} {
			c := conflictOf(n.Want, other)
			if _, err := c.open(a, n.Name); !errors.Is(err, sketch.ErrIncompatible) {
				t.Errorf("%s (%+v) opened with the conflicting %+v: %v, want ErrIncompatible", n.Name, n.Want, c, err)
			}
		}
	}
	for i, e := range a.List() {
		s, ok := specOfEntry(e)
		if !ok || s != set[i].Want {
			t.Errorf("specOfEntry(%+v) = %+v, %v; want %+v", e, s, ok, set[i].Want)
		}
	}
}

// The checkers count per kind in arrays of arenaKindCount: a row of
// structKinds with an arena part needs a slot of its own.
func TestSpecKinds_FitArenaCheckResult(t *testing.T) {
	if len(specKinds) != arenaKindCount {
		t.Errorf("len(specKinds) = %d, want arenaKindCount = %d", len(specKinds), arenaKindCount)
	}
}

// Every broken promise of the arena part makes a violation in its rows,
// and so does a checker blind to the control or a fill that never filled.
func TestArenaRows_Violations(t *testing.T) {
	plan := &arenaPlan{Sets: [][]arenaName{testSet()}, Arenas: []arenaFile{{Size: 1 << 20}}}
	var caught perArenaKind
	for k := range caught {
		caught[k] = 4
	}
	good := arenaCheckResult{Backend: "cgo", Arenas: 1, Caught: caught, Claimed: caught}
	okRace := phaseResult{cfg: phaseConfig{workers: 2, gap: time.Millisecond}, plan: plan, opened: 10, checkers: []arenaCheckResult{good, good}}
	okFill := okRace
	okFill.full = 3
	okIntr := interruptResult{cfg: interruptConfig{size: 1 << 20}, outcomes: map[string]int{outOK: 2}}

	tests := []struct {
		name string
		edit func(race, fill *phaseResult, intr *interruptResult)
		want int
	}{
		{"all good", func(*phaseResult, *phaseResult, *interruptResult) {}, 0},
		{"a worker failed", func(r, _ *phaseResult, _ *interruptResult) { r.failures = 1 }, 1},
		{"a name lost", func(r, _ *phaseResult, _ *interruptResult) {
			r.checkers = []arenaCheckResult{good, good}
			r.checkers[0].List.Lost = 1
		}, 1},
		{"an open waited past slowOpen", func(r, _ *phaseResult, _ *interruptResult) { r.slowest = 2 * slowOpen }, 1},
		{"no open returned", func(r, _ *phaseResult, _ *interruptResult) { r.opened = 0 }, 1},
		{"a conflicting open returned a structure", func(r, _ *phaseResult, _ *interruptResult) { r.conflictOpen = 1 }, 1},
		{"the racing arenas filled", func(r, _ *phaseResult, _ *interruptResult) { r.full = 1 }, 1},
		{"no ErrArenaFull in the fill", func(_, f *phaseResult, _ *interruptResult) { f.full = 0 }, 1},
		{"a refused name admitted later", func(_, f *phaseResult, _ *interruptResult) {
			f.checkers = []arenaCheckResult{good, good}
			f.checkers[1].FullNowFits = 1
		}, 1},
		{"an interrupted round broke a promise", func(_, _ *phaseResult, i *interruptResult) { i.violation("x") }, 1},
		{"a low answer", func(r, _ *phaseResult, _ *interruptResult) {
			r.checkers = []arenaCheckResult{good, good}
			r.checkers[0].Low[2] = 1
		}, 1},
		{"a checker blind to the control", func(r, f *phaseResult, _ *interruptResult) {
			r.checkers = []arenaCheckResult{good, good}
			r.checkers[1].Caught[3] = 0
			f.checkers = []arenaCheckResult{good, good}
			f.checkers[1].Caught[3] = 0
		}, 1},
		{"Check other than a torn add", func(r, _ *phaseResult, _ *interruptResult) {
			r.checkers = []arenaCheckResult{good, good}
			r.checkers[0].CheckOther = 1
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			race, fill, intr := okRace, okFill, okIntr
			fill.checkers = []arenaCheckResult{good, good}
			tt.edit(&race, &fill, &intr)
			var out strings.Builder
			if got := printSummary(&out, arenaRows(race, fill, intr)); got != tt.want {
				t.Errorf("violations = %d, want %d; table:\n%s", got, tt.want, out.String())
			}
		})
	}
}
