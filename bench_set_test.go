package sketch

import (
	"sync"
	"testing"
)

var (
	benchSets       benchOnce[*Set]
	benchSetWindows benchOnce[*SetWindow]
)

// benchSetWindow is benchSet's set as a window of two periods turned by
// Rotate, its keys in the current one.
func benchSetWindow(b *testing.B) *SetWindow {
	return benchSetWindows.get(b, func() (*SetWindow, error) {
		w, err := OpenSetWindow(Memory(), SetWindowConfig{Window: Window{Keep: 2}, Set: SetConfig{Capacity: 1_000_000, KeyBytes: 32, Seed: benchSeed}})
		if err != nil {
			return nil, err
		}
		for _, k := range benchUniform().firstHalf() {
			if _, err := w.Add(k); err != nil {
				return nil, err
			}
		}
		return w, nil
	})
}

// benchSet returns an exact set for 1M keys of up to 32 bytes (2^21
// slots of 40 bytes, 80 MiB), in memory, holding the first half of the
// uniform stream's keys, as benchCBF's filter does.
func benchSet(b *testing.B) *Set {
	return benchSets.get(b, func() (*Set, error) {
		s, err := OpenSet(Memory(), SetConfig{Capacity: 1_000_000, KeyBytes: 32, Seed: benchSeed})
		if err != nil {
			return nil, err
		}
		for _, k := range benchUniform().firstHalf() {
			if _, err := s.Add(k); err != nil {
				return nil, err
			}
		}
		return s, nil
	})
}

// BenchmarkSet times an exact set of 1M keys (and a window of them) beside a counting Bloom
// filter of the same capacity at 1% (benchCBF) and a sync.Map, each
// holding the first half of the uniform stream: Contains over the whole
// stream (about half of it held), and an add-if-absent of each key of
// the second half followed by its Remove when it was new (so each loop
// leaves the structure as it found it; about 4 keys in 5 are new).
func BenchmarkSet(b *testing.B) {
	s, f := benchSet(b), benchCBF(b)
	u := benchUniform()
	keys, mask := u.bytes, u.mask()
	second := u.bytes[len(u.bytes)/2:]
	half := len(second) - 1
	runOps(b, "Set/", benchOp{"Contains", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if s.Contains(keys[i&mask]) {
				n++
			}
		}
		return n
	}}, benchOp{"AddRemove", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if added, _ := s.Add(second[i&half]); added {
				s.Remove(second[i&half])
				n++
			}
		}
		return n
	}})
	sw := benchSetWindow(b)
	runOps(b, "SetWindow/", benchOp{"Contains", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if sw.Contains(keys[i&mask]) {
				n++
			}
		}
		return n
	}}, benchOp{"AddRemove", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if added, _ := sw.Add(second[i&half]); added {
				sw.Remove(second[i&half])
				n++
			}
		}
		return n
	}})
	runOps(b, "CountingBloom/", benchOp{"Contains", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if f.Contains(keys[i&mask]) {
				n++
			}
		}
		return n
	}}, benchOp{"AddRemove", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if added, _ := f.AddIfAbsent(second[i&half]); added {
				f.Remove(second[i&half])
				n++
			}
		}
		return n
	}})
	var m sync.Map
	for _, k := range u.strs[:len(u.strs)/2] {
		m.Store(k, struct{}{})
	}
	strs, secondStrs := u.strs, u.strs[len(u.strs)/2:]
	runOps(b, "SyncMap/", benchOp{"Contains", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if _, ok := m.Load(strs[i&mask]); ok {
				n++
			}
		}
		return n
	}}, benchOp{"AddRemove", func(b *testing.B) (n uint64) {
		for i := 0; i < b.N; i++ {
			if _, loaded := m.LoadOrStore(secondStrs[i&half], struct{}{}); !loaded {
				m.Delete(secondStrs[i&half])
				n++
			}
		}
		return n
	}})
}
