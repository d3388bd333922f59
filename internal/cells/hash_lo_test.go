package cells

import (
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

// TestHashLo: hashLo and hashLoString are the low half of XXH3-128 for
// every length from 0 to 300 bytes (the short paths and past them) and
// seeds of every kind, on random bytes.
func TestHashLo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 300)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	seeds := []uint64{0, 1, 0xffffffff, 1 << 32, ^uint64(0), 0x9e3779b97f4a7c15}
	for range 20 {
		seeds = append(seeds, r.Uint64())
	}
	for n := 0; n <= len(buf); n++ {
		for _, seed := range seeds {
			key := buf[len(buf)-n:] // ends at the buffer's end: no read past it
			want := xxh3.Hash128Seed(key, seed).Lo
			if got := hashLo(key, seed); got != want {
				t.Fatalf("hashLo(%d bytes, seed %#x) = %#x, want %#x", n, seed, got, want)
			}
			if got := hashLoString(string(key), seed); got != want {
				t.Fatalf("hashLoString(%d bytes, seed %#x) = %#x, want %#x", n, seed, got, want)
			}
		}
	}
}
