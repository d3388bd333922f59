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
			b.Run(fmt.Sprintf("AddBatch/%s/%d", core.Name(), n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i += n {
					j := i & mask
					d.l.Changed(core.AddBatch(&d.l, keys[j:min(j+n, len(keys))]))
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

// BenchmarkDistinctWindow: a distinct window's adds beside a plain
// count's on the same keys, and its Count cached and walking (the union
// of Keep slots, then the estimate), at the default precision, Keep 1
// and 5.
func BenchmarkDistinctWindow(b *testing.B) {
	s := benchUniform()
	keys, mask := s.bytes, s.mask()
	for _, keep := range []int{1, 5} {
		w := mustIn(b, OpenDistinctWindow, Memory(), DistinctWindowConfig{Window: Window{Keep: keep}, Distinct: DistinctConfig{Seed: benchSeed}})
		for range keep {
			w.AddBatch(s.firstHalf())
			w.Rotate()
		}
		w.AddBatch(s.firstHalf())
		b.Run(fmt.Sprintf("keep=%d/Add", keep), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w.Add(keys[i&mask])
			}
		})
		b.Run(fmt.Sprintf("keep=%d/AddBatch/256", keep), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i += 256 {
				j := i & mask
				w.AddBatch(keys[j:min(j+256, len(keys))])
			}
		})
		b.Run(fmt.Sprintf("keep=%d/Count/cached", keep), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w.Count()
			}
		})
		b.Run(fmt.Sprintf("keep=%d/Count/walk", keep), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w.cache.Store(nil) // as a change would
				w.Count()
			}
		})
	}
}
