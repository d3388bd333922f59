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
