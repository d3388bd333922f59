package sketch

import (
	"fmt"
	"math/bits"
)

// The kinds of structure, in one table: what the format (header.go), the
// arena and Inspect know of each. A kind's own file encodes its parameters
// (its config's spec) and decodes them (the functions the table names).

// Kind names a kind of structure in listings (List) and on the command
// line.
type Kind string

// The kinds of structure a file holds.
const (
	// KindCountMin is a Count-Min sketch (CountMin).
	KindCountMin Kind = "countmin"
	// KindBloom is a Bloom filter (Bloom).
	KindBloom Kind = "bloom"
	// KindCountingBloom is a counting Bloom filter (CountingBloom).
	KindCountingBloom Kind = "countingbloom"
	// KindCountMinWindow is a Count-Min window (CountMinWindow).
	KindCountMinWindow Kind = "countminwindow"
	// KindBloomWindow is a Bloom window (BloomWindow).
	KindBloomWindow Kind = "bloomwindow"
	// KindDistinct is a distinct count (Distinct).
	KindDistinct Kind = "distinct"
	// KindDistinctWindow is a distinct window (DistinctWindow).
	KindDistinctWindow Kind = "distinctwindow"
	// KindGCRA is a rate limiter with a burst (GCRA).
	KindGCRA Kind = "gcra"
	// KindCounters is a set of named exact counters (Counters).
	KindCounters Kind = "counters"
	// KindSet is an exact set (Set).
	KindSet Kind = "set"
	// KindSetWindow is an exact set whose keys expire with their period
	// (SetWindow).
	KindSetWindow Kind = "setwindow"
)

// The kind numbers stored in directory entries, and the parameters each
// entry keeps (of 8 words; the rest are zero). An FP rate is kept as the
// bits of its float64, a period in nanoseconds (0: turned by Rotate only).
const (
	kindCountMin       uint32 = 1  // rows, width
	kindBloom          uint32 = 2  // capacity, FP rate, blocks, k
	kindCountingBloom  uint32 = 3  // capacity, FP rate, m, k
	kindCountMinWindow uint32 = 4  // rows, width, period, keep
	kindBloomWindow    uint32 = 5  // capacity, FP rate, blocks, k (of a period's filter), period, keep
	kindDistinct       uint32 = 6  // precision p, profile (0: seeded XXH3, 1: Redis's)
	kindDistinctWindow uint32 = 7  // precision p, profile (of a period's count), period, keep
	kindGCRA           uint32 = 8  // rows, width, rate's period (ns), rate's count, burst
	kindCounters       uint32 = 9  // names, names table bytes, names table checksum (XXH3)
	kindExactSet       uint32 = 10 // capacity, key bytes, slots
	kindExactSetWindow uint32 = 11 // capacity, key bytes, slots, period, keep
)

// kindInfo is what the format knows of a structure kind, and what the
// arena needs to open one it finds in its directory. A new kind is one
// row of the table.
type kindInfo struct {
	name string // in messages: "Count-Min sketch"
	kind Kind   // in listings and the command line: "countmin"
	// validate checks the entry's parameters, up to spare, against its
	// region; spare is the first parameter the kind does not use, which
	// validateEntry requires to be zero with the rest, and of names the
	// parameters in that error ("unknown count-min parameters").
	validate func(e entry) error
	spare    int
	of       string
	// config returns the structure's config as stored in the entry (a
	// CountMinConfig for a Count-Min sketch, and so on), for listings.
	config func(e entry) any
	// params decodes the entry's parameters by name, for Inspect.
	params func(e entry) map[string]float64
	// region, when set, checks what the kind writes in its region at
	// create (spec.init: a counters structure's names) and then only
	// reads, wherever a live entry is decoded, and returns the config
	// that completes (with its names), for listings and Inspect; a
	// killed create of such a kind leaves bytes past the last region,
	// which the next append clears.
	region func(e entry, region []byte) (any, error)
	// open opens the structure at a place with the kind's zero config,
	// which attaches to what is stored there (Arena.Snapshot copies it
	// through the handle, ArenaMetrics reads its Stats).
	open func(at Place) (kindHandle, error)
}

// kindHandle is what the arena asks of a structure it opened through the
// table: every kind's handle copies its region into a new one of the same
// kind (copyRegion, beside its Snapshot), gives its Stats and closes.
type kindHandle interface {
	copyRegion(dst []byte) error
	StatsVar() StatsVar
	Close() error
}

// openZero is a kind's open column: its constructor with the zero config,
// and nothing (not a typed nil) with its error. The table's handles (an
// arena's metrics, a snapshot's copy) add nothing, so they claim no lane
// (WithoutLane): the lanes stay the writers'.
func openZero[C any, S kindHandle](open func(Place, C, ...Option) (S, error)) func(Place) (kindHandle, error) {
	return func(at Place) (kindHandle, error) {
		var cfg C
		s, err := open(at, cfg, WithoutLane())
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// kinds is the table. It is filled by init, as its functions refer back to
// it (through error messages).
var kinds map[uint32]kindInfo

func init() {
	kinds = map[uint32]kindInfo{
		kindCountMin: {
			name: "Count-Min sketch", kind: KindCountMin,
			validate: validateCountMinEntry, spare: 7, of: "count-min",
			config: countMinEntryConfig, params: countMinEntryParams,
			open: openZero(OpenCountMin),
		},
		kindBloom: {
			name: "Bloom filter", kind: KindBloom,
			validate: validateBloomEntry, spare: 4, of: "Bloom",
			config: bloomEntryConfig, params: bloomEntryParams,
			open: openZero(OpenBloom),
		},
		kindCountingBloom: {
			name: "counting Bloom filter", kind: KindCountingBloom,
			validate: validateCountingBloomEntry, spare: 5, of: "counting Bloom",
			config: countingBloomEntryConfig, params: countingBloomEntryParams,
			open: openZero(OpenCountingBloom),
		},
		kindCountMinWindow: {
			name: "Count-Min window", kind: KindCountMinWindow,
			validate: validateCountMinWindowEntry, spare: 8, of: "count-min window",
			config: countMinWindowEntryConfig, params: countMinWindowEntryParams,
			open: openZero(OpenCountMinWindow),
		},
		kindBloomWindow: {
			name: "Bloom window", kind: KindBloomWindow,
			validate: validateBloomWindowEntry, spare: 6, of: "Bloom window",
			config: bloomWindowEntryConfig, params: bloomWindowEntryParams,
			open: openZero(OpenBloomWindow),
		},
		kindDistinct: {
			name: "distinct count", kind: KindDistinct,
			validate: validateDistinctEntry, spare: 2, of: "distinct count",
			config: distinctEntryConfig, params: distinctEntryParams,
			open: openZero(OpenDistinct),
		},
		kindDistinctWindow: {
			name: "distinct window", kind: KindDistinctWindow,
			validate: validateDistinctWindowEntry, spare: 4, of: "distinct window",
			config: distinctWindowEntryConfig, params: distinctWindowEntryParams,
			open: openZero(OpenDistinctWindow),
		},
		kindGCRA: {
			name: "rate limiter", kind: KindGCRA,
			validate: validateGCRAEntry, spare: 5, of: "rate limiter",
			config: gcraEntryConfig, params: gcraEntryParams,
			open: openZero(OpenGCRA),
		},
		kindCounters: {
			name: "counters structure", kind: KindCounters,
			validate: validateCountersEntry, spare: 3, of: "counters",
			config: countersEntryConfig, params: countersEntryParams,
			region: countersRegionConfig,
			open:   openZero(OpenCounters),
		},
		kindExactSet: {
			name: "exact set", kind: KindSet,
			validate: validateSetEntry, spare: 3, of: "set",
			config: setEntryConfig, params: setEntryParams,
			open: openZero(OpenSet),
		},
		kindExactSetWindow: {
			name: "exact set window", kind: KindSetWindow,
			validate: validateSetWindowEntry, spare: 5, of: "set window",
			config: setWindowEntryConfig, params: setWindowEntryParams,
			open: openZero(OpenSetWindow),
		},
	}
}

// validateEntry checks a structure's parameters against its region: the
// kind's own, then that those it does not use are zero.
func validateEntry(e entry) error {
	info, ok := kinds[e.kind]
	if !ok {
		return fmt.Errorf("unknown kind %d", e.kind)
	}
	if err := info.validate(e); err != nil {
		return err
	}
	for _, p := range e.params[info.spare:] {
		if p != 0 {
			return fmt.Errorf("unknown %s parameters", info.of)
		}
	}
	return nil
}

// kindNamed returns the row of the kind that listings call k.
func kindNamed(k Kind) (kindInfo, bool) {
	for _, info := range kinds {
		if info.kind == k {
			return info, true
		}
	}
	return kindInfo{}, false
}

// kindName names a kind in messages.
func kindName(k uint32) string {
	if info, ok := kinds[k]; ok {
		return info.name
	}
	return fmt.Sprintf("structure of kind %d", k)
}

// What the kinds share in turning a config into a size.

// DefaultFPRate is the false-positive rate a Bloom filter is sized for
// when its config leaves FPRate zero.
const DefaultFPRate = 0.01

// nextPow2 returns the smallest power of two at least n (1 for n <= 1).
func nextPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}
