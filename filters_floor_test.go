package sketch

import (
	"fmt"
	"strconv"
	"testing"
)

// TestFilters_SmallRateFloor measures the false-positive rate of both
// filters at a small capacity and a small rate, where a floor would show:
// probes (h1 + i·h2) mod m make two keys whose h1 and h2 agree mod m (2/m²
// of pairs) share every counter, a floor of about 2n/m², 30 times the
// target here (10 keys in 256 counters, k = 17). Many filters of fixed
// seeds are averaged, since one of ten keys is mostly luck; the rate must
// be within 2x the target.
func TestFilters_SmallRateFloor(t *testing.T) {
	const rate = 1e-5
	total := 1_000_000 // probes of each case: 10 false positives at the target
	if testing.Short() || raceEnabled {
		total = 400_000
	}
	kinds := []struct {
		name string
		// open makes a filter with the seed, adds keys and returns its
		// membership test and its shape.
		open func(t *testing.T, capacity int, seed uint64, keys [][]byte) (func([]byte) bool, string)
	}{
		{"countingbloom", func(t *testing.T, capacity int, seed uint64, keys [][]byte) (func([]byte) bool, string) {
			b := mustCBF(t, CountingBloomConfig{Capacity: uint64(capacity), FPRate: rate, Seed: seed})
			if err := b.AddBatch(keys, nil); err != nil {
				t.Fatal(err)
			}
			return b.Contains, fmt.Sprintf("%d counters, k %d", b.Counters(), b.Hashes())
		}},
		{"bloom", func(t *testing.T, capacity int, seed uint64, keys [][]byte) (func([]byte) bool, string) {
			b := mustBloom(t, BloomConfig{Capacity: uint64(capacity), FPRate: rate, Seed: seed})
			if err := b.AddBatch(keys, nil); err != nil {
				t.Fatal(err)
			}
			st := b.Stats()
			return b.Contains, fmt.Sprintf("%d bits, k %d", st.Bits, st.Hashes)
		}},
	}
	// Forty filters of 10 keys, where the floor shows, and one of 5000.
	for _, size := range []struct{ capacity, filters int }{{10, 40}, {5000, 1}} {
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%s/%d", kind.name, size.capacity), func(t *testing.T) {
				capacity, filters := size.capacity, size.filters
				probes := total / filters
				fp, shape := 0, ""
				key := make([]byte, 0, 24)
				for f := range filters {
					var keys [][]byte
					for i := range capacity {
						keys = append(keys, []byte("in-"+strconv.Itoa(i)))
					}
					var contains func([]byte) bool
					contains, shape = kind.open(t, capacity, uint64(0xf100+f), keys)
					for _, k := range keys {
						if !contains(k) {
							t.Fatalf("seed %#x: a key added is missing: %q", 0xf100+f, k)
						}
					}
					for i := range probes {
						key = strconv.AppendInt(append(key[:0], "absent-"...), int64(i), 10)
						if contains(key) {
							fp++
						}
					}
				}
				n := filters * probes
				got := float64(fp) / float64(n)
				t.Logf("%s, %d keys (%s) at rate %v: %d false positives in %d probes, %.2g (%.2fx the target)",
					kind.name, capacity, shape, rate, fp, n, got, got/rate)
				if got > 2*rate {
					t.Errorf("%s: false-positive rate %.2g, want <= 2 x %v", kind.name, got, rate)
				}
			})
		}
	}
}
