package main

import (
	"encoding/binary"
	"strconv"

	"github.com/shmsketch/sketch/bench/internal/keystream"
)

// Keys look like what a rate limiter or a cache counts: client addresses
// (IPv4 and IPv6) and URL paths, 8 to 60 bytes. Key number i of the key
// space is always the same string, and distinct numbers give distinct
// strings, so a stream is a sequence of key numbers drawn from a
// distribution over the space (internal/keystream).
const (
	keySeed    = keystream.Seed       // streams and sketches
	space      = keystream.Space      // distinct keys of the zipf and uniform streams
	smallSpace = keystream.SmallSpace // distinct keys of the small map's stream
	streamLen  = 1 << 19              // keys in a stream, a power of two
)

// stream is a sequence of keys, their bytes laid out in stream order (as
// they would arrive in a buffer), as []byte and as string views.
type stream = keystream.Stream

// makeStream builds the named stream with n keys: "zipf" (Zipf(1.1) over
// space keys, key 0 the most frequent), "uniform" (uniform over space),
// "uniform10k" (uniform over smallSpace) or "uint64" (the uniform
// stream's key numbers as 8 bytes, as a count of user IDs sees them).
func makeStream(name string, n int) *stream {
	if name == "uint64" {
		s := keystream.New("uniform", n, 8, appendUint64)
		s.Name = name
		return s
	}
	return keystream.New(name, n, 32, appendKey)
}

// appendUint64 appends key number i as 8 bytes, little-endian.
func appendUint64(dst []byte, i uint64) []byte { return binary.LittleEndian.AppendUint64(dst, i) }

// mix32 is a bijection of uint32 (a murmur3 finaliser with an offset), so
// distinct key numbers give distinct keys.
func mix32(x uint32) uint32 {
	x += 0x6A09E667
	x *= 0x9E3779B1
	x ^= x >> 16
	x *= 0x85EBCA6B
	x ^= x >> 13
	x *= 0xC2B2AE35
	x ^= x >> 16
	return x
}

var segments = [...]string{
	"v2", "api", "blog", "users", "orders", "static", "images", "search",
	"account", "products", "checkout", "settings", "downloads", "categories",
	"thumbnails", "recommendations",
}

// appendKey appends key number i, distinct for every i below 2^32: i%4 ==
// 0 an IPv4 address (8-15 bytes; the few that would be shorter are
// written IPv4-mapped, "::ffff:1.2.3.4"), 1 an IPv6 address in
// 2001:db8::/32 (17-26 bytes), 2 and 3 a URL path of up to three segments
// and a 7-character id (8-56 bytes).
func appendKey(dst []byte, i uint64) []byte {
	switch i & 3 {
	case 0:
		x := mix32(uint32(i >> 2))
		if x>>24 < 10 && x>>16&0xff < 10 && x>>8&0xff < 10 && x&0xff < 10 {
			dst = append(dst, "::ffff:"...)
		}
		for j := 3; j >= 0; j-- {
			dst = strconv.AppendUint(dst, uint64(x>>(8*j)&0xff), 10)
			if j > 0 {
				dst = append(dst, '.')
			}
		}
		return dst
	case 1:
		x := mix32(uint32(i >> 2))
		y := mix32(^x)
		dst = append(dst, "2001:db8:"...)
		dst = strconv.AppendUint(dst, uint64(y&0xfff), 16)
		dst = append(dst, ':')
		dst = strconv.AppendUint(dst, uint64(y>>12&0xff), 16)
		dst = append(dst, "::"...)
		dst = strconv.AppendUint(dst, uint64(x>>16), 16)
		dst = append(dst, ':')
		return strconv.AppendUint(dst, uint64(x&0xffff), 16)
	}
	x := mix32(uint32(i>>2<<1 | i&1))
	h := mix32(x ^ 0x5bd1e995)
	dst = append(dst, '/')
	for s := range h % 4 {
		dst = append(dst, segments[h>>(4+4*s)&15]...)
		dst = append(dst, '/')
	}
	// The id in base 36, 7 digits (36^7 > 2^32).
	var id [7]byte
	for j := 6; j >= 0; j-- {
		id[j] = base36[x%36]
		x /= 36
	}
	return append(dst, id[:]...)
}

const base36 = "0123456789abcdefghijklmnopqrstuvwxyz"

// keyLengths returns the shortest, mean and longest key length of s.
func keyLengths(s *stream) (lo int, mean float64, hi int) {
	lo = 1 << 30
	total := 0
	for _, k := range s.Bytes {
		lo, hi = min(lo, len(k)), max(hi, len(k))
		total += len(k)
	}
	return lo, float64(total) / float64(len(s.Bytes)), hi
}
