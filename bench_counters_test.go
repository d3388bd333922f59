package sketch

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// BenchmarkCounters_Stride: goroutines each adding to its own counter,
// the counters 8 bytes apart (one cache line) or 64 (a line each), and
// one goroutine alone: what countersStride chose between. Each op is one
// add by each goroutine.
func BenchmarkCounters_Stride(b *testing.B) {
	for _, tc := range []struct {
		goroutines int
		stride     uintptr
	}{{1, 8}, {2, 8}, {2, 64}} {
		b.Run(fmt.Sprintf("goroutines=%d/stride=%d", tc.goroutines, tc.stride), func(b *testing.B) {
			words := make([]uint64, 32)
			base := unsafe.Pointer(&words[0])
			base = unsafe.Add(base, (64-uintptr(base)%64)%64) // line-aligned
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := 0; g < tc.goroutines; g++ {
				wg.Add(1)
				go func(p *uint64) {
					defer wg.Done()
					for i := 0; i < b.N; i++ {
						atomic.AddUint64(p, 1)
					}
				}((*uint64)(unsafe.Add(base, uintptr(g)*tc.stride)))
			}
			wg.Wait()
		})
	}
}

// BenchmarkCounters: an add by name (the handle's map), through a
// resolved Counter, and a bare atomic add on a word, the floor; Value by
// name; two goroutines adding by name to different counters.
func BenchmarkCounters(b *testing.B) {
	names := []string{"200", "301", "404", "500", "GET /", "GET /api/users", "POST /login", "other"}
	c := mustIn(b, OpenCounters, Memory(), CountersConfig{Names: names})
	k, err := c.Counter("404")
	if err != nil {
		b.Fatal(err)
	}
	var word uint64
	b.Run("AtomicAdd", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			atomic.AddUint64(&word, 1)
		}
	})
	b.Run("Counter.Add", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			k.Add(1)
		}
	})
	b.Run("Add", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c.Add(names[i&7], 1)
		}
	})
	b.Run("Value", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c.Value(names[i&7])
		}
	})
	b.Run("Add/2 goroutines", func(b *testing.B) {
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				for i := 0; i < b.N; i++ {
					c.Add(name, 1)
				}
			}(names[g])
		}
		wg.Wait()
	})
}
