/*
 * xxh3.h is XXH3-128 with a 64-bit seed (upstream XXH3_128bits_withSeed),
 * written from the XXH3 specification. Its output is bit-identical with
 * upstream xxHash and with github.com/zeebo/xxh3's Hash128Seed (lo = Lo,
 * hi = Hi); xxh3_test.go and xxh3_cgo_test.go check that.
 *
 * Section names below follow the specification (doc/xxhash_spec.md):
 * "0 to 16 bytes", "17 to 128 bytes", "129 to 240 bytes" and
 * "inputs longer than 240 bytes" (stripes, blocks, scramble, merge).
 */
#ifndef SKETCH_XXH3_H
#define SKETCH_XXH3_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sketch.h"

/* ---- constants ---------------------------------------------------------- */

#define SK_XXH_PRIME32_1 UINT64_C(0x9E3779B1)
#define SK_XXH_PRIME32_2 UINT64_C(0x85EBCA77)
#define SK_XXH_PRIME32_3 UINT64_C(0xC2B2AE3D)
#define SK_XXH_PRIME64_1 UINT64_C(0x9E3779B185EBCA87)
#define SK_XXH_PRIME64_2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define SK_XXH_PRIME64_3 UINT64_C(0x165667B19E3779F9)
#define SK_XXH_PRIME64_4 UINT64_C(0x85EBCA77C2B2AE63)
#define SK_XXH_PRIME64_5 UINT64_C(0x27D4EB2F165667C5)
/* PRIME_MX1 / PRIME_MX2: the multipliers of XXH3_avalanche and rrmxmx. */
#define SK_XXH_PRIME_MX1 UINT64_C(0x165667919E3779F9)
#define SK_XXH_PRIME_MX2 UINT64_C(0x9FB21C651E98DF25)

#define SK_XXH3_SECRET_SIZE 192 /* size of the default secret */
#define SK_XXH3_STRIPE_LEN 64   /* bytes consumed by one accumulate round */
#define SK_XXH3_SECRET_CONSUME 8 /* secret advance per stripe */
#define SK_XXH3_STRIPES_PER_BLOCK \
	((SK_XXH3_SECRET_SIZE - SK_XXH3_STRIPE_LEN) / SK_XXH3_SECRET_CONSUME)
#define SK_XXH3_BLOCK_LEN (SK_XXH3_STRIPE_LEN * SK_XXH3_STRIPES_PER_BLOCK)
#define SK_XXH3_MIDSIZE_STARTOFFSET 3
#define SK_XXH3_MIDSIZE_LASTOFFSET 17
#define SK_XXH3_SECRET_SIZE_MIN 136
#define SK_XXH3_LASTACC_START 7
#define SK_XXH3_MERGEACCS_START 11

/* The default secret (kSecret in the specification). */
static const uint8_t sk_xxh3_secret[SK_XXH3_SECRET_SIZE] = {
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c,
	0xf7, 0x21, 0xad, 0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb,
	0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e,
	0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6,
	0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb,
	0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97,
	0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7,
	0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31,
	0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5, 0xac, 0x83,
	0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26,
	0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc,
	0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f,
	0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

/* ---- little-endian reads and writes (any alignment, any byte order) ----- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define SK_XXH_LE32(x) __builtin_bswap32(x)
#define SK_XXH_LE64(x) __builtin_bswap64(x)
#else
#define SK_XXH_LE32(x) (x)
#define SK_XXH_LE64(x) (x)
#endif

static inline uint32_t sk_xxh_read32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return SK_XXH_LE32(v);
}

static inline uint64_t sk_xxh_read64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return SK_XXH_LE64(v);
}

static inline void sk_xxh_write64(uint8_t *p, uint64_t v)
{
	v = SK_XXH_LE64(v);
	memcpy(p, &v, sizeof v);
}

/* ---- primitives --------------------------------------------------------- */

static inline uint32_t sk_xxh_rotl32(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

/* Full 64x64->128 multiply: *hi, return value = low half. */
static inline uint64_t sk_xxh_mul128(uint64_t a, uint64_t b, uint64_t *hi)
{
#if defined(__SIZEOF_INT128__)
	unsigned __int128 r = (unsigned __int128)a * b;
	*hi = (uint64_t)(r >> 64);
	return (uint64_t)r;
#else
	/* Portable schoolbook multiply on 32-bit halves (32-bit targets). */
	uint64_t lo_lo = (a & 0xFFFFFFFF) * (b & 0xFFFFFFFF);
	uint64_t hi_lo = (a >> 32) * (b & 0xFFFFFFFF);
	uint64_t lo_hi = (a & 0xFFFFFFFF) * (b >> 32);
	uint64_t hi_hi = (a >> 32) * (b >> 32);
	uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFF) + lo_hi;
	*hi = (hi_lo >> 32) + (cross >> 32) + hi_hi;
	return (cross << 32) | (lo_lo & 0xFFFFFFFF);
#endif
}

/* mul128_fold64: multiply to 128 bits, xor the halves. */
static inline uint64_t sk_xxh_fold64(uint64_t a, uint64_t b)
{
	uint64_t hi, lo = sk_xxh_mul128(a, b, &hi);
	return lo ^ hi;
}

/* XXH64_avalanche (used by the 0..3 byte paths). */
static inline uint64_t sk_xxh64_avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= SK_XXH_PRIME64_2;
	h ^= h >> 29;
	h *= SK_XXH_PRIME64_3;
	h ^= h >> 32;
	return h;
}

/* XXH3_avalanche. */
static inline uint64_t sk_xxh3_avalanche(uint64_t h)
{
	h ^= h >> 37;
	h *= SK_XXH_PRIME_MX1;
	h ^= h >> 32;
	return h;
}

/* mix16B: 16 input bytes against 16 secret bytes and the seed. */
static inline uint64_t sk_xxh3_mix16(const uint8_t *in, const uint8_t *sec,
				     uint64_t seed)
{
	return sk_xxh_fold64(sk_xxh_read64(in) ^ (sk_xxh_read64(sec) + seed),
			     sk_xxh_read64(in + 8) ^ (sk_xxh_read64(sec + 8) - seed));
}

/* XXH128_mix32B: two 16-byte lanes into the (lo, hi) accumulator pair. */
static inline void sk_xxh3_mix32(uint64_t *lo, uint64_t *hi, const uint8_t *in1,
				 const uint8_t *in2, const uint8_t *sec,
				 uint64_t seed)
{
	*lo += sk_xxh3_mix16(in1, sec, seed);
	*lo ^= sk_xxh_read64(in2) + sk_xxh_read64(in2 + 8);
	*hi += sk_xxh3_mix16(in2, sec + 16, seed);
	*hi ^= sk_xxh_read64(in1) + sk_xxh_read64(in1 + 8);
}

/* Final step shared by the 17..128 and 129..240 paths. */
static inline void sk_xxh3_mid_final(uint64_t lo, uint64_t hi, size_t len,
				     uint64_t seed, sk_u128 *out)
{
	uint64_t l = lo + hi;
	uint64_t h = lo * SK_XXH_PRIME64_1 + hi * SK_XXH_PRIME64_4 +
		     ((uint64_t)len - seed) * SK_XXH_PRIME64_2;
	out->lo = sk_xxh3_avalanche(l);
	out->hi = (uint64_t)0 - sk_xxh3_avalanche(h);
}

/* ---- 0 to 16 bytes ------------------------------------------------------ */

/* len == 0: avalanche of seed ^ secret words. */
static inline void sk_xxh3_len0(uint64_t seed, sk_u128 *out)
{
	const uint8_t *s = sk_xxh3_secret;
	out->lo = sk_xxh64_avalanche(seed ^ sk_xxh_read64(s + 64) ^ sk_xxh_read64(s + 72));
	out->hi = sk_xxh64_avalanche(seed ^ sk_xxh_read64(s + 80) ^ sk_xxh_read64(s + 88));
}

/* 1..3 bytes: pack c1, c2, c3 and len into 32 bits. */
static inline void sk_xxh3_len1to3(const uint8_t *p, size_t len, uint64_t seed,
				   sk_u128 *out)
{
	const uint8_t *s = sk_xxh3_secret;
	uint32_t c1 = p[0], c2 = p[len >> 1], c3 = p[len - 1];
	uint32_t combl = (c1 << 16) | (c2 << 24) | c3 | ((uint32_t)len << 8);
	uint32_t combh = sk_xxh_rotl32(__builtin_bswap32(combl), 13);
	uint64_t flipl = (uint64_t)(sk_xxh_read32(s) ^ sk_xxh_read32(s + 4)) + seed;
	uint64_t fliph = (uint64_t)(sk_xxh_read32(s + 8) ^ sk_xxh_read32(s + 12)) - seed;
	out->lo = sk_xxh64_avalanche((uint64_t)combl ^ flipl);
	out->hi = sk_xxh64_avalanche((uint64_t)combh ^ fliph);
}

/* 4..8 bytes: first and last 4 bytes, one 64x64->128 multiply. */
static inline void sk_xxh3_len4to8(const uint8_t *p, size_t len, uint64_t seed,
				   sk_u128 *out)
{
	const uint8_t *s = sk_xxh3_secret;
	uint64_t lo, hi;
	seed ^= (uint64_t)__builtin_bswap32((uint32_t)seed) << 32;
	uint64_t in64 = sk_xxh_read32(p) + ((uint64_t)sk_xxh_read32(p + len - 4) << 32);
	uint64_t flip = (sk_xxh_read64(s + 16) ^ sk_xxh_read64(s + 24)) + seed;
	lo = sk_xxh_mul128(in64 ^ flip, SK_XXH_PRIME64_1 + ((uint64_t)len << 2), &hi);
	hi += lo << 1;
	lo ^= hi >> 3;
	lo ^= lo >> 35;
	lo *= SK_XXH_PRIME_MX2;
	lo ^= lo >> 28;
	out->lo = lo;
	out->hi = sk_xxh3_avalanche(hi);
}

/* 9..16 bytes: first and last 8 bytes. */
static inline void sk_xxh3_len9to16(const uint8_t *p, size_t len, uint64_t seed,
				    sk_u128 *out)
{
	const uint8_t *s = sk_xxh3_secret;
	uint64_t flipl = (sk_xxh_read64(s + 32) ^ sk_xxh_read64(s + 40)) - seed;
	uint64_t fliph = (sk_xxh_read64(s + 48) ^ sk_xxh_read64(s + 56)) + seed;
	uint64_t in_lo = sk_xxh_read64(p);
	uint64_t in_hi = sk_xxh_read64(p + len - 8);
	uint64_t mh, ml = sk_xxh_mul128(in_lo ^ in_hi ^ flipl, SK_XXH_PRIME64_1, &mh);
	ml += (uint64_t)(len - 1) << 54;
	in_hi ^= fliph;
	/* 64-bit form of: mh += in_hi + mult32to64((u32)in_hi, PRIME32_2 - 1) */
	mh += in_hi + (uint64_t)(uint32_t)in_hi * (SK_XXH_PRIME32_2 - 1);
	ml ^= __builtin_bswap64(mh);
	uint64_t hh, hl = sk_xxh_mul128(ml, SK_XXH_PRIME64_2, &hh);
	hh += mh * SK_XXH_PRIME64_2;
	out->lo = sk_xxh3_avalanche(hl);
	out->hi = sk_xxh3_avalanche(hh);
}

/* ---- 17 to 128 bytes: 1..4 mix32B rounds from both ends, no loop -------- */

static inline void sk_xxh3_len17to128(const uint8_t *p, size_t len,
				      uint64_t seed, sk_u128 *out)
{
	const uint8_t *s = sk_xxh3_secret;
	uint64_t lo = (uint64_t)len * SK_XXH_PRIME64_1, hi = 0;
	if (len > 32) {
		if (len > 64) {
			if (len > 96)
				sk_xxh3_mix32(&lo, &hi, p + 48, p + len - 64, s + 96, seed);
			sk_xxh3_mix32(&lo, &hi, p + 32, p + len - 48, s + 64, seed);
		}
		sk_xxh3_mix32(&lo, &hi, p + 16, p + len - 32, s + 32, seed);
	}
	sk_xxh3_mix32(&lo, &hi, p, p + len - 16, s, seed);
	sk_xxh3_mid_final(lo, hi, len, seed, out);
}

/* ---- 129 to 240 bytes --------------------------------------------------- */

static inline void sk_xxh3_len129to240(const uint8_t *p, size_t len,
				       uint64_t seed, sk_u128 *out)
{
	const uint8_t *s = sk_xxh3_secret;
	uint64_t lo = (uint64_t)len * SK_XXH_PRIME64_1, hi = 0;
	size_t rounds = len / 32, i;
	/* First 128 bytes: 4 rounds, then an intermediate avalanche. */
	sk_xxh3_mix32(&lo, &hi, p, p + 16, s, seed);
	sk_xxh3_mix32(&lo, &hi, p + 32, p + 48, s + 32, seed);
	sk_xxh3_mix32(&lo, &hi, p + 64, p + 80, s + 64, seed);
	sk_xxh3_mix32(&lo, &hi, p + 96, p + 112, s + 96, seed);
	lo = sk_xxh3_avalanche(lo);
	hi = sk_xxh3_avalanche(hi);
	/* Remaining whole 32-byte rounds, secret offset by MIDSIZE_STARTOFFSET. */
	for (i = 4; i < rounds; i++)
		sk_xxh3_mix32(&lo, &hi, p + 32 * i, p + 32 * i + 16,
			      s + SK_XXH3_MIDSIZE_STARTOFFSET + 32 * (i - 4), seed);
	/* Last 32 bytes (lanes swapped, negated seed). */
	sk_xxh3_mix32(&lo, &hi, p + len - 16, p + len - 32,
		      s + SK_XXH3_SECRET_SIZE_MIN - SK_XXH3_MIDSIZE_LASTOFFSET - 16,
		      (uint64_t)0 - seed);
	sk_xxh3_mid_final(lo, hi, len, seed, out);
}

/* ---- inputs longer than 240 bytes --------------------------------------- */

/* Accumulate one 64-byte stripe (accumulate_512, scalar form). */
static inline void sk_xxh3_accumulate512(uint64_t acc[8], const uint8_t *in,
					 const uint8_t *sec)
{
	for (int i = 0; i < 8; i++) {
		uint64_t v = sk_xxh_read64(in + 8 * i);
		uint64_t k = v ^ sk_xxh_read64(sec + 8 * i);
		acc[i ^ 1] += v;
		acc[i] += (uint64_t)(uint32_t)k * (k >> 32);
	}
}

/* Scramble the accumulators at the end of each block. */
static inline void sk_xxh3_scramble(uint64_t acc[8], const uint8_t *sec)
{
	for (int i = 0; i < 8; i++) {
		uint64_t a = acc[i];
		a ^= a >> 47;
		a ^= sk_xxh_read64(sec + 8 * i);
		acc[i] = a * SK_XXH_PRIME32_1;
	}
}

/* mergeAccs: fold the 8 accumulators into one 64-bit value. */
static inline uint64_t sk_xxh3_merge(const uint64_t acc[8], const uint8_t *sec,
				     uint64_t start)
{
	uint64_t r = start;
	r += sk_xxh_fold64(acc[0] ^ sk_xxh_read64(sec), acc[1] ^ sk_xxh_read64(sec + 8));
	r += sk_xxh_fold64(acc[2] ^ sk_xxh_read64(sec + 16), acc[3] ^ sk_xxh_read64(sec + 24));
	r += sk_xxh_fold64(acc[4] ^ sk_xxh_read64(sec + 32), acc[5] ^ sk_xxh_read64(sec + 40));
	r += sk_xxh_fold64(acc[6] ^ sk_xxh_read64(sec + 48), acc[7] ^ sk_xxh_read64(sec + 56));
	return sk_xxh3_avalanche(r);
}

/* hashLong_128b with a 192-byte secret. */
static inline void sk_xxh3_long(const uint8_t *p, size_t len, const uint8_t *sec,
				sk_u128 *out)
{
	uint64_t acc[8] = {
		SK_XXH_PRIME32_3, SK_XXH_PRIME64_1, SK_XXH_PRIME64_2, SK_XXH_PRIME64_3,
		SK_XXH_PRIME64_4, SK_XXH_PRIME32_2, SK_XXH_PRIME64_5, SK_XXH_PRIME32_1,
	};
	size_t nblocks = (len - 1) / SK_XXH3_BLOCK_LEN, b, n, nstripes;
	/* Whole blocks: 16 stripes, secret advancing 8 bytes a stripe, then scramble. */
	for (b = 0; b < nblocks; b++) {
		const uint8_t *blk = p + b * SK_XXH3_BLOCK_LEN;
		for (n = 0; n < SK_XXH3_STRIPES_PER_BLOCK; n++)
			sk_xxh3_accumulate512(acc, blk + n * SK_XXH3_STRIPE_LEN,
					      sec + n * SK_XXH3_SECRET_CONSUME);
		sk_xxh3_scramble(acc, sec + SK_XXH3_SECRET_SIZE - SK_XXH3_STRIPE_LEN);
	}
	/* Last partial block: whole stripes, then the final (overlapping) stripe. */
	nstripes = ((len - 1) - nblocks * SK_XXH3_BLOCK_LEN) / SK_XXH3_STRIPE_LEN;
	for (n = 0; n < nstripes; n++)
		sk_xxh3_accumulate512(acc, p + nblocks * SK_XXH3_BLOCK_LEN + n * SK_XXH3_STRIPE_LEN,
				      sec + n * SK_XXH3_SECRET_CONSUME);
	sk_xxh3_accumulate512(acc, p + len - SK_XXH3_STRIPE_LEN,
			      sec + SK_XXH3_SECRET_SIZE - SK_XXH3_STRIPE_LEN - SK_XXH3_LASTACC_START);
	/* Merge: low half from secret+11, high half from the secret's end. */
	out->lo = sk_xxh3_merge(acc, sec + SK_XXH3_MERGEACCS_START,
				(uint64_t)len * SK_XXH_PRIME64_1);
	out->hi = sk_xxh3_merge(acc, sec + SK_XXH3_SECRET_SIZE - 64 - SK_XXH3_MERGEACCS_START,
				~((uint64_t)len * SK_XXH_PRIME64_2));
}

/* Long input with a seed: derive the secret (initCustomSecret) unless seed == 0. */
static inline void sk_xxh3_long_seed(const uint8_t *p, size_t len, uint64_t seed,
				     sk_u128 *out)
{
	uint8_t sec[SK_XXH3_SECRET_SIZE];
	if (seed == 0) {
		sk_xxh3_long(p, len, sk_xxh3_secret, out);
		return;
	}
	for (int i = 0; i < SK_XXH3_SECRET_SIZE; i += 16) {
		sk_xxh_write64(sec + i, sk_xxh_read64(sk_xxh3_secret + i) + seed);
		sk_xxh_write64(sec + i + 8, sk_xxh_read64(sk_xxh3_secret + i + 8) - seed);
	}
	sk_xxh3_long(p, len, sec, out);
}

/* ---- entry point: XXH3_128bits_withSeed --------------------------------- */

static inline void sk_xxh3_128(const uint8_t *p, size_t len, uint64_t seed, sk_u128 *out)
{
	if (len <= 16) {
		if (len > 8)
			sk_xxh3_len9to16(p, len, seed, out);
		else if (len >= 4)
			sk_xxh3_len4to8(p, len, seed, out);
		else if (len > 0)
			sk_xxh3_len1to3(p, len, seed, out);
		else
			sk_xxh3_len0(seed, out);
	} else if (len <= 128) {
		sk_xxh3_len17to128(p, len, seed, out);
	} else if (len <= 240) {
		sk_xxh3_len129to240(p, len, seed, out);
	} else {
		sk_xxh3_long_seed(p, len, seed, out);
	}
}

#endif
