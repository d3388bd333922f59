package sketch

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
	"github.com/zeebo/xxh3"
)

// The counting Bloom filter's parity suite, as parity_test.go is
// Count-Min's: every core must do exactly what a plain model does, and the
// cores given the same operations must leave byte-identical files.

// cbfParityExtra are cores the parity suite runs beside countingBloomCores(): the
// C core made to serve every batch from C and fetch ahead on any filter,
// where built.
var cbfParityExtra []cells.CountingBloomCore

// refCBF is the model: one uint8 per counter, the definition written out.
type refCBF struct {
	seed uint64
	k    int
	c    []uint8
	adds uint64 // Stats().Adds: adds since made or reset
}

func newRefCBF(m uint64, k int, seed uint64) *refCBF {
	return &refCBF{seed: seed, k: k, c: make([]uint8, m)}
}

func (r *refCBF) probes(key []byte) []uint64 {
	h := xxh3.Hash128Seed(key, r.seed)
	p := make([]uint64, r.k)
	for i := range p {
		p[i] = cells.Spread(h.Lo+uint64(i)*(h.Hi|1)) % uint64(len(r.c))
	}
	return p
}

func (r *refCBF) add(key []byte) (isNew bool) {
	for _, i := range r.probes(key) {
		if r.c[i] == 0 {
			isNew = true
		}
		if r.c[i] < 15 {
			r.c[i]++
		}
	}
	return isNew
}

func (r *refCBF) addMany(keys [][]byte) int {
	n := 0
	for _, k := range keys {
		if r.add(k) {
			n++
		}
	}
	return n
}

func (r *refCBF) countOf(key []byte) uint64 {
	n := uint8(15)
	for _, i := range r.probes(key) {
		n = min(n, r.c[i])
	}
	return uint64(n)
}

func (r *refCBF) remove(key []byte) bool {
	if r.countOf(key) == 0 {
		return false
	}
	for _, i := range r.probes(key) {
		// A counter a key probes twice may reach zero before its second
		// decrement (a key removed that was never added, its count made
		// by others): it stays at zero, as the cores' counters do.
		if r.c[i] != 15 && r.c[i] != 0 {
			r.c[i]--
		}
	}
	return true
}

func (r *refCBF) merge(o *refCBF) {
	for i, v := range o.c {
		r.c[i] = min(r.c[i]+v, 15)
	}
}

func (r *refCBF) countSet() uint64 {
	var n uint64
	for _, v := range r.c {
		if v > 0 {
			n++
		}
	}
	return n
}

// counterBytes is the model's counters as the file holds them: counter i
// in byte i/2, the low nibble when i is even (docs/FORMAT.md).
func (r *refCBF) counterBytes() []byte {
	b := make([]byte, len(r.c)/2)
	for i, v := range r.c {
		b[i/2] |= v << (4 * (i % 2))
	}
	return b
}

// cbfParityFilters is one core's pair of files: the filter the operations
// go to and the one merged into it.
type cbfParityFilters struct {
	core        cells.CountingBloomCore
	main, other *CountingBloom
}

func cbfParityKey(b byte) []byte { return parityKey("cbf", b) }

// cbfBatchSizes are AddMany sizes around the C core's chunk (csrc.Batch,
// 256) and its fetch-ahead ring (8).
var cbfBatchSizes = [...]int{0, 1, 7, 8, 9, 255, 256, 257, 300, 511, 512, 513, 700}

// cbfParityRun applies one operation sequence, decoded from ops, to the
// model and to a pair of files per core, comparing every result, then the
// counters with the model's and the files with each other.
func cbfParityRun(t *testing.T, cfg CountingBloomConfig, ops []byte) {
	t.Helper()
	dir := t.TempDir()
	var fs []cbfParityFilters
	for _, core := range append(append([]cells.CountingBloomCore{}, countingBloomCores()...), cbfParityExtra...) {
		p := cbfParityFilters{core: core}
		for _, f := range []**CountingBloom{&p.main, &p.other} {
			name := "main"
			if f == &p.other {
				name = "other"
			}
			b, err := OpenCountingBloom(Path(filepath.Join(dir, core.Name()+"."+name+".cbf")), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			b.core = core
			*f = b
		}
		fs = append(fs, p)
	}
	m, k := fs[0].main.Counters(), fs[0].main.Hashes()
	ref, refOther := newRefCBF(m, k, cfg.Seed), newRefCBF(m, k, cfg.Seed)
	batch := func(arg byte) [][]byte { return parityBatch(arg, 48, cbfBatchSizes[:], cbfParityKey) }
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], ops[i+1]
		key := cbfParityKey(arg)
		switch op % 10 {
		case 0, 1:
			want := !ref.add(key) // Add answers already
			ref.adds++
			for _, f := range fs {
				if got, err := f.main.Add(key); err != nil || got != want {
					t.Fatalf("op %d: %s Add(%q) = %v, %v, want %v", i/2, f.core.Name(), key, got, err, want)
				}
			}
		case 2, 3:
			keys := batch(arg)
			want := ref.addMany(keys)
			ref.adds += uint64(len(keys))
			for _, f := range fs {
				if got, err := addedOf(f.main, keys); err != nil || got != want {
					t.Fatalf("op %d: %s AddMany(%d keys from %q) = %d, %v, want %d", i/2, f.core.Name(), len(keys), key, got, err, want)
				}
			}
		case 4:
			want := ref.remove(key) // a remove is no add
			for _, f := range fs {
				if got, err := f.main.Remove(key); err != nil || got != want {
					t.Fatalf("op %d: %s Remove(%q) = %v, %v, want %v", i/2, f.core.Name(), key, got, err, want)
				}
			}
		case 5:
			keys := [][]byte{key, cbfParityKey(arg + 1), cbfParityKey(arg ^ 0xff)}
			for _, k := range keys {
				want := ref.countOf(k)
				for _, f := range fs {
					if got := f.main.Estimate(k); got != want {
						t.Fatalf("op %d: %s Estimate(%q) = %d, want %d", i/2, f.core.Name(), k, got, want)
					}
					if got := f.main.Contains(k); got != (want > 0) {
						t.Fatalf("op %d: %s Contains(%q) = %v, want %v", i/2, f.core.Name(), k, got, want > 0)
					}
				}
			}
			for _, f := range fs {
				got := make([]uint64, len(keys))
				if err := f.main.EstimateBatch(keys, got); err != nil {
					t.Fatalf("op %d: %s EstimateBatch: %v", i/2, f.core.Name(), err)
				}
				for j, k := range keys {
					if want := ref.countOf(k); got[j] != want {
						t.Fatalf("op %d: %s EstimateBatch: %q = %d, want %d as Estimate", i/2, f.core.Name(), k, got[j], want)
					}
				}
			}
		case 6: // saturate: one key added 17 times in one batch, then removed
			keys := make([][]byte, 17)
			for j := range keys {
				keys[j] = key
			}
			want := ref.addMany(keys)
			wantRemoved := ref.remove(key)
			ref.adds += uint64(len(keys))
			for _, f := range fs {
				got, err := addedOf(f.main, keys)
				if err != nil || got != want {
					t.Fatalf("op %d: %s AddMany(17 x %q) = %d, %v, want %d", i/2, f.core.Name(), key, got, err, want)
				}
				if got, err := f.main.Remove(key); err != nil || got != wantRemoved {
					t.Fatalf("op %d: %s Remove(saturated %q) = %v, %v, want %v", i/2, f.core.Name(), key, got, err, wantRemoved)
				}
				if got, want := f.main.Estimate(key), ref.countOf(key); got != want {
					t.Fatalf("op %d: %s CountOf(saturated %q) = %d, want %d", i/2, f.core.Name(), key, got, want)
				}
			}
		case 7: // the other filter: a batch, or a single key
			if arg%2 == 0 {
				keys := batch(arg)
				want := refOther.addMany(keys)
				refOther.adds += uint64(len(keys))
				for _, f := range fs {
					if got, err := addedOf(f.other, keys); err != nil || got != want {
						t.Fatalf("op %d: %s other.AddBatch(%d keys) = %d, %v, want %d", i/2, f.core.Name(), len(keys), got, err, want)
					}
				}
			} else {
				want := !refOther.add(key) // Add answers already
				refOther.adds++
				for _, f := range fs {
					if got, err := f.other.Add(key); err != nil || got != want {
						t.Fatalf("op %d: %s other.Add(%q) = %v, %v, want %v", i/2, f.core.Name(), key, got, err, want)
					}
				}
			}
		case 8: // merge the other filter, or the filter itself; clear, rarely
			switch {
			case arg < 12:
				clear(ref.c)
				ref.adds = 0
				for _, f := range fs {
					if err := f.main.Reset(); err != nil {
						t.Fatalf("op %d: %s Clear: %v", i/2, f.core.Name(), err)
					}
				}
			case arg < 20:
				clear(refOther.c)
				refOther.adds = 0
				for _, f := range fs {
					if err := f.other.Reset(); err != nil {
						t.Fatalf("op %d: %s other.Clear: %v", i/2, f.core.Name(), err)
					}
				}
			case arg < 40:
				ref.merge(&refCBF{c: append([]uint8(nil), ref.c...)}) // no add
				for _, f := range fs {
					if err := f.main.Merge(f.main); err != nil {
						t.Fatalf("op %d: %s Merge(itself): %v", i/2, f.core.Name(), err)
					}
				}
			default:
				ref.merge(refOther) // no add
				for _, f := range fs {
					if err := f.main.Merge(f.other); err != nil {
						t.Fatalf("op %d: %s Merge(other): %v", i/2, f.core.Name(), err)
					}
				}
			}
		case 9: // whole-array walks
			want := ref.countSet()
			var count float64
			for j, f := range fs {
				st := f.main.Stats()
				if st.Set != want || st.Adds != ref.adds {
					t.Fatalf("op %d: %s Stats() = %d counters set, %d adds, want %d, %d", i/2, f.core.Name(), st.Set, st.Adds, want, ref.adds)
				}
				if j == 0 {
					count = f.main.Stats().Estimated
				} else if got := f.main.Stats().Estimated; got != count {
					t.Fatalf("op %d: %s Count() = %v, %s has %v", i/2, f.core.Name(), got, fs[0].core.Name(), count)
				}
			}
		}
	}
	for _, f := range fs {
		for _, c := range []struct {
			name string
			b    *CountingBloom
			ref  *refCBF
		}{{"main", f.main, ref}, {"other", f.other, refOther}} {
			got := c.b.m.entryBytes()[cells.StripesBytes:]
			if !bytes.Equal(got, c.ref.counterBytes()) {
				t.Fatalf("%s %s: the counters differ from the model's", f.core.Name(), c.name)
			}
			if got := c.b.Stats(); got.Adds != c.ref.adds || got.Set != c.ref.countSet() {
				t.Fatalf("%s %s: Stats() = %d adds, %d counters set, want %d, %d", f.core.Name(), c.name, got.Adds, got.Set, c.ref.adds, c.ref.countSet())
			}
		}
	}
	// Same seed, same geometry, same operations: the whole files are equal.
	for _, f := range fs[1:] {
		sameFiles(t, fs[0].main, f.main)
		sameFiles(t, fs[0].other, f.other)
	}
}

// cbfParityShapes: one counter per key in 64 (heavy collisions, fast
// saturation), k = 7 and k = 30 on small filters, and one past L2, where
// the C core fetches ahead by itself.
var cbfParityShapes = []CountingBloomConfig{
	{Capacity: 1, FPRate: 0.5, Seed: 0x5eed},
	{Capacity: 20, FPRate: 0.01, Seed: 0x5eed},
	{Capacity: 1000, FPRate: 0.01, Seed: 7},
	{Capacity: 100, FPRate: 1e-9, Seed: 8},
	{Capacity: 1_000_000, FPRate: 0.01, Seed: 9},
}

// TestCountingBloom_Parity runs long random sequences on every shape.
func TestCountingBloom_Parity(t *testing.T) {
	for _, cfg := range cbfParityShapes {
		t.Run(fmt.Sprintf("%dx%v", cfg.Capacity, cfg.FPRate), func(t *testing.T) {
			// At a million keys, 8 MiB a file: a merge, clear or walk
			// takes milliseconds (much more under -race), so mostly adds.
			cbfParityRun(t, cfg, filterParityOps(cfg.Capacity, cfg.Seed, raceScale(20000), 2000, 64))
		})
	}
}

// TestCountingBloom_ParityFrozen: on a sealed file every core's batch adds
// nothing and says frozen, in one crossing and in chunks alike.
func TestCountingBloom_ParityFrozen(t *testing.T) {
	dir := t.TempDir()
	for _, core := range append(append([]cells.CountingBloomCore{}, countingBloomCores()...), cbfParityExtra...) {
		b, err := OpenCountingBloom(Path(filepath.Join(dir, core.Name()+".cbf")), CountingBloomConfig{Capacity: 100, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.core = core
		if err := b.AddBatch([][]byte{[]byte("a")}, nil); err != nil {
			t.Fatal(err)
		}
		before := append([]byte(nil), b.m.entryBytes()[cells.StripesBytes:]...)
		if err := b.Freeze(); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 256, 257, 600} {
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = cbfKey("frozen", i)
			}
			if added, frozen, err := core.AddBatch(&b.l, b.lk, b.sealed, b.stripe, keys, nil); added != 0 || !frozen || err != nil {
				t.Errorf("%s: addMany(%d keys) on a sealed file = %d, %v, %v, want 0, frozen, no error", core.Name(), n, added, frozen, err)
			}
		}
		if !bytes.Equal(b.m.entryBytes()[cells.StripesBytes:], before) {
			t.Errorf("%s: a sealed file's counters changed", core.Name())
		}
	}
}

// TestCountingBloom_ParityAddManyWaits: every core's batch, in one
// crossing or in chunks, waits for a writer and then adds: it takes the
// read lock, and takes it in the same process-wide lock as Go does.
func TestCountingBloom_ParityAddManyWaits(t *testing.T) {
	dir := t.TempDir()
	for _, core := range append(append([]cells.CountingBloomCore{}, countingBloomCores()...), cbfParityExtra...) {
		b, err := OpenCountingBloom(Path(filepath.Join(dir, core.Name()+".cbf")), CountingBloomConfig{Capacity: 1000, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.core = core
		for _, n := range []int{1, 256, 257, 600} {
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = cbfKey(fmt.Sprintf("wait%d", n), i)
			}
			before := append([]byte(nil), b.m.entryBytes()[cells.StripesBytes:]...)
			b.lk.lock()
			done := make(chan int)
			go func() {
				added, err := addedOf(b, keys)
				if err != nil {
					t.Error(err)
				}
				done <- added
			}()
			select {
			case added := <-done:
				t.Fatalf("%s: AddMany(%d keys) = %d while the write lock was held", core.Name(), n, added)
			case <-time.After(50 * time.Millisecond):
			}
			if !bytes.Equal(b.m.entryBytes()[cells.StripesBytes:], before) {
				t.Fatalf("%s: AddMany(%d keys) changed counters under the write lock", core.Name(), n)
			}
			if err := b.lk.unlock(); err != nil {
				t.Fatal(err)
			}
			select {
			case added := <-done:
				if added == 0 {
					t.Fatalf("%s: AddMany(%d keys) added none", core.Name(), n)
				}
			case <-time.After(patience):
				t.Fatalf("%s: AddMany(%d keys) still waits after the unlock", core.Name(), n)
			}
		}
	}
}

// FuzzParity_CountingBloom compares the cores and the model on arbitrary
// sequences, on a small filter picked by the first byte (creating the
// files is most of a run's time): 64 one-hash counters (collisions,
// saturation), 128 with 7 hashes, 512 with 10, 16384 with 7.
func FuzzParity_CountingBloom(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 7, 8, 9, 9})
	f.Add([]byte{1, 2, 200, 2, 201, 2, 202, 9, 0, 4, 200, 8, 100, 9, 1})
	f.Add([]byte{2, 6, 5, 6, 5, 4, 5, 5, 5, 7, 6, 8, 50, 8, 30, 9, 0, 8, 3})
	f.Add([]byte{3, 3, 198, 7, 198, 8, 99, 8, 25, 6, 198, 9, 9})
	shapes := []CountingBloomConfig{
		{Capacity: 1, FPRate: 0.5, Seed: 0x5eed},
		{Capacity: 10, FPRate: 0.01, Seed: 1},
		{Capacity: 20, FPRate: 0.001, Seed: 3},
		{Capacity: 1000, FPRate: 0.01, Seed: 7},
	}
	fuzzParity(f, shapes, cbfParityRun)
}
