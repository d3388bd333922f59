package sketch

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// The candidate table's cost on Add and its accuracy.

// BenchmarkCandidatesAdd is Add on the default shape without a table
// (plain) and with one of 200 candidates (table), on the zipf and uniform
// streams; "lock-%" is the share of adds that took the lock (admissions).
// The table's cost is the ratio of the two, in one run.
func BenchmarkCandidatesAdd(b *testing.B) {
	for _, s := range benchDists() {
		for _, k := range []int{0, 200} {
			name := "plain"
			if k != 0 {
				name = "table"
			}
			b.Run(s.name+"/"+name, func(b *testing.B) {
				c, err := OpenCountMin(Memory(), CountMinConfig{Candidates: k})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				keys, mask := s.bytes, s.mask()
				// A warm table: one pass of the stream first.
				for _, key := range keys {
					c.Add(key)
				}
				var before uint64
				if k != 0 {
					before = c.Stats().Candidates.Admissions
				}
				b.ResetTimer()
				var sum uint64
				for i := 0; i < b.N; i++ {
					v, _ := c.Add(keys[i&mask])
					sum += v
				}
				b.StopTimer()
				benchSink.Add(sum)
				if k != 0 {
					b.ReportMetric(100*float64(c.Stats().Candidates.Admissions-before)/float64(b.N), "lock-%")
				}
			})
		}
	}
}

// accuracyStream is a stream for BenchmarkCandidatesAccuracy: next writes
// the next key into buf, or reports false at the end.
type accuracyStream struct {
	name string
	next func(buf []byte) ([]byte, bool)
}

// zipfAccuracy is n adds of Zipf(s) over space keys.
func zipfAccuracy(s float64, space uint64, n int) accuracyStream {
	z := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), s, 1, space-1)
	i := 0
	return accuracyStream{fmt.Sprintf("zipf%v", s), func(buf []byte) ([]byte, bool) {
		if i++; i > n {
			return buf, false
		}
		return strconv.AppendUint(append(buf[:0], 'k'), z.Uint64()*0x9e3779b97f4a7c15, 16), true
	}}
}

// zipfLightAccuracy is Zipf(s) for s <= 1, which math/rand's Zipf does
// not draw: ranks 1..space with weight rank^-s, by inverse CDF over a
// table. A flatter stream: its loud keys stand out less from the rest.
func zipfLightAccuracy(s float64, space, n int) accuracyStream {
	cdf := make([]float64, space)
	sum := 0.0
	for k := range cdf {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	r := rand.New(rand.NewPCG(3, 4))
	i := 0
	return accuracyStream{fmt.Sprintf("zipf%v", s), func(buf []byte) ([]byte, bool) {
		if i++; i > n {
			return buf, false
		}
		k, _ := slices.BinarySearch(cdf, r.Float64()*sum)
		return strconv.AppendUint(append(buf[:0], 'k'), uint64(k)*0x9e3779b97f4a7c15, 16), true
	}}
}

// textAccuracy is the words of this module's Go and Markdown files, in
// order, again and again up to n words: a stream of real text.
func textAccuracy(b *testing.B, n int) accuracyStream {
	var words [][]byte
	for _, pattern := range []string{"*.go", "*.md", "docs/*.md", "cmd/*/*.go"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			sc := bufio.NewScanner(bytes.NewReader(data))
			sc.Split(bufio.ScanWords)
			for sc.Scan() {
				words = append(words, bytes.Clone(sc.Bytes()))
			}
		}
	}
	i := 0
	return accuracyStream{"text", func(buf []byte) ([]byte, bool) {
		if i++; i > n {
			return buf, false
		}
		return append(buf[:0], words[i%len(words)]...), true
	}}
}

// BenchmarkCandidatesAccuracy measures the table against exact counts:
// 10M adds over 1M keys of Zipf(1.1), Zipf(1.2) and Zipf(0.8), and 10M words of
// text, into the default shape with K = 2n for the top n: recall (the
// share of the true top n the table holds) and precision (the share of
// the listed top n that is the true top n). One pass per run, whatever
// b.N.
func BenchmarkCandidatesAccuracy(b *testing.B) {
	n := 10_000_000
	if f := flag.Lookup("test.benchtime"); f != nil && f.Value.String() == "1x" {
		n = 200_000 // make test's smoke run of every benchmark: that it runs
	}
	streams := []func() accuracyStream{
		func() accuracyStream { return zipfAccuracy(1.1, 1<<20, n) },
		func() accuracyStream { return zipfAccuracy(1.2, 1<<20, n) },
		func() accuracyStream { return zipfLightAccuracy(0.8, 1<<20, n) },
		func() accuracyStream { return textAccuracy(b, n) },
	}
	for _, mk := range streams {
		b.Run(mk().name, func(b *testing.B) {
			for _, top := range []int{10, 100} {
				b.Run(fmt.Sprintf("top%d", top), func(b *testing.B) {
					for b.Loop() {
						recall, precision, lock := candidatesAccuracy(b, mk(), top)
						b.ReportMetric(recall, "recall")
						b.ReportMetric(precision, "precision")
						b.ReportMetric(lock, "lock-%")
					}
				})
			}
		})
	}
}

func candidatesAccuracy(b *testing.B, s accuracyStream, top int) (recall, precision, lockPct float64) {
	c, err := OpenCountMin(Memory(), CountMinConfig{Candidates: 2 * top})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	truth := make(map[string]uint64)
	var buf []byte
	adds := 0
	for {
		var ok bool
		if buf, ok = s.next(buf); !ok {
			break
		}
		c.Add(buf)
		truth[string(buf)]++
		adds++
	}
	hs, err := c.Top(0)
	if err != nil {
		b.Fatal(err)
	}
	want := exactTop(truth, top)
	return recallOf(topKeys(hs), want), recallOf(want, topKeys(hs[:min(top, len(hs))])),
		100 * float64(c.Stats().Candidates.Admissions) / float64(adds)
}
