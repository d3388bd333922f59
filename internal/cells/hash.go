package cells

import "github.com/zeebo/xxh3"

// The key hash every structure uses: XXH3-128 with the file's seed. The
// cores derive a key's cells, blocks and counters from its two halves;
// the C core computes the same hash (csrc/xxh3.h), so both place a key
// alike.

// Hash is the hash of key under seed, as two 64-bit halves.
func Hash(key []byte, seed uint64) (lo, hi uint64) {
	h := xxh3.Hash128Seed(key, seed)
	return h.Lo, h.Hi
}

// HashString is Hash for a string key, without converting it.
func HashString(key string, seed uint64) (lo, hi uint64) {
	h := xxh3.HashString128Seed(key, seed)
	return h.Lo, h.Hi
}
