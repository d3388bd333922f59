//go:build cgo && !purego

/*
 * distinct.c: the distinct count's batches in C. Keep in sync with
 * internal/cells/distinct.go and murmur.go: the same hashes, the same register and
 * rank, a CAS on the register's aligned word retried only while the
 * register stays below the rank.
 */
#include <stdatomic.h>
#include <string.h>

#include "sketch.h"
#include "xxh3.h"

#define SK_A64(p) ((_Atomic uint64_t *)(p))

/* sk_le64 reads 8 bytes little-endian on every machine. */
static inline uint64_t sk_le64(const uint8_t *b)
{
	uint64_t k = 0;
	for (int i = 7; i >= 0; i--)
		k = k << 8 | b[i];
	return k;
}

static inline uint64_t sk_rotl64(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

#define SK_M3_C1 UINT64_C(0x87c37b91114253d5)
#define SK_M3_C2 UINT64_C(0x4cf5ad432745937f)

/* sk_m3_fmix is MurmurHash3's 64-bit finaliser. */
static inline uint64_t sk_m3_fmix(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return k;
}

uint64_t sk_murmur64a(const uint8_t *key, size_t len, uint64_t seed)
{
	const uint64_t m = UINT64_C(0xc6a4a7935bd1e995);
	const int r = 47;
	uint64_t h = seed ^ ((uint64_t)len * m);
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		/* Little-endian on every machine, as Redis reads it. */
		uint64_t k = sk_le64(key + i);
		k *= m;
		k ^= k >> r;
		k *= m;
		h ^= k;
		h *= m;
	}
	size_t rest = len - i;
	if (rest > 0) {
		for (size_t b = rest; b-- > 0;)
			h ^= (uint64_t)key[i + b] << (8 * b);
		h *= m;
	}
	h ^= h >> r;
	h *= m;
	h ^= h >> r;
	return h;
}

uint64_t sk_murmur3_x64(const uint8_t *key, size_t len, uint32_t seed)
{
	uint64_t h1 = seed, h2 = seed;
	size_t i = 0;
	for (; i + 16 <= len; i += 16) {
		uint64_t k1 = sk_le64(key + i), k2 = sk_le64(key + i + 8);
		h1 ^= sk_rotl64(k1 * SK_M3_C1, 31) * SK_M3_C2;
		h1 = sk_rotl64(h1, 27) + h2;
		h1 = h1 * 5 + 0x52dce729;
		h2 ^= sk_rotl64(k2 * SK_M3_C2, 33) * SK_M3_C1;
		h2 = sk_rotl64(h2, 31) + h1;
		h2 = h2 * 5 + 0x38495ab5;
	}
	/* The tail, up to 15 bytes: the first 8 into k1, the rest into k2. */
	size_t rest = len - i;
	uint64_t k1 = 0, k2 = 0;
	for (size_t b = rest; b-- > 8;)
		k2 = k2 << 8 | key[i + b];
	for (size_t b = rest < 8 ? rest : 8; b-- > 0;)
		k1 = k1 << 8 | key[i + b];
	if (rest > 8)
		h2 ^= sk_rotl64(k2 * SK_M3_C2, 33) * SK_M3_C1;
	if (rest > 0)
		h1 ^= sk_rotl64(k1 * SK_M3_C1, 31) * SK_M3_C2;
	h1 ^= (uint64_t)len;
	h2 ^= (uint64_t)len;
	h1 += h2;
	h2 += h1;
	h1 = sk_m3_fmix(h1);
	h2 = sk_m3_fmix(h2);
	return h1 + h2;
}

/* sk_reg_shift is the shift of byte b (0..7) of a native word: register j
 * is byte j of the array on either byte order. */
static inline unsigned sk_reg_shift(uint64_t b)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (unsigned)(56 - 8 * b);
#else
	return (unsigned)(8 * b);
#endif
}

/* sk_hll_raise sets register reg to rank unless it holds as much, and
 * returns 1 when it rose: Go's raise. */
static inline int sk_hll_raise(uint64_t *regs, uint64_t reg, uint64_t rank)
{
	_Atomic uint64_t *w = SK_A64(regs + (reg >> 3));
	unsigned shift = sk_reg_shift(reg & 7);
	uint64_t old = atomic_load_explicit(w, memory_order_relaxed);
	for (;;) {
		if ((old >> shift & 0xff) >= rank)
			return 0;
		uint64_t nw = (old & ~((uint64_t)0xff << shift)) | rank << shift;
		/* A failed CAS reloads old. */
		if (atomic_compare_exchange_weak_explicit(w, &old, nw, memory_order_seq_cst, memory_order_relaxed))
			return 1;
	}
}

uint64_t sk_hll_add_batch(uint64_t *regs, uint64_t seed, uint32_t p, int profile, const sk_key *keys, size_t count)
{
	uint64_t raised = 0;
	uint64_t mask = ((uint64_t)1 << p) - 1;
	uint64_t stop = (uint64_t)1 << (64 - p);
	for (size_t i = 0; i < count; i++) {
		uint64_t h;
		if (profile == SK_HLL_REDIS) {
			h = sk_murmur64a(keys[i].p, keys[i].n, SK_REDIS_HLL_SEED);
		} else if (profile == SK_HLL_POSTGRESQL) {
			h = sk_murmur3_x64(keys[i].p, keys[i].n, 0);
		} else {
			sk_u128 x;
			sk_xxh3_128(keys[i].p, keys[i].n, seed, &x);
			h = x.lo;
		}
		uint64_t rank = (uint64_t)__builtin_ctzll(h >> p | stop) + 1;
		raised += (uint64_t)sk_hll_raise(regs, h & mask, rank);
	}
	return raised;
}
