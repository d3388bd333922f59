//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
	"github.com/zeebo/xxh3"
)

// One table of every kind for the snapshot tests: how to open each at a
// place, add to it, ask it, and take its snapshot (a window's is the plain
// kind it is made of).

// snapStructure is a structure of any kind, or the snapshot of one.
type snapStructure interface {
	io.Closer
	add(key []byte) error
	// answer is what the structure says of key: an estimate, or 1 for
	// present and 0 for absent.
	answer(key []byte) uint64
	snapshot(at Place) (snapStructure, error)
	handle() *Handle
}

// snapWindowStructure is a window of the table: its snapshot says which
// periods it covers.
type snapWindowStructure interface {
	snapStructure
	Rotate() error
	snapshotCovered(at Place) (snapStructure, Periods, error)
}

type snapKind struct {
	name string
	// open opens the kind at a place: with its test config, or with the
	// zero config, which attaches to any.
	open func(at Place, attach bool, opts ...Option) (snapStructure, error)
	// openSeeded opens one with the test config and the given seed (nil
	// for a window: the tests open only the plain kinds so).
	openSeeded func(at Place, seed uint64) (snapStructure, error)
	// adapt wraps s for the table when s is of the kind.
	adapt func(s any) (snapStructure, bool)
	// counted is what the structure says it counted: a Count-Min sketch's
	// Total, a Bloom filter's Adds (nil: it tells neither).
	counted func(s snapStructure) uint64
	// counts says whether answers are counts (Count-Min) rather than
	// presence.
	counts bool
	// cells is where the structure's cells start in its region, past what
	// its own counts keep (the stripes, a distinct count's head).
	cells uint64
}

var (
	snapCMS   = CountMinConfig{Rows: 4, Width: 1 << 16}
	snapBloom = BloomConfig{Capacity: 100_000, FPRate: 0.01}
	snapCBF   = CountingBloomConfig{Capacity: 100_000, FPRate: 0.01}
	snapHLL   = DistinctConfig{Precision: 14}
	snapWin   = Window{Keep: 3} // turned by Rotate only
)

// snapPick returns attach ? the zero config : cfg.
func snapPick[C any](attach bool, cfg C) C {
	if attach {
		var zero C
		return zero
	}
	return cfg
}

// snapKindOf makes a row from the kind's constructor, its test config,
// how a seed goes in the config (nil: it is not opened seeded), what it
// counted (nil: nothing to tell) and its adapter.
func snapKindOf[S any, C any](name string, counts bool, cells uint64,
	open func(Place, C, ...Option) (S, error), cfg C, withSeed func(C, uint64) C,
	counted func(snapStructure) uint64, wrap func(S) snapStructure) snapKind {
	wrapped := func(s S, err error) (snapStructure, error) {
		if err != nil {
			return nil, err
		}
		return wrap(s), nil
	}
	k := snapKind{name: name, counts: counts, cells: cells, counted: counted,
		open: func(at Place, attach bool, opts ...Option) (snapStructure, error) {
			return wrapped(open(at, snapPick(attach, cfg), opts...))
		},
		adapt: func(s any) (snapStructure, bool) {
			if s, ok := s.(S); ok {
				return wrap(s), true
			}
			return nil, false
		},
	}
	if withSeed != nil {
		k.openSeeded = func(at Place, seed uint64) (snapStructure, error) {
			return wrapped(open(at, withSeed(cfg, seed)))
		}
	}
	return k
}

var snapKinds = []snapKind{
	snapKindOf("countmin", true, cells.StripesBytes, OpenCountMin, snapCMS,
		func(c CountMinConfig, seed uint64) CountMinConfig { c.Seed = seed; return c },
		func(s snapStructure) uint64 { return s.(snapCM).Total() },
		func(c *CountMin) snapStructure { return snapCM{c} }),
	snapKindOf("bloom", false, cells.StripesBytes, OpenBloom, snapBloom,
		func(c BloomConfig, seed uint64) BloomConfig { c.Seed = seed; return c },
		func(s snapStructure) uint64 { return s.(snapBF).Stats().Adds },
		func(b *Bloom) snapStructure { return snapBF{b} }),
	snapKindOf("countingbloom", false, cells.StripesBytes, OpenCountingBloom, snapCBF,
		func(c CountingBloomConfig, seed uint64) CountingBloomConfig { c.Seed = seed; return c },
		nil, func(b *CountingBloom) snapStructure { return snapCBFs{b} }),
	snapKindOf("countminwindow", true, 0, OpenCountMinWindow, CountMinWindowConfig{Window: snapWin, CountMin: snapCMS},
		nil, nil, func(w *CountMinWindow) snapStructure { return snapCMW{w} }),
	snapKindOf("bloomwindow", false, 0, OpenBloomWindow, BloomWindowConfig{Window: snapWin, Bloom: snapBloom},
		nil, nil, func(w *BloomWindow) snapStructure { return snapBW{w} }),
	snapKindOf("distinct", false, cells.DistinctHeadBytes, OpenDistinct, snapHLL,
		func(c DistinctConfig, seed uint64) DistinctConfig { c.Seed = seed; return c },
		nil, func(d *Distinct) snapStructure { return snapD{d} }),
	snapKindOf("distinctwindow", false, 0, OpenDistinctWindow, DistinctWindowConfig{Window: snapWin, Distinct: snapHLL},
		nil, nil, func(w *DistinctWindow) snapStructure { return snapDW{w} }),
	snapKindOf("gcra", false, cells.StripesBytes, OpenGCRA, snapGCRACfg,
		func(c GCRAConfig, seed uint64) GCRAConfig { c.Seed = seed; return c },
		nil, func(g *GCRA) snapStructure { return snapG{g} }),
	snapKindOf("counters", true, 0, OpenCounters, snapCounters,
		func(c CountersConfig, seed uint64) CountersConfig { c.Seed = seed; return c },
		nil, func(c *Counters) snapStructure { return snapC{c} }),
	// Room for every key the process test's children add (and "hot").
	snapKindOf("set", false, cells.SetHeadBytes, OpenSet, SetConfig{Capacity: 2*snapMaxAdds + 1, KeyBytes: 16},
		func(c SetConfig, seed uint64) SetConfig { c.Seed = seed; return c },
		nil, func(s *Set) snapStructure { return snapSet{s} }),
	// Half the set's room (the arena tests' 64 MiB hold no more): the
	// process test stops its children once both added 15,000 keys, so
	// together they add at most snapMaxAdds and that.
	snapKindOf("setwindow", false, 0, OpenSetWindow, SetWindowConfig{Window: snapWin, Set: SetConfig{Capacity: 1 << 19, KeyBytes: 16}},
		nil, nil, func(w *SetWindow) snapStructure { return snapSW{w} }),
}

// snapGCRACfg is a rate limiter that lets a test's keys through: a
// million a second, each with a burst of a thousand.
var snapGCRACfg = GCRAConfig{Rate: Rate{Count: 1e6, Per: time.Second}, Burst: 1000, Rows: 3, Width: 256}

// TestSnapshot_EveryKind: the snapshot table has a row for every kind
// (testKinds).
func TestSnapshot_EveryKind(t *testing.T) {
	for _, k := range testKinds {
		if snapKindNamed(string(k.kind)) == nil {
			t.Errorf("snapKinds has no %s row", k.kind)
		}
	}
}

func snapKindNamed(name string) *snapKind {
	for i := range snapKinds {
		if snapKinds[i].name == name {
			return &snapKinds[i]
		}
	}
	return nil
}

// adapt wraps a constructor's structure for the table, through the row
// of its kind.
func adapt[S any](s S, err error) (snapStructure, error) {
	if err != nil {
		return nil, err
	}
	for _, k := range snapKinds {
		if w, ok := k.adapt(s); ok {
			return w, nil
		}
	}
	return nil, fmt.Errorf("no row of snapKinds holds a %T", s)
}

func present(ok bool) uint64 {
	if ok {
		return 1
	}
	return 0
}

type snapCM struct{ *CountMin }

func (s snapCM) add(k []byte) error                       { _, err := s.Add(k); return err }
func (s snapCM) answer(k []byte) uint64                   { return s.Estimate(k) }
func (s snapCM) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapCM) handle() *Handle                          { return &s.Handle }

type snapBF struct{ *Bloom }

func (s snapBF) add(k []byte) error                       { _, err := s.Add(k); return err }
func (s snapBF) answer(k []byte) uint64                   { return present(s.Contains(k)) }
func (s snapBF) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapBF) handle() *Handle                          { return &s.Handle }

type snapCBFs struct{ *CountingBloom }

func (s snapCBFs) add(k []byte) error                       { _, err := s.Add(k); return err }
func (s snapCBFs) answer(k []byte) uint64                   { return present(s.Contains(k)) }
func (s snapCBFs) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapCBFs) handle() *Handle                          { return &s.Handle }

type snapCMW struct{ *CountMinWindow }

func (s snapCMW) add(k []byte) error                       { _, err := s.Add(k); return err }
func (s snapCMW) answer(k []byte) uint64                   { return s.Estimate(k) }
func (s snapCMW) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapCMW) handle() *Handle                          { return &s.Handle }
func (s snapCMW) snapshotCovered(at Place) (snapStructure, Periods, error) {
	c, p, err := s.SnapshotCovered(at)
	w, err := adapt(c, err)
	return w, p, err
}

type snapBW struct{ *BloomWindow }

func (s snapBW) add(k []byte) error                       { _, err := s.Add(k); return err }
func (s snapBW) answer(k []byte) uint64                   { return present(s.Contains(k)) }
func (s snapBW) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapBW) handle() *Handle                          { return &s.Handle }
func (s snapBW) snapshotCovered(at Place) (snapStructure, Periods, error) {
	b, p, err := s.SnapshotCovered(at)
	w, err := adapt(b, err)
	return w, p, err
}

// A distinct count answers for no key: what the table's answer tells of
// one is its register, 1 when it holds the key's rank or more (as the
// window suite's distinct window tells it), so that two counts whose
// registers agree answer alike for every key.
type snapD struct{ *Distinct }

func (s snapD) add(k []byte) error { return s.Add(k) }
func (s snapD) answer(k []byte) uint64 {
	reg, rank := s.l.Place(s.l.Hash(k))
	return present(s.l.Register(reg) >= rank)
}
func (s snapD) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapD) handle() *Handle                          { return &s.Handle }

// A rate limiter's answer for a key is its TAT.
type snapG struct{ *GCRA }

func (s snapG) add(k []byte) error {
	_, err := s.Allow(k, 1)
	return err
}
func (s snapG) answer(k []byte) uint64                   { return s.l.TAT(cells.Hash(k, s.l.Seed)) }
func (s snapG) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapG) handle() *Handle                          { return &s.Handle }

// snapCounters has 16 counters; a key adds to the one its hash picks, and
// its answer is that counter's value: never below the key's adds.
var snapCounters = CountersConfig{Names: []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7",
	"c8", "c9", "c10", "c11", "c12", "c13", "c14", "c15"}}

type snapC struct{ *Counters }

func (s snapC) counter(k []byte) string { return fmt.Sprint("c", xxh3.Hash(k)%16) }
func (s snapC) add(k []byte) error      { return s.Add(s.counter(k), 1) }
func (s snapC) answer(k []byte) uint64 {
	v, _ := s.Value(s.counter(k))
	return v
}
func (s snapC) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapC) handle() *Handle                          { return &s.Handle }

type snapSet struct{ *Set }

func (s snapSet) add(k []byte) error                       { _, err := s.Add(k); return err }
func (s snapSet) answer(k []byte) uint64                   { return present(s.Contains(k)) }
func (s snapSet) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapSet) handle() *Handle                          { return &s.Handle }

type snapSW struct{ *SetWindow }

func (s snapSW) add(k []byte) error                       { _, err := s.Add(k); return err }
func (s snapSW) answer(k []byte) uint64                   { return present(s.Contains(k)) }
func (s snapSW) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapSW) handle() *Handle                          { return &s.Handle }

type snapDW struct{ *DistinctWindow }

func (s snapDW) add(k []byte) error                       { return s.Add(k) }
func (s snapDW) answer(k []byte) uint64                   { return distinctWindow{s.DistinctWindow}.count(k) }
func (s snapDW) snapshot(at Place) (snapStructure, error) { return adapt(s.Snapshot(at)) }
func (s snapDW) handle() *Handle                          { return &s.Handle }
func (s snapDW) snapshotCovered(at Place) (snapStructure, Periods, error) {
	d, p, err := s.SnapshotCovered(at)
	w, err := adapt(d, err)
	return w, p, err
}

// snapPlaces are the places a source lives at in the tests: each returns
// a new place, and the arena it is in (nil when none).
var snapPlaces = []struct {
	name string
	at   func(t *testing.T) Place
}{
	{"path", func(t *testing.T) Place { return Path(tempPath(t, "src")) }},
	{"memfd", func(t *testing.T) Place { return Memfd("src") }},
	{"memory", func(t *testing.T) Place { return Memory() }},
	{"arena", func(t *testing.T) Place { return mustOpenArena(t, tempPath(t, "arena"), 64<<20).Place("src") }},
}

// snapDests are the places a snapshot is made at.
var snapDests = []struct {
	name string
	at   func(t *testing.T) Place
}{
	{"path", func(t *testing.T) Place { return Path(tempPath(t, "copy")) }},
	{"memfd", func(t *testing.T) Place { return Memfd("copy") }},
	{"memory", func(t *testing.T) Place { return Memory() }},
}

// snapPlain names the kind a kind's snapshot is: a window's is the plain
// structure it is made of.
func snapPlain(kind string) string {
	if snapOwnKind[kind] {
		return kind
	}
	return strings.TrimSuffix(kind, "window")
}

// snapOwnKind are the windows whose snapshot is a frozen window of their
// own kind: an exact set window's keeps each key's period, which no
// plain set holds (and a hash table's layout follows the order of its
// adds, so no plain structure fed the periods would match it byte for
// byte).
var snapOwnKind = map[string]bool{"setwindow": true}

// snapWindows names the window kinds of the table.
func snapWindows() []string {
	var names []string
	for _, k := range snapKinds {
		if snapPlain(k.name) != k.name {
			names = append(names, k.name)
		}
	}
	return names
}

// mustSnapOpen opens kind k at a place for the test.
func mustSnapOpen(t *testing.T, k *snapKind, at Place, attach bool) snapStructure {
	t.Helper()
	s, err := k.open(at, attach)
	if err != nil {
		t.Fatalf("open %s: %v", k.name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// snapAddKeys adds key-i i%4+1 times, for i below n.
func snapAddKeys(t *testing.T, s snapStructure, n int) {
	t.Helper()
	for i := range n {
		for range i%4 + 1 {
			if err := s.add(bloomKey("key", i)); err != nil {
				t.Fatalf("add: %v", err)
			}
		}
	}
}

// TestSnapshot_EveryKindEveryPlace copies each kind, from each place a
// structure lives at, to each place a snapshot is made at, and compares
// the copy with its source: the same answer for every key (added or not),
// the same seed, frozen and read-only, refusing writes, and sound.
func TestSnapshot_EveryKindEveryPlace(t *testing.T) {
	const n = 2000
	for i := range snapKinds {
		k := &snapKinds[i]
		for _, sp := range snapPlaces {
			for _, dp := range snapDests {
				t.Run(k.name+"/"+sp.name+"/to_"+dp.name, func(t *testing.T) {
					src := mustSnapOpen(t, k, sp.at(t), false)
					snapAddKeys(t, src, n)
					cp, err := src.snapshot(dp.at(t))
					if err != nil {
						t.Fatalf("Snapshot: %v", err)
					}
					defer cp.Close()
					for i := range 2 * n { // the second half was never added
						key := bloomKey("key", i)
						if got, want := cp.answer(key), src.answer(key); got != want {
							t.Fatalf("snapshot answers %d for %q, the source %d", got, key, want)
						}
					}
					h := cp.handle()
					if !h.Frozen() || !h.ReadOnly() {
						t.Errorf("snapshot Frozen() = %v, ReadOnly() = %v, want both true", h.Frozen(), h.ReadOnly())
					}
					if h.Seed() != src.handle().Seed() {
						t.Error("the snapshot's seed is not the source's")
					}
					if err := cp.add([]byte("late")); !errors.Is(err, ErrReadOnly) {
						t.Errorf("add to the snapshot: %v, want ErrReadOnly", err)
					}
					if err := h.Check(); err != nil {
						t.Errorf("Check of the snapshot: %v", err)
					}
				})
			}
		}
	}
}

// TestSnapshot_PathIsSealedFile: a snapshot at a path is a complete,
// sealed file: another open of it for writing is refused, a read-only
// open answers as the source does.
func TestSnapshot_PathIsSealedFile(t *testing.T) {
	for i := range snapKinds {
		k := &snapKinds[i]
		t.Run(k.name, func(t *testing.T) {
			src := mustSnapOpen(t, k, Memory(), false)
			snapAddKeys(t, src, 500)
			path := tempPath(t, "copy")
			cp, err := src.snapshot(Path(path))
			if err != nil {
				t.Fatal(err)
			}
			cp.Close()
			kindOf := snapKindNamed(snapPlain(k.name))
			if _, err := kindOf.open(Path(path), true); !errors.Is(err, ErrFrozen) {
				t.Errorf("read-write open of the snapshot: %v, want ErrFrozen", err)
			}
			ro, err := kindOf.open(Path(path), true, WithReadOnly())
			if err != nil {
				t.Fatalf("read-only open of the snapshot: %v", err)
			}
			defer ro.Close()
			for i := range 1000 {
				if got, want := ro.answer(bloomKey("key", i)), src.answer(bloomKey("key", i)); got != want {
					t.Fatalf("the snapshot file answers %d for key-%d, the source %d", got, i, want)
				}
			}
		})
	}
}

// TestSnapshot_Refused: the places a snapshot is not made at, a path that
// exists and a closed source are refused with their sentinels, and
// nothing is left behind.
func TestSnapshot_Refused(t *testing.T) {
	c := mustIn(t, OpenCountMin, Memory(), snapCMS)
	a := mustOpenArena(t, tempPath(t, "arena"), 4<<20)
	existing := tempPath(t, "existing")
	if err := os.WriteFile(existing, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		at   Place
		opts []Option
		want error
	}{
		{"zero place", Place{}, nil, ErrInvalidArgument},
		{"arena entry", a.Place("copy"), nil, ErrInvalidArgument},
		{"inherited", Inherited(0), nil, ErrInvalidArgument},
		{"existing path", Path(existing), nil, fs.ErrExist},
		{"empty path", Path(""), nil, ErrInvalidArgument},
		{"read-only", Memory(), []Option{WithReadOnly()}, ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp, err := c.Snapshot(tc.at, tc.opts...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Snapshot: %v, want %v", err, tc.want)
			}
			if cp != nil {
				t.Error("a refused snapshot returned a sketch")
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "mine" {
		t.Errorf("the existing file now holds %q", b)
	}
	if names := a.List(); len(names) != 0 {
		t.Errorf("the arena holds %v after a refused snapshot into it", names)
	}
	if c2, err := c.Snapshot(Memory()); err != nil {
		t.Errorf("Snapshot: %v", err)
	} else {
		if c2.Seed() != c.Seed() {
			t.Error("the snapshot's seed is not the source's")
		}
		c2.Close()
	}
	c.Close()
	if _, err := c.Snapshot(Memory()); !errors.Is(err, ErrClosed) {
		t.Errorf("Snapshot of a closed sketch: %v, want ErrClosed", err)
	}
	dir := t.TempDir()
	if _, err := mustIn(t, OpenBloom, Memory(), snapBloom).Snapshot(Path(filepath.Join(dir, "no", "such", "dir"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Snapshot into a missing directory: %v, want fs.ErrNotExist", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("a failed snapshot left %d files behind", len(left))
	}
}

// snapPeriodKeys adds the keys of period q to w: q-i for i below 300,
// i%3+1 times each.
func snapPeriodKeys(t *testing.T, s snapStructure, q uint64) {
	t.Helper()
	for i := range 300 {
		for range i%3 + 1 {
			if err := s.add(bloomKey(fmt.Sprint("p", q), i)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSnapshot_WindowIsItsCoveredPeriods: a window's snapshot is the
// plain structure that the keys of the periods it covers make, bit for
// bit (a Count-Min sketch fed those periods' adds; a Bloom filter of
// those periods' keys), so it answers as the window does for those
// periods.
func TestSnapshot_WindowIsItsCoveredPeriods(t *testing.T) {
	for _, name := range snapWindows() {
		t.Run(name, func(t *testing.T) {
			w := mustSnapOpen(t, snapKindNamed(name), Memory(), false)
			plainKind := snapKindNamed(snapPlain(name))
			const periods = 6
			for q := range uint64(periods) {
				if q > 0 {
					if err := w.(snapWindowStructure).Rotate(); err != nil {
						t.Fatal(err)
					}
				}
				snapPeriodKeys(t, w, q)
			}
			cp, cov, err := w.(snapWindowStructure).snapshotCovered(Memory())
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Close()
			if want := (Periods{Oldest: periods - uint64(snapWin.Keep), Current: periods - 1}); cov != want {
				t.Fatalf("SnapshotCovered covers %+v, want %+v", cov, want)
			}
			// The same keys, added to a plain structure of the window's
			// config and seed.
			plain, err := plainKind.openSeeded(Memory(), w.handle().Seed())
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			for q := cov.Oldest; q <= cov.Current; q++ {
				snapPeriodKeys(t, plain, q)
			}
			cm, pm := cp.handle().m, plain.handle().m
			if got, want := cm.entryBytes()[plainKind.cells:], pm.entryBytes()[plainKind.cells:]; string(got) != string(want) {
				t.Error("the snapshot's cells differ from those of a structure fed the covered periods")
			}
			for q := range uint64(periods) {
				for i := range 300 {
					key := bloomKey(fmt.Sprint("p", q), i)
					got, win := cp.answer(key), w.answer(key)
					if q >= cov.Oldest && got != win {
						t.Fatalf("snapshot answers %d for %q, the window %d", got, key, win)
					}
				}
			}
			// Every add of the covered periods: 3 of them, 600 a period.
			if plainKind.counted != nil {
				if got, want := plainKind.counted(cp), uint64(3*600); got != want {
					t.Errorf("the snapshot counted %d, want %d", got, want)
				}
			}
		})
	}
}

// TestSnapshot_HostsMerge: two hosts' structures of one seed, snapshotted,
// merge at a collector into what one structure fed both hosts' keys
// holds (Count-Min: estimates are the sums; filters: every key of
// either).
func TestSnapshot_HostsMerge(t *testing.T) {
	seed := uint64(0x5eed5eed)
	cms, bloom, cbf := snapCMS, snapBloom, snapCBF
	cms.Seed, bloom.Seed, cbf.Seed = seed, seed, seed
	stream := func(s snapStructure, host int) {
		for i := range 1000 {
			for range (i+host)%3 + 1 {
				if err := s.add(bloomKey(fmt.Sprint("h", host), i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.add([]byte("both")); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := func(host, i int) uint64 { return uint64((i+host)%3 + 1) }

	t.Run("countmin", func(t *testing.T) {
		var snaps []*CountMin
		for host := range 2 {
			c := mustIn(t, OpenCountMin, Memory(), cms)
			stream(snapCM{c}, host)
			s, err := c.Snapshot(Path(tempPath(t, fmt.Sprint("host", host))))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			snaps = append(snaps, s)
		}
		total := mustIn(t, OpenCountMin, Memory(), cms)
		if err := total.Merge(snaps...); err != nil {
			t.Fatal(err)
		}
		for host := range 2 {
			for i := range 1000 {
				if got := total.Estimate(bloomKey(fmt.Sprint("h", host), i)); got < want(host, i) {
					t.Fatalf("Estimate(h%d-%d) = %d, want >= %d", host, i, got, want(host, i))
				}
			}
		}
		if got := total.EstimateString("both"); got < 2000 {
			t.Errorf("Estimate(both) = %d, want >= 2000", got)
		}
		if err := total.Check(); err != nil {
			t.Error(err)
		}
	})
	t.Run("bloomwindow", func(t *testing.T) {
		var snaps []*Bloom
		for host := range 2 {
			w := mustIn(t, OpenBloomWindow, Memory(), BloomWindowConfig{Window: snapWin, Bloom: bloom})
			stream(snapBW{w}, host)
			s, err := w.Snapshot(Memfd(fmt.Sprint("host", host)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			snaps = append(snaps, s)
		}
		total := mustIn(t, OpenBloom, Memory(), bloom)
		if err := total.Merge(snaps...); err != nil {
			t.Fatal(err)
		}
		for host := range 2 {
			for i := range 1000 {
				if !total.Contains(bloomKey(fmt.Sprint("h", host), i)) {
					t.Fatalf("the merged filter lacks h%d-%d", host, i)
				}
			}
		}
	})
	t.Run("countingbloom", func(t *testing.T) {
		var snaps []*CountingBloom
		for host := range 2 {
			b := mustIn(t, OpenCountingBloom, Memory(), cbf)
			stream(snapCBFs{b}, host)
			s, err := b.Snapshot(Memory())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			snaps = append(snaps, s)
		}
		total := mustIn(t, OpenCountingBloom, Memory(), cbf)
		if err := total.Merge(snaps...); err != nil {
			t.Fatal(err)
		}
		for host := range 2 {
			for i := range 1000 {
				if got := total.Estimate(bloomKey(fmt.Sprint("h", host), i)); uint64(got) < want(host, i) {
					t.Fatalf("Estimate(h%d-%d) = %d, want >= %d", host, i, got, want(host, i))
				}
			}
		}
	})
}

// TestSnapshot_Arena: an arena's snapshot is an arena of the same names,
// kinds and answers, frozen, its windows fixed at the periods their copy
// covered, and it stays so while the source turns on.
func TestSnapshot_Arena(t *testing.T) {
	// Room for every kind of the table at once: the exact sets' rows take
	// 80 MiB.
	a := mustOpenArena(t, tempPath(t, "arena"), 128<<20)
	srcs := map[string]snapStructure{}
	for i := range snapKinds {
		k := &snapKinds[i]
		s := mustSnapOpen(t, k, a.Place(k.name), false)
		snapAddKeys(t, s, 1000)
		srcs[k.name] = s
	}
	path := tempPath(t, "copy.arena")
	cp, err := a.Snapshot(Path(path))
	if err != nil {
		t.Fatal(err)
	}
	cp.Close()
	// Reopened from its path, read-only, as a collector would.
	ro := mustOpenArena(t, path, 0, WithReadOnly())
	if !ro.Frozen() {
		t.Error("the arena's snapshot is not frozen")
	}
	if got, want := len(ro.List()), len(snapKinds); got != want {
		t.Fatalf("the snapshot lists %d structures, want %d", got, want)
	}
	for name, src := range srcs {
		got := mustSnapOpen(t, snapKindNamed(name), ro.Place(name), true)
		for i := range 2000 {
			key := bloomKey("key", i)
			if g, w := got.answer(key), src.answer(key); g != w {
				t.Fatalf("%s: the arena's snapshot answers %d for %q, the source %d", name, g, key, w)
			}
		}
		if err := got.handle().Check(); err != nil {
			t.Errorf("%s: Check: %v", name, err)
		}
	}
	if _, err := decodeHeader(ro.m.data); err != nil {
		t.Errorf("the arena's snapshot does not validate: %v", err)
	}
	// The windows stay at the periods they covered while the source
	// turns on.
	for _, name := range snapWindows() {
		src := srcs[name]
		for range snapWin.Keep {
			if err := src.(interface{ Rotate() error }).Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		if got := src.answer(bloomKey("key", 7)); got != 0 {
			t.Fatalf("%s: the source still answers %d for key-7 after its periods left", name, got)
		}
		if got := mustSnapOpen(t, snapKindNamed(name), ro.Place(name), true).answer(bloomKey("key", 7)); got == 0 {
			t.Errorf("%s: the snapshot lost key-7 when the source turned", name)
		}
	}
}

// TestSnapshot_Large: a copy of a sketch past the caches is its source's
// region, byte for byte, when nothing writes.
func TestSnapshot_Large(t *testing.T) {
	if testing.Short() {
		t.Skip("a 40 MiB sketch")
	}
	c := mustIn(t, OpenCountMin, Memory(), CountMinConfig{Rows: 5, Width: 1 << 20})
	keys := make([][]byte, 100_000)
	for i := range keys {
		keys[i] = bloomKey("k", i)
	}
	if err := c.AddBatch(keys, nil); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := c.Snapshot(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("snapshot of %d bytes in %v", s.Stats().Bytes, time.Since(start))
	if string(s.m.entryBytes()) != string(c.m.entryBytes()) {
		t.Error("the snapshot's region differs from its quiet source's")
	}
}

// TestSnapshot_WindowTurnsUnderTheCopy: when the window turns during the
// copy (here, a Rotate after its first slot), the copy starts again at the
// new period, from nothing, and covers that period's window exactly; a
// window that turns during every copy is refused with ErrTimeout.
func TestSnapshot_WindowTurnsUnderTheCopy(t *testing.T) {
	w := mustIn(t, OpenCountMinWindow, Memory(), CountMinWindowConfig{Window: snapWin, CountMin: snapCMS})
	for q := range uint64(4) {
		if q > 0 {
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		snapPeriodKeys(t, snapCMW{w}, q)
	}
	turns := 0
	testHookSnapshotFold = func(uint64) {
		if turns == 0 {
			turns++
			if err := w.Rotate(); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookSnapshotFold = nil }()
	cp, cov, err := w.SnapshotCovered(Memory())
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if want := (Periods{Oldest: 2, Current: 4}); cov != want {
		t.Fatalf("the copy covers %+v, want %+v (the window after the turn)", cov, want)
	}
	for q := range uint64(5) {
		for i := range 300 {
			key := bloomKey(fmt.Sprint("p", q), i)
			if got, want := cp.Estimate(key), w.Estimate(key); got != want {
				t.Fatalf("the copy estimates %q at %d, the window at %d", key, got, want)
			}
		}
	}
	if got, want := cp.Total(), uint64(2*600); got != want {
		t.Errorf("the copy's Total() = %d, want %d (periods 2 and 3; 4 is empty)", got, want)
	}

	testHookSnapshotFold = func(uint64) {
		if err := w.Rotate(); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := w.SnapshotCovered(Memory()); !errors.Is(err, ErrTimeout) {
		t.Errorf("a snapshot of a window that turns during every copy: %v, want ErrTimeout", err)
	}
}
