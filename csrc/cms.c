//go:build cgo && !purego

/*
 * cms.c: the Count-Min sketch in C. Keep in sync with internal/cells/countmin.go: the same
 * cells, the same saturation rule, the same stripe for the add count.
 */
#include <stdatomic.h>
#include <string.h>

#include "sketch.h"
#include "xxh3.h"

/* The mapping's counters are plain uint64_t words for Go; C reaches them
 * as atomics. The two have the same size and alignment. */
#define SK_ATOMIC(p) ((_Atomic uint64_t *)(p))

static inline uint64_t sk_clamp_cell(uint64_t *c)
{
	uint64_t old = atomic_load_explicit(SK_ATOMIC(c), memory_order_relaxed);
	while (old > SK_MAX_COUNT &&
	       !atomic_compare_exchange_weak_explicit(SK_ATOMIC(c), &old, SK_MAX_COUNT,
						      memory_order_seq_cst, memory_order_relaxed))
		;
	return SK_MAX_COUNT;
}

/* sk_add_cell adds n, saturating at SK_MAX_COUNT, and returns the new value. */
static inline uint64_t sk_add_cell(uint64_t *c, uint64_t n)
{
	if (n <= SK_FAST_ADD) {
		uint64_t v = atomic_fetch_add_explicit(SK_ATOMIC(c), n, memory_order_seq_cst) + n;
		return v <= SK_MAX_COUNT ? v : sk_clamp_cell(c);
	}
	uint64_t old = atomic_load_explicit(SK_ATOMIC(c), memory_order_relaxed);
	for (;;) {
		if (old >= SK_MAX_COUNT)
			return SK_MAX_COUNT;
		uint64_t v = n < SK_MAX_COUNT - old ? old + n : SK_MAX_COUNT;
		if (atomic_compare_exchange_weak_explicit(SK_ATOMIC(c), &old, v,
							  memory_order_seq_cst, memory_order_relaxed))
			return v;
	}
}

/* sk_sum_cells is an own counter plus the fleet part's, saturating at
 * SK_MAX_COUNT (internal/cells/countmin.go's SumCells). */
static inline uint64_t sk_sum_cells(uint64_t own, uint64_t fleet)
{
	uint64_t s = own + fleet;
	return s < own || s > SK_MAX_COUNT ? SK_MAX_COUNT : s;
}

/* sk_add_cells_fleet is sk_add_cells with a fleet part: the minimum of the
 * rows' new own counters each plus the fleet's. */
static uint64_t sk_add_cells_fleet(uint64_t *cells, const uint64_t *fleet, uint64_t mask, uint32_t rows, sk_u128 h, uint64_t n)
{
	uint64_t h2 = h.hi | 1, est = UINT64_MAX;
	uint64_t *row = cells;
	const uint64_t *frow = fleet;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1, frow += mask + 1) {
		uint64_t col = sk_spread(h.lo + (uint64_t)i * h2) & mask;
		uint64_t v = sk_add_cell(&row[col], n);
		v = sk_sum_cells(v, atomic_load_explicit(SK_ATOMIC(&frow[col]), memory_order_acquire));
		if (v < est)
			est = v;
	}
	return est;
}

/* sk_add_cells adds n to the key's counter in every row and returns the
 * minimum of their new values (each plus the fleet part's, when fleet is
 * not NULL). */
static inline uint64_t sk_add_cells(uint64_t *cells, const uint64_t *fleet, uint64_t mask, uint32_t rows, sk_u128 h, uint64_t n)
{
	if (fleet)
		return sk_add_cells_fleet(cells, fleet, mask, rows, h, n);
	uint64_t h2 = h.hi | 1, est = UINT64_MAX;
	uint64_t *row = cells;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1) {
		uint64_t v = sk_add_cell(&row[sk_spread(h.lo + (uint64_t)i * h2) & mask], n);
		if (v < est)
			est = v;
	}
	return est;
}


/* sk_estimate_fleet is sk_estimate_hashed with a fleet part: the minimum
 * over the rows of own + fleet. */
static uint64_t sk_estimate_fleet(const uint64_t *cells, const uint64_t *fleet, uint64_t mask, uint32_t rows, sk_u128 h)
{
	uint64_t h2 = h.hi | 1, est = UINT64_MAX;
	const uint64_t *row = cells, *frow = fleet;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1, frow += mask + 1) {
		uint64_t col = sk_spread(h.lo + (uint64_t)i * h2) & mask;
		uint64_t v = sk_sum_cells(atomic_load_explicit(SK_ATOMIC(&row[col]), memory_order_acquire),
					  atomic_load_explicit(SK_ATOMIC(&frow[col]), memory_order_acquire));
		if (v < est)
			est = v;
	}
	return est;
}

static inline uint64_t sk_estimate_hashed(const uint64_t *cells, const uint64_t *fleet, uint64_t mask, uint32_t rows, sk_u128 h)
{
	if (fleet)
		return sk_estimate_fleet(cells, fleet, mask, rows, h);
	uint64_t h2 = h.hi | 1, est = UINT64_MAX;
	const uint64_t *row = cells;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1) {
		uint64_t v = atomic_load_explicit(SK_ATOMIC(&row[sk_spread(h.lo + (uint64_t)i * h2) & mask]),
						  memory_order_acquire);
		if (v < est)
			est = v;
	}
	return est < SK_MAX_COUNT ? est : SK_MAX_COUNT;
}

/* always_inline: a helper whose only effect is __builtin_prefetch is
 * otherwise judged to do nothing, and its calls are deleted. */
static inline __attribute__((always_inline)) void sk_prefetch_hashed(const uint64_t *cells, uint64_t mask, uint32_t rows, sk_u128 h, int write)
{
	uint64_t h2 = h.hi | 1;
	const uint64_t *row = cells;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1) {
		if (write)
			__builtin_prefetch(&row[sk_spread(h.lo + (uint64_t)i * h2) & mask], 1, 3);
		else
			__builtin_prefetch(&row[sk_spread(h.lo + (uint64_t)i * h2) & mask], 0, 3);
	}
}

/* stripe is the add-count stripe the caller picked (internal/cells/countmin.go's stripe):
 * the add count is the sum of the stripes, so which one moves is free. */
uint64_t sk_cms_add(uint64_t *cells, const uint64_t *fleet, uint64_t *stripe, uint64_t seed, uint64_t mask, uint32_t rows,
		    const uint8_t *key, size_t len, uint64_t n)
{
	sk_u128 h;
	sk_xxh3_128(key, len, seed, &h);
	uint64_t est = sk_add_cells(cells, fleet, mask, rows, h, n);
	sk_add_cell(stripe, n);
	return est;
}

uint64_t sk_cms_estimate(const uint64_t *cells, const uint64_t *fleet, uint64_t seed, uint64_t mask, uint32_t rows,
			 const uint8_t *key, size_t len)
{
	sk_u128 h;
	sk_xxh3_128(key, len, seed, &h);
	return sk_estimate_hashed(cells, fleet, mask, rows, h);
}

/* A batch is one chunk (internal/cells/countmin.go's BatchChunk): its keys' counters, then
 * its count in the add count, at the stripe the caller picked (none when
 * stripe is NULL: a window's slots keep no add count). Over a grid larger
 * than the caches it hashes SK_AHEAD keys ahead and prefetches their
 * cells, so the cache misses of several keys overlap. */
void sk_cms_add_batch(uint64_t *cells, const uint64_t *fleet, uint64_t *stripe, uint64_t seed, uint64_t mask, uint32_t rows,
		      int prefetch, const sk_key *keys, size_t count, uint64_t n, uint64_t *est)
{
	if (count == 0)
		return;
	if (!prefetch) {
		for (size_t i = 0; i < count; i++) {
			sk_u128 h;
			sk_xxh3_128(keys[i].p, keys[i].n, seed, &h);
			uint64_t v = sk_add_cells(cells, fleet, mask, rows, h, n);
			if (est)
				est[i] = v;
		}
		if (stripe)
			sk_add_cell(stripe, count * n);
		return;
	}
	sk_u128 ring[SK_AHEAD];
	size_t primed = count < SK_AHEAD ? count : SK_AHEAD;
	for (size_t j = 0; j < primed; j++) {
		sk_xxh3_128(keys[j].p, keys[j].n, seed, &ring[j]);
		sk_prefetch_hashed(cells, mask, rows, ring[j], 1);
		if (fleet)
			sk_prefetch_hashed(fleet, mask, rows, ring[j], 0);
	}
	for (size_t i = 0; i < count; i++) {
		sk_u128 h = ring[i % SK_AHEAD];
		size_t next = i + SK_AHEAD;
		if (next < count) {
			sk_xxh3_128(keys[next].p, keys[next].n, seed, &ring[i % SK_AHEAD]);
			sk_prefetch_hashed(cells, mask, rows, ring[i % SK_AHEAD], 1);
			if (fleet)
				sk_prefetch_hashed(fleet, mask, rows, ring[i % SK_AHEAD], 0);
		}
		uint64_t v = sk_add_cells(cells, fleet, mask, rows, h, n);
		if (est)
			est[i] = v;
	}
	if (stripe)
		sk_add_cell(stripe, count * n);
}

/* sk_raise_cells is a conservative update of the key in lane, a grid
 * with one writer, the caller (internal/cells/countmin.go's RaiseLane):
 * each counter is raised to the least of the key's plus n, saturating.
 * With one writer a plain load and store lose nothing, and on the common
 * CPUs a relaxed atomic store is a plain store: no locked instruction. */
static inline void sk_raise_cells(uint64_t *lane, uint64_t mask, uint32_t rows, sk_u128 h, uint64_t n)
{
	uint64_t h2 = h.hi | 1, least = UINT64_MAX;
	uint64_t *row = lane;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1) {
		uint64_t v = atomic_load_explicit(SK_ATOMIC(&row[sk_spread(h.lo + (uint64_t)i * h2) & mask]), memory_order_relaxed);
		if (v < least)
			least = v;
	}
	uint64_t to = least + n;
	if (to > SK_MAX_COUNT || to < least)
		to = SK_MAX_COUNT;
	row = lane;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1) {
		uint64_t *c = &row[sk_spread(h.lo + (uint64_t)i * h2) & mask];
		if (atomic_load_explicit(SK_ATOMIC(c), memory_order_relaxed) < to)
			atomic_store_explicit(SK_ATOMIC(c), to, memory_order_relaxed);
	}
}

/* sk_cms_raise_batch raises each key of a chunk by n in lane, then moves
 * the add count (sk_cms_add_batch's order), fetching ahead over a grid
 * larger than the caches. */
void sk_cms_raise_batch(uint64_t *lane, uint64_t *stripe, uint64_t seed, uint64_t mask, uint32_t rows,
			int prefetch, const sk_key *keys, size_t count, uint64_t n)
{
	if (count == 0)
		return;
	if (!prefetch) {
		for (size_t i = 0; i < count; i++) {
			sk_u128 h;
			sk_xxh3_128(keys[i].p, keys[i].n, seed, &h);
			sk_raise_cells(lane, mask, rows, h, n);
		}
	} else {
		sk_u128 ring[SK_AHEAD];
		size_t primed = count < SK_AHEAD ? count : SK_AHEAD;
		for (size_t j = 0; j < primed; j++) {
			sk_xxh3_128(keys[j].p, keys[j].n, seed, &ring[j]);
			sk_prefetch_hashed(lane, mask, rows, ring[j], 1);
		}
		for (size_t i = 0; i < count; i++) {
			sk_u128 h = ring[i % SK_AHEAD];
			size_t next = i + SK_AHEAD;
			if (next < count) {
				sk_xxh3_128(keys[next].p, keys[next].n, seed, &ring[i % SK_AHEAD]);
				sk_prefetch_hashed(lane, mask, rows, ring[i % SK_AHEAD], 1);
			}
			sk_raise_cells(lane, mask, rows, h, n);
		}
	}
	if (stripe)
		sk_add_cell(stripe, count * n);
}

void sk_cms_estimate_batch(const uint64_t *cells, const uint64_t *fleet, uint64_t seed, uint64_t mask, uint32_t rows,
			   int prefetch, const sk_key *keys, size_t count, uint64_t *est)
{
	if (!prefetch) {
		for (size_t i = 0; i < count; i++)
			est[i] = sk_cms_estimate(cells, fleet, seed, mask, rows, keys[i].p, keys[i].n);
		return;
	}
	sk_u128 ring[SK_AHEAD];
	size_t primed = count < SK_AHEAD ? count : SK_AHEAD;
	for (size_t j = 0; j < primed; j++) {
		sk_xxh3_128(keys[j].p, keys[j].n, seed, &ring[j]);
		sk_prefetch_hashed(cells, mask, rows, ring[j], 0);
		if (fleet)
			sk_prefetch_hashed(fleet, mask, rows, ring[j], 0);
	}
	for (size_t i = 0; i < count; i++) {
		sk_u128 h = ring[i % SK_AHEAD];
		size_t next = i + SK_AHEAD;
		if (next < count) {
			sk_xxh3_128(keys[next].p, keys[next].n, seed, &ring[i % SK_AHEAD]);
			sk_prefetch_hashed(cells, mask, rows, ring[i % SK_AHEAD], 0);
			if (fleet)
				sk_prefetch_hashed(fleet, mask, rows, ring[i % SK_AHEAD], 0);
		}
		est[i] = sk_estimate_hashed(cells, fleet, mask, rows, h);
	}
}

int sk_cms_row_sums(const uint64_t *cells, uint64_t mask, uint32_t rows, uint64_t *sums)
{
	int saturated = 0;
	const uint64_t *row = cells;
	for (uint32_t i = 0; i < rows; i++, row += mask + 1) {
		uint64_t sum = 0;
		for (uint64_t j = 0; j <= mask; j++) {
			uint64_t v = atomic_load_explicit(SK_ATOMIC(&row[j]), memory_order_relaxed);
			if (v >= SK_MAX_COUNT)
				saturated = 1;
			sum = sum + v < sum ? UINT64_MAX : sum + v;
		}
		sums[i] = sum;
	}
	return saturated;
}

/* sk_cms_adds sums the stripes, saturating at SK_MAX_COUNT as a counter
 * does. */
uint64_t sk_cms_adds(const uint64_t *stripes)
{
	uint64_t sum = 0;
	for (int i = 0; i < SK_STRIPES; i++) {
		uint64_t v = atomic_load_explicit(SK_ATOMIC(&stripes[i * SK_STRIPE_WORDS]), memory_order_relaxed);
		sum = sum + v < sum ? UINT64_MAX : sum + v;
	}
	return sum < SK_MAX_COUNT ? sum : SK_MAX_COUNT;
}

/* sk_cms_reset is not atomic (the package documents that): plain aligned
 * 8-byte stores (memset) land before or after a concurrent atomic add,
 * never inside one, and are several times faster than a store a word. */
void sk_cms_reset(uint64_t *cells, uint64_t *stripes, uint64_t mask, uint32_t rows)
{
	memset(cells, 0, (size_t)rows * (mask + 1) * sizeof(uint64_t));
	for (int i = 0; i < SK_STRIPES; i++)
		atomic_store_explicit(SK_ATOMIC(&stripes[i * SK_STRIPE_WORDS]), 0, memory_order_relaxed);
}
