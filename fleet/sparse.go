package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A counting Bloom filter's counts in Redis (AddCountingBloom). A ban
// list is almost all zero counters (300 bans set about 2,000 of a
// filter's million), so a host pushes its nonzero counters only. A value
// is a format byte, then:
//
//	'd' (dense):  the export as it is, one byte a counter (m bytes);
//	's' (sparse): for each nonzero counter, in index order, the number of
//	              zero counters since the previous one written (or the
//	              start) as a uvarint, then the counter's byte (never 0).
//
// The encoder writes sparse while its body is shorter than m bytes and
// dense otherwise, so a value is never more than a byte over the dense
// export, however full the filter. A sparse counter's index is the
// previous one's plus one plus its gap, so no index can repeat or go
// back. The decoder returns the dense export (m bytes, what
// SumFleetCounts adds) and refuses, never panicking and never indexing
// past m, any value the encoder would not write: an empty value or an
// unknown format byte, a dense body of another length than m, a uvarint
// cut short, over 64 bits or not in its shortest form, a gap without its
// counter's byte after it, a counter's byte of 0, and a gap that reaches
// past the m-th counter. The structure's description (meta) says
// " enc=sparse", so an agent that pushes the dense export bare refuses
// this format's keys, and this one its, with ErrMismatch.
const (
	countsDense  = 'd'
	countsSparse = 's'
)

// encodeCounts returns the value a host pushes of a counting Bloom
// filter's export: sparse, or dense where sparse would not be shorter.
func encodeCounts(exp []byte) []byte {
	out := []byte{countsSparse}
	var gap uint64
	for _, c := range exp {
		if c == 0 {
			gap++
			continue
		}
		out = binary.AppendUvarint(out, gap)
		out = append(out, c)
		gap = 0
		if len(out)-1 >= len(exp) { // no shorter than dense
			return append([]byte{countsDense}, exp...)
		}
	}
	return out
}

// errCounts marks a value that decodeCounts refuses.
var errCounts = errors.New("counts that cannot be summed")

// decodeCounts returns the export of m counters that val (encodeCounts'
// encoding) holds, or an error wrapping errCounts, whose text follows the
// key's name in a message.
func decodeCounts(val []byte, m int) ([]byte, error) {
	if len(val) == 0 {
		return nil, fmt.Errorf("holds %w: an empty value", errCounts)
	}
	body := val[1:]
	switch val[0] {
	case countsDense:
		if len(body) != m {
			return nil, fmt.Errorf("holds %w: %d dense counts, not the %d of this host's", errCounts, len(body), m)
		}
		return body, nil
	case countsSparse:
	default:
		return nil, fmt.Errorf("holds %w: format byte %#02x", errCounts, val[0])
	}
	exp := make([]byte, m)
	next := uint64(0) // the lowest index the next counter may have
	for off := 0; off < len(body); {
		gap, n, err := shortestUvarint(body, off, "gap")
		switch {
		case err != nil:
			return nil, err
		case off+n == len(body):
			return nil, fmt.Errorf("holds %w: a gap without its count at byte %d", errCounts, 1+off)
		case gap >= uint64(m)-next:
			return nil, fmt.Errorf("holds %w: a gap of %d past counter %d of %d", errCounts, gap, next, m)
		}
		i := next + gap
		c := body[off+n]
		if c == 0 {
			return nil, fmt.Errorf("holds %w: a count of 0 for counter %d", errCounts, i)
		}
		exp[i] = c
		next, off = i+1, off+n+1
	}
	return exp, nil
}

// A Count-Min grid's counts in Redis (AddCountMin, AddCountMinWindow) go
// the same way, a counter being 8 bytes: a format byte, then
//
//	'd' (dense):  the export as it is, 8 bytes a counter, little-endian;
//	's' (sparse): for each nonzero counter, in index order, the zero
//	              counters since the previous one written as a uvarint,
//	              then the counter as a uvarint (never 0).
//
// A period's grid holds about as many nonzero counters as its adds of
// distinct keys times the rows, a few bytes each, where dense is 8 bytes
// every counter: 1,000 keys in a period of the default 5 x 4096 grid are
// about 12 KiB, not 160, and a period this host added nothing to is one
// byte. The decoder refuses what the encoder would not write, as
// decodeCounts does (a uvarint not in its shortest form, a count of 0, a
// gap past the last counter), so one value has one reading.

// encodeGrid returns the value a host pushes of a grid's export (8-byte
// little-endian counters): sparse, or dense where sparse is not shorter.
func encodeGrid(exp []byte) []byte {
	out := []byte{countsSparse}
	var gap uint64
	for i := 0; i+8 <= len(exp); i += 8 {
		c := binary.LittleEndian.Uint64(exp[i:])
		if c == 0 {
			gap++
			continue
		}
		out = binary.AppendUvarint(out, gap)
		out = binary.AppendUvarint(out, c)
		gap = 0
		if len(out)-1 >= len(exp) {
			return append([]byte{countsDense}, exp...)
		}
	}
	return out
}

// decodeGrid returns the export of n 8-byte counters that val
// (encodeGrid's encoding) holds, or an error wrapping errCounts.
func decodeGrid(val []byte, n int) ([]byte, error) {
	if len(val) == 0 {
		return nil, fmt.Errorf("holds %w: an empty value", errCounts)
	}
	body := val[1:]
	switch val[0] {
	case countsDense:
		if len(body) != n*8 {
			return nil, fmt.Errorf("holds %w: %d bytes of dense counts, not the %d of this host's", errCounts, len(body), n*8)
		}
		return body, nil
	case countsSparse:
	default:
		return nil, fmt.Errorf("holds %w: format byte %#02x", errCounts, val[0])
	}
	exp := make([]byte, n*8)
	next := uint64(0) // the lowest index the next counter may have
	for off := 0; off < len(body); {
		gap, k, err := shortestUvarint(body, off, "gap")
		if err != nil {
			return nil, err
		}
		if gap >= uint64(n)-next {
			return nil, fmt.Errorf("holds %w: a gap of %d past counter %d of %d", errCounts, gap, next, n)
		}
		off += k
		if off == len(body) {
			return nil, fmt.Errorf("holds %w: a gap without its count at byte %d", errCounts, off)
		}
		c, k, err := shortestUvarint(body, off, "count")
		if err != nil {
			return nil, err
		}
		i := next + gap
		if c == 0 {
			return nil, fmt.Errorf("holds %w: a count of 0 for counter %d", errCounts, i)
		}
		binary.LittleEndian.PutUint64(exp[i*8:], c)
		next, off = i+1, off+k
	}
	return exp, nil
}

// shortestUvarint reads the uvarint at body[off:], refusing one cut
// short, over 64 bits or not in its shortest form; what names it in
// the error, whose byte offset counts the format byte.
func shortestUvarint(body []byte, off int, what string) (uint64, int, error) {
	v, k := binary.Uvarint(body[off:])
	switch {
	case k == 0:
		return 0, 0, fmt.Errorf("holds %w: a %s cut short at byte %d", errCounts, what, 1+off)
	case k < 0:
		return 0, 0, fmt.Errorf("holds %w: a %s over 64 bits at byte %d", errCounts, what, 1+off)
	case k > 1 && body[off+k-1] == 0:
		return 0, 0, fmt.Errorf("holds %w: a %s not in its shortest form at byte %d", errCounts, what, 1+off)
	}
	return v, k, nil
}
