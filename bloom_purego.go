//go:build !cgo || purego

package sketch

// Keep in sync with bloom_c.go.

// defaultBloomCore serves the Bloom filter's batches and walks.
var defaultBloomCore bloomCore = bloomGo{}
