package sketch

import (
	"fmt"
	"slices"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// CountersConfig names the counters of a counters structure. The names
// are fixed when it is created and stored in it, so that every process,
// Inspect's readers and the metrics list them without the config. The
// zero config attaches to any counters structure; creating one needs
// Names.
//
// A counter is found by its name in a table each handle builds when it
// opens the structure, never by hashing a key a client sends: the seed
// is the file's, as every kind's, and the counters do not use it.
type CountersConfig struct {
	// Names are the counters' names, in the order Values lists them: 1 to
	// 1024 names, none twice, each 1 to 64 bytes of printable UTF-8
	// (unicode.IsPrint: letters, marks, numbers, punctuation, symbols and
	// the ASCII space; no control characters). An existing structure
	// must have exactly these names in this order (ErrIncompatible,
	// saying the first difference).
	Names []string `json:"names,omitempty"`
	// Seed is the file's hash seed (Handle.Seed), as CountMinConfig's:
	// zero means random at create and any on attach. The counters hash
	// nothing with it.
	Seed uint64 `json:"seed"`
}

// The limits on names, and where counters are.
const (
	// CountersMaxNames is the most counters a structure holds.
	CountersMaxNames = 1024
	// CountersMaxNameBytes is the longest name of a counter, in bytes.
	CountersMaxNameBytes = 64
	// countersStride is the bytes from one counter to the next: each
	// counter has a cache line of its own, so that processes adding to
	// different counters never contend for one line (false sharing),
	// for 56 idle bytes a counter (56 KiB at 1024 names).
	// BenchmarkCounters_Stride (two goroutines, each adding to its own
	// counter) could not tell the two apart on the 2-vCPU AMD EPYC VM it
	// ran on: 11.3 to 14.4 ns an add with the counters 8 bytes apart,
	// 11.5 to 13.2 a line apart, and 5.6 for one goroutine alone, so its
	// vCPUs do not add in parallel and no line moved between cores. On
	// hosts whose cores do, a line two cores write moves between them
	// at every add; the padding is for those, and costs nothing here.
	countersStride = 64
)

// countersBytes is the region of n counters whose names table has
// table bytes: the counters, a line each, then the table padded to a
// word.
func countersBytes(n, table uint64) uint64 { return n*countersStride + roundUp(table, 8) }

// checkCounterName says why name cannot name a counter; nil when it can.
func checkCounterName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an empty name")
	case len(name) > CountersMaxNameBytes:
		return fmt.Errorf("%q is %d bytes, more than %d", name, len(name), CountersMaxNameBytes)
	case !utf8.ValidString(name):
		return fmt.Errorf("%q is not valid UTF-8", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%q holds %U, which is not printable", name, r)
		}
	}
	return nil
}

// checkCounterNames checks a list of names: its length, each name, and
// that none comes twice.
func checkCounterNames(names []string) error {
	if len(names) > CountersMaxNames {
		return fmt.Errorf("%d names, more than %d", len(names), CountersMaxNames)
	}
	seen := make(map[string]int, len(names))
	for i, name := range names {
		if err := checkCounterName(name); err != nil {
			return fmt.Errorf("name %d: %w", i, err)
		}
		if j, dup := seen[name]; dup {
			return fmt.Errorf("name %d, %q, is also name %d", i, name, j)
		}
		seen[name] = i
	}
	return nil
}

// countersTable encodes names as the file stores them: each name's
// length in one byte, then its bytes.
func countersTable(names []string) []byte {
	var t []byte
	for _, name := range names {
		t = append(append(t, byte(len(name))), name...)
	}
	return t
}

// Bytes returns the size of the file a counters structure of these
// names needs, header included, as CountMinConfig.Bytes does.
func (cfg CountersConfig) Bytes() (uint64, error) {
	sp, err := cfg.createSpec()
	if err != nil {
		return 0, err
	}
	return sp.fileSize(), nil
}

// createSpec is the spec of places that always create (a memfd,
// memory): it needs Names.
func (cfg CountersConfig) createSpec() (spec, error) {
	if len(cfg.Names) == 0 {
		return spec{}, fmt.Errorf("%w: a counters structure needs Names to be created", ErrInvalidConfig)
	}
	return cfg.spec()
}

// spec is the structure's spec. Without Names it only attaches, to any
// names. With them it creates, writing the names table (init in an
// arena, fill in a file of its own); an existing structure's names are
// in its region, which the entry match sees does not hold, so newCounters
// compares them (matchNames) once it has read them.
func (cfg CountersConfig) spec() (spec, error) {
	if len(cfg.Names) == 0 {
		return spec{kind: kindCounters, seed: cfg.Seed, match: func(entry) error { return nil }}, nil
	}
	if err := checkCounterNames(cfg.Names); err != nil {
		return spec{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	table := countersTable(cfg.Names)
	n := uint64(len(cfg.Names))
	at := n * countersStride
	write := func(region []byte) { copy(region[at:], table) }
	return spec{
		kind:   kindCounters,
		size:   countersBytes(n, uint64(len(table))),
		params: [8]uint64{n, uint64(len(table)), xxh3.Hash(table)},
		seed:   cfg.Seed,
		match:  func(entry) error { return nil }, // matchNames, on the names read
		init:   write,
		fill: func(data []byte, lay layout) error {
			d := lay.entries[0]
			write(data[d.off : d.off+d.size])
			return nil
		},
	}, nil
}

// matchNames reports whether the stored names are those asked for (none
// asks for any), with an error wrapping ErrIncompatible saying the first
// difference.
func matchNames(want, have []string) error {
	if len(want) == 0 || slices.Equal(want, have) {
		return nil
	}
	for i := range min(len(want), len(have)) {
		if want[i] != have[i] {
			return fmt.Errorf("%w: asked for %d names, the file has %d; name %d is %q, the file's %q", ErrIncompatible, len(want), len(have), i, want[i], have[i])
		}
	}
	if len(want) > len(have) {
		return fmt.Errorf("%w: asked for %d names, the file has %d: it has no %q", ErrIncompatible, len(want), len(have), want[len(have)])
	}
	return fmt.Errorf("%w: asked for %d names, the file has %d: it also has %q", ErrIncompatible, len(want), len(have), have[len(want)])
}

// countersEntryConfig is the config the entry alone tells: none, as the
// names are in the region (countersRegionConfig).
func countersEntryConfig(e entry) any { return CountersConfig{} }

func countersEntryParams(e entry) map[string]float64 {
	return map[string]float64{"counters": float64(e.params[0]), "names_bytes": float64(e.params[1])}
}

func validateCountersEntry(e entry) error {
	n, table := e.params[0], e.params[1]
	switch {
	case n < 1 || n > CountersMaxNames:
		return fmt.Errorf("counters structure of %d counters", n)
	case table < 2*n || table > n*(1+CountersMaxNameBytes):
		return fmt.Errorf("counters structure of %d counters with a names table of %d bytes", n, table)
	case e.size != countersBytes(n, table):
		return fmt.Errorf("counters region of %d bytes, %d counters with a names table of %d bytes need %d", e.size, n, table, countersBytes(n, table))
	}
	return nil
}

// countersNames reads the names from a counters structure's region
// (validated by validateCountersEntry): every name valid and different,
// the table exactly as long and its checksum as the entry says, the
// padding zero. The table is copied with atomic loads first, and read
// from the copy, so a writer changing it meanwhile cannot make the
// names it returns invalid.
func countersNames(e entry, region []byte) ([]string, error) {
	n, size := e.params[0], e.params[1]
	padded := make([]byte, roundUp(size, 8))
	copyWords(padded, unsafe.Pointer(&region[n*countersStride]))
	table := padded[:size]
	if slices.ContainsFunc(padded[size:], func(b byte) bool { return b != 0 }) {
		return nil, fmt.Errorf("counters names table with bytes in its padding")
	}
	names := make([]string, 0, n)
	for len(table) > 0 {
		l := int(table[0])
		if l > len(table)-1 {
			return nil, fmt.Errorf("counters name %d of %d bytes runs past the names table", len(names), l)
		}
		names = append(names, string(table[1:1+l]))
		table = table[1+l:]
	}
	if uint64(len(names)) != n {
		return nil, fmt.Errorf("counters names table of %d names, the entry says %d", len(names), n)
	}
	if err := checkCounterNames(names); err != nil {
		return nil, fmt.Errorf("counters names table: %w", err)
	}
	if xxh3.Hash(padded[:size]) != e.params[2] {
		return nil, fmt.Errorf("counters names table does not match its checksum")
	}
	return names, nil
}

// countersRegionConfig is the kinds table's region check: the config
// with the names the region holds.
func countersRegionConfig(e entry, region []byte) (any, error) {
	names, err := countersNames(e, region)
	if err != nil {
		return nil, err
	}
	return CountersConfig{Names: names}, nil
}

// Counters is a small fixed set of named 64-bit counters, exact, shared
// by every process that maps them: requests by status code, by route.
// An add is one atomic add on the counter's word, lock-free, so adds in
// any number of processes all count, and a process killed at any
// instant leaves every counter exactly what the adds that returned made
// it (an add is there whole or not at all) and nothing to repair.
//
// Counters wrap at 2^64, as the one atomic add does: they are not
// saturated, as Prometheus counters are not (a rate over a wrap reads as
// a reset). Each counter has a cache line of its own, so adds to
// different counters never contend.
//
// A counter is found by name in a map each handle builds when it opens
// the structure, without allocating; Counter resolves a name once, for a
// hot path that is then just the add. There is no C core: one atomic add
// needs none, and the structure is served in Go in both builds.
type Counters struct {
	Handle
	names []string       // as stored, in order
	index map[string]int // name to its place in names
	words unsafe.Pointer // counter i at words + i*countersStride
}

// NamedValue is one counter's name and value.
type NamedValue struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// CountersStats describes a counters structure at one moment.
type CountersStats struct {
	// Names is how many counters it has.
	Names int `json:"names"`
	// Counters are every counter's name and value, in the stored order,
	// each read once (not one instant across counters).
	Counters []NamedValue `json:"counters"`
	FileStats
}

// OpenCounters opens the counters structure at a place (see Place),
// creating it with cfg where there is none, as OpenCountMin does.
// Creating needs Names; an existing structure must have cfg's Names,
// when it gives any, else ErrIncompatible; the zero config attaches to
// any. A structure whose stored names are invalid (not printable UTF-8,
// too long, repeated, or not what the entry's checksum says) is
// ErrCorrupt.
func OpenCounters(at Place, cfg CountersConfig, opts ...Option) (*Counters, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, func(m *mapping) (*Counters, error) {
		return newCounters(m, cfg.Names)
	})
}

// newCounters builds the handle for the structure at m.ent, whose names
// must be want's when want has any; on error it releases m. It takes no
// lock: every counter changes by an atomic add.
func newCounters(m *mapping, want []string) (*Counters, error) {
	names, err := countersNames(m.ent, m.entryBytes())
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrCorrupt, err) // changed since the directory was read
	} else {
		err = matchNames(want, names)
	}
	if err != nil {
		m.close()
		return nil, m.errorf("open", err)
	}
	c := &Counters{names: names, index: make(map[string]int, len(names)), words: m.entryBase()}
	for i, name := range names {
		c.index[name] = i
	}
	c.init(m, c)
	c.open.Store(true)
	return c, nil
}

// word returns counter i's word.
func (c *Counters) word(i int) *uint64 {
	return (*uint64)(unsafe.Add(c.words, uintptr(i)*countersStride))
}

// unknown is the error for a name the structure has no counter of.
func (c *Counters) unknown(op, name string) error {
	return c.m.errorf(op, fmt.Errorf("%w: no counter named %q", ErrInvalidArgument, name))
}

// Add adds n to the counter named name, in every process: one atomic
// add, wrapping at 2^64. A name the structure does not have is
// ErrInvalidArgument, naming it; on error (closed, read-only, frozen,
// unknown name) it adds nothing. It allocates nothing but its errors.
func (c *Counters) Add(name string, n uint64) error {
	if err := c.mayWrite("add"); err != nil {
		return err
	}
	i, ok := c.index[name]
	if !ok {
		return c.unknown("add", name)
	}
	atomic.AddUint64(c.word(i), n)
	return c.after("add")
}

// Counter is one counter of a Counters structure, resolved by name once
// (Counters.Counter), for a hot path that adds to it often: its Add is
// the handle's checks and one atomic add. It stays bound to the handle
// that resolved it: after that handle's Close, Add returns ErrClosed.
// The zero Counter is closed.
type Counter struct {
	c *Counters
	p *uint64
}

// Counter resolves the counter named name. A name the structure does not
// have is ErrInvalidArgument, naming it.
func (c *Counters) Counter(name string) (Counter, error) {
	if !c.open.Load() {
		return Counter{}, c.closedErr("counter")
	}
	i, ok := c.index[name]
	if !ok {
		return Counter{}, c.unknown("counter", name)
	}
	return Counter{c: c, p: c.word(i)}, nil
}

// Add adds n to the counter, in every process, as Counters.Add does.
func (k Counter) Add(n uint64) error {
	if k.c == nil {
		return fmt.Errorf("sketch: add: %w: the zero Counter", ErrClosed)
	}
	if err := k.c.mayWrite("add"); err != nil {
		return err
	}
	atomic.AddUint64(k.p, n)
	return k.c.after("add")
}

// Value returns the counter's value; 0 for the zero Counter or a closed
// handle's.
func (k Counter) Value() uint64 {
	if k.c == nil || !k.c.open.Load() {
		return 0
	}
	v := atomic.LoadUint64(k.p)
	if !k.c.open.Load() {
		return 0 // what was read may be the placeholder
	}
	return v
}

// Value returns the counter named name: every add that returned before
// the call, in any process, is in it. A name the structure does not have
// is ErrInvalidArgument.
func (c *Counters) Value(name string) (uint64, error) {
	if !c.open.Load() {
		return 0, c.closedErr("value")
	}
	i, ok := c.index[name]
	if !ok {
		return 0, c.unknown("value", name)
	}
	v := atomic.LoadUint64(c.word(i))
	return v, c.after("value")
}

// Values returns every counter's name and value, in the stored order,
// each read once: adds running meanwhile may be in some and not others.
// A closed handle returns nil.
func (c *Counters) Values() []NamedValue {
	if !c.open.Load() {
		return nil
	}
	out := make([]NamedValue, len(c.names))
	for i, name := range c.names {
		out[i] = NamedValue{Name: name, Value: atomic.LoadUint64(c.word(i))}
	}
	if !c.open.Load() {
		return nil
	}
	return out
}

// Names returns the counters' names, in the stored order (a copy).
func (c *Counters) Names() []string { return slices.Clone(c.names) }

// Reset sets every counter to zero, in every process. It is not atomic
// across counters, nor with adds: an add at the same moment may be kept
// or cleared, and a reader may see some counters cleared and others
// not. A Prometheus rate over it reads as a counter reset.
func (c *Counters) Reset() error {
	if err := c.refuse("reset"); err != nil {
		return err
	}
	for i := range c.names {
		atomic.StoreUint64(c.word(i), 0)
	}
	return c.after("reset")
}

// Merge adds each counter of the others to c's of the same name: for
// collecting frozen copies (Snapshot, Freeze) from several hosts into
// one total. The others must have c's names in c's order
// (ErrIncompatible, checked for all before anything changes); they may
// be read-only views or frozen files, while c may be neither. Merging
// adds: a copy merged twice counts twice, and merging a structure into
// itself doubles it. Each counter changes with one atomic add, so every
// process may go on adding meanwhile.
func (c *Counters) Merge(others ...*Counters) error {
	return mergeEach(&c.Handle, "counters structure", others, func(o *Counters) error {
		if err := matchNames(c.names, o.names); err != nil {
			return fmt.Errorf("%s: %w", o.name(), err)
		}
		return nil
	}, func(o *Counters) error {
		for i := range c.names {
			atomic.AddUint64(c.word(i), atomic.LoadUint64(o.word(i)))
		}
		return nil
	})
}

// Stats reports every counter's value.
func (c *Counters) Stats() CountersStats {
	s := CountersStats{Names: len(c.names), FileStats: FileStats{ReadOnly: c.ReadOnly()}}
	if c.m == nil || !c.open.Load() {
		s.FileStats.Closed = true
		return s
	}
	s.Bytes = c.m.ownBytes()
	s.Counters = c.Values()
	s.Frozen = atomic.LoadUint32(c.sealed) != 0
	if !c.open.Load() {
		return CountersStats{Names: s.Names, FileStats: FileStats{ReadOnly: c.ReadOnly(), Closed: true}}
	}
	return s
}

// Close releases the descriptor and the file's pages; safe twice and
// while other goroutines use the handle, as CountMin.Close is.
func (c *Counters) Close() error {
	if c == nil {
		return nil
	}
	return c.close()
}

func (c *Counters) describe() (string, string) {
	return "Counters", fmt.Sprintf("%d counters", len(c.names))
}

func (c *Counters) statsOf() any { return c.Stats() }

// check is the structure's part of Check: the names in the file must
// still be the ones this handle read when it opened it (ErrDamaged
// otherwise: nothing writes them after the create). Any value is one the
// adds may have left, so the counters are not checked.
func (c *Counters) check() error {
	names, err := countersNames(c.m.ent, c.m.entryBytes())
	if err == nil && !slices.Equal(names, c.names) {
		err = fmt.Errorf("counters names changed since the handle opened the structure")
	}
	if !c.open.Load() {
		return c.closedErr("check")
	}
	if err != nil {
		return c.m.errorf("check", fmt.Errorf("%w: %w", ErrDamaged, err))
	}
	return nil
}

// Config returns the config stored in the file: its Names. A zero
// handle returns the zero config.
func (c *Counters) Config() CountersConfig {
	if c.m == nil {
		return CountersConfig{}
	}
	return CountersConfig{Names: c.Names()}
}

// Snapshot copies the structure, names and counters, into a new one at
// another place, without a lock, as CountMin.Snapshot does, and returns
// it frozen and read-only: every add that returned before the call, in
// any process, is in the copy; one that runs during it may be or not.
func (c *Counters) Snapshot(at Place, opts ...Option) (*Counters, error) {
	if !c.open.Load() {
		return nil, c.closedErr("snapshot")
	}
	m, err := createSnapshot(c.name(), at, entrySpec(c.m.ent, c.m.lay.seed, c.copyRegion), opts)
	return finishSnapshot(&c.Handle, m, err, func(m *mapping) (*Counters, error) { return newCounters(m, nil) })
}

// copyRegion copies the structure's region, its counters and names, into
// dst.
func (c *Counters) copyRegion(dst []byte) error {
	copyWords(dst, c.words)
	return nil
}
