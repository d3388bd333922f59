package sketch

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
	"github.com/zeebo/xxh3"
)

// The Bloom filter's parity suite, as parity_test.go is Count-Min's: every
// core must do exactly what a plain model does, and the cores given the
// same operations must leave byte-identical files.

// refBloom is the model: one bool per bit, docs/FORMAT.md written out,
// with math/big for the block so that it shares no arithmetic with the
// cores.
type refBloom struct {
	seed        uint64
	blocks      uint64
	k           int
	bit         []bool
	added, seen uint64
}

func newRefBloom(blocks uint64, k int, seed uint64) *refBloom {
	return &refBloom{seed: seed, blocks: blocks, k: k, bit: make([]bool, blocks*512)}
}

// probes returns the key's bit numbers in the whole array.
func (r *refBloom) probes(key []byte) []uint64 {
	h := xxh3.Hash128Seed(key, r.seed)
	prod := new(big.Int).Mul(new(big.Int).SetUint64(h.Lo), new(big.Int).SetUint64(r.blocks))
	block := prod.Rsh(prod, 64).Uint64()
	x := h.Hi | 1
	p := make([]uint64, r.k)
	for i := range p {
		p[i] = block*512 + x>>55
		x *= 0x9e3779b97f4a7c15
	}
	return p
}

func (r *refBloom) add(key []byte) (already bool) {
	already = true
	for _, i := range r.probes(key) {
		if !r.bit[i] {
			already = false
			r.bit[i] = true
		}
	}
	if already {
		r.seen++
	} else {
		r.added++
	}
	return already
}

func (r *refBloom) check(key []byte) bool {
	for _, i := range r.probes(key) {
		if !r.bit[i] {
			return false
		}
	}
	return true
}

func (r *refBloom) set() uint64 {
	var n uint64
	for _, b := range r.bit {
		if b {
			n++
		}
	}
	return n
}

// bytes is the model's bits as the file holds them: bit j of a block is
// bit j mod 64 of its native uint64 word j / 64.
func (r *refBloom) bytes() []byte {
	out := make([]byte, len(r.bit)/8)
	for w := 0; w < len(r.bit)/64; w++ {
		var v uint64
		for j := 0; j < 64; j++ {
			if r.bit[w*64+j] {
				v |= 1 << j
			}
		}
		native.PutUint64(out[w*8:], v)
	}
	return out
}

// bloomBits is the filter's bit array as bytes.
func bloomBits(b *Bloom) []byte { return b.m.entryBytes()[cells.StripesBytes:] }

// parityKey is key number b of a universe of 256, "prefix-b"; 0 is the
// empty key.
func parityKey(prefix string, b byte) []byte {
	if b == 0 {
		return []byte{}
	}
	return []byte(fmt.Sprintf("%s-%d", prefix, b))
}

func bloomParityKey(b byte) []byte { return parityKey("bloom", b) }

// parityBatch is the batch an operation's argument names: arg%mod keys,
// or for arg >= 192 one of sizes, keys from arg on in steps of 7.
func parityBatch(arg byte, mod int, sizes []int, key func(byte) []byte) [][]byte {
	n := int(arg) % mod
	if arg >= 192 {
		n = sizes[int(arg)%len(sizes)]
	}
	keys := make([][]byte, n)
	for j := range keys {
		keys[j] = key(arg + byte(j*7))
	}
	return keys
}

// bloomBatchSizes are batch sizes around the C core's chunk (csrc.Batch,
// 256) and its fetch-ahead ring (8).
var bloomBatchSizes = [...]int{0, 1, 3, 4, 7, 8, 9, 255, 256, 257, 300, 513, 700}

// bloomParityFilter is one core's pair of files: the filter the
// operations go to and the one merged into it. ahead makes every batch
// fetch ahead, whatever the filter's size.
type bloomParityFilter struct {
	core        cells.BloomCore
	ahead       bool
	main, other *Bloom
}

func (f bloomParityFilter) name() string { return fmt.Sprintf("%s/ahead=%v", f.core.Name(), f.ahead) }

// bloomParityRun applies one operation sequence, decoded from ops, to the
// model and to a pair of files per core (fetching ahead or not), comparing
// every answer, then the bits with the model's and the files with each
// other.
func bloomParityRun(t *testing.T, cfg BloomConfig, ops []byte) {
	t.Helper()
	dir := t.TempDir()
	var fs []bloomParityFilter
	for _, core := range bloomCores() {
		for _, ahead := range []bool{false, true} {
			f := bloomParityFilter{core: core, ahead: ahead}
			for _, p := range []**Bloom{&f.main, &f.other} {
				name := "main"
				if p == &f.other {
					name = "other"
				}
				b, err := OpenBloom(Path(filepath.Join(dir, fmt.Sprintf("%s.%v.%s", core.Name(), ahead, name))), cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				b.core = core
				b.l.Prefetch = ahead
				*p = b
			}
			fs = append(fs, f)
		}
	}
	blocks, k := fs[0].main.l.Blocks, fs[0].main.l.K
	ref, refOther := newRefBloom(blocks, k, cfg.Seed), newRefBloom(blocks, k, cfg.Seed)
	batch := func(arg byte) [][]byte { return parityBatch(arg, 40, bloomBatchSizes[:], bloomParityKey) }
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], ops[i+1]
		key := bloomParityKey(arg)
		switch op % 10 {
		case 0, 1: // one key, as []byte or string
			want := ref.add(key)
			for _, f := range fs {
				var got bool
				var err error
				if op%2 == 0 {
					got, err = f.main.Add(key)
				} else {
					got, err = f.main.AddString(string(key))
				}
				if err != nil || got != want {
					t.Fatalf("op %d: %s Add(%q) = %v, %v, want %v", i/2, f.name(), key, got, err, want)
				}
			}
		case 2: // a batch through the public call, with answers
			keys := batch(arg)
			want := make([]bool, len(keys))
			for j, k := range keys {
				want[j] = ref.add(k)
			}
			for _, f := range fs {
				got := make([]bool, len(keys))
				if err := f.main.AddBatch(keys, got); err != nil || !slices.Equal(got, want) {
					t.Fatalf("op %d: %s AddBatch(%d keys from %q) = %v, %v, want %v", i/2, f.name(), len(keys), key, got, err, want)
				}
			}
		case 3: // a batch straight into the core, without answers
			keys := batch(arg)
			var want uint64
			for _, k := range keys {
				if !ref.add(k) {
					want++
				}
			}
			for _, f := range fs {
				got := f.core.AddBatch(&f.main.l, keys, nil)
				f.main.l.Count(f.main.stripe, got, uint64(len(keys))-got)
				if got != want {
					t.Fatalf("op %d: %s core addBatch(%d keys from %q) = %d, want %d", i/2, f.name(), len(keys), key, got, want)
				}
			}
		case 4, 5: // checks, single and batched, public and core
			keys := append(batch(arg), key, bloomParityKey(arg^0xff))
			want := make([]bool, len(keys))
			for j, k := range keys {
				want[j] = ref.check(k)
			}
			for _, f := range fs {
				for j, k := range keys {
					if got := f.main.Contains(k); got != want[j] {
						t.Fatalf("op %d: %s Check(%q) = %v, want %v", i/2, f.name(), k, got, want[j])
					}
					if got := f.main.ContainsString(string(k)); got != want[j] {
						t.Fatalf("op %d: %s CheckString(%q) = %v, want %v", i/2, f.name(), k, got, want[j])
					}
				}
				got := make([]bool, len(keys))
				if op%10 == 4 {
					f.main.ContainsBatch(keys, got)
				} else {
					f.core.ContainsBatch(&f.main.l, keys, got)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("op %d: %s CheckBatch(%d keys) = %v, want %v", i/2, f.name(), len(keys), got, want)
				}
			}
		case 6, 7: // the other filter
			keys := batch(arg)
			for _, k := range keys {
				refOther.add(k)
			}
			for _, f := range fs {
				if err := f.other.AddBatch(keys, nil); err != nil {
					t.Fatal(err)
				}
			}
		case 8: // merge the other filter (or both, or itself); reset, rarely
			switch {
			case arg < 10:
				*ref = *newRefBloom(blocks, k, cfg.Seed)
				for _, f := range fs {
					if err := f.main.Reset(); err != nil {
						t.Fatalf("op %d: %s Reset: %v", i/2, f.name(), err)
					}
				}
			default:
				for j, b := range refOther.bit {
					ref.bit[j] = ref.bit[j] || b
				}
				for _, f := range fs {
					if err := f.main.Merge(f.other, f.main, f.other); err != nil {
						t.Fatalf("op %d: %s Merge: %v", i/2, f.name(), err)
					}
				}
			}
		case 9:
			for _, f := range fs {
				st := f.main.Stats()
				if st.Set != ref.set() || st.Adds != ref.added+ref.seen || st.AddsPresent != ref.seen {
					t.Fatalf("op %d: %s Stats() = %d set, %d adds, %d present; want %d, %d, %d", i/2, f.name(), st.Set, st.Adds, st.AddsPresent, ref.set(), ref.added+ref.seen, ref.seen)
				}
			}
		}
	}
	for _, f := range fs {
		for _, c := range []struct {
			name string
			b    *Bloom
			ref  *refBloom
		}{{"main", f.main, ref}, {"other", f.other, refOther}} {
			if !bytes.Equal(bloomBits(c.b), c.ref.bytes()) {
				t.Fatalf("%s %s: the bits differ from the model's", f.name(), c.name)
			}
			if st := c.b.Stats(); st.Set != c.ref.set() || st.Adds != c.ref.added+c.ref.seen || st.AddsPresent != c.ref.seen {
				t.Fatalf("%s %s: Stats() = %d set, %d adds, %d present; want %d, %d, %d", f.name(), c.name, st.Set, st.Adds, st.AddsPresent, c.ref.set(), c.ref.added+c.ref.seen, c.ref.seen)
			}
		}
	}
	// Same seed, same shape, same operations: the whole files are equal.
	for _, f := range fs[1:] {
		sameFiles(t, fs[0].main, f.main)
		sameFiles(t, fs[0].other, f.other)
	}
}

// sameFiles checks that the files of x and y hold the same bytes.
func sameFiles(t *testing.T, x, y interface{ Path() string }) {
	t.Helper()
	a, err1 := os.ReadFile(x.Path())
	b, err2 := os.ReadFile(y.Path())
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("%s and %s differ after the same operations", x.Path(), y.Path())
	}
}

// filterParityOps is a parity run's random operations for a filter
// config: n bytes from a generator seeded with its capacity and seed. For
// a filter of a million keys, on which merges and walks are slow, only the
// first short bytes are kept, and the ops 8 and 9 among them become batch
// adds (op 2) but at every every-th byte.
func filterParityOps(capacity, seed uint64, n, short, every int) []byte {
	r := rand.New(rand.NewPCG(capacity, seed))
	ops := make([]byte, n)
	for i := range ops {
		ops[i] = byte(r.Uint32())
	}
	if capacity >= 1_000_000 {
		ops = ops[:short]
		for i := 0; i < len(ops); i += 2 {
			if ops[i]%10 >= 8 && i%every != 0 {
				ops[i] = 2
			}
		}
	}
	return ops
}

// bloomParityShapes: one block (every key in it: collisions, saturation),
// a few blocks with k = 3 and 12, and one past L2.
var bloomParityShapes = []BloomConfig{
	{Capacity: 1, FPRate: 0.5, Seed: 0x5eed},
	{Capacity: 60, FPRate: 0.1, Seed: 1},
	{Capacity: 300, FPRate: 1e-4, Seed: 7},
	{Capacity: 1_000_000, FPRate: 0.01, Seed: 9},
}

// TestBloom_Parity runs long random sequences on every shape.
func TestBloom_Parity(t *testing.T) {
	for _, cfg := range bloomParityShapes {
		t.Run(fmt.Sprintf("%dx%v", cfg.Capacity, cfg.FPRate), func(t *testing.T) {
			// At a million keys, 1.2 MiB of bits, a model of 10M bools:
			// mostly adds and checks, few walks.
			bloomParityRun(t, cfg, filterParityOps(cfg.Capacity, cfg.Seed, 8000, 600, 100))
		})
	}
}

// TestBloom_ParityBatchSingle: the same keys added one at a time and in
// batches (of every size, through each core, fetching ahead or not) leave
// byte-identical files, counts included.
func TestBloom_ParityBatchSingle(t *testing.T) {
	cfg := BloomConfig{Capacity: 5000, FPRate: 0.01, Seed: 11}
	dir := t.TempDir()
	keys := make([][]byte, 6000) // past capacity: many adds find every bit set
	for i := range keys {
		keys[i] = bloomKey("bs", i%4500)
	}
	single, err := OpenBloom(Path(filepath.Join(dir, "single")), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer single.Close()
	for _, k := range keys {
		if _, err := single.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	for _, core := range bloomCores() {
		for _, ahead := range []bool{false, true} {
			b, err := OpenBloom(Path(filepath.Join(dir, fmt.Sprintf("%s.%v", core.Name(), ahead))), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			b.core, b.l.Prefetch = core, ahead
			rest := keys
			for i := 0; len(rest) > 0; i++ {
				n := min(bloomBatchSizes[i%len(bloomBatchSizes)], len(rest))
				if err := b.AddBatch(rest[:n], nil); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			sameFiles(t, single, b)
		}
	}
}

// FuzzParity_Bloom compares the cores and the model on arbitrary
// sequences, on a small filter picked by the first byte.
func FuzzParity_Bloom(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 7, 8, 9, 9})
	f.Add([]byte{1, 2, 200, 2, 201, 3, 202, 9, 0, 4, 200, 8, 100, 9, 1})
	f.Add([]byte{2, 6, 5, 6, 5, 4, 5, 5, 5, 7, 6, 8, 50, 8, 3, 9, 0})
	shapes := []BloomConfig{
		{Capacity: 1, FPRate: 0.5, Seed: 0x5eed},
		{Capacity: 60, FPRate: 0.1, Seed: 1},
		{Capacity: 300, FPRate: 1e-4, Seed: 7},
	}
	fuzzParity(f, shapes, bloomParityRun)
}

// fuzzParity fuzzes a filter's parity run: the first byte picks one of
// shapes, the rest (4096 bytes at most) are the operations.
func fuzzParity[C any](f *testing.F, shapes []C, run func(*testing.T, C, []byte)) {
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		if len(ops) > 4097 {
			ops = ops[:4097]
		}
		run(t, shapes[int(ops[0])%len(shapes)], ops[1:])
	})
}
