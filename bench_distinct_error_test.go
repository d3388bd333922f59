package sketch

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"testing"
)

// BenchmarkDistinctError measures a distinct count's relative error
// against the exact count, n distinct keys (sequential numbers, 8 bytes)
// at precisions 10, 14 and 18, for n = 10 to 10^9: "bias-%" is the mean
// relative error over the runs (each with its own seed), "rms/σ" the
// root mean square relative error over the theoretical standard error
// 1.04/sqrt(2^p). Runs: 100 up to n = 10^6, 50 at 10^7, 20 at 10^8 and
// 10 at 10^9 (about 13·10^9 adds a precision: minutes). One pass per
// benchmark whatever b.N; make test's smoke run (-benchtime=1x) stops at
// n = 10^4.
func BenchmarkDistinctError(b *testing.B) {
	top := 9
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		top = 4
	}
	for _, p := range []int{10, 14, 18} {
		for e := 1; e <= top; e++ {
			n := uint64(math.Pow10(e))
			runs := 10
			switch {
			case e <= 6:
				runs = 100
			case e == 7:
				runs = 50
			case e == 8:
				runs = 20
			}
			b.Run(fmt.Sprintf("p=%d/n=1e%d", p, e), func(b *testing.B) {
				for b.Loop() {
					bias, rms := distinctError(b, p, n, runs)
					b.ReportMetric(100*bias, "bias-%")
					b.ReportMetric(rms/distinctStdError(uint(p)), "rms/σ")
				}
			})
		}
	}
}

// distinctError adds n distinct keys to runs counts of precision p, each
// with its own seed, and returns the mean and the root mean square of the
// relative error.
func distinctError(b *testing.B, p int, n uint64, runs int) (mean, rms float64) {
	keys := make([][]byte, 256)
	buf := make([]byte, 8*len(keys))
	for i := range keys {
		keys[i] = buf[8*i : 8*i+8]
	}
	for r := range runs {
		d, err := OpenDistinct(Memory(), DistinctConfig{Precision: p, Seed: uint64(r)*0x9e3779b97f4a7c15 + 1})
		if err != nil {
			b.Fatal(err)
		}
		for i := uint64(0); i < n; {
			k := min(uint64(len(keys)), n-i)
			for j := range k {
				binary.LittleEndian.PutUint64(keys[j], i+j)
			}
			if err := d.AddBatch(keys[:k]); err != nil {
				b.Fatal(err)
			}
			i += k
		}
		rel := (float64(d.Stats().Estimate) - float64(n)) / float64(n)
		mean += rel
		rms += rel * rel
		d.Close()
	}
	return mean / float64(runs), math.Sqrt(rms / float64(runs))
}
