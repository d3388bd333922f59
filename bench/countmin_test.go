// Package bench compares sketch.CountMin with another Count-Min library and
// with an exact counter, in one run. It is its own module so that the
// sketch module does not depend on what it is compared with.
package bench

import (
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
)

const (
	seed      = 0x5eed_c0de_b10c_0001
	space     = 1 << 20 // distinct keys
	streamLen = 1 << 19 // keys in each stream, a power of two
	// errorRate and delta (1 - confidence) are sketch's defaults: 5 rows
	// of 4096 counters for sketch.CountMin, 5 rows of 2719 for BoomFilters,
	// which does not round the width up to a power of two.
	errorRate = sketch.DefaultErrorRate
	delta     = 1 - sketch.DefaultConfidence
)

// stream is a stream of keys, each key's bytes laid out in stream order,
// as []byte and as string.
type stream struct {
	name  string
	bytes [][]byte
	strs  []string
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
		r := rand.New(rand.NewPCG(seed, 1))
		z := rand.NewZipf(r, 1.1, 1, space-1)
		streams.zipf = newStream("zipf", z.Uint64)
		r = rand.New(rand.NewPCG(seed, 2))
		streams.uniform = newStream("uniform", func() uint64 { return r.Uint64N(space) })
	})
	return []*stream{&streams.zipf, &streams.uniform}
}

func newStream(name string, next func() uint64) stream {
	buf := make([]byte, 0, streamLen*18)
	ends := make([]int, streamLen)
	for i := range ends {
		buf = appendKey(buf, next())
		ends[i] = len(buf)
	}
	str := string(buf)
	s := stream{name: name, bytes: make([][]byte, streamLen), strs: make([]string, streamLen)}
	start := 0
	for i, end := range ends {
		s.bytes[i] = buf[start:end:end]
		s.strs[i] = str[start:end]
		start = end
	}
	return s
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
	for _, s := range keyStreams() {
		b.Run(s.name, func(b *testing.B) {
			keys, strs, mask := s.bytes, s.strs, len(s.bytes)-1
			b.Run("sketch", func(b *testing.B) {
				c := openSketch(b)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					v, _ := c.Add(keys[i&mask])
					sink += v
				}
			})
			b.Run("boom", func(b *testing.B) {
				c := boom.NewCountMinSketch(errorRate, delta)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c.Add(keys[i&mask])
				}
			})
			b.Run("mutexmap", func(b *testing.B) {
				m := fullMap()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					m.mu.Lock()
					m.m[strs[i&mask]]++
					m.mu.Unlock()
				}
			})
		})
	}
}

// BenchmarkEstimate estimates one key per op, on structures that have
// counted the whole stream once.
func BenchmarkEstimate(b *testing.B) {
	for _, s := range keyStreams() {
		b.Run(s.name, func(b *testing.B) {
			keys, strs, mask := s.bytes, s.strs, len(s.bytes)-1
			b.Run("sketch", func(b *testing.B) {
				c := openSketch(b)
				for _, k := range keys {
					c.Add(k)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sink += c.Estimate(keys[i&mask])
				}
			})
			b.Run("boom", func(b *testing.B) {
				c := boom.NewCountMinSketch(errorRate, delta)
				for _, k := range keys {
					c.Add(k)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					sink += c.Count(keys[i&mask])
				}
			})
			b.Run("mutexmap", func(b *testing.B) {
				m := fullMap()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					m.mu.Lock()
					sink += m.m[strs[i&mask]]
					m.mu.Unlock()
				}
			})
		})
	}
}
