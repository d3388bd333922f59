package cells

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Murmur64A is Austin Appleby's MurmurHash64A, the hash Redis's
// HyperLogLog places keys with (seed redisHLLSeed): the Redis profile of a
// Distinct (DistinctConfig.Redis) hashes with it so that its registers are
// those PFADD would set. Keep in sync with csrc/distinct.c. The 8-byte
// blocks are read little-endian on every machine, as Redis reads them.
func Murmur64A(key []byte, seed uint64) uint64 {
	const (
		m = 0xc6a4a7935bd1e995
		r = 47
	)
	h := seed ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// Murmur64AString is murmur64A of a string key, without copying it:
// murmur64A only reads the bytes.
func Murmur64AString(key string, seed uint64) uint64 {
	return Murmur64A(unsafe.Slice(unsafe.StringData(key), len(key)), seed)
}

// Murmur3x64 is the first 64-bit half (h1) of Austin Appleby's
// MurmurHash3_x64_128 of key with seed: what PostgreSQL's hll extension
// returns from hll_hash_bytea(key, seed), as a bigint. The PostgreSQL
// profile of a Distinct (DistinctConfig.PostgreSQL) hashes with it, seed
// 0, so that its registers are those hll_add sets for the same keys. Keep
// in sync with csrc/distinct.c. The 8-byte blocks are read little-endian
// on every machine, as the extension reads them on the little-endian
// machines it is built for.
func Murmur3x64(key []byte, seed uint32) uint64 {
	n := uint64(len(key))
	h1, h2 := uint64(seed), uint64(seed)
	for len(key) >= 16 {
		k1 := binary.LittleEndian.Uint64(key)
		k2 := binary.LittleEndian.Uint64(key[8:])
		h1 ^= murmur3Mix1(k1)
		h1 = bits.RotateLeft64(h1, 27) + h2
		h1 = h1*5 + 0x52dce729
		h2 ^= murmur3Mix2(k2)
		h2 = bits.RotateLeft64(h2, 31) + h1
		h2 = h2*5 + 0x38495ab5
		key = key[16:]
	}
	// The tail, up to 15 bytes: the first 8 into k1, the rest into k2,
	// each little-endian.
	var k1, k2 uint64
	for i := len(key) - 1; i >= 8; i-- {
		k2 = k2<<8 | uint64(key[i])
	}
	for i := min(len(key), 8) - 1; i >= 0; i-- {
		k1 = k1<<8 | uint64(key[i])
	}
	if len(key) > 8 {
		h2 ^= murmur3Mix2(k2)
	}
	if len(key) > 0 {
		h1 ^= murmur3Mix1(k1)
	}
	h1 ^= n
	h2 ^= n
	h1 += h2
	h2 += h1
	h1 = murmur3Fmix(h1)
	h2 = murmur3Fmix(h2)
	return h1 + h2
}

// Murmur3x64String is Murmur3x64 of a string key, without copying it.
func Murmur3x64String(key string, seed uint32) uint64 {
	return Murmur3x64(unsafe.Slice(unsafe.StringData(key), len(key)), seed)
}

// murmur3Mix1 and murmur3Mix2 scramble a block of the first and second
// lane.
func murmur3Mix1(k uint64) uint64 {
	k *= 0x87c37b91114253d5
	k = bits.RotateLeft64(k, 31)
	return k * 0x4cf5ad432745937f
}

func murmur3Mix2(k uint64) uint64 {
	k *= 0x4cf5ad432745937f
	k = bits.RotateLeft64(k, 33)
	return k * 0x87c37b91114253d5
}

// murmur3Fmix is MurmurHash3's 64-bit finaliser.
func murmur3Fmix(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
