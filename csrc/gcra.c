//go:build cgo && !purego

/*
 * gcra.c: the GCRA rate limiter's batches in C. Keep in sync with
 * internal/cells/gcra.go: the same cells, each key's reads in row order,
 * then its CASes from the values read in row order, the decision taken
 * again when one of them finds its cell moved.
 */
#include <stdatomic.h>

#include "sketch.h"
#include "xxh3.h"

#define SK_G64(p) ((_Atomic uint64_t *)(p))

/* sk_gcra_decide decides one key: 1 allowed, 0 refused; *tat receives the
 * key's TAT after it (the new one when allowed). */
static int sk_gcra_decide(uint64_t *cells, uint64_t mask, uint32_t rows, sk_u128 h, uint64_t interval,
			  uint64_t window, uint64_t now, uint64_t cost, uint64_t *tat)
{
	uint64_t *cell[SK_GCRA_MAX_ROWS];
	uint64_t read[SK_GCRA_MAX_ROWS];
	uint64_t h2 = h.hi | 1;
	for (uint32_t i = 0; i < rows; i++)
		cell[i] = cells + (uint64_t)i * (mask + 1) + (sk_spread(h.lo + (uint64_t)i * h2) & mask);
	for (;;) {
		uint64_t least = UINT64_MAX;
		for (uint32_t i = 0; i < rows; i++) {
			read[i] = atomic_load_explicit(SK_G64(cell[i]), memory_order_seq_cst);
			if (read[i] < least)
				least = read[i];
		}
		uint64_t next = (least > now ? least : now) + cost * interval;
		if (next - now > window) {
			*tat = least;
			return 0;
		}
		uint32_t i = 0;
		for (; i < rows; i++) {
			uint64_t want = read[i];
			if (want < next &&
			    !atomic_compare_exchange_strong_explicit(SK_G64(cell[i]), &want, next, memory_order_seq_cst,
								     memory_order_seq_cst))
				break;
		}
		if (i == rows) {
			*tat = next;
			return 1;
		}
	}
}

uint64_t sk_gcra_allow_batch(uint64_t *cells, uint64_t seed, uint64_t mask, uint32_t rows, uint64_t interval,
			     uint64_t window, uint64_t now, uint64_t cost, const sk_key *keys, size_t count,
			     uint8_t *allowed, uint64_t *tats)
{
	uint64_t n = 0;
	for (size_t j = 0; j < count; j++) {
		sk_u128 h;
		sk_hash128(keys[j].p, keys[j].n, seed, &h);
		allowed[j] = (uint8_t)sk_gcra_decide(cells, mask, rows, h, interval, window, now, cost, &tats[j]);
		n += allowed[j];
	}
	return n;
}
