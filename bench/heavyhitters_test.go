package bench

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/bench/internal/heavy"
	"github.com/shmsketch/sketch/bench/internal/keystream"
)

// Heavy hitters: sketch.CountMin keeping a table of K = 2n candidates
// beside BoomFilters' TopK, which keeps a heap of k = 2n beside its own
// Count-Min (so both list the same number of keys), for the top n = 10
// and 100, on the default shape.
var topNs = []int{10, 100}

// openTable opens a default-shape sketch.CountMin keeping k candidates in
// a temporary file.
func openTable(b *testing.B, k int) *sketch.CountMin {
	c, err := sketch.OpenCountMin(sketch.Path(filepath.Join(b.TempDir(), "cms")), sketch.CountMinConfig{Seed: seed, Candidates: k})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkTopAdd counts one key per op, after one pass of the stream
// (a warm table, a full heap): a plain sketch.CountMin, one keeping K =
// 2n candidates (table; "lock-%" is the share of the timed adds that took
// the file's write lock) and BoomFilters' TopK of k = 2n (boom: FNV-64,
// a Count-Min count after each add and a linear scan of its heap for keys
// loud enough; heap memory, not safe for concurrent use).
func BenchmarkTopAdd(b *testing.B) {
	forStreams(b, func(keys [][]byte, strs []string, mask int) []op {
		ops := []op{{"plain", func(b *testing.B) {
			c := openSketch(b)
			countAll(b, keys, func(k []byte) { c.Add(k) })
			for i := 0; i < b.N; i++ {
				v, _ := c.Add(keys[i&mask])
				sink += v
			}
		}}}
		for _, n := range topNs {
			ops = append(ops, op{fmt.Sprintf("top%d/table", n), func(b *testing.B) {
				c := openTable(b, 2*n)
				countAll(b, keys, func(k []byte) { c.Add(k) })
				before := c.Stats().Candidates.Admissions
				b.ResetTimer() // Stats allocates
				for i := 0; i < b.N; i++ {
					v, _ := c.Add(keys[i&mask])
					sink += v
				}
				b.StopTimer()
				b.ReportMetric(100*float64(c.Stats().Candidates.Admissions-before)/float64(b.N), "lock-%")
			}}, op{fmt.Sprintf("top%d/boom", n), func(b *testing.B) {
				t := boom.NewTopK(errorRate, delta, uint(2*n))
				countAll(b, keys, func(k []byte) { t.Add(k) })
				for i := 0; i < b.N; i++ {
					t.Add(keys[i&mask])
				}
			}})
		}
		return ops
	})
}

// accuracyAdds is the length of an accuracy stream: 10M adds over the 1M
// keys of keystream.Space.
const accuracyAdds = 10_000_000

// accuracySkews are the Zipf exponents of the accuracy streams.
var accuracySkews = []float64{1.1, 1.2}

// topScores is one accuracy pass's scores by top n, the table's and
// BoomFilters'.
type topScores map[int]struct{ table, boom heavy.Score }

// accuracy holds each stream's pass: a pass runs once per process,
// whatever b.N and -count, since it takes seconds and repeats exactly.
var accuracy struct {
	once   sync.Once
	keys   [][]byte
	mu     sync.Mutex
	scores map[float64]topScores
}

// scoresOf makes the pass of Zipf(s) the first time it is asked for: 10M
// adds into every table and heap at once, beside exact counts.
func scoresOf(b *testing.B, s float64) topScores {
	accuracy.once.Do(func() { accuracy.keys = heavy.SpaceKeys(space, appendKey) })
	accuracy.mu.Lock()
	defer accuracy.mu.Unlock()
	if sc, ok := accuracy.scores[s]; ok {
		return sc
	}
	var subjects []heavy.Subject
	for _, n := range topNs {
		c, err := sketch.OpenCountMin(sketch.Memory(), sketch.CountMinConfig{Seed: seed, Candidates: 2 * n})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		subjects = append(subjects,
			heavy.Subject{Lister: heavy.Sketch(c), N: n},
			heavy.Subject{Lister: heavy.Boom(boom.NewTopK(errorRate, delta, uint(2*n))), N: n})
	}
	got, err := heavy.Measure(accuracy.keys, keystream.ZipfNumbers(s), accuracyAdds, subjects)
	if err != nil {
		b.Fatal(err)
	}
	sc := topScores{}
	for i, n := range topNs {
		sc[n] = struct{ table, boom heavy.Score }{got[2*i], got[2*i+1]}
	}
	if accuracy.scores == nil {
		accuracy.scores = map[float64]topScores{}
	}
	accuracy.scores[s] = sc
	return sc
}

// BenchmarkTopAccuracy scores the table (K = 2n) and BoomFilters' TopK
// (k = 2n) against exact counts after 10M adds of Zipf(1.1) and Zipf(1.2)
// over 1M keys: recall (the share of the true top n listed among the K)
// and precision (the share of the first n listed that are in the true top
// n), and the table's lock share over the pass. The pass runs once
// (-benchtime=1x runs it, nothing repeats it); ns/op is left out.
func BenchmarkTopAccuracy(b *testing.B) {
	for _, s := range accuracySkews {
		b.Run(fmt.Sprintf("zipf%v", s), func(b *testing.B) {
			for _, n := range topNs {
				for _, impl := range []string{"table", "boom"} {
					b.Run(fmt.Sprintf("top%d/%s", n, impl), func(b *testing.B) {
						sc := scoresOf(b, s)[n].table
						if impl == "boom" {
							sc = scoresOf(b, s)[n].boom
						}
						for b.Loop() {
						}
						b.ReportMetric(0, "ns/op")
						b.ReportMetric(sc.Recall, "recall")
						b.ReportMetric(sc.Precision, "precision")
						if impl == "table" {
							b.ReportMetric(100*sc.LockShare, "lock-%")
						}
					})
				}
			}
		})
	}
}
