package cells

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// The pure-Go core of the Bloom filter. It is always compiled: it serves
// single keys in every build, everything in the pure-Go build, and the
// parity suite runs it beside the C core. Keep in sync with csrc/bloom.c.
//
// The bits are blocked (Putze, Sanders and Singler, "Cache-, Hash- and
// Space-Efficient Bloom Filters", 2007): B blocks of 512 bits, each one
// 64-byte cache line of eight native uint64 words, and all k bits of a key
// in one block, so that an add or a check costs one cache miss instead of
// k. A key hashes to h1 (XXH3-128 low word, the file's seed) and h2 (high
// word | 1). Its block is the high word of the 128-bit product h1·B; its
// probe i (0 <= i < k) is bit x_i >> 55 of the block, x_0 = h2 and
// x_(i+1) = x_i·bloomProbeMul mod 2^64; bit j of a block is bit j mod 64
// of its word j / 64. Probes may repeat a bit; the sizing (bloomFP)
// counts on that.
//
// Double hashing inside the block (the top bits of g + i·h2) measured
// 1.5x the target rate at 0.001 and 4.5x at 1e-4: a key's probes form an
// arithmetic progression, of which a 512-bit block has too few, so keys
// of one block share whole patterns. The multiplied probes meet the
// model at every rate tried (docs/FORMAT.md).

// Bloom locates a Bloom filter's words in the mapping.
type Bloom struct {
	Words   unsafe.Pointer // blocks x 8 uint64 words
	Stripes unsafe.Pointer // stripeCount lines: added, seen
	Seed    uint64
	Blocks  uint64
	K       int
	// Prefetch is set when the bits are larger than a quarter of L2:
	// batches then fetch blocks ahead (in the C core where built).
	Prefetch bool
}

const (
	BloomBlockBits  = 512
	bloomBlockWords = BloomBlockBits / 64
	BloomBlockBytes = BloomBlockBits / 8
	// bloomProbeShift keeps the top 9 bits of a 64-bit probe: a bit of
	// the block.
	bloomProbeShift = 64 - 9
	// bloomProbeMul steps a key's probes: 2^64 divided by the golden
	// ratio, made odd.
	bloomProbeMul = 0x9e3779b97f4a7c15
	// The two words of a handle's stripe line: calls that set a bit,
	// calls that found every bit set.
	BloomAddedOff = 0
	BloomSeenOff  = 8
)

// bloomProbePow[i] is bloomProbeMul^i: x_i = h2·bloomProbePow[i], so that
// the k multiplies run side by side instead of one after another.
var bloomProbePow = func() (p [BloomMaxHashes]uint64) {
	x := uint64(1)
	for i := range p {
		p[i] = x
		x *= bloomProbeMul
	}
	return p
}()

// bloomMasks is a key's bits as one mask per word of its block.
type bloomMasks [bloomBlockWords]uint64

// Block returns the key's block.
func (l *Bloom) Block(h1 uint64) unsafe.Pointer {
	blk, _ := bits.Mul64(h1, l.Blocks)
	return unsafe.Add(l.Words, blk*BloomBlockBytes)
}

// Masks returns the key's bits as one mask per word of its block.
func (l *Bloom) Masks(hi uint64) (m bloomMasks) {
	h2 := hi | 1
	for _, p := range bloomProbePow[:l.K] {
		j := h2 * p >> bloomProbeShift
		m[j>>6] |= 1 << (j & 63)
	}
	return m
}

// Missing returns 0 when every bit of the key is set in the block. It
// loads the probes' words one by one (all in the block's cache line)
// rather than building masks: an array indexed by random words lives in
// memory, and its stores and reloads cost more than the loads.
func (l *Bloom) Missing(blk unsafe.Pointer, hi uint64) uint64 {
	h2 := hi | 1
	var miss uint64
	for _, p := range bloomProbePow[:l.K] {
		j := h2 * p >> bloomProbeShift
		miss |= ^atomic.LoadUint64((*uint64)(unsafe.Add(blk, j>>6*8))) >> (j & 63)
	}
	return miss & 1
}

// AddHashed sets the key's bits and reports whether every one was already
// set: whether this call changed no bit. It first checks, without a
// branch a probe: a known key writes nothing and moves no cache line away
// from other processes' readers. Then each word that lacks a bit gets one
// atomic OR; a bit another process set meanwhile is not this call's
// change.
func (l *Bloom) AddHashed(h1, hi uint64) (already bool) {
	blk := l.Block(h1)
	if l.Missing(blk, hi) == 0 {
		return true
	}
	already = true
	for w, mask := range l.Masks(hi) {
		p := (*uint64)(unsafe.Add(blk, w*8))
		if lack := mask &^ atomic.LoadUint64(p); lack != 0 && atomic.OrUint64(p, lack)&lack != lack {
			already = false
		}
	}
	return already
}

// CheckHashed reports whether every bit of the key is set.
func (l *Bloom) CheckHashed(h1, hi uint64) bool {
	return l.Missing(l.Block(h1), hi) == 0
}

// Touch loads the first word of the key's block, so that its cache line
// is on its way while the next keys hash.
func (l *Bloom) Touch(h1 uint64) uint64 {
	return atomic.LoadUint64((*uint64)(l.Block(h1)))
}

// Count adds added and seen to the handle's stripe line.
func (l *Bloom) Count(stripe int, added, seen uint64) {
	line := unsafe.Add(l.Stripes, (stripe%StripeCount)*StripeBytes)
	if added != 0 {
		atomic.AddUint64((*uint64)(unsafe.Add(line, BloomAddedOff)), added)
	}
	if seen != 0 {
		atomic.AddUint64((*uint64)(unsafe.Add(line, BloomSeenOff)), seen)
	}
}

// Counts sums the stripes.
func (l *Bloom) Counts() (added, seen uint64) {
	for i := 0; i < StripeCount; i++ {
		line := unsafe.Add(l.Stripes, i*StripeBytes)
		added += atomic.LoadUint64((*uint64)(unsafe.Add(line, BloomAddedOff)))
		seen += atomic.LoadUint64((*uint64)(unsafe.Add(line, BloomSeenOff)))
	}
	return added, seen
}

// Nwords is the number of uint64 words of bits.
func (l *Bloom) Nwords() uint64 { return l.Blocks * bloomBlockWords }

func (l *Bloom) Word(w uint64) *uint64 { return (*uint64)(unsafe.Add(l.Words, w*8)) }

// Reset zeroes the bits and the stripes. It is not atomic (Bloom.Reset
// says so): the bits are cleared with plain aligned 8-byte stores, each of
// which lands before or after a concurrent atomic OR, never inside one.
func (l *Bloom) Reset() {
	clear(unsafe.Slice((*uint64)(l.Words), uintptr(l.Nwords())))
	for i := 0; i < StripeCount; i++ {
		line := unsafe.Add(l.Stripes, i*StripeBytes)
		atomic.StoreUint64((*uint64)(unsafe.Add(line, BloomAddedOff)), 0)
		atomic.StoreUint64((*uint64)(unsafe.Add(line, BloomSeenOff)), 0)
	}
}

// BloomCore is one implementation of the Bloom filter's batches; the Go
// core and (with cgo) the C core agree bit for bit. The walks (countSet,
// merge, reset) are Go in both builds: a popcount or an atomic OR a word
// is the same instructions from C, without the crossing.
type BloomCore interface {
	Name() string
	// AddBatch adds every key and returns how many set a bit; already,
	// when not nil, receives each key's answer.
	AddBatch(l *Bloom, keys [][]byte, already []bool) (added uint64)
	// ContainsBatch stores each key's answer in out (len(keys) of them).
	ContainsBatch(l *Bloom, keys [][]byte, out []bool)
}

// BloomGo is the pure-Go core.
type BloomGo struct{}

func (BloomGo) Name() string { return "purego" }

// AddBatch on a filter past the caches hashes a group of keys and touches
// their blocks before setting bits: the atomic ORs wait for earlier loads,
// so the groups' cache misses overlap instead of following each other.
func (BloomGo) AddBatch(l *Bloom, keys [][]byte, already []bool) uint64 {
	var added uint64
	if !l.Prefetch {
		for i, k := range keys {
			h1, hi := Hash(k, l.Seed)
			a := l.AddHashed(h1, hi)
			if !a {
				added++
			}
			if already != nil {
				already[i] = a
			}
		}
		return added
	}
	var h [batchAhead][2]uint64
	for base := 0; base < len(keys); base += batchAhead {
		group := keys[base:min(base+batchAhead, len(keys))]
		for j, k := range group {
			h[j][0], h[j][1] = Hash(k, l.Seed)
			l.Touch(h[j][0])
		}
		for j := range group {
			a := l.AddHashed(h[j][0], h[j][1])
			if !a {
				added++
			}
			if already != nil {
				already[base+j] = a
			}
		}
	}
	return added
}

// ContainsBatch is a plain loop: checks only load, and the CPU overlaps the
// loads of consecutive keys by itself.
func (BloomGo) ContainsBatch(l *Bloom, keys [][]byte, out []bool) {
	for i, k := range keys {
		h1, hi := Hash(k, l.Seed)
		out[i] = l.CheckHashed(h1, hi)
	}
}

// CountSet returns how many bits are set.
func (l *Bloom) CountSet() uint64 {
	var n uint64
	for w := uint64(0); w < l.Nwords(); w++ {
		n += uint64(bits.OnesCount64(atomic.LoadUint64(l.Word(w))))
	}
	return n
}

// Merge ORs src's bits into l's, each word with an atomic OR. It skips
// words src has empty and words l already covers, so that merging what is
// already there writes nothing.
func (l *Bloom) Merge(src *Bloom) {
	for w := uint64(0); w < l.Nwords(); w++ {
		s := atomic.LoadUint64(src.Word(w))
		if s == 0 {
			continue
		}
		p := l.Word(w)
		if atomic.LoadUint64(p)&s != s {
			atomic.OrUint64(p, s)
		}
	}
}

const (
	BloomMaxHashes = 32
	// BloomMaxBlocks keeps the bits mappable: 2^46 bytes on 64-bit
	// platforms, 1 GiB on 32-bit ones.
	BloomMaxBlocks = 1 << (24 + 16*(bits.UintSize/64))
)
