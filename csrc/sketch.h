/*
 * sketch.h is the ABI between the Go package and its C core. Every word the
 * C core touches in the mapping is one the Go core touches with sync/atomic:
 * the counters are accessed with C11 atomics here and with sync/atomic there,
 * so a cgo process and a pure-Go process can share one file at once.
 *
 * Keep in sync with internal/cells/countmin.go (the pure-Go core) and internal/cellsc/countmin.go (the binding).
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

/* sk_spread places a probe: probe i of a key (a Count-Min row's column, a
 * counting Bloom filter's counter) is sk_spread(lo + i*(hi|1)) & mask.
 * It is murmur3's 64-bit finaliser, so that two keys' probes agree mod
 * the width independently from one probe to the next (without it, keys
 * whose lo and hi agree mod the width share every probe). Keep in sync
 * with column.go's spread. */
static inline uint64_t sk_spread(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	x *= UINT64_C(0xc4ceb9fe1a85ec53);
	x ^= x >> 33;
	return x;
}

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
 * row-major; stripes holds SK_STRIPES add counters SK_STRIPE_WORDS apart,
 * and stripe is the one of them an add counts in (the caller picks it).
 * prefetch asks batches to hash and fetch SK_AHEAD keys ahead. fleet is
 * the fleet part, a grid of cells' shape that every read adds to cells'
 * (saturating at SK_MAX_COUNT) and no add writes, or NULL without one. */
uint64_t sk_cms_add(uint64_t *cells, const uint64_t *fleet, uint64_t *stripe, uint64_t seed, uint64_t mask, uint32_t rows,
		    const uint8_t *key, size_t len, uint64_t n);
uint64_t sk_cms_estimate(const uint64_t *cells, const uint64_t *fleet, uint64_t seed, uint64_t mask, uint32_t rows,
			 const uint8_t *key, size_t len);
void sk_cms_add_batch(uint64_t *cells, const uint64_t *fleet, uint64_t *stripe, uint64_t seed, uint64_t mask, uint32_t rows,
		      int prefetch, const sk_key *keys, size_t count, uint64_t n, uint64_t *est);
/* sk_cms_raise_batch is a blind batch of conservative updates into lane,
 * a grid only the caller writes. */
void sk_cms_raise_batch(uint64_t *lane, uint64_t *stripe, uint64_t seed, uint64_t mask, uint32_t rows,
			int prefetch, const sk_key *keys, size_t count, uint64_t n);
void sk_cms_estimate_batch(const uint64_t *cells, const uint64_t *fleet, uint64_t seed, uint64_t mask, uint32_t rows,
			   int prefetch, const sk_key *keys, size_t count, uint64_t *est);
/* sk_cms_row_sums stores each row's sum (saturating) and returns 1 when a
 * counter has saturated. */
int sk_cms_row_sums(const uint64_t *cells, uint64_t mask, uint32_t rows, uint64_t *sums);
uint64_t sk_cms_adds(const uint64_t *stripes);
void sk_cms_reset(uint64_t *cells, uint64_t *stripes, uint64_t mask, uint32_t rows);

#define SK_AHEAD 8

void sk_noop(void);

/* The file's reader/writer lock (lock.c), the protocol of lock_linux.go
 * word for word (docs/DESIGN.md), so that a C batch can take the lock, do
 * its updates and release it in one crossing while pure-Go processes take
 * the same lock in Go. sk_lock is one handle's view of it; the Go side fills
 * it from package sketch's fileLock (lock_cgo.go, through csrc/lock.go, which
 * mirrors this layout: keep the three in sync). Every pointer is into the
 * shared mapping, so one handle may lock in Go at one moment and in C at
 * the next. */
typedef struct {
	uint32_t *state; /* the futex word of the lock */
	uint32_t *drain; /* futex word of a writer waiting for readers */
	uint32_t *hw;    /* one past the highest reader slot claimed */
	uint64_t *slots; /* the reader-slot table, nslots words */
	uint64_t *slot;  /* this handle's slot; NULL for a slotless handle */
	uint64_t *tokens; /* the token table, nslots records of two words (token_linux.go) */
	uint64_t self;   /* this process in a record: PID namespace and PID */
	uint64_t owner;  /* this process in a record's second word: its start time */
	uint32_t nslots;
	uint32_t id;     /* this handle's token id */
	int32_t fd;      /* holds the handle's token byte; asks about others */
	int64_t timeout; /* ns a lock wait may last (> 0): SK_LOCK_TIMEDOUT past it */
} sk_lock;

/* sk_lock_write and sk_lock_read return it when a live holder kept the
 * lock past the sk_lock's timeout; they then hold nothing. */
#define SK_LOCK_TIMEDOUT 1

/* sk_lock_write takes the write lock, sleeping while others hold it and
 * recovering it from a dead holder: 0, or SK_LOCK_TIMEDOUT. The lock is per
 * handle, not per thread. */
int sk_lock_write(sk_lock *l);
/* sk_unlock_write releases the write lock: 0, or -1 touching nothing when
 * the lock is no longer this handle's (it was recovered from it as dead). */
int sk_unlock_write(sk_lock *l);
/* sk_lock_read and sk_unlock_read take and release the read lock; a
 * slotless handle takes the write lock instead. sk_lock_read returns 0, or
 * SK_LOCK_TIMEDOUT. */
int sk_lock_read(sk_lock *l);
void sk_unlock_read(sk_lock *l);

/* Counting Bloom filter operations (cbf.c; keep in sync with
 * internal/cells/countingbloom.go and the binding in cbf.go). words holds (mask+1)/8
 * words of eight 4-bit counters: counter i is in byte i/2, the low nibble
 * when i is even. Probe i of a key is sk_spread(lo + i*(hi|1)) & mask. */
#define SK_CBF_MAX 15      /* counters saturate here and stick */
#define SK_CBF_FROZEN (-1) /* sk_cbf_add_batch found the file sealed */
#define SK_CBF_TIMEDOUT (-2) /* sk_cbf_add_batch's lock wait timed out */
#define SK_CBF_AHEAD 8     /* keys hashed and prefetched ahead */

/* sk_cbf_add_batch adds each key once and returns how many were new (one
 * of their counters was zero); already, when not NULL, receives 1 for a
 * key that was not new, else 0. It returns SK_CBF_FROZEN, adding nothing, when
 * *sealed is not zero. It takes lock's read lock around the batch when
 * lock is not NULL (Linux only: elsewhere lock must be NULL); with NULL,
 * the caller holds it; SK_CBF_TIMEDOUT, adding nothing, when that lock wait
 * timed out. prefetch asks it to fetch SK_CBF_AHEAD keys ahead. When
 * adds is not NULL, count is added to it (a stripe of the add count)
 * before the lock is released, so that a Reset or Freeze, which take the
 * write lock, find each batch counted whole or not at all. */
int64_t sk_cbf_add_batch(uint32_t *words, const uint32_t *sealed, sk_lock *lock, uint64_t seed, uint64_t mask,
			uint32_t k, int prefetch, const sk_key *keys, size_t count, uint8_t *already, uint64_t *adds);
/* sk_cbf_count_set returns how many counters are above zero. */
uint64_t sk_cbf_count_set(const uint32_t *words, uint64_t nwords);
/* sk_cbf_merge adds src (nwords native-endian words, any alignment) into
 * words counter by counter, saturating; sk_cbf_reset zeroes words. The
 * caller holds the write lock for both. */
void sk_cbf_merge(uint32_t *words, const uint8_t *src, uint64_t nwords);
void sk_cbf_reset(uint32_t *words, uint64_t nwords);

/* Bloom filter batches (bloom.c; keep in sync with internal/cells/bloom.go and the
 * binding in bloom.go). words holds blocks x SK_BLOOM_WORDS words: a key's
 * block is the high word of lo * blocks, its probe i bit x_i >> 55 of the
 * block (bit j is bit j % 64 of word j / 64), x_0 = hi | 1 and
 * x_(i+1) = x_i * SK_BLOOM_MUL. */
#define SK_BLOOM_WORDS 8 /* a block: 512 bits, one cache line */
#define SK_BLOOM_MUL UINT64_C(0x9e3779b97f4a7c15)
#define SK_BLOOM_AHEAD 8 /* keys hashed and prefetched ahead */
#define SK_BLOOM_MAX_HASHES 32

/* sk_bloom_init fills the probe multipliers; call it once before any
 * batch. */
void sk_bloom_init(void);

/* sk_bloom_add_batch adds each key and returns how many set at least one
 * bit; already, when not NULL, receives 1 for a key whose bits were all
 * set, else 0. sk_bloom_contains_batch stores 1 in out for a key whose bits
 * are all set, else 0, and returns how many are. prefetch asks them to
 * fetch SK_BLOOM_AHEAD keys' blocks ahead. */
uint64_t sk_bloom_add_batch(uint64_t *words, uint64_t seed, uint64_t blocks, uint32_t k, int prefetch,
			   const sk_key *keys, size_t count, uint8_t *already);
uint64_t sk_bloom_contains_batch(uint64_t *words, uint64_t seed, uint64_t blocks, uint32_t k, int prefetch,
			     const sk_key *keys, size_t count, uint8_t *out);

/* Distinct count batches (distinct.c; keep in sync with internal/cells/distinct.go,
 * murmur.go and the binding in distinct.go). regs holds 2^p one-byte
 * registers, register j byte j of the array, read and written as native
 * uint64 words. A key's hash h depends on the profile: the low word of
 * XXH3-128 with seed (SK_HLL_SEEDED), MurmurHash64A with SK_REDIS_HLL_SEED
 * (SK_HLL_REDIS), or the first half of MurmurHash3_x64_128 with seed 0
 * (SK_HLL_POSTGRESQL); its register is h & (2^p - 1), its rank 1 + the
 * trailing zeros of (h >> p) | 2^(64-p). */
#define SK_REDIS_HLL_SEED UINT64_C(0xadc83b19)
#define SK_HLL_SEEDED 0
#define SK_HLL_REDIS 1
#define SK_HLL_POSTGRESQL 2

/* sk_murmur64a is MurmurHash64A, the blocks read little-endian. */
uint64_t sk_murmur64a(const uint8_t *key, size_t len, uint64_t seed);
/* sk_murmur3_x64 is the first half (h1) of MurmurHash3_x64_128, the
 * blocks read little-endian. */
uint64_t sk_murmur3_x64(const uint8_t *key, size_t len, uint32_t seed);
/* sk_hll_add_batch adds each key, hashed as profile says, and returns how
 * many raised a register. */
uint64_t sk_hll_add_batch(uint64_t *regs, uint64_t seed, uint32_t p, int profile, const sk_key *keys, size_t count);

/* GCRA rate limiter batches (gcra.c; keep in sync with
 * internal/cells/gcra.go and the binding in gcra.go). cells holds rows x
 * (mask+1) theoretical arrival times in Unix nanoseconds, row-major, 0 for
 * never; a key's TAT is the least of its cells (row i's column placed as a
 * Count-Min row's). */
#define SK_GCRA_MAX_ROWS 16

/* sk_gcra_allow_batch decides each key in order at now with cost (at least
 * 1): next = max(TAT, now) + cost*interval, allowed when next - now <=
 * window, and then every cell read below next is raised to it with a CAS
 * from the value read (a failed CAS decides again). allowed receives 1 or
 * 0 and tats the TAT after each decision; it returns how many were
 * allowed. */
uint64_t sk_gcra_allow_batch(uint64_t *cells, uint64_t seed, uint64_t mask, uint32_t rows, uint64_t interval,
			     uint64_t window, uint64_t now, uint64_t cost, const sk_key *keys, size_t count,
			     uint8_t *allowed, uint64_t *tats);

#endif
