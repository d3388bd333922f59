/*
 * sketch.c is the C core: hashing, the counter updates and the walks over
 * whole arrays. It is compiled into the package by core_c.go, which includes
 * it in its cgo preamble (cgo builds only .c files in the package directory).
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
