package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

func mustOpenSet(t testing.TB, at Place, cfg SetConfig, opts ...Option) *Set {
	t.Helper()
	s, err := OpenSet(at, cfg, opts...)
	if err != nil {
		t.Fatalf("OpenSet: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sortedKeys lists s's keys as sorted strings.
func sortedKeys(t testing.TB, s *Set) []string {
	t.Helper()
	ks, err := s.Keys()
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	slices.Sort(out)
	return out
}

// TestSet_ExactAgainstMap: a random sequence of adds and removes over a
// small key space (so that tombstones pile up and compactions run)
// answers as a map does, op by op, and the set lists the map's keys.
func TestSet_ExactAgainstMap(t *testing.T) {
	for _, capacity := range []uint64{1, 7, 100, 1000} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			s := mustOpenSet(t, Memory(), SetConfig{Capacity: capacity, KeyBytes: 24, Seed: 9})
			ref := map[string]bool{}
			r := rand.New(rand.NewPCG(1, capacity))
			space := int(capacity) * 3 / 2
			for op := range 20000 {
				k := fmt.Sprintf("key-%d", r.IntN(space+1))
				switch r.IntN(3) {
				case 0, 1:
					added, err := s.AddString(k)
					want := !ref[k]
					if want && uint64(len(ref)) == capacity {
						if !errors.Is(err, ErrFull) || added {
							t.Fatalf("op %d: Add(%q) to a full set = %v, %v; want false, ErrFull", op, k, added, err)
						}
						continue
					}
					if err != nil || added != want {
						t.Fatalf("op %d: Add(%q) = %v, %v; want %v", op, k, added, err, want)
					}
					ref[k] = true
				case 2:
					removed, err := s.RemoveString(k)
					if err != nil || removed != ref[k] {
						t.Fatalf("op %d: Remove(%q) = %v, %v; want %v", op, k, removed, err, ref[k])
					}
					delete(ref, k)
				}
				probe := fmt.Sprintf("key-%d", r.IntN(space+1))
				if got := s.ContainsString(probe); got != ref[probe] {
					t.Fatalf("op %d: Contains(%q) = %v, want %v", op, probe, got, ref[probe])
				}
				if s.Len() != uint64(len(ref)) {
					t.Fatalf("op %d: Len = %d, want %d", op, s.Len(), len(ref))
				}
			}
			want := make([]string, 0, len(ref))
			for k := range ref {
				want = append(want, k)
			}
			slices.Sort(want)
			if got := sortedKeys(t, s); !slices.Equal(got, want) {
				t.Errorf("Keys = %d keys, want %d (%v against %v)", len(got), len(want), got, want)
			}
			st := s.Stats()
			if st.Live != uint64(len(ref)) || st.Tombstones*4 > st.Slots {
				t.Errorf("Stats = %+v, want %d live and at most a quarter of the slots tombstones", st, len(ref))
			}
			if err := s.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

// TestSet_FullRefusedNothingEvicted: a full set refuses a new key with
// ErrFull, still holds every key, and takes one again once one is
// removed.
func TestSet_FullRefusedNothingEvicted(t *testing.T) {
	s := mustOpenSet(t, Memory(), SetConfig{Capacity: 50, KeyBytes: 8})
	for i := range 50 {
		if added, err := s.AddString(fmt.Sprint(i)); !added || err != nil {
			t.Fatalf("Add(%d) = %v, %v", i, added, err)
		}
	}
	for i := 50; i < 60; i++ {
		added, err := s.AddString(fmt.Sprint(i))
		if added || !errors.Is(err, ErrFull) {
			t.Fatalf("Add(%d) to a full set = %v, %v; want false, ErrFull", i, added, err)
		}
	}
	if added, err := s.AddString("7"); added || err != nil {
		t.Errorf("Add of a held key to a full set = %v, %v; want false, nil", added, err)
	}
	for i := range 50 {
		if !s.ContainsString(fmt.Sprint(i)) {
			t.Errorf("key %d evicted", i)
		}
	}
	if s.ContainsString("55") || s.Len() != 50 {
		t.Errorf("after refusals: Contains(55) = %v, Len = %d", s.ContainsString("55"), s.Len())
	}
	s.RemoveString("3")
	if added, err := s.AddString("55"); !added || err != nil {
		t.Errorf("Add after a Remove = %v, %v; want true", added, err)
	}
}

// TestSet_KeyTooLong: a key past KeyBytes is refused by Add, never held,
// and a key of exactly KeyBytes is held.
func TestSet_KeyTooLong(t *testing.T) {
	s := mustOpenSet(t, Memory(), SetConfig{Capacity: 4, KeyBytes: 16})
	long := bytes.Repeat([]byte("x"), 17)
	if _, err := s.Add(long); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Add of 17 bytes = %v, want ErrInvalidArgument", err)
	}
	if s.Contains(long) {
		t.Error("Contains of a key past KeyBytes = true")
	}
	if removed, err := s.Remove(long); removed || err != nil {
		t.Errorf("Remove of a key past KeyBytes = %v, %v", removed, err)
	}
	exact := long[:16]
	if added, err := s.Add(exact); !added || err != nil || !s.Contains(exact) || s.Contains(long[:15]) {
		t.Errorf("a key of 16 bytes: Add = %v, %v, Contains = %v (its prefix %v)", added, err, s.Contains(exact), s.Contains(long[:15]))
	}
	if added, _ := s.Add(nil); !added || !s.Contains([]byte{}) {
		t.Error("the empty key is not held")
	}
}

// TestSet_Configs: the config's checks and what an existing set asks of
// one.
func TestSet_Configs(t *testing.T) {
	for _, cfg := range []SetConfig{{Capacity: 1, KeyBytes: 12}, {Capacity: 1, KeyBytes: 2048}, {Capacity: 1, KeyBytes: -8}, {Capacity: 1 << 41}, {Capacity: 1 << 40, KeyBytes: 1024}} {
		if _, err := OpenSet(Memory(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("OpenSet(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := OpenSet(Memory(), SetConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("OpenSet of the zero config in memory = %v, want ErrInvalidConfig", err)
	}
	path := tempPath(t, "set")
	s := mustOpenSet(t, Path(path), SetConfig{Capacity: 10})
	s.AddString("a")
	if c := s.Config(); c != (SetConfig{Capacity: 10, KeyBytes: 64}) {
		t.Errorf("Config = %+v", c)
	}
	for _, cfg := range []SetConfig{{Capacity: 11}, {Capacity: 10, KeyBytes: 8}, {KeyBytes: 16}} {
		if _, err := OpenSet(Path(path), cfg); !errors.Is(err, ErrIncompatible) {
			t.Errorf("OpenSet(%+v) of a set of 10 = %v, want ErrIncompatible", cfg, err)
		}
	}
	o := mustOpenSet(t, Path(path), SetConfig{})
	if !o.ContainsString("a") {
		t.Error("the zero config's handle does not see the key")
	}
}

// TestSet_ReadOnlyListsAndRefuses: a read-only handle answers Contains,
// Keys and Stats, and its mutators fail with ErrReadOnly; a frozen set's
// with ErrFrozen.
func TestSet_ReadOnlyListsAndRefuses(t *testing.T) {
	path := tempPath(t, "set")
	s := mustOpenSet(t, Path(path), SetConfig{Capacity: 10, KeyBytes: 8})
	for _, k := range []string{"a", "b", "c"} {
		s.AddString(k)
	}
	ro := mustOpenSet(t, Path(path), SetConfig{}, WithReadOnly())
	if got := sortedKeys(t, ro); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("read-only Keys = %v", got)
	}
	if !ro.ContainsString("b") || ro.Len() != 3 || ro.Stats().Live != 3 {
		t.Error("read-only handle does not see the keys")
	}
	if _, err := ro.AddString("d"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Add = %v, want ErrReadOnly", err)
	}
	if _, err := ro.RemoveString("a"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Remove = %v, want ErrReadOnly", err)
	}
	if err := ro.Reset(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Reset = %v, want ErrReadOnly", err)
	}
	if err := s.Freeze(); err != nil {
		t.Fatalf("Freeze: %v", err)
	}
	if _, err := s.AddString("d"); !errors.Is(err, ErrFrozen) {
		t.Errorf("Add after Freeze = %v, want ErrFrozen", err)
	}
	if !ro.ContainsString("a") {
		t.Error("frozen set lost a key")
	}
}

// TestSet_Merge: a merge adds the others' keys (any seed and capacity),
// and one that would not fit adds none (ErrFull).
func TestSet_Merge(t *testing.T) {
	a := mustOpenSet(t, Memory(), SetConfig{Capacity: 10, KeyBytes: 8, Seed: 1})
	b := mustOpenSet(t, Memory(), SetConfig{Capacity: 100, KeyBytes: 16, Seed: 2})
	a.AddString("x")
	for _, k := range []string{"x", "y", "z"} {
		b.AddString(k)
	}
	if err := a.Merge(b, a); err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if got := sortedKeys(t, a); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Errorf("after Merge: %v", got)
	}
	for i := range 8 {
		b.AddString(fmt.Sprint(i))
	}
	if err := a.Merge(b); !errors.Is(err, ErrFull) {
		t.Errorf("Merge past capacity = %v, want ErrFull", err)
	}
	if a.Len() != 3 {
		t.Errorf("a refused Merge added keys: Len = %d", a.Len())
	}
	b.AddString("0123456789")
	if err := a.Merge(b); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Merge of a key past KeyBytes = %v, want ErrIncompatible", err)
	}
	if err := a.Reset(); err != nil || a.Len() != 0 || a.ContainsString("x") {
		t.Errorf("Reset = %v, Len %d", err, a.Len())
	}
}

// setSlotWord is slot i's state word in s's table.
func setSlotWord(s *Set, i uint64) *uint64 {
	return (*uint64)(unsafe.Add(s.t.Slots, uintptr(i)*s.t.SlotBytes))
}

// TestSet_CheckFindsDamage: a slot whose word has an unknown state or a
// length past KeyBytes, a key whose bytes changed (tag not its hash's),
// or a live count that disagrees is ErrDamaged; a sound set passes.
func TestSet_CheckFindsDamage(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(s *Set, live uint64)
	}{
		{"state 3", func(s *Set, i uint64) { *setSlotWord(s, i) |= 3 }},
		{"length past key bytes", func(s *Set, i uint64) { *setSlotWord(s, i) |= 100 << 2 }},
		{"key bytes changed", func(s *Set, i uint64) { *(*uint64)(unsafe.Add(unsafe.Pointer(setSlotWord(s, i)), 8)) ^= ^uint64(0) }}, // every bit: the key's bytes whatever the byte order
		{"live count", func(s *Set, _ uint64) { *(*uint64)(unsafe.Add(s.t.Head, cells.SetHeadLive)) += 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustOpenSet(t, Memory(), SetConfig{Capacity: 20, KeyBytes: 8})
			for i := range 10 {
				s.AddString(fmt.Sprint(i))
			}
			if err := s.Check(); err != nil {
				t.Fatalf("Check of a sound set: %v", err)
			}
			live := uint64(0)
			for *setSlotWord(s, live)&3 != cells.SetLive {
				live++
			}
			c.edit(s, live)
			if err := s.Check(); !errors.Is(err, ErrDamaged) {
				t.Errorf("Check = %v, want ErrDamaged", err)
			}
		})
	}
}

// TestSet_ReadersNeverTorn: goroutines read while writers churn keys of
// every length (so slots are reused by keys of other lengths and
// compactions move keys): a key held throughout is always found, one
// never added never is, and Keys lists only whole keys that were added.
func TestSet_ReadersNeverTorn(t *testing.T) {
	s := mustOpenSet(t, Memory(), SetConfig{Capacity: 256, KeyBytes: 32})
	stable := make([][]byte, 64)
	for i := range stable {
		stable[i] = []byte(fmt.Sprintf("stable-%d-%s", i, bytes.Repeat([]byte("s"), i%20)))
		if _, err := s.Add(stable[i]); err != nil {
			t.Fatal(err)
		}
	}
	churn := func(i int) []byte { return []byte(fmt.Sprintf("c%d-%s", i, bytes.Repeat([]byte("c"), i%25))) }
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 0))
			for n := 0; n < 20000; n++ {
				k := churn(r.IntN(300))
				if r.IntN(2) == 0 {
					s.Add(k)
				} else {
					s.Remove(k)
				}
			}
			stop.Store(true)
		}()
	}
	errs := make(chan string, 8)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(7, 7))
			for n := 0; !stop.Load(); n++ {
				if k := stable[r.IntN(len(stable))]; !s.Contains(k) {
					errs <- fmt.Sprintf("Contains(%q) = false for a key held throughout", k)
					return
				}
				if s.ContainsString(fmt.Sprintf("never-%d", n)) {
					errs <- "Contains of a key never added = true"
					return
				}
				if n%500 == 0 {
					ks, err := s.Keys()
					if err != nil {
						errs <- err.Error()
						return
					}
					held := 0
					for _, k := range ks {
						if bytes.HasPrefix(k, []byte("stable-")) {
							held++
						} else if !bytes.HasPrefix(k, []byte("c")) || !bytes.Equal(k, churn(atoiPrefix(k))) {
							errs <- fmt.Sprintf("Keys listed %q, never added", k)
							return
						}
					}
					if held != len(stable) {
						errs <- fmt.Sprintf("Keys listed %d of the %d keys held throughout", held, len(stable))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check after the churn: %v", err)
	}
}

// atoiPrefix reads the number after a churn key's "c".
func atoiPrefix(k []byte) int {
	n := 0
	for _, b := range k[1:] {
		if b < '0' || b > '9' {
			break
		}
		n = n*10 + int(b-'0')
	}
	return n
}

// TestSet_RecoversKilledWriter: a writer killed in a mutation (dirty set,
// a key's second copy left by a move, counts off) misleads no reader, and
// the next writer recounts: Check passes and the key is held once.
func TestSet_RecoversKilledWriter(t *testing.T) {
	s := mustOpenSet(t, Memory(), SetConfig{Capacity: 20, KeyBytes: 8})
	for i := range 10 {
		s.AddString(fmt.Sprint(i))
	}
	// Copy a key into the next empty slot after it, as a move cut short
	// leaves it (to a later slot: Check calls that a second copy), and
	// leave the counts off with dirty set.
	var from, to uint64
	for from = 0; *setSlotWord(s, from)&3 != cells.SetLive || *setSlotWord(s, (from+1)&s.t.Mask)&3 != cells.SetEmpty; from++ {
	}
	to = (from + 1) & s.t.Mask
	src, dst := unsafe.Pointer(setSlotWord(s, from)), unsafe.Pointer(setSlotWord(s, to))
	copy(unsafe.Slice((*byte)(dst), s.t.SlotBytes), unsafe.Slice((*byte)(src), s.t.SlotBytes))
	*(*uint64)(unsafe.Add(s.t.Head, cells.SetHeadLive)) += 5
	*(*uint64)(unsafe.Add(s.t.Head, cells.SetHeadDirty)) = 1
	if err := s.Check(); err != nil {
		t.Errorf("Check while dirty (a writer's kill, not damage) = %v", err)
	}
	if _, err := s.AddString("new"); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 11 {
		t.Errorf("Len after recovery = %d, want 11", s.Len())
	}
	if got := sortedKeys(t, s); len(got) != 11 {
		t.Errorf("Keys after recovery = %v", got)
	}
	if err := s.Check(); err != nil {
		t.Errorf("Check after recovery: %v", err)
	}
}

// errStopped stops a mutation at a store, as a kill would.
var errStopped = errors.New("stopped")

// stopAt runs f with the table's stores stopped at the n-th (from 0): it
// reports whether f ran to its end before that.
func stopAt(n int, f func()) (finished bool) {
	defer func() {
		cells.SetTestHookStore = nil
		if r := recover(); r != nil && r != errStopped {
			panic(r)
		}
	}()
	stores := 0
	cells.SetTestHookStore = func() {
		if stores == n {
			panic(errStopped)
		}
		stores++
	}
	f()
	return true
}

// TestSet_KillAtEveryStore: an add, a remove and a remove that compacts
// the table are each stopped at every store they make, as a writer killed
// there leaves the table (without its lock, which the lock's own tests
// recover). At every point each key other than the one in flight answers
// as before, lock-free; then the next writer recovers: every key answers
// as the reference (the one in flight either way), Len and Keys agree,
// and Check passes.
func TestSet_KillAtEveryStore(t *testing.T) {
	const capacity = 16
	// The tombstones of 8 removes and the ninth pass a quarter of the 32
	// slots: that remove compacts.
	setup := func(t *testing.T) (*Set, map[string]bool) {
		s := mustOpenSet(t, Memory(), SetConfig{Capacity: capacity, KeyBytes: 8, Seed: 5})
		ref := map[string]bool{}
		for i := range capacity {
			s.AddString(fmt.Sprint(i))
			ref[fmt.Sprint(i)] = true
		}
		for i := range 8 {
			s.RemoveString(fmt.Sprint(i))
			delete(ref, fmt.Sprint(i))
		}
		return s, ref
	}
	ops := []struct {
		name, key string
		op        func(s *Set, key []byte, lo, hi uint64)
		after     bool // whether the key is held once the op completes
	}{
		{"add", "new", func(s *Set, k []byte, lo, hi uint64) { s.t.Insert(k, lo, hi, 0, 0, capacity) }, true},
		{"remove compacting", "12", func(s *Set, k []byte, lo, hi uint64) { s.t.Remove(k, lo, hi, 0) }, false},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for n := 0; ; n++ {
				s, ref := setup(t)
				if st := s.Stats(); st.Tombstones != 8 {
					t.Fatalf("setup left %d tombstones, want 8", st.Tombstones)
				}
				key := []byte(op.key)
				lo, hi := cells.Hash(key, s.t.Seed)
				done := stopAt(n, func() { op.op(s, key, lo, hi) })
				for k, held := range ref {
					if k != op.key && s.ContainsString(k) != held {
						t.Fatalf("stopped at store %d: Contains(%q) = %v, want %v", n, k, !held, held)
					}
				}
				for i := 16; i < 40; i++ {
					if k := fmt.Sprint(i); k != op.key && s.ContainsString(k) {
						t.Fatalf("stopped at store %d: Contains(%q) of a key never added", n, k)
					}
				}
				if done && op.name == "remove compacting" && s.t.Load(cells.SetHeadMoves) == 0 {
					t.Fatal("the compaction moved no key: the test stops no move")
				}
				inFlight := s.ContainsString(op.key)
				if done && inFlight != op.after {
					t.Fatalf("the op completed, Contains(%q) = %v", op.key, inFlight)
				}
				if _, err := s.AddString("next"); err != nil { // the next writer recovers
					t.Fatalf("stopped at store %d: the next Add: %v", n, err)
				}
				ref["next"] = true
				if inFlight {
					ref[op.key] = true
				} else {
					delete(ref, op.key)
				}
				if got := sortedKeys(t, s); len(got) != len(ref) || s.Len() != uint64(len(ref)) {
					t.Fatalf("stopped at store %d: Keys %v, Len %d; want %d keys", n, got, s.Len(), len(ref))
				}
				if err := s.Check(); err != nil {
					t.Fatalf("stopped at store %d: Check after recovery: %v", n, err)
				}
				s.Close()
				if done {
					t.Logf("%d stores, each a stopping point", n)
					return
				}
			}
		})
	}
}
