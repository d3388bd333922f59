package cells

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// The pure-Go core of the distinct count. It is always compiled: it serves
// single keys and the walks (histogram, merge, reset) in every build,
// batches in the pure-Go build, and the parity suite runs it beside the C
// core. Keep in sync with csrc/distinct.c.
//
// A key hashes to one 64-bit word h: the low word of XXH3-128 with the
// file's seed, MurmurHash64A with Redis's seed in the Redis profile, or
// the first half of MurmurHash3_x64_128 with seed 0 in the PostgreSQL
// profile (the hll extension's hll_hash_bytea).
// Its register is h's low p bits; its rank is one more than the number of
// zeros above them, counted from bit p up, at most q+1 = 65-p (Redis's
// hllPatLen, with q = 64-p). A register holds the largest rank of the keys
// it was given, one byte: register j is byte j of the register array, so
// a file reads the same on machines of either byte order. Updates are a
// CAS on the aligned 8-byte word holding the register, retried only while
// the register stays below the rank: each failed try is a register of the
// word rising, which values that only rise allow 8·(q+1) times at most,
// so no writer retries without bound, and a writer killed anywhere leaves
// every register at a value some add gave it: nothing to repair.

// Distinct locates a distinct count's words in the mapping.
type Distinct struct {
	// Changes counts the adds and merges that raised a register: the
	// estimate's cache is valid while it stays put.
	Changes *uint64
	Regs    unsafe.Pointer // 2^p bytes, read and written as uint64 words
	Seed    uint64
	P       uint
	Profile uint64 // the hash: ProfileSeeded, ProfileRedis or ProfilePostgreSQL
}

// The profiles, a distinct count's hash, stored in its entry's params[1].
const (
	// ProfileSeeded hashes with XXH3-128's low word and the file's seed.
	ProfileSeeded = 0
	// ProfileRedis hashes as Redis's PFADD: MurmurHash64A, redisHLLSeed.
	ProfileRedis = 1
	// ProfilePostgreSQL hashes as PostgreSQL's hll extension's
	// hll_hash_bytea with seed 0: Murmur3x64.
	ProfilePostgreSQL = 2
)

const (
	// DistinctHeadBytes is the line before the registers; its first word
	// is the change count, the rest reserved (zero).
	DistinctHeadBytes = 64
	DistinctMinP      = 4
	DistinctMaxP      = 18
	// redisHLLSeed is the seed Redis's HyperLogLog hashes with, and
	// redisHLLP its precision (HLL_P): the Redis profile's.
	redisHLLSeed = 0xadc83b19
	RedisHLLP    = 14
	// PostgreSQLMaxP is the largest precision (log2m) PostgreSQL's hll
	// extension holds: 2^17 one-byte registers fill its 128 KiB buffer.
	PostgreSQLMaxP = 17
)

// BigEndian is the machine's byte order: it places register j in its word.
var BigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// RegShift is the shift of byte i (0..7) of a native word.
func RegShift(i uint64) uint64 {
	if BigEndian {
		return 56 - 8*i
	}
	return 8 * i
}

// Q is the bits above the index, and q+1 the largest rank.
func (l *Distinct) Q() uint { return 64 - l.P }

func (l *Distinct) M() uint64 { return 1 << l.P }

func (l *Distinct) Word(w uint64) *uint64 { return (*uint64)(unsafe.Add(l.Regs, w*8)) }

// Hash is the key's 64-bit hash in the structure's profile.
func (l *Distinct) Hash(key []byte) uint64 {
	switch l.Profile {
	case ProfileRedis:
		return Murmur64A(key, redisHLLSeed)
	case ProfilePostgreSQL:
		return Murmur3x64(key, 0)
	}
	return hashLo(key, l.Seed)
}

func (l *Distinct) HashString(key string) uint64 {
	switch l.Profile {
	case ProfileRedis:
		return Murmur64AString(key, redisHLLSeed)
	case ProfilePostgreSQL:
		return Murmur3x64String(key, 0)
	}
	return hashLoString(key, l.Seed)
}

// Place returns the register and rank of a key's hash.
func (l *Distinct) Place(h uint64) (reg uint64, rank uint64) {
	reg = h & (l.M() - 1)
	rank = uint64(bits.TrailingZeros64(h>>l.P|1<<l.Q())) + 1
	return reg, rank
}

// Raise sets register reg to rank unless it holds as much, and reports
// whether it rose.
func (l *Distinct) Raise(reg, rank uint64) bool {
	p := l.Word(reg >> 3)
	shift := RegShift(reg & 7)
	for {
		old := atomic.LoadUint64(p)
		if old>>shift&0xff >= rank {
			return false
		}
		if atomic.CompareAndSwapUint64(p, old, old&^(0xff<<shift)|rank<<shift) {
			return true
		}
	}
}

// AddHashed adds one key's hash and reports whether a register rose.
func (l *Distinct) AddHashed(h uint64) bool {
	return l.Raise(l.Place(h))
}

// Changed publishes n raises: after the registers, so that whoever sees
// the new count walks registers that hold them.
func (l *Distinct) Changed(n uint64) {
	if n != 0 {
		atomic.AddUint64(l.Changes, n)
	}
}

// Histogram counts the registers of each value, values past q+1 (only a
// damaged file has them) counted as q+1.
func (l *Distinct) Histogram(c *[66]uint64) {
	top := uint64(l.Q() + 1)
	for w := uint64(0); w < l.M()/8; w++ {
		x := atomic.LoadUint64(l.Word(w))
		if x == 0 {
			c[0] += 8
			continue
		}
		for range 8 {
			c[min(x&0xff, top)]++
			x >>= 8
		}
	}
}

// Damaged returns the first register past the largest rank q+1, which
// only a damaged file holds, and its value; false when there is none.
func (l *Distinct) Damaged() (j, v uint64, bad bool) {
	for w := uint64(0); w < l.M()/8; w++ {
		if i, r, bad := l.WordDamaged(atomic.LoadUint64(l.Word(w))); bad {
			return w*8 + i, r, true
		}
	}
	return 0, 0, false
}

// WordDamaged reports the first register of word x past the largest rank.
func (l *Distinct) WordDamaged(x uint64) (i, r uint64, bad bool) {
	if x == 0 {
		return 0, 0, false
	}
	top := uint64(l.Q() + 1)
	for i := uint64(0); i < 8; i++ {
		if r := x >> RegShift(i) & 0xff; r > top {
			return i, r, true
		}
	}
	return 0, 0, false
}

// Damage is the error for a damaged register j holding v, which the
// package wraps in ErrDamaged (registerDamage).
func (l *Distinct) Damage(j, v uint64) error {
	return &RegisterError{j, v, uint64(l.Q() + 1), l.P}
}

// RegisterError says that a register holds more than any hash can give.
type RegisterError struct {
	Register, Value, Rank uint64
	Precision             uint
}

func (e *RegisterError) Error() string {
	return fmt.Sprintf("register %d holds %d, more than the largest rank %d of precision %d", e.Register, e.Value, e.Rank, e.Precision)
}

// Register returns register j.
func (l *Distinct) Register(j uint64) uint64 {
	return atomic.LoadUint64(l.Word(j>>3)) >> RegShift(j&7) & 0xff
}

// Merge raises each of l's registers to src's where src's is larger, a
// word at a time, and returns how many words changed. A word of src
// holding a register past the largest rank stops it there, with that
// register's error: src was checked before, so it changed under the merge
// (another process may write it), and the words before it are merged.
func (l *Distinct) Merge(src *Distinct) (uint64, error) {
	var n uint64
	for w := uint64(0); w < l.M()/8; w++ {
		s := atomic.LoadUint64(src.Word(w))
		if s == 0 {
			continue
		}
		if i, r, bad := src.WordDamaged(s); bad {
			return n, src.Damage(w*8+i, r)
		}
		p := l.Word(w)
		for {
			old := atomic.LoadUint64(p)
			nw := MaxBytes(old, s)
			if nw == old {
				break
			}
			if atomic.CompareAndSwapUint64(p, old, nw) {
				n++
				break
			}
		}
	}
	return n, nil
}

// MaxBytes is the bytewise maximum of two words.
func MaxBytes(a, b uint64) uint64 {
	var r uint64
	for s := uint(0); s < 64; s += 8 {
		r |= max(a>>s&0xff, b>>s&0xff) << s
	}
	return r
}

// Reset zeroes the registers, each word with one store, and then counts a
// change, so that every handle's cached estimate goes.
func (l *Distinct) Reset() {
	for w := uint64(0); w < l.M()/8; w++ {
		atomic.StoreUint64(l.Word(w), 0)
	}
	atomic.AddUint64(l.Changes, 1)
}

// DistinctEstimate is Ertl's improved estimator ("New cardinality
// estimation algorithms for HyperLogLog sketches", 2017, algorithm 6) over
// the register histogram c of m = 2^p registers: unbiased from 0 to far
// past 2^64 / m without the small- and large-range corrections of the
// original HyperLogLog, its relative standard error about 1.04/sqrt(m).
// It is the estimator Redis's PFCOUNT uses, written the same way, so both
// give one count for one set of registers.
func DistinctEstimate(c *[66]uint64, p uint) float64 {
	m := float64(uint64(1) << p)
	q := int(64 - p)
	z := m * ertlTau((m-float64(c[q+1]))/m)
	for k := q; k >= 1; k-- {
		z += float64(c[k])
		z *= 0.5
	}
	z += m * ertlSigma(float64(c[0])/m)
	return 0.5 / math.Ln2 * m * m / z
}

// ertlSigma is σ(x) = x + Σ_{k>=1} x^(2^k)·2^(k-1); infinite at 1 (every
// register zero: the estimate is 0).
func ertlSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

// ertlTau is τ(x) = (1 - x - Σ_{k>=1} (1 - x^(2^-k))²·2^-k) / 3.
func ertlTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}

// DistinctCore is one implementation of the distinct count's batches; the
// Go core and (with cgo) the C core agree bit for bit. The walks are Go in
// both builds: a byte histogram or a CAS a word costs the same from C,
// without the crossing.
type DistinctCore interface {
	Name() string
	// AddBatch adds every key and returns how many raised a register. It
	// does not count them as changes: the caller does, once.
	AddBatch(l *Distinct, keys [][]byte) (raised uint64)
}

// DistinctGo is the pure-Go core.
type DistinctGo struct{}

func (DistinctGo) Name() string { return "purego" }

func (DistinctGo) AddBatch(l *Distinct, keys [][]byte) uint64 {
	var n uint64
	for _, k := range keys {
		if l.AddHashed(l.Hash(k)) {
			n++
		}
	}
	return n
}
