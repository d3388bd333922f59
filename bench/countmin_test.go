// Package bench compares sketch.CountMin with another Count-Min library and
// with an exact counter, in one run. It is its own module so that the
// sketch module does not depend on what it is compared with.
package bench

import (
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/bench/internal/keystream"
)

const (
	seed      = keystream.Seed
	space     = keystream.Space // distinct keys
	streamLen = 1 << 19         // keys in each stream, a power of two
	// errorRate and delta (1 - confidence) are sketch's defaults: 5 rows
	// of 4096 counters for sketch.CountMin, 5 rows of 2719 for BoomFilters,
	// which does not round the width up to a power of two.
	errorRate = sketch.DefaultErrorRate
	delta     = 1 - sketch.DefaultConfidence
)

// stream is a stream of keys (internal/keystream), each key's bytes laid
// out in stream order, as []byte and as string, with the mask that the
// benchmarks index it with.
type stream struct {
	name  string
	bytes [][]byte
	strs  []string
	mask  int
}

var streams struct {
	once          sync.Once
	zipf, uniform stream
}

// keyStreams returns a Zipf(1.1) and a uniform stream over 1M keys, as the
// sketch module's own benchmarks use: half IPv4 addresses, half URL paths,
// 17 bytes on average.
func keyStreams() []*stream {
	streams.once.Do(func() {
		streams.zipf = newStream("zipf")
		streams.uniform = newStream("uniform")
	})
	return []*stream{&streams.zipf, &streams.uniform}
}

func newStream(name string) stream {
	s := keystream.New(name, streamLen, 18, appendKey)
	return stream{name: s.Name, bytes: s.Bytes, strs: s.Strs, mask: len(s.Bytes) - 1}
}

// uniformKeys returns the uniform stream, which the filter benchmarks run,
// as []byte and as string, and the mask to index it with.
func uniformKeys() (keys [][]byte, strs []string, mask int) {
	s := keyStreams()[1]
	return s.bytes, s.strs, s.mask
}

// firstHalf returns the uniform stream's first half, which the filter
// benchmarks' filters hold.
func firstHalf() (keys [][]byte, strs []string) {
	s := keyStreams()[1]
	return s.bytes[:len(s.bytes)/2], s.strs[:len(s.strs)/2]
}

// filter is a filter of the sketch module.
type filter interface {
	AddBatch(keys [][]byte, already []bool) error
	Close() error
}

// openHalf opens a filter with open in a temporary file, closed when b
// ends, and adds the uniform stream's first half to it.
func openHalf[F filter](b *testing.B, open func(sketch.Place) (F, error)) F {
	f, err := open(sketch.Path(filepath.Join(b.TempDir(), "filter")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	keys, _ := firstHalf()
	if err := f.AddBatch(keys, nil); err != nil {
		b.Fatal(err)
	}
	return f
}

var segments = [...]string{"api", "v2", "users", "orders", "static", "images", "search", "products", "account", "blog"}

// appendKey appends key number i: an IPv4 address for even i, a URL path
// for odd i, distinct for every i below 2^33.
func appendKey(dst []byte, i uint64) []byte {
	x := uint32(i>>1) + 0x6A09E667
	x *= 0x9E3779B1
	x ^= x >> 16
	x *= 0x85EBCA6B
	x ^= x >> 13
	if i&1 == 0 {
		for j := 3; j >= 0; j-- {
			dst = strconv.AppendUint(dst, uint64(x>>(8*j)&0xff), 10)
			if j > 0 {
				dst = append(dst, '.')
			}
		}
		return dst
	}
	dst = append(dst, '/')
	dst = append(dst, segments[x%10]...)
	dst = append(dst, '/')
	dst = append(dst, segments[x/10%10]...)
	dst = append(dst, '/')
	return strconv.AppendUint(dst, uint64(x), 36)
}

var sink uint64

// op is one sub-benchmark: its name and its timed loop. A loop that
// prepares its structure first resets the timer after.
type op struct {
	name string
	loop func(b *testing.B)
}

// runOps runs each op as a sub-benchmark, reporting allocations.
func runOps(b *testing.B, ops ...op) {
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			b.ReportAllocs()
			o.loop(b)
		})
	}
}

// forStreams runs, for each stream, the ops mk makes as <dist>/<name>.
func forStreams(b *testing.B, mk func(keys [][]byte, strs []string, mask int) []op) {
	for _, s := range keyStreams() {
		b.Run(s.name, func(b *testing.B) { runOps(b, mk(s.bytes, s.strs, s.mask)...) })
	}
}

// countAll counts every key of keys with add, then resets b's timer.
func countAll(b *testing.B, keys [][]byte, add func(key []byte)) {
	for _, k := range keys {
		add(k)
	}
	b.ResetTimer()
}

// openSketch opens a default-shape sketch.CountMin in a temporary file.
func openSketch(b *testing.B) *sketch.CountMin {
	path := filepath.Join(b.TempDir(), "cms")
	c, err := sketch.OpenCountMin(sketch.Path(path), sketch.CountMinConfig{Seed: seed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// mutexMap is the exact baseline, holding every key of the space.
type mutexMap struct {
	mu sync.Mutex
	m  map[string]uint64
}

var baseline struct {
	once sync.Once
	m    *mutexMap
}

func fullMap() *mutexMap {
	baseline.once.Do(func() {
		m := &mutexMap{m: make(map[string]uint64, space)}
		var buf []byte
		for i := range uint64(space) {
			buf = appendKey(buf[:0], i)
			m.m[string(buf)] = 0
		}
		baseline.m = m
	})
	return baseline.m
}

// BenchmarkAdd counts one key per op: sketch.CountMin (shared file, atomic
// counters, safe for concurrent use), BoomFilters' CountMinSketch (heap,
// FNV-64 through hash.Hash64, not safe for concurrent use) and a
// sync.Mutex + map[string]uint64 holding all 1M keys (m[k]++).
func BenchmarkAdd(b *testing.B) {
	forStreams(b, func(keys [][]byte, strs []string, mask int) []op {
		return []op{{"sketch", func(b *testing.B) {
			c := openSketch(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, _ := c.Add(keys[i&mask])
				sink += v
			}
		}}, {"boom", func(b *testing.B) {
			c := boom.NewCountMinSketch(errorRate, delta)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Add(keys[i&mask])
			}
		}}, {"mutexmap", func(b *testing.B) {
			m := fullMap()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.mu.Lock()
				m.m[strs[i&mask]]++
				m.mu.Unlock()
			}
		}}}
	})
}

// BenchmarkEstimate estimates one key per op, on structures that have
// counted the whole stream once.
func BenchmarkEstimate(b *testing.B) {
	forStreams(b, func(keys [][]byte, strs []string, mask int) []op {
		return []op{{"sketch", func(b *testing.B) {
			c := openSketch(b)
			countAll(b, keys, func(k []byte) { c.Add(k) })
			for i := 0; i < b.N; i++ {
				sink += c.Estimate(keys[i&mask])
			}
		}}, {"boom", func(b *testing.B) {
			c := boom.NewCountMinSketch(errorRate, delta)
			countAll(b, keys, func(k []byte) { c.Add(k) })
			for i := 0; i < b.N; i++ {
				sink += c.Count(keys[i&mask])
			}
		}}, {"mutexmap", func(b *testing.B) {
			m := fullMap()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m.mu.Lock()
				sink += m.m[strs[i&mask]]
				m.mu.Unlock()
			}
		}}}
	})
}
