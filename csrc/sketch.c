//go:build cgo && !purego

/*
 * sketch.c: the hash entry point of the C core, and a no-op for timing a
 * bare cgo crossing. cgo compiles it as part of package csrc (csrc.go).
 */
#include "sketch.h"
#include "xxh3.h"

void sk_hash128(const uint8_t *key, size_t len, uint64_t seed, sk_u128 *out)
{
	sk_xxh3_128(key, len, seed, out);
}

/* sk_noop does nothing: the benchmarks time a bare cgo crossing with it. */
void sk_noop(void)
{
}
