//go:build cgo && !purego

package sketch

import "testing"

// The C core's single-key calls (one cgo crossing per key) and the cost of
// a crossing, for the benchmarks in bench_test.go.

func init() {
	benchCAdd = func(b *testing.B, c *CountMin, keys [][]byte) {
		b.ReportAllocs()
		mask := len(keys) - 1
		var sum uint64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sum += countMinCgo{}.add(&c.l, keys[i&mask], 1)
		}
		benchSink.Add(sum)
	}
	benchCEstimate = func(b *testing.B, c *CountMin, keys [][]byte) {
		b.ReportAllocs()
		mask := len(keys) - 1
		var sum uint64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sum += countMinCgo{}.estimate(&c.l, keys[i&mask])
		}
		benchSink.Add(sum)
	}
}

// BenchmarkCgoCall is one empty crossing into C and back.
func BenchmarkCgoCall(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		emptyCall()
	}
}
