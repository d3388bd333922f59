// Package cells is the hot path of every kind: where a structure's words
// are in the mapping, the hashes, and the Go core of each kind, which
// serves single keys in every build and everything in the pure-Go build.
// It knows cells and hashes, not the package's public types, and imports
// nothing of it.
package cells

// The backends by one rule: each kind's Go core is in <kind>.go here and
// its binding to the C core in internal/cellsc/<kind>.go; the package's
// sketch_cgo.go and sketch_purego.go choose its buildCores, the cores of
// the build. Batches and whole-array walks go to buildCores when they pay
// for a cgo crossing (the thresholds below).

// Cores are one backend's cores, one per kind that has one.
type Cores struct {
	CountMin      CountMinCore
	Bloom         BloomCore
	CountingBloom CountingBloomCore
	Distinct      DistinctCore
	GCRA          GCRACore
}

// Go are the pure-Go cores, in every build: they serve what is too
// small or too cached for a crossing to pay.
var Go = Cores{
	CountMin:      CountMinGo{},
	Bloom:         BloomGo{},
	CountingBloom: CountingBloomGo{},
	Distinct:      DistinctGo{},
	GCRA:          GCRAGo{},
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
	CountMinMinBatch           = 4
	BloomMinBatch              = 4
	CountingBloomMinBatch      = 8
	CountingBloomMinBatchAhead = 2
	// DistinctMinBatch: a distinct count's add is a hash and one CAS on
	// 16 KiB that stay in cache, so C pays once a crossing is shared by a
	// few keys (BenchmarkDistinct).
	DistinctMinBatch = 8
	// GCRAMinBatch: a decision is a hash, a few loads and CASes, like a
	// Count-Min add.
	GCRAMinBatch = 4
)
