//go:build cgo && !purego

/*
 * bloom.c: the Bloom filter's batches in C. Keep in sync with
 * internal/cells/bloom.go: the same blocks, the same probes, one atomic OR per word
 * that gains a bit, nothing written for a word whose bits are all set.
 */
#include <stdatomic.h>
#include <string.h>

#include "sketch.h"
#include "xxh3.h"

/* The bits are plain uint64_t words for Go; C reaches them as atomics of
 * the same size and alignment. */
#define SK_A64(p) ((_Atomic uint64_t *)(p))
#define SK_CA64(p) ((const _Atomic uint64_t *)(p))

/* sk_bloom_block returns the key's block: the high word of lo * blocks. */
static inline uint64_t *sk_bloom_block(uint64_t *words, uint64_t blocks, sk_u128 h)
{
	uint64_t blk;
	(void)sk_xxh_mul128(h.lo, blocks, &blk);
	return words + blk * SK_BLOOM_WORDS;
}

/* sk_bloom_pow[i] is SK_BLOOM_MUL^i, so that probe i is bit
 * ((hi | 1) * sk_bloom_pow[i]) >> 55 and the k multiplies run side by
 * side: Go's bloomProbePow. Filled once, before any batch (sk_bloom_init). */
static uint64_t sk_bloom_pow[SK_BLOOM_MAX_HASHES];

static inline uint64_t sk_bloom_probe(uint64_t h2, uint32_t i)
{
	return (h2 * sk_bloom_pow[i]) >> 55;
}

/* sk_bloom_missing returns 0 when every bit of the key is set in blk,
 * loading each probe's word (all in one cache line), as Go's missing. */
static inline uint64_t sk_bloom_missing(const uint64_t *blk, uint32_t k, uint64_t h2)
{
	uint64_t miss = 0;
	for (uint32_t i = 0; i < k; i++) {
		uint64_t j = sk_bloom_probe(h2, i);
		miss |= ~atomic_load_explicit(SK_CA64(&blk[j >> 6]), memory_order_relaxed) >> (j & 63);
	}
	return miss & 1;
}

/* sk_bloom_add_hashed sets the key's bits and returns 1 when every one was
 * already set (the call changed nothing): Go's addHashed, which says why
 * it checks first and then ORs each word that lacks a bit. */
static inline int sk_bloom_add_hashed(uint64_t *words, uint64_t blocks, uint32_t k, sk_u128 h)
{
	uint64_t *blk = sk_bloom_block(words, blocks, h);
	uint64_t h2 = h.hi | 1;
	if (sk_bloom_missing(blk, k, h2) == 0)
		return 1;
	uint64_t m[SK_BLOOM_WORDS] = {0};
	for (uint32_t i = 0; i < k; i++) {
		uint64_t j = sk_bloom_probe(h2, i);
		m[j >> 6] |= (uint64_t)1 << (j & 63);
	}
	int already = 1;
	for (int w = 0; w < SK_BLOOM_WORDS; w++) {
		uint64_t lack = m[w] & ~atomic_load_explicit(SK_CA64(&blk[w]), memory_order_relaxed);
		if (lack != 0 && (atomic_fetch_or_explicit(SK_A64(&blk[w]), lack, memory_order_seq_cst) & lack) != lack)
			already = 0;
	}
	return already;
}

static inline int sk_bloom_check_hashed(uint64_t *words, uint64_t blocks, uint32_t k, sk_u128 h)
{
	return sk_bloom_missing(sk_bloom_block(words, blocks, h), k, h.hi | 1) == 0;
}

void sk_bloom_init(void)
{
	uint64_t x = 1;
	for (int i = 0; i < SK_BLOOM_MAX_HASHES; i++) {
		sk_bloom_pow[i] = x;
		x *= SK_BLOOM_MUL;
	}
}

/* With prefetch (asked for on filters that do not stay in cache) a batch
 * hashes SK_BLOOM_AHEAD keys ahead and prefetches their blocks, one cache
 * line a key, so that several keys' misses overlap. always_inline, as in
 * cms.c: a helper whose only effect is __builtin_prefetch is otherwise
 * judged to do nothing. */
static inline __attribute__((always_inline)) void sk_bloom_prefetch(uint64_t *words, uint64_t blocks, sk_u128 h,
								     int write)
{
	const uint64_t *blk = sk_bloom_block(words, blocks, h);
	if (write)
		__builtin_prefetch(blk, 1, 3);
	else
		__builtin_prefetch(blk, 0, 3);
}

uint64_t sk_bloom_add_batch(uint64_t *words, uint64_t seed, uint64_t blocks, uint32_t k, int prefetch,
			   const sk_key *keys, size_t count, uint8_t *already)
{
	uint64_t added = 0;
	if (!prefetch) {
		for (size_t i = 0; i < count; i++) {
			sk_u128 h;
			sk_xxh3_128(keys[i].p, keys[i].n, seed, &h);
			int a = sk_bloom_add_hashed(words, blocks, k, h);
			added += !a;
			if (already)
				already[i] = (uint8_t)a;
		}
		return added;
	}
	sk_u128 ring[SK_BLOOM_AHEAD];
	size_t primed = count < SK_BLOOM_AHEAD ? count : SK_BLOOM_AHEAD;
	for (size_t j = 0; j < primed; j++) {
		sk_xxh3_128(keys[j].p, keys[j].n, seed, &ring[j]);
		sk_bloom_prefetch(words, blocks, ring[j], 1);
	}
	for (size_t i = 0; i < count; i++) {
		sk_u128 h = ring[i % SK_BLOOM_AHEAD];
		size_t next = i + SK_BLOOM_AHEAD;
		if (next < count) {
			sk_xxh3_128(keys[next].p, keys[next].n, seed, &ring[i % SK_BLOOM_AHEAD]);
			sk_bloom_prefetch(words, blocks, ring[i % SK_BLOOM_AHEAD], 1);
		}
		int a = sk_bloom_add_hashed(words, blocks, k, h);
		added += !a;
		if (already)
			already[i] = (uint8_t)a;
	}
	return added;
}

uint64_t sk_bloom_contains_batch(uint64_t *words, uint64_t seed, uint64_t blocks, uint32_t k, int prefetch,
			     const sk_key *keys, size_t count, uint8_t *out)
{
	uint64_t found = 0;
	if (!prefetch) {
		for (size_t i = 0; i < count; i++) {
			sk_u128 h;
			sk_xxh3_128(keys[i].p, keys[i].n, seed, &h);
			int f = sk_bloom_check_hashed(words, blocks, k, h);
			found += f;
			out[i] = (uint8_t)f;
		}
		return found;
	}
	sk_u128 ring[SK_BLOOM_AHEAD];
	size_t primed = count < SK_BLOOM_AHEAD ? count : SK_BLOOM_AHEAD;
	for (size_t j = 0; j < primed; j++) {
		sk_xxh3_128(keys[j].p, keys[j].n, seed, &ring[j]);
		sk_bloom_prefetch(words, blocks, ring[j], 0);
	}
	for (size_t i = 0; i < count; i++) {
		sk_u128 h = ring[i % SK_BLOOM_AHEAD];
		size_t next = i + SK_BLOOM_AHEAD;
		if (next < count) {
			sk_xxh3_128(keys[next].p, keys[next].n, seed, &ring[i % SK_BLOOM_AHEAD]);
			sk_bloom_prefetch(words, blocks, ring[i % SK_BLOOM_AHEAD], 0);
		}
		int f = sk_bloom_check_hashed(words, blocks, k, h);
		found += f;
		out[i] = (uint8_t)f;
	}
	return found;
}
