package sketch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/shmsketch/sketch/internal/cells"
	"github.com/zeebo/xxh3"
)

// The distinct count's parity: every core of this binary leaves the
// registers a plain model computes from the definition, byte for byte, in
// both profiles; and Go's MurmurHash64A is the C core's.

// refRegisters is the model: a byte per register, the definition written
// out (Redis's hllPatLen, with the seeded hash in the default profile and
// MurmurHash3 in the PostgreSQL profile).
func refRegisters(p uint, profile uint64, seed uint64, keys [][]byte) []byte {
	regs := make([]byte, 1<<p)
	for _, k := range keys {
		reg, rank := refPlace(p, profile, seed, k)
		regs[reg] = max(regs[reg], rank)
	}
	return regs
}

// refPlace is the register key k falls in and the rank it brings there.
func refPlace(p uint, profile uint64, seed uint64, k []byte) (reg uint64, rank byte) {
	var h uint64
	switch profile {
	case cells.ProfileRedis:
		h = refMurmur64A(k, 0xadc83b19)
	case cells.ProfilePostgreSQL:
		h = cells.Murmur3x64(k, 0) // pinned to PostgreSQL by internal/cells
	default:
		h = xxh3.Hash128Seed(k, seed).Lo
	}
	reg = h & (1<<p - 1)
	rest := h >> p
	rank = 1
	for i := uint(0); i < 64-p && rest&(1<<i) == 0; i++ {
		rank++
	}
	return reg, rank
}

// refMurmur64A is MurmurHash64A as Appleby wrote it, byte by byte.
func refMurmur64A(key []byte, seed uint64) uint64 {
	const m, r = 0xc6a4a7935bd1e995, 47
	h := seed ^ uint64(len(key))*m
	n := len(key) / 8 * 8
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(key[i:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	tail := key[n:]
	switch len(tail) {
	case 7:
		h ^= uint64(tail[6]) << 48
		fallthrough
	case 6:
		h ^= uint64(tail[5]) << 40
		fallthrough
	case 5:
		h ^= uint64(tail[4]) << 32
		fallthrough
	case 4:
		h ^= uint64(tail[3]) << 24
		fallthrough
	case 3:
		h ^= uint64(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint64(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint64(tail[0])
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

func TestMurmur64A(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 70; n++ {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		for _, seed := range []uint64{0, 0xadc83b19, 1 << 63} {
			want := refMurmur64A(key, seed)
			if got := cells.Murmur64A(key, seed); got != want {
				t.Errorf("murmur64A(%d bytes, %#x) = %#x, want %#x", n, seed, got, want)
			}
			if got := cells.Murmur64AString(string(key), seed); got != want {
				t.Errorf("murmur64AString(%d bytes, %#x) = %#x, want %#x", n, seed, got, want)
			}
		}
	}
}

// TestDistinct_Parity: each core, by single adds and by batches of every
// size, leaves the model's registers, in both profiles and at the
// smallest, the default and the largest precision; the registers are
// bytes in the order of their numbers on either byte order.
func TestDistinct_Parity(t *testing.T) {
	for _, cfg := range []DistinctConfig{{Precision: 4, Seed: 9}, {Seed: 9}, {Precision: 18, Seed: 9}, {Redis: true}, {Precision: 10, PostgreSQL: true}} {
		keys := make([][]byte, 20_000)
		for i := range keys {
			keys[i] = []byte(fmt.Sprintf("k%d", i*7919%15000)) // repeats
		}
		for _, core := range distinctCores() {
			t.Run(fmt.Sprintf("%s/p=%d/redis=%v/postgresql=%v", core.Name(), cfg.Precision, cfg.Redis, cfg.PostgreSQL), func(t *testing.T) {
				d := mustDistinct(t, cfg)
				d.core = core
				p := uint(d.Config().Precision)
				want := refRegisters(p, cfg.profile(), d.Seed(), keys)
				for i, size := 0, 1; i < len(keys); size = size%300 + 1 {
					batch := keys[i:min(i+size, len(keys))]
					var err error
					if size%5 == 0 {
						for _, k := range batch {
							if err = d.Add(k); err != nil {
								break
							}
						}
					} else {
						err = d.AddBatch(batch)
					}
					if err != nil {
						t.Fatal(err)
					}
					i += len(batch)
				}
				if got := registersOf(d); !bytes.Equal(got, want) {
					for j := range got {
						if got[j] != want[j] {
							t.Fatalf("register %d = %d, the model's %d", j, got[j], want[j])
						}
					}
				}
				// Single adds of the same keys change nothing, and the
				// batch core raised exactly what the model did.
				before := d.Stats().RegisterChanges
				for _, k := range keys[:1000] {
					d.Add(k)
				}
				if after := d.Stats().RegisterChanges; after != before {
					t.Errorf("adding known keys counted %d changes", after-before)
				}
			})
		}
	}
}

// TestDistinct_RaiseCounts: AddBatch's raise count is the registers that
// rose, in every core: the change count moves by exactly that.
func TestDistinct_RaiseCounts(t *testing.T) {
	for _, core := range distinctCores() {
		d := mustDistinct(t, DistinctConfig{Precision: 6, Seed: 3})
		keys := make([][]byte, 64)
		for i := range keys {
			keys[i] = distinctKey(i)
		}
		var model int
		regs := make([]byte, 64)
		for _, k := range keys {
			h := xxh3.Hash128Seed(k, 3).Lo
			reg, rank := h&63, byte(bits.TrailingZeros64(h>>6|1<<58)+1)
			if rank > regs[reg] {
				regs[reg] = rank
				model++
			}
		}
		if got := core.AddBatch(&d.l, keys); got != uint64(model) {
			t.Errorf("%s: addBatch raised %d registers, the model %d", core.Name(), got, model)
		}
	}
}

// distinctCores are the distinct count's cores of testBackends.
func distinctCores() []cells.DistinctCore {
	var cs []cells.DistinctCore
	for _, b := range testBackends() {
		cs = append(cs, b.Distinct)
	}
	return cs
}

// TestDistinctWindow_Parity: each core, by single adds and batches over
// turns of a window at the smallest precision (slots of 80 bytes, not
// whole lines) and the default, leaves every period's slot with the
// model's registers of that period's keys.
func TestDistinctWindow_Parity(t *testing.T) {
	for _, p := range []int{4, 14} {
		for _, core := range distinctCores() {
			t.Run(fmt.Sprintf("%s/p=%d", core.Name(), p), func(t *testing.T) {
				w := mustIn(t, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: Window{Keep: 3}, Distinct: DistinctConfig{Precision: p, Seed: 11}})
				w.core = core
				for round := range 6 {
					keys := make([][]byte, 3000)
					for i := range keys {
						keys[i] = distinctKey(round*1000 + i)
					}
					for i, size := 0, 1; i < len(keys); size = size%100 + 1 {
						batch := keys[i:min(i+size, len(keys))]
						if err := w.AddBatch(batch); err != nil {
							t.Fatal(err)
						}
						i += len(batch)
					}
					s := int(w.Current() % 4)
					if got, want := slotRegisters(w, s), refRegisters(uint(p), cells.ProfileSeeded, 11, keys); !bytes.Equal(got, want) {
						t.Fatalf("round %d: slot %d's registers are not the model's", round, s)
					}
					if err := w.Rotate(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// refDistinct is the model of one distinct count: the registers, raised
// key by key.
type refDistinct struct {
	p       uint
	profile uint64
	seed    uint64
	regs    []byte
}

func newRefDistinct(cfg DistinctConfig) *refDistinct {
	return &refDistinct{p: uint(cfg.Precision), profile: cfg.profile(), seed: cfg.Seed, regs: make([]byte, 1<<cfg.Precision)}
}

func (r *refDistinct) add(keys ...[]byte) {
	for _, k := range keys {
		reg, rank := refPlace(r.p, r.profile, r.seed, k)
		r.regs[reg] = max(r.regs[reg], rank)
	}
}

func (r *refDistinct) merge(o *refDistinct) {
	for i, v := range o.regs {
		r.regs[i] = max(r.regs[i], v)
	}
}

func (r *refDistinct) zero() uint64 {
	var n uint64
	for _, v := range r.regs {
		if v == 0 {
			n++
		}
	}
	return n
}

// distinctParityCounts are one core's pair of distinct counts in a parity
// run.
type distinctParityCounts struct {
	core        cells.DistinctCore
	main, other *Distinct
}

func distinctParityKey(b byte) []byte { return parityKey("hll", b) }

// distinctOtherKey is a key of the other count's: a merge brings it new
// keys.
func distinctOtherKey(b byte) []byte { return parityKey("hll-other", b) }

// distinctBatchSizes are AddBatch sizes around the Go core's threshold
// (cells.DistinctMinBatch, 8) and the C core's chunk (256).
var distinctBatchSizes = [...]int{0, 1, 7, 8, 9, 255, 256, 257, 300, 511, 512, 513, 700}

// distinctParityRun applies one operation sequence, decoded from ops, to
// the model and to a pair of files per core, comparing every result, then
// the registers with the model's and the files with each other.
func distinctParityRun(t *testing.T, cfg DistinctConfig, ops []byte) {
	t.Helper()
	dir := t.TempDir()
	var ds []distinctParityCounts
	for _, core := range distinctCores() {
		p := distinctParityCounts{core: core}
		for _, d := range []**Distinct{&p.main, &p.other} {
			name := "main"
			if d == &p.other {
				name = "other"
			}
			*d = mustIn(t, OpenDistinct, Path(filepath.Join(dir, core.Name()+"."+name+".hll")), cfg)
			(*d).core = core
		}
		ds = append(ds, p)
	}
	if cfg.Precision == 0 {
		cfg.Precision = ds[0].main.Config().Precision
	}
	ref, refOther := newRefDistinct(cfg), newRefDistinct(cfg)
	batch := func(arg byte) [][]byte {
		return parityBatch(arg, 48, distinctBatchSizes[:], distinctParityKey)
	}
	for i := 0; i+1 < len(ops); i += 2 {
		op, arg := ops[i], ops[i+1]
		key := distinctParityKey(arg)
		switch op % 8 {
		case 0, 1:
			ref.add(key)
			for _, d := range ds {
				if err := d.main.Add(key); err != nil {
					t.Fatalf("op %d: %s Add(%q): %v", i/2, d.core.Name(), key, err)
				}
			}
		case 2:
			ref.add(key)
			for _, d := range ds {
				if err := d.main.AddString(string(key)); err != nil {
					t.Fatalf("op %d: %s AddString(%q): %v", i/2, d.core.Name(), key, err)
				}
			}
		case 3, 4:
			keys := batch(arg)
			ref.add(keys...)
			for _, d := range ds {
				if err := d.main.AddBatch(keys); err != nil {
					t.Fatalf("op %d: %s AddBatch(%d keys from %q): %v", i/2, d.core.Name(), len(keys), key, err)
				}
			}
		case 5: // the other count: a batch, or a single key, of its own keys
			keys := [][]byte{distinctOtherKey(arg)}
			if arg%2 == 0 {
				keys = parityBatch(arg, 48, distinctBatchSizes[:], distinctOtherKey)
			}
			refOther.add(keys...)
			for _, d := range ds {
				if err := d.other.AddBatch(keys); err != nil {
					t.Fatalf("op %d: %s other.AddBatch(%d keys): %v", i/2, d.core.Name(), len(keys), err)
				}
			}
		case 6: // merge the other count, or the count itself; reset, rarely
			for _, d := range ds {
				var err error
				switch {
				case arg < 12:
					err = d.main.Reset()
				case arg < 20:
					err = d.other.Reset()
				case arg < 40:
					err = d.main.Merge(d.main)
				default:
					err = d.main.Merge(d.other)
				}
				if err != nil {
					t.Fatalf("op %d: %s merge or reset (%d): %v", i/2, d.core.Name(), arg, err)
				}
			}
			switch {
			case arg < 12:
				clear(ref.regs)
			case arg < 20:
				clear(refOther.regs)
			case arg >= 40:
				ref.merge(refOther)
			}
		case 7: // whole-array walks: every core counts alike
			want := ds[0].main.Stats()
			if want.Zero != ref.zero() {
				t.Fatalf("op %d: %s Stats().Zero = %d, the model's %d", i/2, ds[0].core.Name(), want.Zero, ref.zero())
			}
			for _, d := range ds[1:] {
				got := d.main.Stats()
				if got.Zero != want.Zero || got.Estimate != want.Estimate || got.RegisterChanges != want.RegisterChanges {
					t.Fatalf("op %d: %s Stats() = %d zero, %v, %d changes; %s: %d, %v, %d", i/2, d.core.Name(),
						got.Zero, got.Estimate, got.RegisterChanges, ds[0].core.Name(), want.Zero, want.Estimate, want.RegisterChanges)
				}
				if got, want := d.main.Count(), ds[0].main.Count(); got != want {
					t.Fatalf("op %d: %s Count() = %d, %s's %d", i/2, d.core.Name(), got, ds[0].core.Name(), want)
				}
			}
		}
	}
	for _, d := range ds {
		for _, c := range []struct {
			name string
			d    *Distinct
			ref  *refDistinct
		}{{"main", d.main, ref}, {"other", d.other, refOther}} {
			if !bytes.Equal(registersOf(c.d), c.ref.regs) {
				t.Fatalf("%s %s: the registers differ from the model's", d.core.Name(), c.name)
			}
			if err := c.d.Check(); err != nil {
				t.Fatalf("%s %s: Check() = %v", d.core.Name(), c.name, err)
			}
		}
	}
	// Same seed, same precision, same operations: the whole files are
	// equal.
	for _, d := range ds[1:] {
		sameFiles(t, ds[0].main, d.main)
		sameFiles(t, ds[0].other, d.other)
	}
}

// FuzzParity_Distinct compares the cores and the model on arbitrary
// sequences, on a count picked by the first byte: 16 registers (every key
// collides), 256, and Redis's 16384 in its profile.
func FuzzParity_Distinct(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 7, 8, 9, 9})
	f.Add([]byte{1, 3, 200, 3, 201, 4, 202, 5, 0, 5, 200, 6, 100, 7, 1})
	f.Add([]byte{2, 3, 5, 5, 6, 6, 30, 0, 9, 3, 193, 6, 50, 7, 0, 6, 3})
	f.Add([]byte{0, 4, 198, 5, 198, 6, 99, 6, 15, 3, 250, 7, 9})
	shapes := []DistinctConfig{
		{Precision: 4, Seed: 0x5eed},
		{Precision: 8, Seed: 7},
		{Redis: true, Precision: 14, Seed: 9}, // the header keeps the seed, which Redis's hash ignores
	}
	fuzzParity(f, shapes, distinctParityRun)
}
