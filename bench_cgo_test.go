//go:build cgo && !purego

package sketch

import (
	"testing"

	"github.com/shmsketch/sketch/internal/cellsc"
)

// The C core's single-key loops (one cgo crossing per key) and the cost of
// a crossing, for the benchmarks in bench_test.go.

func init() {
	benchCAdd = func(c *CountMin, keys [][]byte) benchLoop {
		mask := len(keys) - 1
		return func(b *testing.B) (sum uint64) {
			for i := 0; i < b.N; i++ {
				sum += cellsc.CountMin{}.Add(&c.l, keys[i&mask], 1)
			}
			return sum
		}
	}
	benchCEstimate = func(c *CountMin, keys [][]byte) benchLoop {
		mask := len(keys) - 1
		return func(b *testing.B) (sum uint64) {
			for i := 0; i < b.N; i++ {
				sum += cellsc.CountMin{}.Estimate(&c.l, keys[i&mask])
			}
			return sum
		}
	}
}

// BenchmarkCgoCall is one empty crossing into C and back.
func BenchmarkCgoCall(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		cellsc.EmptyCall()
	}
}
