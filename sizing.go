package sketch

import "math/bits"

// What the kinds share in turning a config into a size.

// DefaultFPRate is the false-positive rate a Bloom filter is sized for
// when its config leaves FPRate zero.
const DefaultFPRate = 0.01

// nextPow2 returns the smallest power of two at least n (1 for n <= 1).
func nextPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}
