package cells

import (
	"encoding/binary"
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
