package sketch

// The backends by one rule: each kind's Go core is in <kind>_core.go and
// its binding to the C core in <kind>_cgo.go; sketch_cgo.go and
// sketch_purego.go choose buildCores, the cores of this build. Single keys
// are served in Go by every build; batches and whole-array walks go to
// buildCores when they pay for a cgo crossing (the thresholds below).

// cores are one backend's cores, one per kind that has one.
type cores struct {
	countMin      countMinCore
	bloom         bloomCore
	countingBloom countingBloomCore
	distinct      distinctCore
}

// goCores are the pure-Go cores, in every build: they serve what is too
// small or too cached for a crossing to pay.
var goCores = cores{
	countMin:      countMinGo{},
	bloom:         bloomGo{},
	countingBloom: countingBloomGo{},
	distinct:      distinctGo{},
}

// The smallest batches handed to buildCores. A cgo crossing costs about two
// single-key adds, and fetching ahead pays only past the cache, so the
// Count-Min sketch and the Bloom filter send batches to C only when the
// structure is past L2 (a quarter of it for the filter; their prefetch
// flag), and the counting Bloom filter from a smaller batch past the cache
// than in it. Measured on an x86-64 with 1 MiB of L2 (bench_test.go,
// bench_bloom_test.go, BenchmarkCountingBloomAhead and
// BenchmarkCountingBloomBatch): for the counting filter, fetching ahead
// pays once the counters pass a quarter of L2 (a key costs 41 ns instead of
// 45 at half of L2, 42 instead of 49 at L2, the same at a quarter, 3% more
// at a sixteenth), and C is as fast as Go from 8 keys on a filter in cache
// and from 2 on one past it, where a key's cache misses overlap the next
// keys' (4 keys: 215 ns a key against 345).
const (
	countMinMinBatch           = 4
	bloomMinBatch              = 4
	countingBloomMinBatch      = 8
	countingBloomMinBatchAhead = 2
	// distinctMinBatch: a distinct count's add is a hash and one CAS on
	// 16 KiB that stay in cache, so C pays once a crossing is shared by a
	// few keys (BenchmarkDistinct).
	distinctMinBatch = 8
)
