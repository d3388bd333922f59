/*
 * sketch.h is the ABI between the Go package and its C core. Every word the
 * C core touches in the mapping is one the Go core touches with sync/atomic:
 * the counters are accessed with C11 atomics here and with sync/atomic there,
 * so a cgo process and a pure-Go process can share one file at once.
 *
 * Keep in sync with core_go.go (the pure-Go core) and core_c.go (the binding).
 */
#ifndef SKETCH_H
#define SKETCH_H

#include <stddef.h>
#include <stdint.h>

/* sk_u128 is an XXH3-128 result: lo is h1, hi is h2 before "| 1". */
typedef struct {
	uint64_t lo;
	uint64_t hi;
} sk_u128;

/* sk_key is one key of a batch: the Go side fills p with the address of the
 * key's first byte (Go memory, valid for the call only) and n with its length. */
typedef struct {
	const uint8_t *p;
	uint64_t n;
} sk_key;

/* Counters saturate here and never wrap: see countmin.go. */
#define SK_MAX_COUNT ((uint64_t)1 << 63)
/* Adds of at most this much use one fetch-add; larger ones a CAS loop. */
#define SK_FAST_ADD ((uint64_t)1 << 20)
/* Number of add-count stripes, each on its own cache line (8 words apart). */
#define SK_STRIPES 64
#define SK_STRIPE_WORDS 8

/* sk_hash128 is XXH3-128 of key with seed, bit-identical with zeebo/xxh3's
 * Hash128Seed and with upstream XXH3_128bits_withSeed. */
void sk_hash128(const uint8_t *key, size_t len, uint64_t seed, sk_u128 *out);

/* Count-Min sketch operations. cells holds rows x (mask+1) counters,
 * row-major; stripes holds SK_STRIPES add counters SK_STRIPE_WORDS apart.
 * prefetch asks batches to hash and fetch SK_AHEAD keys ahead. */
uint64_t sk_cms_add(uint64_t *cells, uint64_t *stripes, uint64_t seed, uint64_t mask, uint32_t rows,
		    const uint8_t *key, size_t len, uint64_t n);
uint64_t sk_cms_estimate(const uint64_t *cells, uint64_t seed, uint64_t mask, uint32_t rows,
			 const uint8_t *key, size_t len);
void sk_cms_add_batch(uint64_t *cells, uint64_t *stripes, uint64_t seed, uint64_t mask, uint32_t rows,
		      int prefetch, const sk_key *keys, size_t count, uint64_t n, uint64_t *est);
void sk_cms_estimate_batch(const uint64_t *cells, uint64_t seed, uint64_t mask, uint32_t rows,
			   int prefetch, const sk_key *keys, size_t count, uint64_t *est);
/* sk_cms_row_sums stores each row's sum (saturating) and returns 1 when a
 * counter has saturated. */
int sk_cms_row_sums(const uint64_t *cells, uint64_t mask, uint32_t rows, uint64_t *sums);
uint64_t sk_cms_adds(const uint64_t *stripes);
void sk_cms_reset(uint64_t *cells, uint64_t *stripes, uint64_t mask, uint32_t rows);

#define SK_AHEAD 8

void sk_noop(void);

#endif
