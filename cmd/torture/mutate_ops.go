package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"

	"github.com/zeebo/xxh3"
)

// The file's header fields a mutation needs to find its targets and to
// recompute the checksums (docs/FORMAT.md; header.go is the library's
// copy, unexported).
const (
	fmtHeaderSize = 128
	fmtOffDirOff  = 56
	fmtOffSum     = 120
	fmtOffCount   = 128
	fmtOffSize    = 16
	fmtLockEnd    = 256 // the header, its mutable words and the lock
	fmtEntrySize  = 128
	fmtEntOff     = 8
	fmtEntSize    = 16
	fmtEntSum     = 120
	fmtMaxEntries = 4096
	fmtPage       = 4096
	// regionHead is how much of each structure's region counts as its
	// head: a window's control and slot words, a sketch's first counters.
	regionHead = 512
)

var native = binary.NativeEndian

// hotSpans finds the header and lock, the directory entries in use and the
// head of each structure's region in a valid file.
func hotSpans(b []byte) []span {
	hot := []span{{0, min(fmtLockEnd, len(b))}}
	if len(b) < fmtOffCount+4 {
		return hot
	}
	dirOff := int(native.Uint32(b[fmtOffDirOff:]))
	n := int(min(native.Uint32(b[fmtOffCount:]), fmtMaxEntries))
	for i := 0; i < n && dirOff+(i+1)*fmtEntrySize <= len(b); i++ {
		e := b[dirOff+i*fmtEntrySize:][:fmtEntrySize]
		hot = append(hot, span{dirOff + i*fmtEntrySize, fmtEntrySize})
		off, size := native.Uint64(e[fmtEntOff:]), native.Uint64(e[fmtEntSize:])
		if off < uint64(len(b)) {
			hot = append(hot, span{int(off), int(min(size, regionHead, uint64(len(b))-off))})
		}
	}
	return hot
}

// resum recomputes the header's checksum and those of the directory
// entries in use, wherever the (maybe mutated) header says they are, so
// that a mutation reaches the checks behind the checksums.
func resum(b []byte) {
	if len(b) < fmtOffCount+4 {
		return
	}
	native.PutUint64(b[fmtOffSum:], xxh3.Hash(b[8:fmtOffSum]))
	dirOff := uint64(native.Uint32(b[fmtOffDirOff:]))
	n := min(uint64(native.Uint32(b[fmtOffCount:])), fmtMaxEntries)
	for i := uint64(0); i < n && dirOff+(i+1)*fmtEntrySize <= uint64(len(b)); i++ {
		e := b[dirOff+i*fmtEntrySize:][:fmtEntrySize]
		native.PutUint64(e[fmtEntSum:], xxh3.Hash(e[:fmtEntSum]))
	}
}

// mutate returns a broken copy of sp and what was done to it. Mutation i of
// a run draws from its own stream of the run's seed, so that any one of
// them can be made again from the seed and its index.
func mutate(sp specimen, seed uint64, i int) ([]byte, string) {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	b := append([]byte(nil), sp.data...)
	var did []string
	n := 1 // mostly one mutation, so that its own effect shows
	switch r := rng.IntN(20); {
	case r >= 17:
		n = 3 + rng.IntN(4) // now and then a pile of damage
	case r >= 12:
		n = 2
	}
	for ; n > 0; n-- {
		var what string
		b, what = mutateOnce(b, sp.hot, rng)
		did = append(did, what)
	}
	if rng.IntN(5) < 3 { // past the checksums
		if len(b) != len(sp.data) && rng.IntN(2) == 0 && len(b) >= fmtOffSize+8 {
			native.PutUint64(b[fmtOffSize:], uint64(len(b))) // and the size check
			did = append(did, "size set")
		}
		resum(b)
		did = append(did, "resummed")
	}
	return b, sp.name + ": " + strings.Join(did, ", ")
}

// mutateOnce applies one mutation to b, which it may shorten or grow.
func mutateOnce(b []byte, hot []span, rng *rand.Rand) ([]byte, string) {
	if len(b) == 0 {
		return append(b, randomBytes(rng, 1+rng.IntN(fmtPage))...), "filled an empty file"
	}
	switch k := rng.IntN(100); {
	case k < 30:
		off := target(len(b), hot, rng)
		n := 1 + rng.IntN(3)
		for j := 0; j < n; j++ {
			p := min(off+rng.IntN(8), len(b)-1)
			b[p] ^= 1 << rng.IntN(8)
		}
		return b, fmt.Sprintf("flip %d bits at %d", n, off)
	case k < 60:
		off := target(len(b), hot, rng) &^ 3
		size := []int{4, 8}[rng.IntN(2)]
		if off+size > len(b) {
			return b, "word past the end"
		}
		v := interesting(b, off, size, rng)
		if size == 4 {
			native.PutUint32(b[off:], uint32(v))
		} else {
			native.PutUint64(b[off:], v)
		}
		return b, fmt.Sprintf("word%d at %d = %#x", size*8, off, v)
	case k < 85:
		off := target(len(b), hot, rng)
		n := min(1+rng.IntN(64), len(b)-off)
		dst := b[off : off+n]
		switch rng.IntN(4) {
		case 0:
			copy(dst, randomBytes(rng, n))
			return b, fmt.Sprintf("%d random bytes at %d", n, off)
		case 1:
			clear(dst)
			return b, fmt.Sprintf("%d zeros at %d", n, off)
		case 2:
			for j := range dst {
				dst[j] = 0xff
			}
			return b, fmt.Sprintf("%d 0xff at %d", n, off)
		default:
			from := target(len(b), hot, rng)
			n = copy(dst, b[from:])
			return b, fmt.Sprintf("%d bytes from %d at %d", n, from, off)
		}
	case k < 91:
		var n int
		switch rng.IntN(4) {
		case 0:
			n = rng.IntN(min(len(b), fmtLockEnd+1))
		case 1:
			n = rng.IntN(len(b)/fmtPage+1) * fmtPage
		case 2:
			n = len(b) - 1 - rng.IntN(min(len(b), 64))
		default:
			n = rng.IntN(len(b))
		}
		return b[:n], fmt.Sprintf("cut to %d", n)
	case k < 97:
		n := 1 + rng.IntN(fmtPage)
		if rng.IntN(2) == 0 {
			n = (1 + rng.IntN(4)) * fmtPage
		}
		if rng.IntN(2) == 0 {
			return append(b, make([]byte, n)...), fmt.Sprintf("%d zeros appended", n)
		}
		return append(b, randomBytes(rng, n)...), fmt.Sprintf("%d random bytes appended", n)
	default:
		if len(b) < 8 {
			return b, "magic past the end"
		}
		native.PutUint64(b, bits.ReverseBytes64(native.Uint64(b)))
		return b, "magic byte-swapped"
	}
}

// target picks an offset in a file of n bytes: more often in a hot span
// (as the valid file had them) than anywhere.
func target(n int, hot []span, rng *rand.Rand) int {
	if len(hot) > 0 && rng.IntN(4) != 0 {
		s := hot[rng.IntN(len(hot))]
		if s.off < n && s.n > 0 {
			return min(s.off+rng.IntN(s.n), n-1)
		}
	}
	return rng.IntN(n)
}

// interesting is a value for the word at off: an edge, a size, the word
// itself off by one or byte-swapped, or another word of the file.
func interesting(b []byte, off, size int, rng *rand.Rand) uint64 {
	cur := native.Uint64(append(b[off:off+size:off+size], make([]byte, 8-size)...))
	n := uint64(len(b))
	switch rng.IntN(12) {
	case 0:
		return 0
	case 1:
		return 1
	case 2:
		return math.MaxUint64
	case 3:
		return math.MaxInt64
	case 4:
		return 1 << (31 + rng.IntN(2)) // the sign bits of both widths
	case 5:
		return cur + 1
	case 6:
		return cur - 1
	case 7:
		if size == 4 {
			return uint64(bits.ReverseBytes32(uint32(cur)))
		}
		return bits.ReverseBytes64(cur)
	case 8:
		return []uint64{n, n + 1, n - 1, 2 * n, n / 2, fmtPage, fmtHeaderSize}[rng.IntN(7)]
	case 9:
		return 1 << rng.IntN(64)
	default:
		from := rng.IntN(len(b)/size) * size
		if from+8 > len(b) {
			return cur
		}
		return native.Uint64(b[from:])
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
