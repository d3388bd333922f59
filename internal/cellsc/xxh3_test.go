//go:build cgo && !purego

package cellsc

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shmsketch/sketch/internal/xxh3golden"
	"github.com/zeebo/xxh3"
)

// xxh3TestSeeds is the fixed seed list of TestCHash128MatchesGo; ~50 seeds
// from a seeded generator are added to it.
func xxh3TestSeeds() []uint64 {
	seeds := []uint64{
		0, 1, 2, 0xFF, 0x100, 0xFFFFFFFF, 0x100000000, 0x7FFFFFFFFFFFFFFF,
		0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x9E3779B97F4A7C15,
		0x0123456789ABCDEF, 0xFEDCBA9876543210, 0x00000000DEADBEEF,
		0xDEADBEEF00000000,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		seeds = append(seeds, r.Uint64())
	}
	return seeds
}

// xxh3LongLens are key lengths above 1024: block (1024) and stripe (64)
// boundaries and their neighbours, up to ~100 KB.
func xxh3LongLens() []int {
	var lens []int
	for _, m := range []int{1024, 2048, 3072, 4096, 8192, 16384, 65536, 100 * 1024} {
		for _, d := range []int{-65, -64, -63, -1, 0, 1, 63, 64, 65} {
			lens = append(lens, m+d)
		}
	}
	return append(lens, 1500, 5000, 10000, 12345, 33333, 99999)
}

func checkCHash128(t *testing.T, key []byte, seed uint64) bool {
	t.Helper()
	lo, hi := cHash128(key, seed)
	want := xxh3.Hash128Seed(key, seed)
	if lo != want.Lo || hi != want.Hi {
		t.Errorf("cHash128(len=%d, seed=%#x) = %#x %#x, want %#x %#x", len(key), seed, lo, hi, want.Lo, want.Hi)
		return false
	}
	return true
}

func TestCHash128MatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 100*1024+128+8)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	seeds := xxh3TestSeeds()
	errs := 0
	// Every length 0..1024 (lengths 240/241 and all short-path boundaries
	// included), every seed, at varying alignments.
	for n := 0; n <= 1024; n++ {
		for i, seed := range seeds {
			off := (n + i) % 8
			if !checkCHash128(t, buf[off:off+n], seed) {
				errs++
			}
		}
		if errs > 20 {
			t.Fatal("too many errors")
		}
	}
	// Long lengths: the fixed seeds on all of them, a few random seeds each.
	for j, n := range xxh3LongLens() {
		for i, seed := range seeds {
			if i >= 15 && (i+j)%10 != 0 {
				continue
			}
			off := (n + i) % 8
			if !checkCHash128(t, buf[off:off+n], seed) {
				errs++
			}
		}
		if errs > 20 {
			t.Fatal("too many errors")
		}
	}

	// The golden vectors (upstream XXH3_128bits_withSeed).
	in := xxh3golden.Input(65536 + 7)
	for _, v := range xxh3golden.Read(t) {
		lo, hi := cHash128(in[:v.N], v.Seed)
		if lo != v.Lo || hi != v.Hi {
			t.Errorf("cHash128(len=%d, seed=%#x) = %#x %#x, want %#x %#x (golden)", v.N, v.Seed, lo, hi, v.Lo, v.Hi)
		}
	}
}

func FuzzHash128(f *testing.F) {
	for _, n := range []int{0, 1, 3, 4, 8, 9, 16, 17, 128, 129, 240, 241, 1024, 1025, 2049} {
		f.Add(xxh3golden.Input(n), uint64(n)*0x9E3779B97F4A7C15)
	}
	f.Fuzz(func(t *testing.T, key []byte, seed uint64) {
		checkCHash128(t, key, seed)
	})
}

func BenchmarkHash128(b *testing.B) {
	for _, n := range []int{8, 17, 64, 256, 1024} {
		key := xxh3golden.Input(n)
		const seed = 0x9E3779B97F4A7C15
		b.Run(fmt.Sprintf("len=%d/go", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var sink uint64
			for b.Loop() {
				sink += xxh3.Hash128Seed(key, seed).Lo
			}
			_ = sink
		})
		b.Run(fmt.Sprintf("len=%d/c", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			var sink uint64
			for b.Loop() {
				lo, _ := cHash128(key, seed)
				sink += lo
			}
			_ = sink
		})
	}
}
