package sketch

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// BloomConfig sizes a Bloom filter by what its users know: how many
// distinct keys it will hold and the false-positive rate wanted at that
// load. The bits and the hashes follow (docs/FORMAT.md): the filter is
// blocked, all of a key's bits in one 64-byte cache line, which costs one
// cache miss a key instead of k and about 7% (at 1%) to 25% (at 1e-4) more
// bits than a classic filter, sized so that the rate at Capacity is
// FPRate.
//
// Creating needs Capacity; the zero config only attaches to an existing
// filter, whatever its size.
type BloomConfig struct {
	// Capacity is how many distinct keys the filter is sized to hold.
	Capacity uint64 `json:"capacity"`
	// FPRate is the false-positive rate at Capacity, in (0, 1). Zero
	// means DefaultFPRate.
	FPRate float64 `json:"fp_rate"`
	// Seed is the hash seed; zero means random at create and any on
	// attach, as for CountMinConfig.
	Seed uint64 `json:"seed"`
}

// bloomFP is the false-positive rate of a blocked filter holding lambda
// keys a block on average, k probes a key drawn with repetition: the
// Poisson mixture, over a block's load j, of the rate of a 512-bit filter
// holding j keys, (1 - (1-1/512)^(k·j))^k (Putze, Sanders and Singler,
// 2007).
func bloomFP(lambda float64, k int) float64 {
	q := powInt(1-1.0/cells.BloomBlockBits, k) // a bit is missed by one key
	sd := math.Sqrt(lambda)
	lo := math.Max(0, math.Floor(lambda-12*sd-12))
	hi := lambda + 12*sd + 12
	lg, _ := math.Lgamma(lo + 1)
	w := math.Exp(-lambda + lo*math.Log(lambda) - lg) // P(j = lo)
	miss := math.Pow(q, lo)                           // a bit is missed by lo keys
	var fp float64
	for j := lo; j <= hi; j++ {
		fp += w * powInt(1-miss, k)
		w *= lambda / (j + 1)
		miss *= q
	}
	return fp
}

// powInt is x^n by squaring.
func powInt(x float64, n int) float64 {
	r := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			r *= x
		}
		x *= x
	}
	return r
}

// bloomLoad returns the most keys a block may hold on average, for k
// probes, with the rate at most fpRate.
func bloomLoad(fpRate float64, k int) float64 {
	lo, hi := 0.0, 1.0
	for bloomFP(hi, k) <= fpRate && hi < 1<<20 {
		lo, hi = hi, 2*hi
	}
	for range 60 {
		mid := (lo + hi) / 2
		if bloomFP(mid, k) <= fpRate {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// bloomSizing is, per rate, the k that lets a block hold the most keys
// and that load: the work is a few milliseconds, and a process opens many
// filters of one rate.
var bloomSizing sync.Map // math.Float64bits(rate) -> [2]float64{k, load}

// bloomRateGeometry returns the hashes and the keys a block holds for a
// rate: the k in 1..32 that allows the largest load (the load rises with k
// to one peak, then falls).
func bloomRateGeometry(fpRate float64) (k int, load float64) {
	if v, ok := bloomSizing.Load(math.Float64bits(fpRate)); ok {
		kl := v.([2]float64)
		return int(kl[0]), kl[1]
	}
	for kk := 1; kk <= cells.BloomMaxHashes; kk++ {
		l := bloomLoad(fpRate, kk)
		if l <= load {
			break
		}
		k, load = kk, l
	}
	bloomSizing.Store(math.Float64bits(fpRate), [2]float64{float64(k), load})
	return k, load
}

// bloomGeometry returns the blocks and hashes for a capacity and rate: the
// fewest blocks whose rate at capacity, by bloomFP, is at most fpRate.
func bloomGeometry(capacity uint64, fpRate float64) (blocks uint64, k int, err error) {
	if capacity < 1 {
		return 0, 0, errNoCapacity
	}
	if !(fpRate > 0 && fpRate < 1) {
		return 0, 0, fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalidConfig, fpRate)
	}
	k, load := bloomRateGeometry(fpRate)
	if load == 0 {
		return 0, 0, fmt.Errorf("%w: false-positive rate %v is too small for a blocked filter", ErrInvalidConfig, fpRate)
	}
	want := math.Ceil(float64(capacity) / load)
	if want > cells.BloomMaxBlocks {
		return 0, 0, fmt.Errorf("%w: capacity %d at rate %v needs %.0f blocks of 512 bits, more than %d", ErrInvalidConfig, capacity, fpRate, want, uint64(cells.BloomMaxBlocks))
	}
	return max(uint64(want), 1), k, nil
}

// bloomBytes is the region of a filter of the given blocks: the stripes,
// then the bits.
func bloomBytes(blocks uint64) uint64 { return cells.StripesBytes + blocks*cells.BloomBlockBytes }

// Bytes returns the size of the file (or memory) a filter of this config
// needs, header included, as CountMinConfig.Bytes does. The config must
// name a Capacity.
func (cfg BloomConfig) Bytes() (uint64, error) {
	sp, err := cfg.createSpec()
	if err != nil {
		return 0, err
	}
	return sp.fileSize(), nil
}

// createSpec is spec for the constructors that always create: the zero
// config, which only attaches, is refused.
func (cfg BloomConfig) createSpec() (spec, error) {
	if cfg.Capacity == 0 {
		return spec{}, errNoCapacity
	}
	return cfg.spec()
}

func (cfg BloomConfig) spec() (spec, error) {
	sp := spec{kind: kindBloom, seed: cfg.Seed}
	if cfg.FPRate != 0 && !(cfg.FPRate > 0 && cfg.FPRate < 1) {
		return spec{}, fmt.Errorf("%w: false-positive rate %v is not in (0, 1)", ErrInvalidConfig, cfg.FPRate)
	}
	if cfg.Capacity == 0 {
		// Attach only: size 0 tells the create path it cannot create.
		sp.match = func(entry) error { return nil }
		return sp, nil
	}
	fp := cfg.FPRate
	if fp == 0 {
		fp = DefaultFPRate
	}
	blocks, k, err := bloomGeometry(cfg.Capacity, fp)
	if err != nil {
		return spec{}, err
	}
	sp.size = bloomBytes(blocks)
	sp.params = [8]uint64{cfg.Capacity, math.Float64bits(fp), blocks, uint64(k)}
	sp.match = func(e entry) error {
		if e.params[0] == sp.params[0] && e.params[1] == sp.params[1] {
			// The config the file was made with: attach even where this
			// platform's floating point would size it a block apart.
			return nil
		}
		if e.params[2] != blocks || e.params[3] != uint64(k) {
			return fmt.Errorf("%w: asked for %d bits and %d hashes, the file has %d and %d", ErrIncompatible, blocks*cells.BloomBlockBits, k, e.params[2]*cells.BloomBlockBits, e.params[3])
		}
		return nil
	}
	return sp, nil
}

func bloomEntryConfig(e entry) any {
	return BloomConfig{Capacity: e.params[0], FPRate: math.Float64frombits(e.params[1])}
}

func bloomEntryParams(e entry) map[string]float64 {
	return map[string]float64{
		"capacity": float64(e.params[0]),
		"fp_rate":  math.Float64frombits(e.params[1]),
		"bits":     float64(e.params[2] * cells.BloomBlockBits),
		"hashes":   float64(e.params[3]),
	}
}

func validateBloomEntry(e entry) error {
	blocks := e.params[2]
	if err := validateBloomParams(e.params[0], e.params[1], blocks, e.params[3]); err != nil {
		return err
	}
	if e.size != bloomBytes(blocks) {
		return fmt.Errorf("Bloom region of %d bytes, %d blocks need %d", e.size, blocks, bloomBytes(blocks))
	}
	return nil
}

// validateBloomParams checks a stored filter's words 0 to 3 (kind 2's;
// the Bloom window's slots have the same).
func validateBloomParams(capacity, fpBits, blocks, k uint64) error {
	fp := math.Float64frombits(fpBits)
	switch {
	case capacity < 1:
		return fmt.Errorf("Bloom capacity %d", capacity)
	case !(fp > 0 && fp < 1):
		return fmt.Errorf("Bloom false-positive rate %v", fp)
	case blocks < 1 || blocks > cells.BloomMaxBlocks:
		return fmt.Errorf("Bloom blocks %d", blocks)
	case k < 1 || k > cells.BloomMaxHashes:
		return fmt.Errorf("Bloom hashes %d", k)
	}
	return nil
}

// Bloom is a Bloom filter (Bloom, 1970) in a shared mapping: a set that
// answers "no" exactly and "yes" probably. Contains never returns false for
// a key added before it started, in any process, and returns true for a
// key never added with probability about FPRate at Capacity keys. It holds
// no keys, so a million long keys cost what a million short ones do. It
// cannot remove a key nor count one; Reset forgets everything.
//
// Every call is lock-free: an add is an atomic OR on the words that hold
// the key's bits, all in one 64-byte block, and a check loads them. Any
// number of goroutines and processes add and check at once.
//
// Past Capacity the rate climbs fast: at twice the capacity it is several
// times FPRate. Watch Fill in Stats: it sits near one half at Capacity.
type Bloom struct {
	Handle
	l      cells.Bloom
	core   cells.BloomCore // serves batches
	stripe int             // this handle's stripe of the added and seen counts
}

// BloomStats describes a Bloom filter at one moment.
type BloomStats struct {
	Bits     uint64  `json:"bits"`     // m: blocks of 512 bits
	Hashes   int     `json:"hashes"`   // k: bits a key sets, all in one block
	Capacity uint64  `json:"capacity"` // keys it was sized for
	FPRate   float64 `json:"fp_rate"`  // false-positive rate at Capacity
	// Set is the bits set, counted by walking the whole array.
	Set uint64 `json:"set"`
	// Fill is Set / Bits: near one half at Capacity. The rate a check
	// sees grows with it, fast past Capacity.
	Fill float64 `json:"fill"`
	// Estimated is the number of distinct keys added, estimated from the
	// fill: -B·ln(1 - Fill) / (1 - (1 - 1/512)^k), with B the blocks (the
	// expected fill of a blocked filter, inverted). It degrades as the
	// filter saturates (MaxFloat64 when every bit is set).
	Estimated float64 `json:"estimated"`
	// Adds counts the adds since the filter was made or last Reset, in
	// every process: each Add and each key of an AddBatch. Merge does
	// not change it.
	Adds uint64 `json:"adds"`
	// AddsPresent is the part of Adds that found every bit already set
	// (Add answered already): keys probably added before, or false
	// positives. Adds - AddsPresent is the adds that set a bit: new keys,
	// as far as the filter can tell.
	AddsPresent uint64 `json:"adds_present"`
	FileStats
}

// OpenBloom opens the Bloom filter at a place (see Place), creating it with
// cfg where there is none, as OpenCountMin does. An explicit config must
// match the stored bits and hashes (ErrIncompatible); the zero config
// attaches to any, and cannot create.
func OpenBloom(at Place, cfg BloomConfig, opts ...Option) (*Bloom, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newBloom)
}

// newBloom builds the handle on the mapping's entry. A read-write handle
// joins the file's lock, not to lock (nothing here does) but for its
// token id, which no other live handle has: its stripe of the counts, so
// that two processes' adds never write one cache line.
func newBloom(m *mapping) (*Bloom, error) {
	base := m.entryBase()
	blocks := m.ent.params[2]
	b := &Bloom{
		l: cells.Bloom{
			Stripes:  base,
			Words:    unsafe.Add(base, cells.StripesBytes),
			Seed:     m.lay.seed,
			Blocks:   blocks,
			K:        int(m.ent.params[3]),
			Prefetch: blocks*cells.BloomBlockBytes > cells.L2Bytes()/4,
		},
		core: buildCores.Bloom,
	}
	b.init(m, b)
	if !m.readOnly {
		if err := m.joinLock(); err != nil {
			m.close()
			return nil, err
		}
		b.stripe = lockStripe(m.lk)
	}
	b.open.Store(true)
	return b, nil
}

// Add adds key and reports whether every one of its bits was already set:
// true means the key was probably added before (by any process), false
// that this call set at least one bit. Two processes adding the same new
// key at the same instant may both be told false; for deduplicating work
// that only repeats it, and what must happen once needs a lock. On error
// (closed, read-only, frozen) it adds nothing and returns false.
func (b *Bloom) Add(key []byte) (already bool, err error) {
	if err := b.mayWrite("add"); err != nil {
		return false, err
	}
	h1, hi := cells.Hash(key, b.l.Seed)
	return b.added(b.l.AddHashed(h1, hi))
}

// AddString is Add for a string key, without converting it to a []byte.
func (b *Bloom) AddString(key string) (already bool, err error) {
	if err := b.mayWrite("add"); err != nil {
		return false, err
	}
	h1, hi := cells.HashString(key, b.l.Seed)
	return b.added(b.l.AddHashed(h1, hi))
}

// added counts one add and passes its answer on, unless Close ran
// meanwhile.
func (b *Bloom) added(already bool) (bool, error) {
	if already {
		b.l.Count(b.stripe, 0, 1)
	} else {
		b.l.Count(b.stripe, 1, 0)
	}
	if !b.open.Load() {
		return false, b.closedErr("add")
	}
	return already, nil
}

// AddBatch adds every key, as Add does each. When already is not nil it
// must have len(keys) elements and receives each key's answer. On a
// filter larger than a quarter of the CPU's L2 cache a batch fetches keys'
// blocks ahead of their adds (in the C core on the cgo build), so that
// their cache misses overlap; a key then costs a fraction of a single Add.
func (b *Bloom) AddBatch(keys [][]byte, already []bool) error {
	if err := b.mayWrite("add"); err != nil {
		return err
	}
	if already != nil && len(already) != len(keys) {
		return b.m.errorf("add", fmt.Errorf("%w: %d answers for %d keys", ErrInvalidArgument, len(already), len(keys)))
	}
	added := b.batchCore(len(keys)).AddBatch(&b.l, keys, already)
	b.l.Count(b.stripe, added, uint64(len(keys))-added)
	return b.after("add")
}

// Contains reports whether key is probably in the filter. False is exact: a
// key added before Contains started (and not forgotten by Reset) is always
// found. A closed handle answers true: it never claims a key is absent.
func (b *Bloom) Contains(key []byte) bool {
	if !b.open.Load() {
		return true
	}
	h1, hi := cells.Hash(key, b.l.Seed)
	return b.l.CheckHashed(h1, hi) || !b.open.Load()
}

// ContainsString is Contains for a string key.
func (b *Bloom) ContainsString(key string) bool {
	if !b.open.Load() {
		return true
	}
	h1, hi := cells.HashString(key, b.l.Seed)
	return b.l.CheckHashed(h1, hi) || !b.open.Load()
}

// ContainsBatch stores Contains(keys[i]) in out[i]; out must have
// len(keys) elements (ErrInvalidArgument otherwise, and nothing is asked).
// Like AddBatch it fetches ahead on a filter past the caches. A closed
// handle answers true for every key and returns ErrClosed.
func (b *Bloom) ContainsBatch(keys [][]byte, out []bool) error {
	if len(out) != len(keys) {
		return fmt.Errorf("sketch: contains %s: %w: %d answers for %d keys", b.name(), ErrInvalidArgument, len(out), len(keys))
	}
	if b.open.Load() {
		b.batchCore(len(keys)).ContainsBatch(&b.l, keys, out)
		if b.open.Load() {
			return nil
		}
	}
	for i := range out {
		out[i] = true
	}
	return b.closedErr("contains")
}

// batchCore picks the core for a batch of n keys: the default core on a
// filter past the caches and a batch that pays for a cgo crossing, the Go
// core otherwise (measured: bench_bloom_test.go).
func (b *Bloom) batchCore(n int) cells.BloomCore {
	if n < cells.BloomMinBatch || !b.l.Prefetch {
		return cells.BloomGo{}
	}
	return b.core
}

// Reset forgets every key and zeroes the counts, in every process. It is
// not atomic: readers and adders are not locked out, so a Contains at the
// same moment may see the filter half cleared and answer either way for a
// key being forgotten (what it would have answered a moment either side),
// and a key added at the same moment may survive in part, and then read
// as absent.
func (b *Bloom) Reset() error {
	if err := b.refuse("reset"); err != nil {
		return err
	}
	b.l.Reset()
	return b.after("reset")
}

// Merge ORs the bits of each other filter into b's, so that afterwards b
// answers true for every key any of them holds (the union). The others
// must have b's bits, hashes and seed (ErrIncompatible otherwise: check
// them all before anything changes); they may be read-only views or
// frozen files, while b may be neither. Each word changes with one atomic
// OR, so every process may go on adding and checking meanwhile. Merge
// changes no count (Adds, AddsPresent).
func (b *Bloom) Merge(others ...*Bloom) error {
	return mergeEach(&b.Handle, "filter", others, func(o *Bloom) error {
		if o.l.Blocks != b.l.Blocks || o.l.K != b.l.K {
			return fmt.Errorf("%w: %s has %d bits and %d hashes, this filter %d and %d", ErrIncompatible, o.name(), o.l.Blocks*cells.BloomBlockBits, o.l.K, b.l.Blocks*cells.BloomBlockBits, b.l.K)
		}
		if o.l.Seed != b.l.Seed {
			return fmt.Errorf("%w: %s hashes with another seed", ErrIncompatible, o.name())
		}
		return nil
	}, func(o *Bloom) error {
		if o.l.Words != b.l.Words { // itself: nothing to add
			b.l.Merge(&o.l)
		}
		return nil
	})
}

// Stats reports the filter's size, fill and counts. Set walks the whole
// bit array, so it belongs on a status page, not in a loop.
func (b *Bloom) Stats() BloomStats {
	s := BloomStats{
		Bits:      b.l.Blocks * cells.BloomBlockBits,
		Hashes:    b.l.K,
		FileStats: FileStats{ReadOnly: b.ReadOnly()},
	}
	if b.m == nil || !b.open.Load() {
		return b.closedStats(s)
	}
	s.Capacity = b.m.ent.params[0]
	s.FPRate = b.Config().FPRate
	s.Bytes = b.m.ownBytes()
	s.Set = b.l.CountSet()
	s.Fill = float64(s.Set) / float64(s.Bits)
	s.Estimated = b.estimate(s.Set)
	added, seen := b.l.Counts()
	s.Adds, s.AddsPresent = added+seen, seen
	s.Frozen = atomic.LoadUint32(b.sealed) != 0
	if !b.open.Load() {
		return b.closedStats(s)
	}
	return s
}

func (b *Bloom) closedStats(s BloomStats) BloomStats {
	return BloomStats{Bits: s.Bits, Hashes: s.Hashes, Capacity: s.Capacity, FPRate: s.FPRate,
		Set: s.Bits, Fill: 1, Estimated: math.MaxFloat64, FileStats: FileStats{ReadOnly: b.ReadOnly(), Closed: true}}
}

// estimate inverts the expected fill of a blocked filter holding n keys,
// 1 - exp(-(n/B)·(1 - (1-1/512)^k)).
func (b *Bloom) estimate(set uint64) float64 { return bloomEstimate(&b.l, set) }

// bloomEstimate is Bloom.estimate for the filter at l.
func bloomEstimate(l *cells.Bloom, set uint64) float64 {
	m := l.Blocks * cells.BloomBlockBits
	if set >= m {
		return math.MaxFloat64 // every bit set; JSON has no infinity
	}
	perKey := 1 - powInt(1-1.0/cells.BloomBlockBits, l.K)
	return -float64(l.Blocks) * math.Log1p(-float64(set)/float64(m)) / perKey
}

// Bits returns m, the number of bits: blocks of 512.
func (b *Bloom) Bits() uint64 { return b.l.Blocks * cells.BloomBlockBits }

// Hashes returns k, the bits a key sets.
func (b *Bloom) Hashes() int { return b.l.K }

// Close releases the descriptor and the file's pages; safe twice and
// while other goroutines use the handle, as CountMin.Close is: their calls
// finish on memory that stays mapped, and report the handle closed.
func (b *Bloom) Close() error {
	if b == nil {
		return nil
	}
	return b.close()
}

func (b *Bloom) describe() (string, string) {
	return "Bloom", fmt.Sprintf("%d bits, %d hashes", b.l.Blocks*cells.BloomBlockBits, b.l.K)
}
func (b *Bloom) statsOf() any { return b.Stats() }

func (b *Bloom) check() error { return nil }

// Config returns the config stored in the file: the Capacity and FPRate the filter was sized for (FPRate is DefaultFPRate where the config left it zero), without the seed
// (a secret: see Seed). Opening the same place with it attaches; creating
// another structure with it (and the same seed) makes one that merges with
// this one. A zero handle returns the zero config.
func (b *Bloom) Config() BloomConfig {
	if b.m == nil {
		return BloomConfig{}
	}
	return bloomEntryConfig(b.m.ent).(BloomConfig)
}

// ExportBits returns the filter's bits, Bits()/8 bytes: bit i of the
// filter is bit i%8 of byte i/8, counted from the least significant (each
// 64-bit word little-endian), whatever this machine's byte order. Redis's
// GETBIT and SETBIT count from the most significant bit of a byte, so
// Redis's offset 8*(i/8) + 7 - i%8 is bit i. Two filters of one config
// and seed (on any machines) OR into the filter of both their keys: BITOP
// OR in Redis, MergeBits here. It reads each word once while adds go on, so it
// holds every key added before the call. A closed handle is ErrClosed.
func (b *Bloom) ExportBits() ([]byte, error) {
	if !b.open.Load() {
		return nil, b.closedErr("export")
	}
	out := bloomBitsOf(&b.l)
	return out, b.after("export")
}

// bloomBitsOf reads l's words once each, little-endian (ExportBits).
func bloomBitsOf(l *cells.Bloom) []byte {
	out := make([]byte, l.Nwords()*8)
	for w := range l.Nwords() {
		binary.LittleEndian.PutUint64(out[w*8:], atomic.LoadUint64(l.Word(w)))
	}
	return out
}

// orBloomBits ORs bits, as bloomBitsOf gives them, into l (MergeBits).
func orBloomBits(l *cells.Bloom, bits []byte) error {
	if uint64(len(bits)) != l.Nwords()*8 {
		n := l.Nwords() * 64
		return fmt.Errorf("%w: %d bytes of bits for a filter of %d bits (%d bytes)", ErrIncompatible, len(bits), n, n/8)
	}
	for w := range l.Nwords() {
		v := binary.LittleEndian.Uint64(bits[w*8:])
		if p := l.Word(w); v != 0 && atomic.LoadUint64(p)&v != v {
			atomic.OrUint64(p, v)
		}
	}
	return nil
}

// MergeBits ORs bits, as ExportBits returns them, into the filter: it then
// holds every key of both. Merging is idempotent (merging bits again
// changes nothing), which is what lets a fleet's hosts each OR their
// export into one Redis key and OR that key back (the fleet module). The
// bits must come from a filter of this config and seed, which they cannot
// show: bits of another seed or shape merge into false positives. Bits of
// another length are ErrIncompatible. Merge's other rules hold: Adds does
// not change, and a read-only, frozen or closed handle merges nothing.
func (b *Bloom) MergeBits(bits []byte) error {
	if err := b.refuse("merge"); err != nil {
		return err
	}
	if err := orBloomBits(&b.l, bits); err != nil {
		return b.m.errorf("merge", err)
	}
	return b.after("merge")
}

// Snapshot copies the filter, while any process keeps adding to it, into
// a new filter at a place, and returns it frozen and read-only, with this
// filter's bits, hashes and seed, so that it merges (Merge) with the
// snapshots and frozen files of other hosts. The copy answers true for
// every key whose add returned, in any process, before Snapshot was
// called (no false negative); a key added during the copy may be found or
// not. A Reset running during the copy may leave part of what it cleared.
// The places, options and the lock-free copy are as CountMin.Snapshot's.
func (b *Bloom) Snapshot(at Place, opts ...Option) (*Bloom, error) {
	if !b.open.Load() {
		return nil, b.closedErr("snapshot")
	}
	m, err := createSnapshot(b.name(), at, entrySpec(b.m.ent, b.l.Seed, b.copyRegion), opts)
	return finishSnapshot(&b.Handle, m, err, newBloom)
}

// copyRegion copies the filter's region, its counts and bits, into dst.
func (b *Bloom) copyRegion(dst []byte) error {
	copyWords(dst, b.l.Stripes)
	return nil
}
