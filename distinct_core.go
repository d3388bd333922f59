package sketch

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
// file's seed, or MurmurHash64A with Redis's seed in the Redis profile.
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

// distinctLayout locates a distinct count's words in the mapping.
type distinctLayout struct {
	// changes counts the adds and merges that raised a register: the
	// estimate's cache is valid while it stays put.
	changes *uint64
	regs    unsafe.Pointer // 2^p bytes, read and written as uint64 words
	seed    uint64
	p       uint
	redis   bool // the Redis profile: MurmurHash64A, redisHLLSeed
}

const (
	// distinctHeadBytes is the line before the registers; its first word
	// is the change count, the rest reserved (zero).
	distinctHeadBytes = 64
	distinctMinP      = 4
	distinctMaxP      = 18
	// redisHLLSeed is the seed Redis's HyperLogLog hashes with, and
	// redisHLLP its precision (HLL_P): the Redis profile's.
	redisHLLSeed = 0xadc83b19
	redisHLLP    = 14
)

// bigEndian is the machine's byte order: it places register j in its word.
var bigEndian = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// regShift is the shift of byte i (0..7) of a native word.
func regShift(i uint64) uint64 {
	if bigEndian {
		return 56 - 8*i
	}
	return 8 * i
}

// q is the bits above the index, and q+1 the largest rank.
func (l *distinctLayout) q() uint { return 64 - l.p }

func (l *distinctLayout) m() uint64 { return 1 << l.p }

func (l *distinctLayout) word(w uint64) *uint64 { return (*uint64)(unsafe.Add(l.regs, w*8)) }

// hash is the key's 64-bit hash in the structure's profile.
func (l *distinctLayout) hash(key []byte) uint64 {
	if l.redis {
		return murmur64A(key, redisHLLSeed)
	}
	return hashLo(key, l.seed)
}

func (l *distinctLayout) hashString(key string) uint64 {
	if l.redis {
		return murmur64AString(key, redisHLLSeed)
	}
	return hashLoString(key, l.seed)
}

// place returns the register and rank of a key's hash.
func (l *distinctLayout) place(h uint64) (reg uint64, rank uint64) {
	reg = h & (l.m() - 1)
	rank = uint64(bits.TrailingZeros64(h>>l.p|1<<l.q())) + 1
	return reg, rank
}

// raise sets register reg to rank unless it holds as much, and reports
// whether it rose.
func (l *distinctLayout) raise(reg, rank uint64) bool {
	p := l.word(reg >> 3)
	shift := regShift(reg & 7)
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

// addHashed adds one key's hash and reports whether a register rose.
func (l *distinctLayout) addHashed(h uint64) bool {
	return l.raise(l.place(h))
}

// changed publishes n raises: after the registers, so that whoever sees
// the new count walks registers that hold them.
func (l *distinctLayout) changed(n uint64) {
	if n != 0 {
		atomic.AddUint64(l.changes, n)
	}
}

// histogram counts the registers of each value, values past q+1 (only a
// damaged file has them) counted as q+1.
func (l *distinctLayout) histogram(c *[66]uint64) {
	top := uint64(l.q() + 1)
	for w := uint64(0); w < l.m()/8; w++ {
		x := atomic.LoadUint64(l.word(w))
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

// damaged returns the first register past the largest rank q+1, which
// only a damaged file holds, and its value; false when there is none.
func (l *distinctLayout) damaged() (j, v uint64, bad bool) {
	for w := uint64(0); w < l.m()/8; w++ {
		if i, r, bad := l.wordDamaged(atomic.LoadUint64(l.word(w))); bad {
			return w*8 + i, r, true
		}
	}
	return 0, 0, false
}

// wordDamaged reports the first register of word x past the largest rank.
func (l *distinctLayout) wordDamaged(x uint64) (i, r uint64, bad bool) {
	if x == 0 {
		return 0, 0, false
	}
	top := uint64(l.q() + 1)
	for i := uint64(0); i < 8; i++ {
		if r := x >> regShift(i) & 0xff; r > top {
			return i, r, true
		}
	}
	return 0, 0, false
}

// damage is the error for a damaged register j holding v, which the
// package wraps in ErrDamaged (registerDamage).
func (l *distinctLayout) damage(j, v uint64) error {
	return &registerError{j, v, uint64(l.q() + 1), l.p}
}

// registerError says that a register holds more than any hash can give.
type registerError struct {
	register, value, rank uint64
	precision             uint
}

func (e *registerError) Error() string {
	return fmt.Sprintf("register %d holds %d, more than the largest rank %d of precision %d", e.register, e.value, e.rank, e.precision)
}

// register returns register j.
func (l *distinctLayout) register(j uint64) uint64 {
	return atomic.LoadUint64(l.word(j>>3)) >> regShift(j&7) & 0xff
}

// merge raises each of l's registers to src's where src's is larger, a
// word at a time, and returns how many words changed. A word of src
// holding a register past the largest rank stops it there, with that
// register's error: src was checked before, so it changed under the merge
// (another process may write it), and the words before it are merged.
func (l *distinctLayout) merge(src *distinctLayout) (uint64, error) {
	var n uint64
	for w := uint64(0); w < l.m()/8; w++ {
		s := atomic.LoadUint64(src.word(w))
		if s == 0 {
			continue
		}
		if i, r, bad := src.wordDamaged(s); bad {
			return n, src.damage(w*8+i, r)
		}
		p := l.word(w)
		for {
			old := atomic.LoadUint64(p)
			nw := maxBytes(old, s)
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

// maxBytes is the bytewise maximum of two words.
func maxBytes(a, b uint64) uint64 {
	var r uint64
	for s := uint(0); s < 64; s += 8 {
		r |= max(a>>s&0xff, b>>s&0xff) << s
	}
	return r
}

// reset zeroes the registers, each word with one store, and then counts a
// change, so that every handle's cached estimate goes.
func (l *distinctLayout) reset() {
	for w := uint64(0); w < l.m()/8; w++ {
		atomic.StoreUint64(l.word(w), 0)
	}
	atomic.AddUint64(l.changes, 1)
}

// distinctEstimate is Ertl's improved estimator ("New cardinality
// estimation algorithms for HyperLogLog sketches", 2017, algorithm 6) over
// the register histogram c of m = 2^p registers: unbiased from 0 to far
// past 2^64 / m without the small- and large-range corrections of the
// original HyperLogLog, its relative standard error about 1.04/sqrt(m).
// It is the estimator Redis's PFCOUNT uses, written the same way, so both
// give one count for one set of registers.
func distinctEstimate(c *[66]uint64, p uint) float64 {
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

// distinctCore is one implementation of the distinct count's batches; the
// Go core and (with cgo) the C core agree bit for bit. The walks are Go in
// both builds: a byte histogram or a CAS a word costs the same from C,
// without the crossing.
type distinctCore interface {
	name() string
	// addBatch adds every key and returns how many raised a register. It
	// does not count them as changes: the caller does, once.
	addBatch(l *distinctLayout, keys [][]byte) (raised uint64)
}

// distinctGo is the pure-Go core.
type distinctGo struct{}

func (distinctGo) name() string { return "purego" }

func (distinctGo) addBatch(l *distinctLayout, keys [][]byte) uint64 {
	var n uint64
	for _, k := range keys {
		if l.addHashed(l.hash(k)) {
			n++
		}
	}
	return n
}
