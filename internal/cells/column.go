package cells

// column.go: where a key's probe lands, shared by the Count-Min rows and
// the counting Bloom filter's probes. Keep in sync with sk_spread in
// csrc/sketch.h.
//
// A key hashes to h1 and h2 (XXH3-128's words, h2 made odd), and its probe
// i is spread(h1 + i·h2) mod the power-of-two width. Without spread, two
// keys whose h1 and h2 agree mod the width (2/width² of pairs) share a
// counter in every row, so that rows past about log2(width) add nothing:
// a 12 x 512 sketch left 1.1e-3 of keys over its error bound, not 1e-5,
// and a counting Bloom filter of 10 keys in 256 counters answered 180
// times its target rate. spread is murmur3's 64-bit finaliser, a
// bijection whose every output bit depends on every input bit, so the
// probes of two keys agree mod the width independently from row to row.
// Since h2 is odd, the k values h1 + i·h2 differ, and so do their spreads.
// The running sum h1 + i·h2 stays cheap to step; only the finaliser (two
// multiplies) is added a probe.

// Spread is murmur3's fmix64.
func Spread(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
