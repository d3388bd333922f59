//go:build cgo && !purego

package cellsc

import (
	"math/rand/v2"
	"testing"

	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// TestCMurmur64A: the C core's MurmurHash64A is the Go core's (which the
// root package's distinct parity test pins to Appleby's), at every length
// around the 8-byte blocks, with several seeds.
func TestCMurmur64A(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 70; n++ {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		for _, seed := range []uint64{0, 0xadc83b19, r.Uint64()} {
			if got, want := csrc.Murmur64A(key, seed), cells.Murmur64A(key, seed); got != want {
				t.Errorf("sk_murmur64a(%d bytes, %#x) = %#x, want %#x", n, seed, got, want)
			}
		}
	}
}

// TestCMurmur3x64: the C core's MurmurHash3_x64_128 (first half) is the
// Go core's (which internal/cells pins to PostgreSQL's hll_hash_bytea), at
// every length around the 16-byte blocks, with several seeds.
func TestCMurmur3x64(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 70; n++ {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		for _, seed := range []uint32{0, 42, r.Uint32()} {
			if got, want := csrc.Murmur3x64(key, seed), cells.Murmur3x64(key, seed); got != want {
				t.Errorf("sk_murmur3_x64(%d bytes, %#x) = %#x, want %#x", n, seed, got, want)
			}
		}
	}
}
