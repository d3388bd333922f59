package sketch

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// SetConfig sizes an exact set: how many keys it holds at most and how
// long a key may be. The zero config attaches to any set; creating one
// needs a Capacity.
type SetConfig struct {
	// Capacity is the most keys the set holds at once: an Add of a new
	// key to a full set is refused (ErrFull), never making room by
	// evicting another.
	Capacity uint64 `json:"capacity"`
	// KeyBytes is the longest key, in bytes: a multiple of 8, at most
	// 1024; 0 means 64. A longer key is refused (ErrInvalidArgument):
	// an exact set cannot keep a prefix. Each slot keeps this many bytes,
	// so it sizes the file with Capacity.
	KeyBytes int `json:"key_bytes,omitempty"`
	// Seed is the hash seed, as CountMinConfig's: zero means random at
	// create and any on attach. Keys are placed by their seeded hash, so
	// a client who chooses keys cannot aim them at one run of slots
	// without it.
	Seed uint64 `json:"seed"`
}

const (
	setDefaultKeyBytes = 64
	setMinSlots        = 8
	setMaxCapacity     = 1 << 40
)

// setSlots is the table's size for a capacity: twice it, rounded up to a
// power of two, so that at most half the slots hold keys.
func setSlots(capacity uint64) uint64 {
	return max(uint64(1)<<bits.Len64(2*capacity-1), setMinSlots)
}

// setSlotBytes is a slot's size: its state word, a window's period word,
// the key's words.
func setSlotBytes(keyBytes uint64, windowed bool) uint64 {
	if windowed {
		return 16 + keyBytes
	}
	return 8 + keyBytes
}

// setBytes is a set's region: the header line, then the slots.
func setBytes(capacity, keyBytes uint64, windowed bool) uint64 {
	return cells.SetHeadBytes + setSlots(capacity)*setSlotBytes(keyBytes, windowed)
}

// keyBytes resolves KeyBytes and checks the config's numbers.
func (cfg SetConfig) keyBytes() (uint64, error) {
	kb := cfg.KeyBytes
	if kb == 0 {
		kb = setDefaultKeyBytes
	}
	switch {
	case kb < 8 || kb > cells.SetMaxKeyBytes || kb%8 != 0:
		return 0, fmt.Errorf("%w: KeyBytes %d is not a multiple of 8 in [8, %d]", ErrInvalidConfig, cfg.KeyBytes, cells.SetMaxKeyBytes)
	case cfg.Capacity > setMaxCapacity:
		return 0, fmt.Errorf("%w: capacity %d is more than %d", ErrInvalidConfig, cfg.Capacity, uint64(setMaxCapacity))
	}
	return uint64(kb), nil
}

// Bytes returns the size of the file a set of this config needs, header
// included, as CountMinConfig.Bytes does.
func (cfg SetConfig) Bytes() (uint64, error) {
	sp, err := cfg.createSpec()
	if err != nil {
		return 0, err
	}
	return sp.fileSize(), nil
}

func (cfg SetConfig) createSpec() (spec, error) {
	if cfg.Capacity == 0 {
		return spec{}, errNoCapacity
	}
	return cfg.spec()
}

// spec asks for a set: one of cfg's Capacity and KeyBytes, or any (size
// 0: attach only) without a Capacity, with cfg's KeyBytes if it gives one.
func (cfg SetConfig) spec() (spec, error) {
	sp, err := cfg.specAt(kindExactSet, false)
	if err != nil {
		return spec{}, err
	}
	return sp, nil
}

// specAt is the spec of the plain set (kind 10) or, with windowed, the
// set part of a window's (kind 11), whose parameters 0 to 2 are the same.
func (cfg SetConfig) specAt(kind uint32, windowed bool) (spec, error) {
	kb, err := cfg.keyBytes()
	if err != nil {
		return spec{}, err
	}
	sp := spec{kind: kind, seed: cfg.Seed}
	sp.match = func(e entry) error {
		if cfg.KeyBytes != 0 && e.params[1] != kb {
			return fmt.Errorf("%w: asked for keys of %d bytes, the file's are %d", ErrIncompatible, kb, e.params[1])
		}
		if cfg.Capacity != 0 && e.params[0] != cfg.Capacity {
			return fmt.Errorf("%w: asked for a capacity of %d, the file's is %d", ErrIncompatible, cfg.Capacity, e.params[0])
		}
		return nil
	}
	if cfg.Capacity == 0 {
		return sp, nil
	}
	sp.size = setBytes(cfg.Capacity, kb, windowed)
	if sp.size > maxFileSize-pageSize*4-uint64(windowControlBytes(MaxWindowKeep)) {
		return spec{}, fmt.Errorf("%w: %d keys of %d bytes need %d bytes, more than a sketch file may have (%d)", ErrInvalidConfig, cfg.Capacity, kb, sp.size, uint64(maxFileSize))
	}
	sp.params = [8]uint64{cfg.Capacity, kb, setSlots(cfg.Capacity)}
	return sp, nil
}

func setEntryConfig(e entry) any {
	return SetConfig{Capacity: e.params[0], KeyBytes: int(e.params[1])}
}

func setEntryParams(e entry) map[string]float64 {
	return map[string]float64{"capacity": float64(e.params[0]), "key_bytes": float64(e.params[1]), "slots": float64(e.params[2])}
}

func validateSetEntry(e entry) error { return validateSetParams(e, false) }

// validateSetParams checks parameters 0 to 2 of a set or set window, and
// a plain set's region.
func validateSetParams(e entry, windowed bool) error {
	capacity, kb, slots := e.params[0], e.params[1], e.params[2]
	switch {
	case capacity < 1 || capacity > setMaxCapacity:
		return fmt.Errorf("set capacity %d", capacity)
	case kb < 8 || kb > cells.SetMaxKeyBytes || kb%8 != 0:
		return fmt.Errorf("set key bytes %d", kb)
	case slots != setSlots(capacity):
		return fmt.Errorf("set of %d slots for a capacity of %d (want %d)", slots, capacity, setSlots(capacity))
	case !windowed && e.size != setBytes(capacity, kb, false):
		return fmt.Errorf("set region of %d bytes, %d slots of %d-byte keys need %d", e.size, slots, kb, setBytes(capacity, kb, false))
	}
	return nil
}

// setTable locates the table of a set whose entry is e at base.
func setTable(base unsafe.Pointer, e entry, seed uint64, windowed bool) cells.Set {
	kb := e.params[1]
	t := cells.Set{
		Head:      base,
		Slots:     unsafe.Add(base, cells.SetHeadBytes),
		Mask:      e.params[2] - 1,
		SlotBytes: uintptr(setSlotBytes(kb, windowed)),
		KeyOff:    8,
		KeyBytes:  int(kb),
		Seed:      seed,
		Windowed:  windowed,
	}
	if windowed {
		t.KeyOff = 16
	}
	return t
}

// Set is an exact set of keys in a shared mapping, of a fixed Capacity:
// for what must not be approximate, such as bans, allowlists or replay
// ids. Unlike a Bloom filter it answers exactly, stores its keys (Keys
// lists them) and never forgets one it was not told to: a new key added
// to a full set is refused with ErrFull. It is a hash table of twice
// Capacity slots (open addressing, linear probing), each holding a key's
// bytes, up to KeyBytes.
//
// Contains, Keys, Len and Stats take no lock: a slot is read between two
// loads of its state word, and a lookup that found nothing looks again
// when a compaction moved keys meanwhile, so a key present throughout a
// call is found and one absent throughout is not, whatever other
// processes do. Add, Remove, Reset, Merge and Freeze take the file's
// write lock, so that of any number of processes adding one new key at
// once exactly one is told it was new. A process killed in any of them
// leaves nothing that misleads a reader; the counts it may leave wrong
// are recounted by the next writer (docs/DESIGN.md, "The exact set").
// Everything is served in Go in both builds.
type Set struct {
	Handle
	t        cells.Set
	capacity uint64
	lk       *fileLock // nil on a read-only handle
}

// SetStats describes an exact set at one moment.
type SetStats struct {
	Capacity uint64 `json:"capacity"`
	KeyBytes int    `json:"key_bytes"`
	Slots    uint64 `json:"slots"`
	// Live is the keys the set holds, counted by walking the slots;
	// Fill is Live / Capacity.
	Live uint64  `json:"live"`
	Fill float64 `json:"fill"`
	// Tombstones are removed keys' slots, reused by adds; past a quarter
	// of the slots, the writer that makes one compacts the table.
	Tombstones uint64 `json:"tombstones"`
	// LongestRun is the longest run of slots that are not empty, which
	// bounds how many slots a lookup reads.
	LongestRun uint64 `json:"longest_run"`
	// Adds and Removes count the keys added and removed since create (a
	// process killed in one may leave it uncounted).
	Adds    uint64 `json:"adds"`
	Removes uint64 `json:"removes"`
	FileStats
}

// OpenSet opens the exact set at a place (see Place), creating it with
// cfg where there is none, as OpenCountMin does. An existing set must
// have cfg's Capacity and KeyBytes where cfg gives them
// (ErrIncompatible); the zero config attaches to any and cannot create.
func OpenSet(at Place, cfg SetConfig, opts ...Option) (*Set, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newSet)
}

func newSet(m *mapping) (*Set, error) {
	s := &Set{t: setTable(m.entryBase(), m.ent, m.lay.seed, false), capacity: m.ent.params[0]}
	s.init(m, s)
	if !m.readOnly {
		if err := m.joinLock(); err != nil {
			m.close()
			return nil, err
		}
		s.lk = m.lk
	}
	s.open.Store(true)
	return s, nil
}

// key checks a key's length for op.
func (s *Set) key(op string, key []byte) error {
	if len(key) > s.t.KeyBytes {
		return s.m.errorf(op, fmt.Errorf("%w: a key of %d bytes is longer than the set's %d", ErrInvalidArgument, len(key), s.t.KeyBytes))
	}
	return nil
}

// Add adds key unless the set holds it, and reports whether it added:
// of any number of goroutines and processes adding one key at once,
// exactly one is told true. A new key when the set holds Capacity keys
// is ErrFull (nothing is evicted); a key longer than KeyBytes is
// ErrInvalidArgument.
func (s *Set) Add(key []byte) (added bool, err error) {
	if err := s.key("add", key); err != nil {
		return false, err
	}
	lo, hi := cells.Hash(key, s.t.Seed)
	err = s.exclusive("add", func() error {
		var full bool
		added, full = s.t.Insert(key, lo, hi, 0, 0, s.capacity)
		if full {
			return fmt.Errorf("%w: it holds %d keys, its capacity", ErrFull, s.capacity)
		}
		return nil
	})
	return added, err
}

// AddString is Add for a string key, without copying it.
func (s *Set) AddString(key string) (added bool, err error) {
	return s.Add(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Contains reports whether the set holds key, without a lock: exact for
// a key added or removed before the call, in any process. A key longer
// than KeyBytes is never held. A closed handle answers false.
func (s *Set) Contains(key []byte) bool {
	if len(key) > s.t.KeyBytes || !s.open.Load() {
		return false
	}
	lo, hi := cells.Hash(key, s.t.Seed)
	return s.t.Find(key, lo, hi, 0)
}

// ContainsString is Contains for a string key, without copying it.
func (s *Set) ContainsString(key string) bool {
	return s.Contains(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Remove takes key out and reports whether the set held it: of any
// number of processes removing one key at once, exactly one is told true.
func (s *Set) Remove(key []byte) (removed bool, err error) {
	if len(key) > s.t.KeyBytes {
		return false, s.refuse("remove") // never held
	}
	lo, hi := cells.Hash(key, s.t.Seed)
	err = s.exclusive("remove", func() error {
		removed = s.t.Remove(key, lo, hi, 0)
		return nil
	})
	return removed, err
}

// RemoveString is Remove for a string key, without copying it.
func (s *Set) RemoveString(key string) (removed bool, err error) {
	return s.Remove(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// Len returns how many keys the set holds, from its count (a process
// killed in an Add or Remove may leave it one off until the next one).
func (s *Set) Len() uint64 {
	if !s.open.Load() {
		return 0
	}
	return s.t.Load(cells.SetHeadLive)
}

// Keys returns the keys the set holds, in no order, without a lock:
// every key held throughout the call, once each, and none absent
// throughout. It fails with ErrTimeout on a read-only handle when
// compactions moved keys during each of its tries.
func (s *Set) Keys() ([][]byte, error) {
	if !s.open.Load() {
		return nil, s.closedErr("list")
	}
	keys, err := listKeys(&s.t, 0, s.lk)
	if err != nil {
		return nil, s.m.errorf("list", err)
	}
	return keys, s.after("list")
}

// listTries is how many walks Keys makes before it reads under the lock.
const listTries = 8

// listKeys walks t's keys of periods from oldest on, again while a
// compaction moved keys meanwhile, then under the read lock (lk nil: a
// read-only handle gives up); a walk that saw a writer's kill drops the
// second copies it may have left.
func listKeys(t *cells.Set, oldest uint64, lk *fileLock) ([][]byte, error) {
	walk := func() ([][]byte, bool, bool) {
		var keys [][]byte
		stable, dirty := t.Keys(oldest, func(k []byte) { keys = append(keys, append([]byte(nil), k...)) })
		return keys, stable, dirty
	}
	for try := 0; ; try++ {
		var keys [][]byte
		var stable, dirty bool
		switch {
		case try < listTries:
			keys, stable, dirty = walk()
		case lk == nil:
			return nil, fmt.Errorf("%w: compactions moved keys during each of %d walks", ErrTimeout, listTries)
		default:
			if err := lk.rlock(); err != nil {
				return nil, err
			}
			keys, stable, dirty = walk()
			lk.runlock()
		}
		if !stable {
			continue
		}
		if dirty {
			keys = dedupe(keys)
		}
		return keys, nil
	}
}

func dedupe(keys [][]byte) [][]byte {
	seen := make(map[string]bool, len(keys))
	out := keys[:0]
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

// Reset empties the set, under the write lock. It is not atomic: a
// reader meanwhile may still find some of the keys.
func (s *Set) Reset() error {
	return s.exclusive("reset", func() error {
		s.t.Reset()
		return nil
	})
}

// Merge adds the keys of the others to s: afterwards s holds every key
// any of them held when it was read (each is listed without a lock, as
// Keys lists). The others may have any seed, capacity and KeyBytes
// (a key longer than s's is ErrIncompatible); they may be read-only or
// frozen, s may not. When the new keys would not fit, Merge returns
// ErrFull and adds none: it counts them under the write lock first.
func (s *Set) Merge(others ...*Set) error {
	if err := s.refuse("merge"); err != nil {
		return err
	}
	var keys [][]byte
	for i, o := range others {
		if o == nil || !o.open.Load() {
			return s.m.errorf("merge", fmt.Errorf("%w: set %d of the merge is nil or closed", ErrInvalidArgument, i))
		}
		ks, err := o.Keys()
		if err != nil {
			return s.m.errorf("merge", err)
		}
		for _, k := range ks {
			if len(k) > s.t.KeyBytes {
				return s.m.errorf("merge", fmt.Errorf("%w: %s holds a key of %d bytes, longer than this set's %d", ErrIncompatible, o.name(), len(k), s.t.KeyBytes))
			}
		}
		keys = append(keys, ks...)
	}
	return s.exclusive("merge", func() error { return mergeKeys(&s.t, dedupe(keys), 0, 0, s.capacity) })
}

// mergeKeys inserts keys (distinct) into t under the write lock, in
// period, when all the new ones fit.
func mergeKeys(t *cells.Set, keys [][]byte, period, oldest, capacity uint64) error {
	if oldest > 0 {
		t.Sweep(oldest)
	}
	fresh := 0
	for _, k := range keys {
		lo, hi := cells.Hash(k, t.Seed)
		if !t.Find(k, lo, hi, oldest) {
			fresh++
		}
	}
	if live := t.Load(cells.SetHeadLive); live+uint64(fresh) > capacity {
		return fmt.Errorf("%w: it holds %d keys, the merge adds %d, its capacity is %d", ErrFull, live, fresh, capacity)
	}
	for _, k := range keys {
		lo, hi := cells.Hash(k, t.Seed)
		t.Insert(k, lo, hi, period, oldest, capacity)
	}
	return nil
}

// exclusive runs f under the write lock, after the recovery of a writer
// killed in a mutation, unless the handle may not mutate or the file is
// sealed.
func (s *Set) exclusive(op string, f func() error) error {
	if err := s.refuse(op); err != nil {
		return err
	}
	if err := s.lk.lock(); err != nil {
		return s.m.errorf(op, err)
	}
	if atomic.LoadUint32(s.sealed) != 0 {
		s.lk.unlock()
		return s.m.errorf(op, ErrFrozen)
	}
	s.t.Recover()
	err := f()
	if uerr := s.lk.unlock(); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return s.m.errorf(op, err)
	}
	return s.after(op)
}

// freeze seals the file under the write lock, as CountingBloom's does.
func (s *Set) freeze() error {
	err := s.exclusive("freeze", func() error {
		atomic.StoreUint32(s.sealed, 1)
		s.froze.Store(true)
		return nil
	})
	if err != nil {
		return err
	}
	return s.Sync()
}

// Stats reports the set's shape and how its slots are used; it walks
// the slots.
func (s *Set) Stats() SetStats {
	st := SetStats{Capacity: s.capacity, KeyBytes: s.t.KeyBytes, Slots: s.t.Size(), FileStats: FileStats{ReadOnly: s.ReadOnly()}}
	if s.m == nil || !s.open.Load() {
		st.Closed = true
		return st
	}
	st.Bytes = s.m.ownBytes()
	st.Live, st.Tombstones, _, st.LongestRun = s.t.Census(0)
	st.Fill = float64(st.Live) / float64(s.capacity)
	st.Adds, st.Removes = s.t.Load(cells.SetHeadAdds), s.t.Load(cells.SetHeadRemoves)
	st.Frozen = atomic.LoadUint32(s.sealed) != 0
	if !s.open.Load() {
		return SetStats{Capacity: st.Capacity, KeyBytes: st.KeyBytes, Slots: st.Slots, FileStats: FileStats{ReadOnly: s.ReadOnly(), Closed: true}}
	}
	return st
}

// Close releases the descriptor, the lock's liveness token and the
// file's pages; safe twice and while other goroutines use the handle, as
// CountMin.Close is.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	return s.close()
}

func (s *Set) describe() (string, string) {
	return "Set", fmt.Sprintf("capacity %d, keys of up to %d bytes", s.capacity, s.t.KeyBytes)
}

func (s *Set) statsOf() any { return s.Stats() }

// check is the set's part of Check: a slot's word no writer leaves, a key
// its lookups cannot reach or held twice, counts that disagree with the
// slots: ErrDamaged.
func (s *Set) check() error {
	if msg := s.t.Check(); msg != "" {
		return s.m.errorf("check", fmt.Errorf("%w: %s", ErrDamaged, msg))
	}
	if !s.open.Load() {
		return s.closedErr("check")
	}
	return nil
}

// Config returns the config stored in the file, without the seed (a
// secret: see Seed). A zero handle returns the zero config.
func (s *Set) Config() SetConfig {
	if s.m == nil {
		return SetConfig{}
	}
	return setEntryConfig(s.m.ent).(SetConfig)
}

// Snapshot copies the set into a new set at another place, frozen and
// read-only, with its shape and seed. A read-write handle copies under
// the file's read lock, between two mutations; a read-only one copies
// while no mutation runs, trying again while one does (ErrTimeout when
// every try met one). The places and options are as CountMin.Snapshot's.
func (s *Set) Snapshot(at Place, opts ...Option) (*Set, error) {
	if !s.open.Load() {
		return nil, s.closedErr("snapshot")
	}
	m, err := createSnapshot(s.name(), at, entrySpec(s.m.ent, s.t.Seed, s.copyRegion), opts)
	return finishSnapshot(&s.Handle, m, err, newSet)
}

// copyRegion copies the set's region into dst, a region of the same
// shape.
func (s *Set) copyRegion(dst []byte) error {
	return copySetRegion(&s.t, s.lk, dst, 0)
}

// copyTries is how many times a read-only handle's copy starts again.
const copyTries = 64

// copySetRegion copies the table t (at off in its region, whose region
// starts at t.Head-off) into dst between two mutations: under the read
// lock, or, without lk, when the change count and dirty word stayed put
// around the copy. A copy that found a writer's kill compacts itself,
// which drops a second copy of a key and recounts.
func copySetRegion(t *cells.Set, lk *fileLock, dst []byte, off uintptr) error {
	src := unsafe.Add(t.Head, -int(off))
	if lk != nil {
		if err := lk.rlock(); err != nil {
			return err
		}
		copyWords(dst, src)
		lk.runlock()
	} else {
		for try := 1; ; try++ {
			c, d := t.Load(cells.SetHeadChanges), t.Load(cells.SetHeadDirty)
			copyWords(dst, src)
			if t.Load(cells.SetHeadChanges) == c && t.Load(cells.SetHeadDirty) == d && (d == 0 || try > copyTries/2) {
				break
			}
			if try == copyTries {
				return fmt.Errorf("%w: writers changed the set during each of %d copies", ErrTimeout, copyTries)
			}
			clear(dst)
		}
	}
	c := *t
	c.Head = unsafe.Add(unsafe.Pointer(&dst[0]), off)
	c.Slots = unsafe.Add(c.Head, cells.SetHeadBytes)
	c.Recover()
	return nil
}
