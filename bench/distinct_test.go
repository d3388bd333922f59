package bench

import (
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/axiomhq/hyperloglog"

	"github.com/shmsketch/sketch"
)

// Distinct counts at 16384 registers: sketch.Distinct (a shared file,
// one-byte registers raised by a CAS, XXH3 or Redis's MurmurHash64A,
// Ertl's estimator) beside axiomhq/hyperloglog (New14: heap, sparse then
// dense registers, metro hash, LogLog-Beta estimator, not safe for
// concurrent use) on the same keys: the uniform stream (1M distinct keys,
// 512K a pass).

func openDistinct(b *testing.B, cfg sketch.DistinctConfig) *sketch.Distinct {
	d, err := sketch.OpenDistinct(sketch.Path(filepath.Join(b.TempDir(), "hll")), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

// BenchmarkDistinctAdd adds one key per op, in one goroutine and in two
// (axiomhq behind a sync.Mutex, which it needs to be shared), and in
// batches of 256 (ns per key).
func BenchmarkDistinctAdd(b *testing.B) {
	keys, _, mask := uniformKeys()
	ours := openDistinct(b, sketch.DistinctConfig{Seed: seed})
	redis := openDistinct(b, sketch.DistinctConfig{Redis: true})
	theirs := hyperloglog.New14()
	var mu sync.Mutex
	parallel := func(add func(key []byte)) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetParallelism(1)
			var w sync.WaitGroup
			per := b.N / 2
			for g := range 2 {
				w.Add(1)
				go func() {
					defer w.Done()
					for i := g * per; i < (g+1)*per; i++ {
						add(keys[i&mask])
					}
				}()
			}
			w.Wait()
		}
	}
	runOps(b, op{"sketch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ours.Add(keys[i&mask])
		}
	}}, op{"sketch-redis", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			redis.Add(keys[i&mask])
		}
	}}, op{"axiomhq", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			theirs.Insert(keys[i&mask])
		}
	}}, op{"sketch-2goroutines", parallel(func(k []byte) { ours.Add(k) })},
		op{"axiomhq-mutex-2goroutines", parallel(func(k []byte) {
			mu.Lock()
			theirs.Insert(k)
			mu.Unlock()
		})},
		op{"sketch-batch256", func(b *testing.B) {
			for i := 0; i < b.N; i += 256 {
				j := i & mask
				ours.AddBatch(keys[j:min(j+256, len(keys))])
			}
		}})
}

// BenchmarkDistinctCount asks for the count: sketch's cached (nothing
// changed since the last Count), sketch's after an add raised a register
// (a walk of the registers), axiomhq's Estimate (a walk every time).
func BenchmarkDistinctCount(b *testing.B) {
	keys, _, _ := uniformKeys()
	ours := openDistinct(b, sketch.DistinctConfig{Seed: seed})
	theirs := hyperloglog.New14()
	ours.AddBatch(keys)
	for _, k := range keys {
		theirs.Insert(k)
	}
	fresh := openDistinct(b, sketch.DistinctConfig{Seed: seed})
	runOps(b, op{"sketch-cached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink += ours.Count()
		}
	}}, op{"sketch-changed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			fresh.Reset() // counts a change: the next Count walks
			sink += fresh.Count()
		}
	}}, op{"axiomhq", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			sink += theirs.Estimate()
		}
	}})
}

// TestDistinctError prints the relative error of both at several n on
// the same distinct keys (go test -run TestDistinctError -v), and fails
// when sketch's is past 4 standard errors.
func TestDistinctError(t *testing.T) {
	ours, err := sketch.OpenDistinct(sketch.Memory(), sketch.DistinctConfig{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	theirs := hyperloglog.New14()
	var buf []byte
	n := 0
	t.Logf("%10s %12s %12s", "n", "sketch", "axiomhq")
	for _, upTo := range []int{10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000} {
		if testing.Short() && upTo > 100_000 {
			break
		}
		for ; n < upTo; n++ {
			buf = appendKey(buf[:0], uint64(n))
			ours.Add(buf)
			theirs.Insert(buf)
		}
		e1 := (float64(ours.Count()) - float64(n)) / float64(n)
		e2 := (float64(theirs.Estimate()) - float64(n)) / float64(n)
		t.Logf("%10d %+11.3f%% %+11.3f%%", n, 100*e1, 100*e2)
		if math.Abs(e1) > 4*ours.StdError()+1/float64(n) {
			t.Error(fmt.Sprintf("sketch: count %d for %d keys", ours.Count(), n))
		}
	}
}
