package sketch

import "fmt"

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
)

// The kind numbers stored in directory entries, and the parameters each
// entry keeps (of 8 words; the rest are zero). An FP rate is kept as the
// bits of its float64, a period in nanoseconds (0: turned by Rotate only).
const (
	kindCountMin       uint32 = 1 // rows, width
	kindBloom          uint32 = 2 // capacity, FP rate, blocks, k
	kindCountingBloom  uint32 = 3 // capacity, FP rate, m, k
	kindCountMinWindow uint32 = 4 // rows, width, period, keep
	kindBloomWindow    uint32 = 5 // capacity, FP rate, blocks, k (of a period's filter), period, keep
	kindDistinct       uint32 = 6 // precision p, profile (0: seeded XXH3, 1: Redis's)
	kindDistinctWindow uint32 = 7 // precision p, profile (of a period's count), period, keep
)

// kindInfo is what the format knows of a structure kind.
type kindInfo struct {
	name     string // in messages: "Count-Min sketch"
	kind     Kind   // in listings and the command line: "countmin"
	validate func(e entry) error
	// config returns the structure's config as stored in the entry (a
	// CountMinConfig for a Count-Min sketch, and so on), for listings.
	config func(e entry) any
	// params decodes the entry's parameters by name, for Inspect.
	params func(e entry) map[string]float64
}

// kinds is the table. It is filled by init, as its functions refer back to
// it (through error messages).
var kinds map[uint32]kindInfo

func init() {
	kinds = map[uint32]kindInfo{
		kindCountMin:       {"Count-Min sketch", KindCountMin, validateCountMinEntry, countMinEntryConfig, countMinEntryParams},
		kindBloom:          {"Bloom filter", KindBloom, validateBloomEntry, bloomEntryConfig, bloomEntryParams},
		kindCountingBloom:  {"counting Bloom filter", KindCountingBloom, validateCountingBloomEntry, countingBloomEntryConfig, countingBloomEntryParams},
		kindCountMinWindow: {"Count-Min window", KindCountMinWindow, validateCountMinWindowEntry, countMinWindowEntryConfig, countMinWindowEntryParams},
		kindBloomWindow:    {"Bloom window", KindBloomWindow, validateBloomWindowEntry, bloomWindowEntryConfig, bloomWindowEntryParams},
		kindDistinct:       {"distinct count", KindDistinct, validateDistinctEntry, distinctEntryConfig, distinctEntryParams},
		kindDistinctWindow: {"distinct window", KindDistinctWindow, validateDistinctWindowEntry, distinctWindowEntryConfig, distinctWindowEntryParams},
	}
}

// validateEntry checks a structure's parameters against its region.
func validateEntry(e entry) error {
	info, ok := kinds[e.kind]
	if !ok {
		return fmt.Errorf("unknown kind %d", e.kind)
	}
	return info.validate(e)
}

// kindName names a kind in messages.
func kindName(k uint32) string {
	if info, ok := kinds[k]; ok {
		return info.name
	}
	return fmt.Sprintf("structure of kind %d", k)
}
