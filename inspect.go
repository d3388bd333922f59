package sketch

import (
	"fmt"
	"os"
)

// FormatVersion is the version of the file format this build reads and
// writes (docs/FORMAT.md). A literal, so that go doc shows it; a test ties
// it to the version the header code writes.
const FormatVersion = 2

// FileInfo is what Inspect reads from a sketch file: the header, the
// directory and the state of the file's lock, at one moment. The JSON
// field names are stable; the seed has none.
type FileInfo struct {
	Path          string      `json:"path"`
	FormatVersion uint32      `json:"format_version"`
	ByteOrder     string      `json:"byte_order"` // "little-endian" or "big-endian": the file's, which is this machine's
	Bytes         uint64      `json:"bytes"`      // the file's size
	Mode          os.FileMode `json:"mode"`       // permission bits
	UID           uint32      `json:"uid"`        // the file's owner
	GID           uint32      `json:"gid"`
	HeaderBytes   uint32      `json:"header_bytes"`
	DataOffset    uint64      `json:"data_offset"` // where the first structure's region may start
	// Sealed is set once Freeze ran: read-write opens are refused.
	Sealed bool `json:"sealed"`
	// Arena is set for an arena (OpenArena): its entries are named and
	// its directory grows. A standalone file has exactly one entry.
	Arena bool `json:"arena"`
	// ReaderSlots is the size of the lock's reader-slot table;
	// DirectoryCapacity the entries the directory has room for.
	ReaderSlots       uint32 `json:"reader_slots"`
	DirectoryCapacity uint32 `json:"directory_capacity"`
	// Entries are the structures: the live directory entries, in
	// directory order. Removed counts the entries of an arena's removed
	// structures (Arena.Remove) whose slots no create has reused yet.
	Entries []EntryInfo `json:"entries"`
	Removed int         `json:"removed"`
	Lock    LockInfo    `json:"lock"`
	// Seed is the file's hash seed. It is secret (whoever knows it can
	// craft keys that collide), so it has no JSON name and String leaves it
	// out: print it only when asked to.
	Seed uint64 `json:"-"`
}

// EntryInfo is one directory entry: a structure in the file.
type EntryInfo struct {
	// Kind is the structure's kind, as ArenaEntry.Kind is: "countmin",
	// "countingbloom", "bloom", "countminwindow", "bloomwindow",
	// "distinct", "distinctwindow".
	Kind Kind `json:"kind"`
	// Description is the kind's name in prose, as messages use it.
	Description string `json:"description"`
	// Name is the structure's name in an arena; "" for a standalone file.
	Name   string `json:"name"`
	Offset uint64 `json:"offset"` // of the structure's region in the file
	Bytes  uint64 `json:"bytes"`  // of the region
	// Params are the kind's parameters, decoded: "rows" and "width" for a
	// Count-Min sketch; "capacity", "fp_rate", "counters" and "hashes" for
	// a counting Bloom filter; "capacity", "fp_rate", "bits" and "hashes"
	// for a Bloom filter; "rows", "width", "period_ns" (0: turned by
	// Rotate only) and "keep" for a Count-Min window; "capacity",
	// "fp_rate", "bits" and "hashes" (of each period's filter),
	// "period_ns" and "keep" for a Bloom window; "precision",
	// "registers", "redis" (1: Redis's hash) and "postgresql" (1:
	// PostgreSQL's hll hash) for a distinct count; "counters" and
	// "names_bytes" (of its names table, which the region holds: see
	// Counters.Names) for a counters structure. Every parameter the
	// format allows is exact in a float64, but for periods longer than
	// 2^53 ns (104 days), which are rounded.
	Params map[string]float64 `json:"params"`
	// Config is set for a kind that keeps part of its config in its
	// region, which Params cannot carry: a counters structure's
	// CountersConfig, with its Names.
	Config any `json:"config,omitempty"`
}

// LockInfo is the state of the file's reader/writer lock (docs/DESIGN.md)
// at one moment. Only structures that lock use it (a counting Bloom
// filter; not a Count-Min sketch, whose adds are lock-free), so a
// Count-Min file shows it free and without handles.
type LockInfo struct {
	// Writer is set while a writer holds the lock or waits for readers to
	// leave; WriterToken is its token id (-1 when Writer is clear), and
	// WriterAlive whether the handle with that token is still open. A
	// dead writer's lock is recovered by the next contender within about
	// 10 ms; until one comes, Inspect shows it held.
	Writer      bool `json:"writer"`
	WriterToken int  `json:"writer_token"`
	WriterAlive bool `json:"writer_alive"`
	// WritersParked, ReadersParked and ReadersTurn are the state word's
	// other bits: someone sleeps on the lock, or readers were let in
	// ahead of the next writer.
	WritersParked bool `json:"writers_parked"`
	ReadersParked bool `json:"readers_parked"`
	ReadersTurn   bool `json:"readers_turn"`
	// SlotsClaimed is one past the highest reader slot ever claimed.
	SlotsClaimed uint32 `json:"slots_claimed"`
	// Readers is the read locks held, over every slot; ReaderSlots the
	// slots that hold any; DeadReaderSlots those of them whose handle is
	// closed (a reader that died holding the lock: the next writer clears
	// its slot).
	Readers         uint64 `json:"readers"`
	ReaderSlots     int    `json:"reader_slots"`
	DeadReaderSlots int    `json:"dead_reader_slots"`
	// Handles is the handles that hold a token (read-write handles of a
	// structure that locks, in any process), among the ids below
	// SlotsClaimed.
	Handles int `json:"handles"`
}

// String describes the file without its seed.
func (fi FileInfo) String() string {
	kinds := ""
	for i, e := range fi.Entries {
		if i > 0 {
			kinds += ", "
		}
		kinds += e.Description
	}
	return fmt.Sprintf("sketch file %s (format %d, %d bytes: %s)", fi.Path, fi.FormatVersion, fi.Bytes, kinds)
}

// GoString is String, for %#v: the seed stays out of it.
func (fi FileInfo) GoString() string { return fi.String() }

// entryInfo decodes a validated entry's parameters by its kind, and
// what its region completes of its config (data is the whole file).
func entryInfo(e entry, data []byte) EntryInfo {
	ei := EntryInfo{Kind: kinds[e.kind].kind, Description: kindName(e.kind), Name: e.name, Offset: e.off, Bytes: e.size}
	if info, ok := kinds[e.kind]; ok {
		ei.Params = info.params(e)
		if info.region != nil {
			ei.Config, _ = info.region(e, data[e.off:e.off+e.size]) // validated with the entry
		}
	} else {
		// validateEntry refuses a kind this build does not know.
		ei.Params = map[string]float64{}
	}
	if ei.Kind == "" {
		ei.Kind = Kind(fmt.Sprintf("kind%d", e.kind))
	}
	return ei
}
