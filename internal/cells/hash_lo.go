package cells

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// hashLo is the low 64 bits of XXH3-128 of key with seed, Hash's lo,
// which is all a distinct count uses. Keys of up to 16 bytes (a client's
// address, an ID) take the specification's short paths written out here
// without the high half: a third of a distinct count's add was the
// general 128-bit call on 8-byte keys (BenchmarkDistinct, pprof). Longer
// keys take the library's. TestHashLo pins it to xxh3.Hash128Seed.
func hashLo(key []byte, seed uint64) uint64 {
	if len(key) > 16 {
		return xxh3.Hash128Seed(key, seed).Lo
	}
	return hashShortLo(key, seed)
}

// hashLoString is hashLo for a string key, without converting it.
func hashLoString(key string, seed uint64) uint64 {
	if len(key) > 16 {
		return xxh3.HashString128Seed(key, seed).Lo
	}
	return hashShortLo(unsafe.Slice(unsafe.StringData(key), len(key)), seed)
}

// The first 64 bytes of XXH3's default secret (kSecret), as the short
// paths read them: little-endian words at their byte offsets.
const (
	xxhSecret0    = 0xbe4ba423396cfeb8 // bytes 0..7
	xxhSecret16   = 0xdb979083e96dd4de
	xxhSecret24   = 0x1f67b3b7a4a44072
	xxhSecret32   = 0x78e5c0cc4ee679cb
	xxhSecret40   = 0x2172ffcc7dd05a82
	xxhSecret48   = 0x8e2443f7744608b8
	xxhSecret56   = 0x4c263a81e69035e0
	xxhSecret64   = 0xcb00c391bb52283c
	xxhSecret72   = 0xa32e531b8b65d088
	xxhPrime32_2  = 0x85ebca77
	xxhPrime64_1  = 0x9e3779b185ebca87
	xxhPrime64_2  = 0xc2b2ae3d27d4eb4f
	xxhPrime64_3  = 0x165667b19e3779f9
	xxhPrimeMx1   = 0x165667919e3779f9
	xxhPrimeMx2   = 0x9fb21c651e98df25
	xxhSecret0Lo  = xxhSecret0 & 0xffffffff
	xxhSecret0Hi  = xxhSecret0 >> 32
	xxhSecretLen0 = xxhSecret64 ^ xxhSecret72
)

// hashShortLo is the low half of XXH3-128 for 0 to 16 bytes (the
// specification's XXH3_len_0to16_128b, low words only).
func hashShortLo(p []byte, seed uint64) uint64 {
	n := len(p)
	switch {
	case n > 8:
		flipl := (xxhSecret32 ^ xxhSecret40) - seed
		fliph := (xxhSecret48 ^ xxhSecret56) + seed
		inLo := binary.LittleEndian.Uint64(p)
		inHi := binary.LittleEndian.Uint64(p[n-8:])
		mh, ml := bits.Mul64(inLo^inHi^flipl, xxhPrime64_1)
		ml += uint64(n-1) << 54
		inHi ^= fliph
		mh += inHi + uint64(uint32(inHi))*(xxhPrime32_2-1)
		ml ^= bits.ReverseBytes64(mh)
		_, hl := bits.Mul64(ml, xxhPrime64_2)
		return xxh3Avalanche(hl)
	case n >= 4:
		seed ^= uint64(bits.ReverseBytes32(uint32(seed))) << 32
		in64 := uint64(binary.LittleEndian.Uint32(p)) + uint64(binary.LittleEndian.Uint32(p[n-4:]))<<32
		flip := (xxhSecret16 ^ xxhSecret24) + seed
		hi, lo := bits.Mul64(in64^flip, xxhPrime64_1+uint64(n)<<2)
		hi += lo << 1
		lo ^= hi >> 3
		lo ^= lo >> 35
		lo *= xxhPrimeMx2
		return lo ^ lo>>28
	case n > 0:
		c1, c2, c3 := uint32(p[0]), uint32(p[n>>1]), uint32(p[n-1])
		comb := c1<<16 | c2<<24 | c3 | uint32(n)<<8
		return xxh64Avalanche(uint64(comb) ^ (uint64(xxhSecret0Lo^xxhSecret0Hi) + seed))
	}
	return xxh64Avalanche(seed ^ xxhSecretLen0)
}

func xxh3Avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= xxhPrimeMx1
	return h ^ h>>32
}

func xxh64Avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= xxhPrime64_2
	h ^= h >> 29
	h *= xxhPrime64_3
	return h ^ h>>32
}
