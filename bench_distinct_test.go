package sketch

import (
	"fmt"
	"testing"
)

// BenchmarkDistinct: a distinct count's single adds, its batches by core
// and size (the crossing to C against Go's loop: distinctMinBatch), and
// Count cached and walking the registers, at the default precision.
func BenchmarkDistinct(b *testing.B) {
	s := benchUniform()
	keys, mask := s.bytes, s.mask()
	d := mustDistinct(b, DistinctConfig{Seed: benchSeed})
	d.AddBatch(s.firstHalf())
	b.Run("Add", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			d.Add(keys[i&mask])
		}
	})
	for _, core := range distinctCores() {
		for _, n := range []int{1, 2, 4, 8, 16, 256} {
			b.Run(fmt.Sprintf("AddBatch/%s/%d", core.name(), n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i += n {
					j := i & mask
					d.l.changed(core.addBatch(&d.l, keys[j:min(j+n, len(keys))]))
				}
			})
		}
	}
	b.Run("Count/cached", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			d.Count()
		}
	})
	b.Run("Count/walk", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			d.cache.Store(nil) // as a change would
			d.Count()
		}
	})
}
