package sketch

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// CountingBloomConfig sizes a counting Bloom filter by what its users know:
// how many items it holds at once and the false-positive rate wanted at
// that load. The geometry follows: k = round(-log2 FPRate) hashes (1..32)
// and m = the next power of two of Capacity·k/ln 2 counters (at least 64),
// 4 bits each.
//
// Creating needs Capacity; the zero config only attaches to an existing
// filter, whatever its geometry.
type CountingBloomConfig struct {
	// Capacity is how many items the filter is sized to hold.
	Capacity uint64 `json:"capacity"`
	// FPRate is the false-positive rate at Capacity, in (0, 1). Zero
	// means DefaultFPRate.
	FPRate float64 `json:"fp_rate"`
	// Seed is the hash seed; zero means random at create and any on
	// attach, as for CountMinConfig.
	Seed uint64 `json:"seed"`
	// Fleet keeps a fleet part beside the counters, as
	// CountMinConfig.Fleet does: the rest of a fleet's count of each
	// counter, which only SetFleetCounts writes, and this host's removes
	// of copies the fleet holds, so that an item added on any host of a
	// fleet is found on every host, and a Remove on any host takes it out
	// on every host (see SetFleetCounts). It costs 2 bytes a counter,
	// five times a filter without one. False attaches to a filter with a
	// fleet part or without; true only to one with a fleet part.
	Fleet bool `json:"fleet,omitempty"`
}

const (
	cbfMinCounters = 64
	cbfMaxHashes   = 32
	// cbfMaxCounters keeps the counter bytes mappable and a counter's
	// index in a 32-bit word's reach on 32-bit platforms.
	cbfMaxCounters = 1 << (31 + 16*(bits.UintSize/64))
)

// cbfGeometry returns the counters and hashes for a capacity and rate.
func cbfGeometry(capacity uint64, fpRate float64) (m uint64, k int, err error) {
	if capacity < 1 {
		return 0, 0, errNoCapacity
	}
	if !(fpRate > 0 && fpRate < 1) {
		return 0, 0, fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalidConfig, fpRate)
	}
	k = int(math.Round(-math.Log2(fpRate)))
	k = min(max(k, 1), cbfMaxHashes)
	want := math.Ceil(float64(capacity) * float64(k) / math.Ln2)
	if want > cbfMaxCounters {
		return 0, 0, fmt.Errorf("%w: capacity %d at rate %v needs %.0f counters, more than %d", ErrInvalidConfig, capacity, fpRate, want, uint64(cbfMaxCounters))
	}
	m = max(uint64(nextPow2(int(want))), cbfMinCounters)
	return m, k, nil
}

// countingBloomBytes is the region of m counters: the operation-count
// stripes, then the counters, two to a byte, then with a fleet part its
// two arrays of a byte a counter (the fleet's counts, the unheld removes).
func countingBloomBytes(m uint64, fleet bool) uint64 {
	if fleet {
		return cells.StripesBytes + m/2 + 2*m
	}
	return cells.StripesBytes + m/2
}

// createSpec is spec for the constructors that always create: the zero
// config, which only attaches, is refused.
func (cfg CountingBloomConfig) createSpec() (spec, error) {
	if cfg.Capacity == 0 {
		return spec{}, errNoCapacity
	}
	return cfg.spec()
}

// Bytes returns the size of the file (or memory) a filter of this config
// needs, header included, as CountMinConfig.Bytes does. The config must
// name a Capacity.
func (cfg CountingBloomConfig) Bytes() (uint64, error) {
	sp, err := cfg.createSpec()
	if err != nil {
		return 0, err
	}
	return sp.fileSize(), nil
}

func (cfg CountingBloomConfig) spec() (spec, error) {
	sp := spec{kind: kindCountingBloom, seed: cfg.Seed}
	fp := cfg.FPRate
	if fp == 0 {
		fp = DefaultFPRate
	}
	if cfg.Capacity == 0 {
		if cfg.FPRate != 0 && !(cfg.FPRate > 0 && cfg.FPRate < 1) {
			return spec{}, fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalidConfig, cfg.FPRate)
		}
		// Attach only: size 0 tells the create path it cannot create.
		sp.match = func(entry) error { return nil }
		return sp, nil
	}
	m, k, err := cbfGeometry(cfg.Capacity, fp)
	if err != nil {
		return spec{}, err
	}
	sp.size = countingBloomBytes(m, cfg.Fleet)
	sp.params = [8]uint64{cfg.Capacity, math.Float64bits(fp), m, uint64(k), flagWord(cfg.Fleet)}
	sp.match = func(e entry) error {
		if err := matchFleet(cfg.Fleet, e.params[4]); err != nil {
			return err
		}
		if e.params[0] == sp.params[0] && e.params[1] == sp.params[1] {
			// The config the file was made with: attach even where this
			// platform's floating point would size it a block apart.
			return nil
		}
		if e.params[2] != m || e.params[3] != uint64(k) {
			return fmt.Errorf("%w: asked for %d counters and %d hashes, the file has %d and %d", ErrIncompatible, m, k, e.params[2], e.params[3])
		}
		return nil
	}
	return sp, nil
}

func countingBloomEntryConfig(e entry) any {
	return CountingBloomConfig{Capacity: e.params[0], FPRate: math.Float64frombits(e.params[1]), Fleet: e.params[4] == 1}
}

func countingBloomEntryParams(e entry) map[string]float64 {
	p := map[string]float64{
		"capacity": float64(e.params[0]),
		"fp_rate":  math.Float64frombits(e.params[1]),
		"counters": float64(e.params[2]),
		"hashes":   float64(e.params[3]),
	}
	if e.params[4] != 0 {
		p["fleet"] = float64(e.params[4])
	}
	return p
}

func validateCountingBloomEntry(e entry) error {
	capacity, fp, m, k := e.params[0], math.Float64frombits(e.params[1]), e.params[2], e.params[3]
	switch {
	case capacity < 1:
		return fmt.Errorf("counting Bloom capacity %d", capacity)
	case !(fp > 0 && fp < 1):
		return fmt.Errorf("counting Bloom false-positive rate %v", fp)
	case m < cbfMinCounters || m > cbfMaxCounters || m&(m-1) != 0:
		return fmt.Errorf("counting Bloom counters %d", m)
	case k < 1 || k > cbfMaxHashes:
		return fmt.Errorf("counting Bloom hashes %d", k)
	case e.params[4] > 1:
		return fmt.Errorf("counting Bloom fleet flag %d", e.params[4])
	case e.size != countingBloomBytes(m, e.params[4] == 1):
		return fmt.Errorf("counting Bloom region of %d bytes, %d counters (fleet part %d) need %d", e.size, m, e.params[4], countingBloomBytes(m, e.params[4] == 1))
	}
	return nil
}

// CountingBloom is a counting Bloom filter (Fan, Cao, Almeida and Broder,
// "Summary Cache", 2000) in a shared mapping: m 4-bit counters, k per item.
// Unlike a Bloom filter it can remove items and say how many times one was
// added. "No" is exact: an item added and not removed is always found, in
// every process, whatever runs at the same time; "yes" is wrong with
// probability about FPRate at Capacity items. Counters saturate at 15 and
// stick there.
//
// Contains, Estimate, their batches and Stats take no lock. Add and
// AddBatch take the file's read lock (so many processes add at once),
// Remove, Reset, Merge and Freeze its write lock; a process killed
// holding either is recovered from within about 10 ms (docs/DESIGN.md).
type CountingBloom struct {
	Handle
	l      cells.CountingBloom
	core   cells.CountingBloomCore
	lk     *fileLock // nil on a read-only handle
	stripe int
}

// CountingBloomStats describes a counting Bloom filter at one moment.
// Set, Fill and Estimated have BloomStats' names and meanings, counted in
// counters instead of bits, with one difference: a removed item leaves
// them, so they describe the items present now rather than every key
// ever added.
type CountingBloomStats struct {
	Capacity uint64  `json:"capacity"` // items it was sized for
	FPRate   float64 `json:"fp_rate"`  // false-positive rate at Capacity
	Counters uint64  `json:"counters"` // m, a power of two
	Hashes   int     `json:"hashes"`   // k
	// Set is the counters above zero, counted by walking the whole array.
	Set uint64 `json:"set"`
	// Fill is Set / Counters: near one half at Capacity. The rate a
	// Contains sees grows with it, fast past Capacity.
	Fill float64 `json:"fill"`
	// Estimated is the number of distinct items present (added and not
	// removed), estimated from the fill: -m/k · ln(1 - Fill). It degrades
	// as the filter saturates (MaxFloat64 when every counter is set).
	Estimated float64 `json:"estimated"`
	// Adds counts the adds since the filter was made or last Reset, in
	// every process: each Add, each key of an AddBatch, each AddIfAbsent
	// that added. Remove does not lower it, nor does Merge change it.
	Adds uint64 `json:"adds"`
	// Fleet says that the filter keeps a fleet part
	// (CountingBloomConfig.Fleet); Set, Fill and Estimated then count the
	// counters above zero fleet-wide, as every answer does.
	Fleet bool `json:"fleet,omitempty"`
	FileStats
}

// OpenCountingBloom opens the counting Bloom filter at a place (see
// Place), creating it with cfg where there is none, as OpenCountMin does.
// An explicit config must match the stored geometry (ErrIncompatible); the
// zero config attaches to any, and cannot create.
func OpenCountingBloom(at Place, cfg CountingBloomConfig, opts ...Option) (*CountingBloom, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newCountingBloom)
}

func newCountingBloom(m *mapping) (*CountingBloom, error) {
	base := m.entryBase()
	b := &CountingBloom{
		l: cells.CountingBloom{
			Stripes: base,
			Words:   unsafe.Add(base, cells.StripesBytes),
			Seed:    m.lay.seed,
			Mask:    m.ent.params[2] - 1,
			K:       int(m.ent.params[3]),
		},
		core: buildCores.CountingBloom,
	}
	if m.ent.params[4] == 1 {
		b.l.Fleet = unsafe.Add(b.l.Words, m.ent.params[2]/2)
		b.l.Unheld = unsafe.Add(b.l.Fleet, m.ent.params[2])
	}
	b.init(m, b)
	if !m.readOnly {
		if err := m.joinLock(); err != nil {
			m.close()
			return nil, err
		}
		b.lk = m.lk
		b.stripe = lockStripe(m.lk)
	}
	b.open.Store(true)
	return b, nil
}

// Add adds key and reports whether it was already there: whether all its
// counters were above zero before, the same answer Bloom.Add gives (so a
// key added for the first time returns false). already is exact when
// nothing else adds or removes the same item at the same moment; a false
// positive reads as already there.
func (b *CountingBloom) Add(key []byte) (already bool, err error) {
	if err := b.refuse("add"); err != nil {
		return false, err
	}
	h1, hi := cells.Hash(key, b.l.Seed)
	if err := b.lk.rlock(); err != nil {
		return false, b.m.errorf("add", err)
	}
	if atomic.LoadUint32(b.sealed) != 0 {
		b.lk.runlock()
		return false, b.m.errorf("add", ErrFrozen)
	}
	already = !b.l.AddHashed(h1, hi)
	b.l.CountAdds(b.stripe, 1)
	b.lk.runlock()
	return already, b.after("add")
}

// AddString is Add for a string key.
func (b *CountingBloom) AddString(key string) (already bool, err error) {
	return b.Add(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// AddBatch adds every key, as Add does each, under one acquisition of the
// lock. When already is not nil it must have len(keys) elements
// (ErrInvalidArgument otherwise) and receives each key's answer. In the cgo build a batch of 8 keys or more (on a filter
// past the caches, 2 or more) goes to the C core, 256 keys a crossing,
// fetching counters ahead on a filter larger than a quarter of L2; at 256
// keys a key costs a fraction of a single Add.
func (b *CountingBloom) AddBatch(keys [][]byte, already []bool) error {
	if err := b.refuse("add"); err != nil {
		return err
	}
	if already != nil && len(already) != len(keys) {
		return b.m.errorf("add", fmt.Errorf("%w: %d answers for %d keys", ErrInvalidArgument, len(already), len(keys)))
	}
	_, frozen, err := b.core.AddBatch(&b.l, b.lk, b.sealed, b.stripe, keys, already)
	if err == nil && frozen {
		err = ErrFrozen
	}
	if err != nil {
		return b.m.errorf("add", err)
	}
	runtime.KeepAlive(b)
	return b.after("add")
}

// Contains reports whether key is probably in the filter. False is exact:
// an item added and not removed is always found.
func (b *CountingBloom) Contains(key []byte) bool {
	if !b.open.Load() {
		return true // a closed handle never claims an item is absent
	}
	h1, hi := cells.Hash(key, b.l.Seed)
	found := b.l.ContainsHashed(h1, hi)
	return found || !b.open.Load()
}

// ContainsString is Contains for a string key.
func (b *CountingBloom) ContainsString(key string) bool {
	return b.Contains(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// ContainsBatch stores Contains(keys[i]) in out[i]; out must have
// len(keys) elements (ErrInvalidArgument otherwise, and nothing is
// asked). A closed handle answers true for every key and returns
// ErrClosed.
func (b *CountingBloom) ContainsBatch(keys [][]byte, out []bool) error {
	if len(out) != len(keys) {
		return fmt.Errorf("sketch: contains %s: %w: %d answers for %d keys", b.name(), ErrInvalidArgument, len(out), len(keys))
	}
	for i, k := range keys {
		out[i] = b.Contains(k)
	}
	return b.after("contains")
}

// Estimate returns how many times key is stored (added minus removed), 0 to
// 15: the smallest of its counters. Below 15 it is never under the truth
// (collisions can only raise it); 15 means 15 or more. 0 means definitely
// absent. It returns a uint64, as the Count-Min kinds' Estimate does,
// though a 4-bit counter holds no more than 15. A closed handle returns
// 15.
func (b *CountingBloom) Estimate(key []byte) uint64 {
	if !b.open.Load() {
		return cells.CbfMax
	}
	h1, hi := cells.Hash(key, b.l.Seed)
	n := b.l.CountHashed(h1, hi)
	if !b.open.Load() {
		return cells.CbfMax
	}
	return uint64(n)
}

// EstimateString is Estimate for a string key.
func (b *CountingBloom) EstimateString(key string) uint64 {
	return b.Estimate(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// EstimateBatch stores Estimate(keys[i]) in estimates[i], as
// CountMin.EstimateBatch does; estimates must have len(keys) elements
// (ErrInvalidArgument otherwise, and nothing is asked). It takes no lock,
// so a read-only handle and a frozen filter answer too. After Close it
// fills estimates with 15, the closed handle's answer, and returns
// ErrClosed.
func (b *CountingBloom) EstimateBatch(keys [][]byte, estimates []uint64) error {
	if len(estimates) != len(keys) {
		return fmt.Errorf("sketch: estimate %s: %w: %d estimates for %d keys", b.name(), ErrInvalidArgument, len(estimates), len(keys))
	}
	for i, k := range keys {
		estimates[i] = b.Estimate(k)
	}
	if !b.open.Load() {
		for i := range estimates {
			estimates[i] = cells.CbfMax
		}
		return b.closedErr("estimate")
	}
	return nil
}

// AddIfAbsent adds key only if the filter does not contain it, as one
// step under the file's write lock, and reports whether it added: of any
// number of goroutines and processes calling it for one key at once,
// exactly one adds, so a key stored this way is stored once however often
// it was asked for, and one Remove takes it out (a ban list banned twice
// is unbanned once). A key the filter already contains, or claims by a
// false positive, is left alone. It waits for the write lock as Remove
// does, so it costs more than Add; use Add where counting copies is
// wanted.
func (b *CountingBloom) AddIfAbsent(key []byte) (added bool, err error) {
	h1, hi := cells.Hash(key, b.l.Seed)
	err = b.exclusive("add", func() error {
		if !b.l.ContainsHashed(h1, hi) {
			b.l.AddHashed(h1, hi)
			b.l.CountAdds(b.stripe, 1)
			added = true
		}
		return nil
	})
	return added, err
}

// AddIfAbsentString is AddIfAbsent for a string key.
func (b *CountingBloom) AddIfAbsentString(key string) (added bool, err error) {
	return b.AddIfAbsent(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Remove takes one copy of key out, if the filter contains it, and reports
// whether it did. Saturated counters stay at 15, so a saturated item
// cannot be removed completely. Only remove items you added: removing one
// that is a false positive lowers counters that other items need, and
// Remove cannot tell: it reports true for a false positive, and the keys
// whose counters it lowered may then be found absent. An unban of a key
// that was never banned can thus drop real bans (5 of a 200-key filter in
// one test), so keep a ban's own record (who was banned) and remove only
// what it holds, or use an exact set where a wrong "no" costs too much.
func (b *CountingBloom) Remove(key []byte) (removed bool, err error) {
	if err := b.refuse("remove"); err != nil {
		return false, err
	}
	h1, hi := cells.Hash(key, b.l.Seed)
	if err := b.lk.lock(); err != nil {
		return false, b.m.errorf("remove", err)
	}
	if atomic.LoadUint32(b.sealed) != 0 {
		b.lk.unlock()
		return false, b.m.errorf("remove", ErrFrozen)
	}
	removed = b.l.RemoveHashed(h1, hi)
	if err := b.lk.unlock(); err != nil {
		return removed, b.m.errorf("remove", err)
	}
	return removed, b.after("remove")
}

// RemoveString is Remove for a string key.
func (b *CountingBloom) RemoveString(key string) (removed bool, err error) {
	return b.Remove(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Reset empties the filter, under the write lock. A fleet part's counts
// of the other hosts stay, as CountMin.Reset leaves its fleet part: only
// the next SetFleetCounts changes them; this host's removes of the
// fleet's copies are forgotten with its own counters.
func (b *CountingBloom) Reset() error {
	return b.exclusive("clear", func() error {
		b.core.Reset(&b.l)
		if b.l.Unheld != nil {
			b.l.ResetUnheld()
		}
		b.l.ResetAdds()
		return nil
	})
}

// Merge adds the others' counters into b's, counter by counter,
// saturating at 15: afterwards b contains every item any of them
// contained. It adds their own counters: a fleet part's counts and
// removes stay out of it (a fleet shares them through SetFleetCounts).
// The filters must have the same geometry and seed
// (ErrIncompatible). Each other is copied under its read lock, then b
// changes under its write lock; no lock is held while another is taken,
// so merging a filter into itself, or two processes merging into each
// other at once, cannot deadlock.
func (b *CountingBloom) Merge(others ...*CountingBloom) error {
	if err := b.refuse("merge"); err != nil {
		return err
	}
	snaps := make([][]byte, 0, len(others))
	for i, other := range others {
		if other == nil || !other.open.Load() {
			return b.m.errorf("merge", fmt.Errorf("%w: filter %d of %d is closed", ErrInvalidArgument, i+1, len(others)))
		}
		if other.l.Mask != b.l.Mask || other.l.K != b.l.K {
			return b.m.errorf("merge", fmt.Errorf("%w: %s has %d counters and %d hashes against %d and %d", ErrIncompatible, other.name(), other.l.Mask+1, other.l.K, b.l.Mask+1, b.l.K))
		}
		if other.l.Seed != b.l.Seed {
			return b.m.errorf("merge", fmt.Errorf("%w: %s hashes with another seed", ErrIncompatible, other.name()))
		}
		snap, err := other.snapshot()
		if err != nil {
			return b.m.errorf("merge", fmt.Errorf("reading %s: %w", other.name(), err))
		}
		if !other.open.Load() {
			return b.m.errorf("merge", fmt.Errorf("%w: %s was closed during the merge", ErrInvalidArgument, other.name()))
		}
		snaps = append(snaps, snap)
	}
	return b.exclusive("merge", func() error {
		for _, snap := range snaps {
			b.core.Merge(&b.l, snap)
		}
		return nil
	})
}

// snapshot copies the counters under the read lock (a read-only handle,
// which takes no lock, copies them as they are). It fails with the lock's
// ErrTimeout.
func (b *CountingBloom) snapshot() ([]byte, error) {
	if b.lk != nil {
		if err := b.lk.rlock(); err != nil {
			return nil, err
		}
		defer b.lk.runlock()
	}
	n := b.l.Nwords()
	snap := make([]byte, n*4)
	for w := uint64(0); w < n; w++ {
		native.PutUint32(snap[w*4:], atomic.LoadUint32((*uint32)(unsafe.Add(b.l.Words, w*4))))
	}
	return snap, nil
}

// Freeze seals the file for good, under the write lock: from then on every
// mutator of every handle, in every process, returns ErrFrozen, and a
// read-write open is refused with ErrFrozen. The file may then be copied
// to hosts of the same byte order and opened there with WithReadOnly. Freeze
// flushes the file (Sync).
func (b *CountingBloom) freeze() error {
	err := b.exclusive("freeze", func() error {
		atomic.StoreUint32(b.sealed, 1)
		b.froze.Store(true)
		return nil
	})
	if err != nil {
		return err
	}
	return b.Sync()
}

// exclusive runs f under the write lock, unless the handle may not mutate
// or the file is sealed.
func (b *CountingBloom) exclusive(op string, f func() error) error {
	if err := b.refuse(op); err != nil {
		return err
	}
	if err := b.lk.lock(); err != nil {
		return b.m.errorf(op, err)
	}
	if atomic.LoadUint32(b.sealed) != 0 {
		b.lk.unlock()
		return b.m.errorf(op, ErrFrozen)
	}
	err := f()
	if uerr := b.lk.unlock(); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return b.m.errorf(op, err)
	}
	return b.after(op)
}

func (b *CountingBloom) count(set uint64) float64 {
	m, k := float64(b.l.Mask+1), float64(b.l.K)
	if set >= b.l.Mask+1 {
		return math.Inf(1)
	}
	return -m / k * math.Log1p(-float64(set)/m)
}

// Stats reports the filter's geometry and fill. It walks the counters.
func (b *CountingBloom) Stats() CountingBloomStats {
	s := CountingBloomStats{
		Counters:  b.l.Mask + 1,
		Hashes:    b.l.K,
		FileStats: FileStats{ReadOnly: b.ReadOnly()},
	}
	if b.m == nil || !b.open.Load() {
		s.Closed = true
		return s
	}
	s.Capacity = b.m.ent.params[0]
	s.FPRate = b.Config().FPRate
	s.Bytes = b.m.ownBytes()
	s.Fleet = b.l.Fleet != nil
	if s.Fleet {
		s.Set = b.l.FleetSet()
	} else {
		s.Set = b.core.CountSet(&b.l)
	}
	s.Estimated = b.count(s.Set)
	if math.IsInf(s.Estimated, 1) {
		s.Estimated = math.MaxFloat64 // every counter set; JSON has no infinity
	}
	s.Fill = float64(s.Set) / float64(s.Counters)
	s.Adds = b.l.Adds()
	s.Frozen = atomic.LoadUint32(b.sealed) != 0
	if !b.open.Load() {
		return CountingBloomStats{Counters: s.Counters, Hashes: s.Hashes, FileStats: FileStats{ReadOnly: b.ReadOnly(), Closed: true}}
	}
	return s
}

// Counters returns m, the number of 4-bit counters.
func (b *CountingBloom) Counters() uint64 { return b.l.Mask + 1 }

// The fleet part (CountingBloomConfig.Fleet), as a fleet agent moves it.
// Each counter of a host is its own count less its unheld removes (the
// removes of copies only other hosts held); a counter's fleet-wide count
// is that plus the sum of the other hosts', which SetFleetCounts stores.
// Every answer (Contains, Estimate, Add's and AddIfAbsent's, Remove's
// check) reads fleet-wide counts, so a ban (Add) on any host is found on
// every host once that host pushed and this one pulled, and an unban
// (Remove) on any host, of a copy held anywhere, takes it out everywhere
// the same way. A counter saturated on any host reads as saturated on
// every host that pulled it, as a host's own does: never low.

// ExportCounts returns this host's count of each counter, m bytes: own
// count less unheld removes as an int8 (at least -128; a lower one is
// sent as -128, which only raises the fleet's counts), 127 for a
// saturated counter. It reads under the read lock, so that adds go on and
// no Remove moves a copy during the walk. A filter without a fleet part
// is ErrIncompatible; a closed handle is ErrClosed.
func (b *CountingBloom) ExportCounts() ([]byte, error) {
	if !b.open.Load() {
		return nil, b.closedErr("export")
	}
	if b.l.Fleet == nil {
		return nil, b.m.errorf("export", errNoFleetPart)
	}
	if b.lk != nil {
		if err := b.lk.rlock(); err != nil {
			return nil, b.m.errorf("export", err)
		}
		defer b.lk.runlock()
	}
	out := make([]byte, b.l.Mask+1)
	b.l.ExportHost(out)
	return out, b.after("export")
}

// SumFleetCounts returns the sum of other hosts' ExportCounts, what
// SetFleetCounts takes: each counter's counts added (clamped to [-128,
// 126] once summed), 127 where any host's is saturated. No exports give
// m zeros; an export of another length is ErrIncompatible. It reads
// nothing of the filter but its size.
func (b *CountingBloom) SumFleetCounts(exports ...[]byte) ([]byte, error) {
	m := b.l.Mask + 1
	for i, e := range exports {
		if uint64(len(e)) != m {
			return nil, fmt.Errorf("sketch: sum fleet counts of %s: %w: export %d has %d counts for %d counters", b.name(), ErrIncompatible, i+1, len(e), m)
		}
	}
	sum := make([]byte, m)
	cells.SumHosts(sum, exports)
	return sum, nil
}

// SetFleetCounts stores counts, m int8s (ExportCounts' encoding: the sum
// of the other hosts', 127 where any is saturated), into the fleet part,
// under the write lock, so that a Remove's check and its change see one
// fleet part. Storing absolute values makes it idempotent: a repeated
// call changes nothing, and one cut short is replaced whole by the next.
// A Contains during the store sees each counter as before or after. A
// filter without a fleet part, or counts of another length, is
// ErrIncompatible; a read-only, frozen or closed handle stores nothing.
func (b *CountingBloom) SetFleetCounts(counts []byte) error {
	if err := b.refuse("set fleet counts"); err != nil {
		return err
	}
	if b.l.Fleet == nil {
		return b.m.errorf("set fleet counts", errNoFleetPart)
	}
	if uint64(len(counts)) != b.l.Mask+1 {
		return b.m.errorf("set fleet counts", fmt.Errorf("%w: %d counts for %d counters", ErrIncompatible, len(counts), b.l.Mask+1))
	}
	return b.exclusive("set fleet counts", func() error {
		b.l.SetFleet(counts)
		return nil
	})
}

// Hashes returns k, the counters per item.
func (b *CountingBloom) Hashes() int { return b.l.K }

// Close releases the descriptor, the lock's liveness token and the file's
// pages; safe twice and while other goroutines use the handle, as
// CountMin.Close is. A lock this handle held is recovered by the others.
func (b *CountingBloom) Close() error {
	if b == nil {
		return nil
	}
	return b.close()
}

func (b *CountingBloom) describe() (string, string) {
	return "CountingBloom", fmt.Sprintf("%d counters, %d hashes", b.l.Mask+1, b.l.K)
}
func (b *CountingBloom) statsOf() any { return b.Stats() }

func (b *CountingBloom) check() error { return nil }

// Config returns the config stored in the file: the Capacity and FPRate the filter was sized for (FPRate is DefaultFPRate where the config left it zero), without the seed
// (a secret: see Seed). Opening the same place with it attaches; creating
// another structure with it (and the same seed) makes one that merges with
// this one. A zero handle returns the zero config.
func (b *CountingBloom) Config() CountingBloomConfig {
	if b.m == nil {
		return CountingBloomConfig{}
	}
	return countingBloomEntryConfig(b.m.ent).(CountingBloomConfig)
}

// Snapshot copies the filter, while any process keeps adding to it, into
// a new filter at a place, and returns it frozen and read-only, with this
// filter's geometry and seed, so that it merges (Merge) with the
// snapshots and frozen files of other hosts. The copy finds every key
// whose add returned, in any process, before Snapshot was called, and
// that no Remove took out before the copy began (no false negative).
//
// The copy holds the file's read lock, as an Add does: adds go on, while
// a Remove, Reset, Merge or AddIfAbsent, which take the write lock, runs
// wholly before the copy or wholly after it (a key removed before is gone
// from the copy, unless another copy of it or a false positive remains;
// one removed after is still in it), and, the lock
// preferring writers, a Remove that waits for the copy holds up the adds
// that come after it until the copy ends. A read-only handle takes no
// lock: a Remove running during its copy may then be in it in part (the
// key may still be found), and a Reset in part; keys added before the
// copy and not removed are still all found. The places and options are
// as CountMin.Snapshot's.
func (b *CountingBloom) Snapshot(at Place, opts ...Option) (*CountingBloom, error) {
	if !b.open.Load() {
		return nil, b.closedErr("snapshot")
	}
	m, err := createSnapshot(b.name(), at, entrySpec(b.m.ent, b.l.Seed, b.copyRegion), opts)
	return finishSnapshot(&b.Handle, m, err, newCountingBloom)
}

// copyRegion copies the filter's region, its add count and counters, into dst under the read lock (none on a read-only handle),
// or fails with the lock's ErrTimeout.
func (b *CountingBloom) copyRegion(dst []byte) error {
	if b.lk != nil {
		if err := b.lk.rlock(); err != nil {
			return err
		}
		defer b.lk.runlock()
	}
	copyWords(dst, b.l.Stripes)
	return nil
}
