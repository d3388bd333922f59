//go:build cgo && !purego

package sketch

import (
	"fmt"
	"testing"

	"github.com/shmsketch/sketch/internal/cellsc"
)

func init() {
	cbfParityExtra = append(cbfParityExtra, cellsc.CountingBloom{Always: true})
}

// TestCountingBloom_CAllocs: the C core's calls allocate nothing, in one
// crossing or in chunks, fetching ahead or not.
func TestCountingBloom_CAllocs(t *testing.T) {
	b := mustCBF(t, CountingBloomConfig{Capacity: 1000})
	few, many := make([][]byte, 9), make([][]byte, 600)
	for i := range many {
		many[i] = cbfKey("allocs", i)
	}
	copy(few, many)
	for _, core := range []cellsc.CountingBloom{{}, {Always: true}} {
		b.core = core
		for name, f := range map[string]func(){
			"AddBatch(9)":   func() { b.AddBatch(few, nil) },
			"AddBatch(600)": func() { b.AddBatch(many, nil) },
			"Stats":         func() { b.Stats() },
			"Clear":         func() { b.Reset() },
		} {
			if n := testing.AllocsPerRun(100, f); n != 0 {
				t.Errorf("%s: %s allocates %.1f times a call", core.Name(), name, n)
			}
		}
	}
}

// BenchmarkCountingBloomAhead times the C core's AddMany per key, 256 keys
// a crossing, fetching ahead or not, on filters from a sixteenth of a
// 1 MiB L2 to eight times it: where fetching ahead starts to pay
// (countingBloomCgo.filter).
func BenchmarkCountingBloomAhead(b *testing.B) {
	_, u, _ := benchStreams()
	keys, mask := u.bytes, len(u.bytes)-1
	for _, capacity := range []uint64{10_000, 30_000, 60_000, 120_000, 1_000_000} {
		f, err := OpenCountingBloom(Memory(), CountingBloomConfig{Capacity: capacity, FPRate: 0.01, Seed: benchSeed})
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := f.AddBatch(keys[:capacity/2], nil); err != nil {
			b.Fatal(err)
		}
		for _, ahead := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dKiB/ahead=%v", f.Counters()/2048, ahead), func(b *testing.B) {
				fl := cellsc.CountingBloom{}.Filter(&f.l, f.sealed)
				fl.Prefetch = ahead
				b.ReportAllocs()
				for i := 0; i < b.N; i += 256 {
					start := i & mask
					f.lk.rlock()
					fl.AddBatch(keys[start:start+256], nil)
					f.lk.runlock()
				}
			})
		}
	}
}
