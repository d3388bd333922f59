// Package keystream lays out the key streams that this module's
// benchmarks and its report run. A stream is a sequence of key numbers
// drawn from a distribution over a key space, the same sequence every
// time; the caller writes key number i as bytes (each has its own keys),
// and the keys' bytes are laid out in stream order, as they would arrive
// in a network buffer, viewed both as []byte and as string.
package keystream

import "math/rand/v2"

const (
	Seed       = 0x5eed_c0de_b10c_0001 // the streams' seed, which the structures share
	Space      = 1 << 20               // distinct keys of the zipf and uniform streams
	SmallSpace = 10_000                // distinct keys of the uniform10k stream
	zipfS      = 1.1
)

// Stream is a sequence of keys, as []byte and as string views of the
// same bytes.
type Stream struct {
	Name  string
	Bytes [][]byte
	Strs  []string
}

// Numbers returns the key numbers of the named stream: "zipf" (Zipf(1.1)
// over Space keys, key 0 the most frequent), "uniform" (uniform over
// Space) or "uniform10k" (uniform over SmallSpace).
func Numbers(name string) func() uint64 {
	switch name {
	case "zipf":
		return rand.NewZipf(rand.New(rand.NewPCG(Seed, 1)), zipfS, 1, Space-1).Uint64
	case "uniform":
		r := rand.New(rand.NewPCG(Seed, 2))
		return func() uint64 { return r.Uint64N(Space) }
	case "uniform10k":
		r := rand.New(rand.NewPCG(Seed, 3))
		return func() uint64 { return r.Uint64N(SmallSpace) }
	}
	panic("unknown stream " + name)
}

// New lays out the first n keys of the named stream, key number i written
// by appendKey; perKey is about how many bytes a key takes.
func New(name string, n, perKey int, appendKey func(dst []byte, i uint64) []byte) *Stream {
	next := Numbers(name)
	buf := make([]byte, 0, n*perKey)
	ends := make([]int, n)
	for i := range ends {
		buf = appendKey(buf, next())
		ends[i] = len(buf)
	}
	str := string(buf)
	s := &Stream{Name: name, Bytes: make([][]byte, n), Strs: make([]string, n)}
	start := 0
	for i, end := range ends {
		s.Bytes[i] = buf[start:end:end]
		s.Strs[i] = str[start:end]
		start = end
	}
	return s
}
