//go:build cgo && !purego

/*
 * cbf.c: the counting Bloom filter in C. Keep in sync with
 * internal/cells/countingbloom.go: the same nibbles, the same probes, the same
 * saturation, one compare-and-swap per counter on its aligned 32-bit word.
 */
#include <stdatomic.h>
#include <string.h>

#include "sketch.h"
#include "xxh3.h"

#if !defined(__BYTE_ORDER__)
#error "cbf.c needs __BYTE_ORDER__ to place the nibbles"
#endif

/* The counters are plain uint32_t words for Go; C reaches them as atomics
 * of the same size and alignment. */
#define SK_A32(p) ((_Atomic uint32_t *)(p))
#define SK_CA32(p) ((const _Atomic uint32_t *)(p))
#define SK_A64(p) ((_Atomic uint64_t *)(p))

/* sk_cbf_shift is the bit position of counter i in its native word. It is
 * in byte i/2 mod 4 of the word, the low nibble when i is even: byte j is
 * bits 8j.. of a little-endian word and bits 8(3-j).. of a big-endian one.
 * Go's nibbleShift. */
static inline unsigned sk_cbf_shift(uint64_t i)
{
	unsigned sh = (unsigned)(i & 7) * 4;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	sh ^= 24;
#endif
	return sh;
}

/* sk_cbf_inc adds one to counter i unless it is saturated, and returns
 * its value before. */
static inline uint32_t sk_cbf_inc(uint32_t *words, uint64_t i)
{
	_Atomic uint32_t *w = SK_A32(&words[i >> 3]);
	unsigned sh = sk_cbf_shift(i);
	uint32_t old = atomic_load_explicit(w, memory_order_relaxed);
	for (;;) {
		uint32_t v = old >> sh & 0xf;
		if (v == SK_CBF_MAX)
			return v;
		if (atomic_compare_exchange_weak_explicit(w, &old, old + ((uint32_t)1 << sh),
							  memory_order_seq_cst, memory_order_relaxed))
			return v;
	}
}

/* sk_cbf_add_hashed increments the key's k counters and returns 1 when one
 * of them was zero before. */
static inline int sk_cbf_add_hashed(uint32_t *words, uint64_t mask, uint32_t k, sk_u128 h)
{
	uint64_t h2 = h.hi | 1;
	int fresh = 0;
	for (uint32_t i = 0; i < k; i++)
		fresh |= sk_cbf_inc(words, sk_spread(h.lo + (uint64_t)i * h2) & mask) == 0;
	return fresh;
}

/* always_inline, as in cms.c: a helper whose only effect is
 * __builtin_prefetch is otherwise judged to do nothing. */
static inline __attribute__((always_inline)) void sk_cbf_prefetch(const uint32_t *words, uint64_t mask, uint32_t k, sk_u128 h)
{
	uint64_t h2 = h.hi | 1;
	for (uint32_t i = 0; i < k; i++)
		__builtin_prefetch(&words[(sk_spread(h.lo + (uint64_t)i * h2) & mask) >> 3], 1, 3);
}

/* sk_cbf_rlock takes lock's read lock when lock is not NULL: 0, or
 * SK_LOCK_TIMEDOUT, holding nothing. */
static int sk_cbf_rlock(sk_lock *lock)
{
#ifdef __linux__
	if (lock)
		return sk_lock_read(lock);
#else
	(void)lock; /* lock.c is Linux-only: elsewhere callers pass NULL */
#endif
	return 0;
}

static void sk_cbf_runlock(sk_lock *lock)
{
#ifdef __linux__
	if (lock)
		sk_unlock_read(lock);
#else
	(void)lock;
#endif
}

/* With prefetch (asked for on filters that do not stay in cache) a batch
 * hashes SK_CBF_AHEAD keys ahead (8: 4 measured slower, 16 no faster)
 * and prefetches their counters' words, so that the cache misses of
 * several keys overlap and the compare-and-swaps find their lines. Without, it does not even touch a key's words first
 * as Go's addHashed does: in cache that only costs. */
int64_t sk_cbf_add_batch(uint32_t *words, const uint32_t *sealed, sk_lock *lock, uint64_t seed, uint64_t mask,
			uint32_t k, int prefetch, const sk_key *keys, size_t count, uint8_t *already, uint64_t *adds)
{
	if (sk_cbf_rlock(lock) != 0)
		return SK_CBF_TIMEDOUT;
	if (sealed && atomic_load(SK_CA32(sealed)) != 0) {
		sk_cbf_runlock(lock);
		return SK_CBF_FROZEN;
	}
	int64_t added = 0;
	if (!prefetch) {
		for (size_t i = 0; i < count; i++) {
			sk_u128 h;
			sk_xxh3_128(keys[i].p, keys[i].n, seed, &h);
			int isnew = sk_cbf_add_hashed(words, mask, k, h);
			added += isnew;
			if (already)
				already[i] = (uint8_t)!isnew;
		}
		if (adds)
			atomic_fetch_add(SK_A64(adds), (uint64_t)count);
		sk_cbf_runlock(lock);
		return added;
	}
	sk_u128 ring[SK_CBF_AHEAD];
	size_t primed = count < SK_CBF_AHEAD ? count : SK_CBF_AHEAD;
	for (size_t j = 0; j < primed; j++) {
		sk_xxh3_128(keys[j].p, keys[j].n, seed, &ring[j]);
		sk_cbf_prefetch(words, mask, k, ring[j]);
	}
	for (size_t i = 0; i < count; i++) {
		sk_u128 h = ring[i % SK_CBF_AHEAD];
		size_t next = i + SK_CBF_AHEAD;
		if (next < count) {
			sk_xxh3_128(keys[next].p, keys[next].n, seed, &ring[i % SK_CBF_AHEAD]);
			sk_cbf_prefetch(words, mask, k, ring[i % SK_CBF_AHEAD]);
		}
		int isnew = sk_cbf_add_hashed(words, mask, k, h);
		added += isnew;
		if (already)
			already[i] = (uint8_t)!isnew;
	}
	if (adds)
		atomic_fetch_add(SK_A64(adds), (uint64_t)count);
	sk_cbf_runlock(lock);
	return added;
}

/* sk_cbf_fold leaves one bit per nibble, at its lowest position: set when
 * any of the nibble's 4 bits is. */
static inline uint64_t sk_cbf_fold(uint64_t v)
{
	return (v | v >> 1 | v >> 2 | v >> 3) & UINT64_C(0x1111111111111111);
}

/* Two words at a time, their set nibbles summed in 4-bit lanes (at most 15
 * pairs, so no lane carries), then the lanes summed with a multiply. No
 * popcount instruction is assumed: baseline x86-64 has none. */
uint64_t sk_cbf_count_set(const uint32_t *words, uint64_t nwords)
{
	uint64_t n = 0, w = 0;
	while (w < nwords) {
		uint64_t lanes = 0;
		for (int pairs = 0; pairs < 15 && w < nwords; pairs++, w += 2) {
			uint64_t v = atomic_load_explicit(SK_CA32(&words[w]), memory_order_relaxed);
			if (w + 1 < nwords)
				v |= (uint64_t)atomic_load_explicit(SK_CA32(&words[w + 1]), memory_order_relaxed) << 32;
			lanes += sk_cbf_fold(v);
		}
		/* Nibble lanes (<= 15) to byte lanes (<= 30), then the 8 bytes'
		 * sum (<= 240) lands in the top byte. */
		lanes = (lanes & UINT64_C(0x0f0f0f0f0f0f0f0f)) + (lanes >> 4 & UINT64_C(0x0f0f0f0f0f0f0f0f));
		n += lanes * UINT64_C(0x0101010101010101) >> 56;
	}
	return n;
}

/* sk_cbf_nibble_add adds two words of eight counters counter by counter,
 * each sum capped at SK_CBF_MAX: the even and the odd nibbles each sum in
 * byte lanes (at most 30, no carry out), and a lane with bit 4 set is
 * over 15. A nibble is a nibble in either byte order. Go's
 * saturatingNibbleAdd. */
static inline uint32_t sk_cbf_nibble_add(uint32_t a, uint32_t b)
{
	uint32_t lo = (a & 0x0f0f0f0fu) + (b & 0x0f0f0f0fu);
	uint32_t hi = (a >> 4 & 0x0f0f0f0fu) + (b >> 4 & 0x0f0f0f0fu);
	lo = (lo | (lo >> 4 & 0x01010101u) * 0xf) & 0x0f0f0f0fu;
	hi = (hi | (hi >> 4 & 0x01010101u) * 0xf) & 0x0f0f0f0fu;
	return lo | hi << 4;
}

/* src is a snapshot of another filter's words, native-endian, in Go memory
 * of no particular alignment. Words it has zero are not written, as in Go,
 * so that their pages stay clean. */
void sk_cbf_merge(uint32_t *words, const uint8_t *src, uint64_t nwords)
{
	for (uint64_t w = 0; w < nwords; w++) {
		uint32_t add;
		memcpy(&add, src + 4 * w, sizeof add);
		if (add == 0)
			continue;
		_Atomic uint32_t *p = SK_A32(&words[w]);
		uint32_t old = atomic_load_explicit(p, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(p, &old, sk_cbf_nibble_add(old, add),
							      memory_order_seq_cst, memory_order_relaxed))
			;
	}
}

/* The caller holds the write lock, so no add or remove runs; lock-free
 * readers see each word whole, before or after. */
void sk_cbf_reset(uint32_t *words, uint64_t nwords)
{
	for (uint64_t w = 0; w < nwords; w++)
		atomic_store_explicit(SK_A32(&words[w]), 0, memory_order_relaxed);
}
