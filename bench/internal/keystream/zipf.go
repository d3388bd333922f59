package keystream

import "math/rand/v2"

// ZipfNumbers returns key numbers drawn from Zipf(s) over Space keys, key 0
// the most frequent, from the zipf stream's source: ZipfNumbers(1.1) is
// Numbers("zipf"). The heavy-hitter accuracy runs draw 10M adds from it
// at more than one skew.
func ZipfNumbers(s float64) func() uint64 {
	return rand.NewZipf(rand.New(rand.NewPCG(Seed, 1)), s, 1, Space-1).Uint64
}
