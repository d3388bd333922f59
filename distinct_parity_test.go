package sketch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
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
		var h uint64
		switch profile {
		case cells.ProfileRedis:
			h = refMurmur64A(k, 0xadc83b19)
		case cells.ProfilePostgreSQL:
			h = cells.Murmur3x64(k, 0) // pinned to PostgreSQL by internal/cells
		default:
			h = xxh3.Hash128Seed(k, seed).Lo
		}
		reg := h & (1<<p - 1)
		rest := h >> p
		rank := byte(1)
		for i := uint(0); i < 64-p && rest&(1<<i) == 0; i++ {
			rank++
		}
		regs[reg] = max(regs[reg], rank)
	}
	return regs
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
