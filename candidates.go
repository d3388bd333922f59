package sketch

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// The candidate table: who is loud. A Count-Min sketch stores no keys, so
// a sketch (or a window) created with Candidates keeps a table of the
// loudest keys beside its counters, in the same region. The sketch
// supplies the counts, the table the names.
//
// The table's ways are grouped in buckets of 8; a key may sit in one of
// two buckets chosen by its hash, and is found by its fingerprint (the low
// word of its hash) among their 16 fingerprint words: one cache line each.
// Add already has the key's estimate; it compares it with the floor word
// (the smallest estimate the table holds once full, and at least the
// sketch's total over its width: below that a key's count is not told
// apart from collisions), so the usual add costs one load and a compare.
// A key above the floor that the table holds raises its stored estimate
// without a lock, by a compare-and-swap, and only once its estimate grew
// by a 32nd (the stored estimates rank keys for eviction; listings
// re-read the sketch). A key above the floor that the table lacks takes
// the file's write lock, counts its two buckets' keys again in the sketch
// and takes the way of the quietest one if it is louder (or an empty
// way).
//
// A way is written under the lock: its fingerprint is zeroed first (the
// way reads as empty), then the slot is written inside a sequence count
// (odd while being written), then the fingerprint is stored. A process
// killed in the middle leaves an empty way, which readers skip and the
// next admission takes. Readers take no lock: a slot read between two
// equal, even sequence counts and two equal fingerprints is whole.
//
// The layout, after the sketch's region rounded up to a cache line: a
// control line (floor, the period the floor is for, admissions), the
// fingerprints (a word a way, a bucket a line), the stored estimates (a
// word a way) and the slots (sequence, lo, hi, key length, then the
// key's first KeyBytes bytes).

const (
	// maxCandidates bounds K: an admission walks every way's estimate to
	// find the table's floor.
	maxCandidates = 1 << 14
	// DefaultCandidateKeyBytes is how much of a key a candidate slot
	// keeps when CandidateKeyBytes is zero.
	DefaultCandidateKeyBytes = 64
	maxCandidateKeyBytes     = 1024
	candidateBucketWays      = 8
	candidateSlotHead        = 32 // sequence, lo, hi, key length
	// Words of the control line.
	candFloor      = 0
	candPeriod     = 8
	candAdmissions = 16
	candTurning    = 24 // the period (plus one) whose turn an add claimed
	// raiseShift: a stored estimate is raised once the key's estimate
	// passed it by 1/2^raiseShift of it.
	raiseShift = 5
	// The floor word: the floor in its low floorBits bits (a floor past
	// them reads as their largest value, a floor too low: safe), and a
	// generation above, moved when a window's turn or a reset lowers the
	// floor under the lock, so that an add raising the floor without the
	// lock from what it read before never raises it after.
	floorBits = 56
	floorMask = 1<<floorBits - 1
)

// candidateWays is K rounded up to whole buckets.
func candidateWays(k int) int { return (k + candidateBucketWays - 1) &^ (candidateBucketWays - 1) }

// candidateTableBytes is the size of a table of k candidates keeping
// keyBytes of each key; 0 for none.
func candidateTableBytes(k, keyBytes int) uint64 {
	if k == 0 {
		return 0
	}
	ways := uint64(candidateWays(k))
	return cacheLine + ways*16 + ways*uint64(candidateSlotHead+keyBytes)
}

// withTable is the size of a region of base bytes followed by a table.
func withTable(base uint64, k, keyBytes int) uint64 {
	if k == 0 {
		return base
	}
	return roundUp(base, cacheLine) + candidateTableBytes(k, keyBytes)
}

// candidates resolves a config's table: K and the key bytes kept, and
// whether the caller asked for a table (an existing file must then have
// the same).
func (cfg CountMinConfig) candidates() (k, keyBytes int, explicit bool, err error) {
	k, keyBytes = cfg.Candidates, cfg.CandidateKeyBytes
	switch {
	case k < 0 || k > maxCandidates:
		return 0, 0, false, fmt.Errorf("%w: Candidates %d is not in [0, %d]", ErrInvalidConfig, k, maxCandidates)
	case k == 0 && keyBytes != 0:
		return 0, 0, false, fmt.Errorf("%w: CandidateKeyBytes %d without Candidates (give both, or neither)", ErrInvalidConfig, keyBytes)
	case k == 0:
		return 0, 0, false, nil
	case keyBytes == 0:
		keyBytes = DefaultCandidateKeyBytes
	case keyBytes < 8 || keyBytes > maxCandidateKeyBytes:
		return 0, 0, false, fmt.Errorf("%w: CandidateKeyBytes %d is not in [8, %d]", ErrInvalidConfig, keyBytes, maxCandidateKeyBytes)
	}
	return k, int(roundUp(uint64(keyBytes), 8)), true, nil
}

// matchCandidates checks an explicit table request against a stored one
// (parameters at params[i] and params[i+1]).
func matchCandidates(e entry, i int, k, keyBytes int, explicit bool) error {
	if explicit && (e.params[i] != uint64(k) || e.params[i+1] != uint64(keyBytes)) {
		return fmt.Errorf("%w: asked for %d candidates of %d key bytes, the file has %d of %d", ErrIncompatible, k, keyBytes, e.params[i], e.params[i+1])
	}
	return nil
}

// validateCandidates checks stored table parameters.
func validateCandidates(k, keyBytes uint64) error {
	switch {
	case k > maxCandidates:
		return fmt.Errorf("candidates %d", k)
	case k == 0 && keyBytes != 0:
		return fmt.Errorf("candidate key bytes %d without candidates", keyBytes)
	case k != 0 && (keyBytes < 8 || keyBytes > maxCandidateKeyBytes || keyBytes%8 != 0):
		return fmt.Errorf("candidate key bytes %d", keyBytes)
	}
	return nil
}

// candidateTable locates a table in the mapping.
type candidateTable struct {
	ctl, fps, ests, slots unsafe.Pointer
	k                     int // the config's K: listings stop there
	ways, buckets         uint64
	keyBytes, slotBytes   uintptr
	lk                    *fileLock // nil on a read-only handle: it lists, never admits
	sealed                *uint32
	seed                  uint64
}

// newCandidateTable locates the table of k candidates at region[off:],
// for a handle on m.
func newCandidateTable(region []byte, off uint64, k, keyBytes int, m *mapping) *candidateTable {
	if k == 0 {
		return nil
	}
	t := tableAt(region, off, k, keyBytes, m.lay.seed)
	t.lk, t.sealed = m.lk, sealedWord(m.data)
	return t
}

// tableAt locates the table of k candidates at region[off:], without a
// lock: for a region no other handle sees yet (a snapshot being made).
func tableAt(region []byte, off uint64, k, keyBytes int, seed uint64) *candidateTable {
	base := unsafe.Pointer(&region[roundUp(off, cacheLine)])
	ways := uint64(candidateWays(k))
	return &candidateTable{
		ctl:       base,
		fps:       unsafe.Add(base, cacheLine),
		ests:      unsafe.Add(base, cacheLine+ways*8),
		slots:     unsafe.Add(base, cacheLine+ways*16),
		k:         k,
		ways:      ways,
		buckets:   ways / candidateBucketWays,
		keyBytes:  uintptr(keyBytes),
		slotBytes: uintptr(candidateSlotHead + keyBytes),
		sealed:    new(uint32),
		seed:      seed,
	}
}

// candidateHost is the structure a table serves: a Count-Min sketch or a
// Count-Min window.
type candidateHost interface {
	// recount is the key's estimate now.
	recount(lo, hi uint64) uint64
	// noiseFloor is the structure's total over its width: the mean of a
	// row's counters.
	noiseFloor() uint64
}

func (t *candidateTable) ctlWord(off uintptr) *uint64 { return (*uint64)(unsafe.Add(t.ctl, off)) }
func (t *candidateTable) fp(way uint64) *uint64       { return (*uint64)(unsafe.Add(t.fps, way*8)) }
func (t *candidateTable) est(way uint64) *uint64      { return (*uint64)(unsafe.Add(t.ests, way*8)) }
func (t *candidateTable) slotWord(way uint64, i uintptr) *uint64 {
	return (*uint64)(unsafe.Add(t.slots, uintptr(way)*t.slotBytes+i*8))
}

// floor is the estimate an add must pass to be offered to the table; for
// a window, period is the period (plus one) it was set for.
func (t *candidateTable) floor() (floor, period uint64) {
	return atomic.LoadUint64(t.ctlWord(candFloor)) & floorMask, atomic.LoadUint64(t.ctlWord(candPeriod))
}

// floorOf is the floor a floor word holds.
func floorOf(w uint64) uint64 { return w & floorMask }

// raiseFloorTo raises the floor to v without the lock, unless the word
// moved to another generation since was was read (a turn or a reset).
func (t *candidateTable) raiseFloorTo(was, v uint64) {
	v = min(v, floorMask)
	w := t.ctlWord(candFloor)
	for {
		cur := atomic.LoadUint64(w)
		if cur>>floorBits != was>>floorBits || cur&floorMask >= v {
			return
		}
		if atomic.CompareAndSwapUint64(w, cur, cur&^floorMask|v) {
			return
		}
	}
}

// setFloor stores the floor under the lock; newGen moves the generation
// (a floor lowered by a turn or a reset).
func (t *candidateTable) setFloor(v uint64, newGen bool) {
	w := t.ctlWord(candFloor)
	g := atomic.LoadUint64(w) >> floorBits
	if newGen {
		g = (g + 1) & (1<<(64-floorBits) - 1)
	}
	atomic.StoreUint64(w, g<<floorBits|min(v, floorMask))
}

// sampled reports whether an add of n that left this estimate goes on to
// the table: every add while the estimate is under 64, then those whose
// add took the estimate across a multiple of 8 (from est-n to est), about
// one count in 8. The crossing, not the estimate's low bits, decides, so
// the chance does not depend on the weights a client picks: with the low
// bits alone, a key added first with an odd weight and then only with
// even ones never had an estimate divisible by 8 and never entered. A
// stored estimate is a hint for eviction and listings read the counters,
// and a key past the floor is taken in within about 8 counts; the other
// adds of loud keys, most of the table's cost on a skewed stream, skip the
// lookup.
func sampled(est, n uint64) bool {
	return est < 64 || n >= 8 || n > est || est>>3 != (est-n)>>3
}

// passes reports whether an add of n with this estimate is offered to the
// table: sampled, and past the floor.
func (t *candidateTable) passes(est, n uint64) bool {
	return sampled(est, n) && est > floorOf(atomic.LoadUint64(t.ctlWord(candFloor)))
}

// fingerprint is what a way's index word holds for a key: the hash's low
// word, never zero (zero is an empty way).
func fingerprint(lo uint64) uint64 { return max(lo, 1) }

// bucketsOf are the key's two buckets (the same one in a table of one).
func (t *candidateTable) bucketsOf(hi uint64) (b1, b2 uint64) {
	return (hi & 0xffffffff) * t.buckets >> 32, (hi >> 32) * t.buckets >> 32
}

// emptyWay returns an empty way of the emptier of buckets b1 and b2 (b1
// when they are as full), or -1 when both are full. Taking the emptier of
// the two is what keeps two-choice buckets balanced: filling b1 before b2
// left a key whose buckets are one and the same out of a table of two
// buckets about once in a hundred, with room to spare in the other.
func (t *candidateTable) emptyWay(b1, b2 uint64) int64 {
	best, most := int64(-1), 0
	for _, b := range [2]uint64{b1, b2} {
		first, n := int64(-1), 0
		for way := b * candidateBucketWays; way < (b+1)*candidateBucketWays; way++ {
			if atomic.LoadUint64(t.fp(way)) == 0 {
				if n == 0 {
					first = int64(way)
				}
				n++
			}
		}
		if n > most {
			best, most = first, n
		}
	}
	return best
}

// lookup returns the way holding fp in the key's buckets, or -1.
func (t *candidateTable) lookup(fp, hi uint64) int64 {
	b1, b2 := t.bucketsOf(hi)
	for _, b := range [2]uint64{b1, b2} {
		for way := b * candidateBucketWays; way < (b+1)*candidateBucketWays; way++ {
			if atomic.LoadUint64(t.fp(way)) == fp {
				return int64(way)
			}
		}
		if b1 == b2 {
			break
		}
	}
	return -1
}

// raise stores est as the way's estimate once it passed the stored one by
// a 32nd, so a loud key writes its way's line rarely.
func (t *candidateTable) raise(way uint64, est uint64) {
	w := t.est(way)
	if old := atomic.LoadUint64(w); est > old+old>>raiseShift {
		casMax(w, est)
	}
}

// offer is an add's way into the table once its estimate passed the
// floor: raise the key's way, or admit the key. period is the window's
// period plus one (0 for a sketch).
func (t *candidateTable) offer(h candidateHost, lo, hi uint64, key string, est, period uint64) {
	was := atomic.LoadUint64(t.ctlWord(candFloor)) // before anything is read
	if _, p := t.floor(); p != period {
		if p > period || t.lk == nil || !t.claimTurn(period) {
			// An add of a period the table has left, or another add
			// turns the table: this add does not wait for it.
			return
		}
		t.turn(h, period)
	}
	fp := fingerprint(lo)
	if way := t.lookup(fp, hi); way >= 0 {
		t.raise(uint64(way), est)
		return
	}
	if t.lk == nil {
		return
	}
	if !t.roomFor(hi, est) {
		// Every way of the key's buckets is louder. The floor may be
		// stale (it is set at admissions, and stored estimates rise
		// since): now and then, raise it to the least stored estimate.
		if fp&15 == 0 {
			t.raiseFloor(was, period)
		}
		return
	}
	if nf := h.noiseFloor(); est <= nf {
		// Below the noise: raise the floor to it, so that adds of keys
		// this quiet stop here.
		if _, p := t.floor(); p == period {
			t.raiseFloorTo(was, nf)
		}
		return
	}
	t.admit(h, fp, lo, hi, key, est, period)
}

// raiseFloor raises the floor, without the lock, to the least estimate
// the table stores once every way holds a key: a key no louder than that
// finds every way of its buckets louder, so no admission is lost. For a
// window only while the table is set for period.
func (t *candidateTable) raiseFloor(was, period uint64) {
	least := ^uint64(0)
	for way := range t.ways {
		if atomic.LoadUint64(t.fp(way)) == 0 {
			return
		}
		least = min(least, atomic.LoadUint64(t.est(way)))
	}
	if _, p := t.floor(); p == period {
		t.raiseFloorTo(was, least)
	}
}

// roomFor reports whether one of the key's ways is empty or stores an
// estimate below est: only then is the lock worth taking.
func (t *candidateTable) roomFor(hi, est uint64) bool {
	b1, b2 := t.bucketsOf(hi)
	for _, b := range [2]uint64{b1, b2} {
		for way := b * candidateBucketWays; way < (b+1)*candidateBucketWays; way++ {
			if atomic.LoadUint64(t.fp(way)) == 0 || atomic.LoadUint64(t.est(way)) < est {
				return true
			}
		}
	}
	return false
}

// admit takes the key into the table under the write lock, in the way of
// the quietest key of its buckets (counted again now) if the key is
// louder, or in an empty way.
//
// An admission waits for the lock no longer than its bound
// (WithLockTimeout), then gives up: the add that offered the key has
// counted it, and its answer stands; the key is offered again at its next
// add that passes the floor. So a live holder that never lets go (a
// stopped process, or a user who may write the file holding it on
// purpose) slows such adds to one wait each, and stops none.
func (t *candidateTable) admit(h candidateHost, fp, lo, hi uint64, key string, est, period uint64) {
	if t.lk.lock() != nil {
		return
	}
	defer t.lk.unlock()
	if testHookTableLock != nil {
		testHookTableLock()
	}
	if atomic.LoadUint32(t.sealed) != 0 || atomic.LoadUint64(t.ctlWord(candPeriod)) != period {
		return
	}
	if way := t.lookup(fp, hi); way >= 0 {
		t.raise(uint64(way), est)
		return
	}
	// The key's estimate now: the add's may be from before a Reset that
	// held the lock this admission waited for.
	est = h.recount(lo, hi)
	b1, b2 := t.bucketsOf(hi)
	victim := t.emptyWay(b1, b2)
	if victim < 0 {
		// Both buckets full: the quietest key of the two, counted again
		// now, leaves if this one is louder.
		quietest := est
		for _, b := range [2]uint64{b1, b2} {
			for way := b * candidateBucketWays; way < (b+1)*candidateBucketWays; way++ {
				slo, shi := atomic.LoadUint64(t.slotWord(way, 1)), atomic.LoadUint64(t.slotWord(way, 2))
				e := h.recount(slo, shi)
				atomic.StoreUint64(t.est(way), e)
				if e < quietest {
					victim, quietest = int64(way), e
				}
			}
		}
	}
	if victim < 0 {
		return
	}
	t.write(uint64(victim), fp, lo, hi, key, uint64(len(key)), est)
	atomic.AddUint64(t.ctlWord(candAdmissions), 1)
	t.refloor(h.noiseFloor(), false)
}

// testHookTableLock runs once an add's offer holds the lock (admit,
// turn): tests count the lock takes of adds.
var testHookTableLock func()

// claimTurn reports whether this add is the one that turns the table to
// period: the first to move the turning word there. The others go on
// without the table until it is turned, instead of waiting on the lock
// for the walk of the table. A process killed while it turns leaves the
// table on its old period, unfed, until the next period's first add
// claims that turn (and recovers the lock).
func (t *candidateTable) claimTurn(period uint64) bool {
	w := t.ctlWord(candTurning)
	for {
		cur := atomic.LoadUint64(w)
		if cur >= period {
			return false
		}
		if atomic.CompareAndSwapUint64(w, cur, period) {
			return true
		}
	}
}

// testHookTurn runs in turn once it holds the lock.
var testHookTurn func()

// turn re-estimates a window's candidates for a new period, under the
// lock: keys that fell to the noise floor leave, the others keep their
// estimate over the new window, and the floor is set for the period.
func (t *candidateTable) turn(h candidateHost, period uint64) {
	if t.lk.lock() != nil {
		// A live holder kept the lock past its bound: the table stays on
		// its old period, unfed, as when a turner is killed, until the
		// next period's first add turns it.
		return
	}
	defer t.lk.unlock()
	if testHookTableLock != nil {
		testHookTableLock()
	}
	if testHookTurn != nil {
		testHookTurn()
	}
	if atomic.LoadUint32(t.sealed) != 0 || atomic.LoadUint64(t.ctlWord(candPeriod)) >= period {
		return
	}
	nf := h.noiseFloor()
	for way := range t.ways {
		if atomic.LoadUint64(t.fp(way)) == 0 {
			continue
		}
		e := h.recount(atomic.LoadUint64(t.slotWord(way, 1)), atomic.LoadUint64(t.slotWord(way, 2)))
		if e <= nf {
			atomic.StoreUint64(t.fp(way), 0)
			e = 0
		}
		atomic.StoreUint64(t.est(way), e)
	}
	t.refloor(nf, true)
	atomic.StoreUint64(t.ctlWord(candPeriod), period)
}

// refloor sets the floor, under the lock: the noise floor, or the
// smallest stored estimate once every way holds a key.
func (t *candidateTable) refloor(nf uint64, newGen bool) {
	least := ^uint64(0)
	for way := range t.ways {
		if atomic.LoadUint64(t.fp(way)) == 0 {
			least = 0
			break
		}
		least = min(least, atomic.LoadUint64(t.est(way)))
	}
	t.setFloor(max(least, nf), newGen)
}

// write fills a way, under the lock: the fingerprint is cleared first and
// stored last, and the slot is written inside its sequence count.
func (t *candidateTable) write(way, fp, lo, hi uint64, key string, length, est uint64) {
	atomic.StoreUint64(t.fp(way), 0)
	seq := t.slotWord(way, 0)
	s := atomic.LoadUint64(seq) | 1
	atomic.StoreUint64(seq, s)
	atomic.StoreUint64(t.slotWord(way, 1), lo)
	atomic.StoreUint64(t.slotWord(way, 2), hi)
	atomic.StoreUint64(t.slotWord(way, 3), length)
	n := min(uintptr(len(key)), t.keyBytes)
	for i := uintptr(0); i < t.keyBytes; i += 8 {
		var b [8]byte
		if i < n {
			copy(b[:], key[i:min(i+8, n)])
		}
		atomic.StoreUint64(t.slotWord(way, 4+i/8), *(*uint64)(unsafe.Pointer(&b)))
	}
	atomic.StoreUint64(t.est(way), est)
	atomic.StoreUint64(seq, s+1)
	atomic.StoreUint64(t.fp(way), fp)
}

// candidate is a way's key as read whole.
type candidate struct {
	lo, hi uint64
	length uint64 // of the whole key
	key    []byte // its first keyBytes bytes at most
	est    uint64 // as stored
}

// read returns the way's key, or false when the way is empty or was
// written during the read.
func (t *candidateTable) read(way uint64) (candidate, bool) {
	fp := atomic.LoadUint64(t.fp(way))
	seq := atomic.LoadUint64(t.slotWord(way, 0))
	if fp == 0 || seq&1 != 0 {
		return candidate{}, false
	}
	c := candidate{
		lo:     atomic.LoadUint64(t.slotWord(way, 1)),
		hi:     atomic.LoadUint64(t.slotWord(way, 2)),
		length: atomic.LoadUint64(t.slotWord(way, 3)),
		est:    atomic.LoadUint64(t.est(way)),
	}
	n := min(c.length, uint64(t.keyBytes)) // whatever the file says, within the slot
	c.key = make([]byte, roundUp(n, 8))
	for i := uintptr(0); i < uintptr(len(c.key)); i += 8 {
		*(*uint64)(unsafe.Pointer(&c.key[i])) = atomic.LoadUint64(t.slotWord(way, 4+i/8))
	}
	c.key = c.key[:n]
	if atomic.LoadUint64(t.slotWord(way, 0)) != seq || atomic.LoadUint64(t.fp(way)) != fp || fingerprint(c.lo) != fp {
		return candidate{}, false
	}
	return c, true
}

// whole reports whether the key is kept whole and hashes to the slot's
// hash: a slot that does not (a crafted file) is never listed.
func (t *candidateTable) whole(c candidate) bool {
	if c.length > uint64(t.keyBytes) {
		return true // a prefix: only its hash names it
	}
	lo, hi := cells.Hash(c.key, t.seed)
	return lo == c.lo && hi == c.hi
}

// collect reads every way's key, each once.
func (t *candidateTable) collect() []candidate {
	var out []candidate
	seen := make(map[[2]uint64]bool)
	for way := range t.ways {
		c, ok := t.read(way)
		if !ok || !t.whole(c) || seen[[2]uint64{c.lo, c.hi}] {
			continue
		}
		seen[[2]uint64{c.lo, c.hi}] = true
		out = append(out, c)
	}
	return out
}

// HeavyHitter is a key of a candidate table with its estimate now.
type HeavyHitter struct {
	// Key is the key, or its first CandidateKeyBytes bytes when Length is
	// larger: a longer key is kept as that prefix and its full hash, so
	// its estimate is its own.
	//
	// What the label proves: a key kept whole (Length == len(Key)) is
	// hashed again with the file's seed whenever the table is read, and
	// listed only if it hashes to the counters Estimate comes from; a
	// slot whose key does not is never listed, Check reports it
	// (ErrCorrupt), and Merge and Snapshot leave it out. A prefix
	// (Length > len(Key)) cannot be checked so: the estimate is the whole
	// key's, but the label is whatever the table's writer stored, the
	// key's first bytes when this package wrote it, anything when
	// someone else who may write the file did; and keys that share the
	// prefix are told apart only by their hash, not by their label.
	Key string `json:"key"`
	// Length is the whole key's length in bytes.
	Length int `json:"length"`
	// Estimate is the sketch's estimate of the key now: never below its
	// true count.
	Estimate uint64 `json:"estimate"`
	// Low is Estimate less the error bound (ErrorBound), at least 0: the
	// true count is at least this much with the sketch's confidence.
	Low uint64 `json:"low"`
}

// top lists the table's keys by their estimate now, loudest first (ties
// by key), those above the noise floor, at most n (all when n <= 0) and
// at most the table's K.
func (t *candidateTable) top(h candidateHost, n int, bound uint64) []HeavyHitter {
	nf := h.noiseFloor()
	var out []HeavyHitter
	for _, c := range t.collect() {
		e := h.recount(c.lo, c.hi)
		if e <= nf || e == 0 {
			continue
		}
		hh := HeavyHitter{Key: string(c.key), Length: int(min(c.length, math.MaxInt32)), Estimate: e}
		if e > bound {
			hh.Low = e - bound
		}
		out = append(out, hh)
	}
	slices.SortFunc(out, func(a, b HeavyHitter) int {
		if c := cmp.Compare(b.Estimate, a.Estimate); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if n <= 0 || n > t.k {
		n = t.k
	}
	return out[:min(n, len(out))]
}

// rebuild fills the table with the loudest of cands (counted again in h),
// under the lock: a merge's union of candidates, cut to the table. It
// fails with the lock's ErrTimeout, touching nothing.
func (t *candidateTable) rebuild(h candidateHost, cands []candidate) error {
	if err := t.lk.lock(); err != nil {
		return err
	}
	defer t.lk.unlock()
	if atomic.LoadUint32(t.sealed) != 0 {
		return nil
	}
	t.place(h, cands)
	return nil
}

// place empties the table and fills it with the loudest of cands,
// counted in h, for rebuild (under the lock) and for a snapshot's table.
func (t *candidateTable) place(h candidateHost, cands []candidate) {
	type ranked struct {
		candidate
		now uint64
	}
	seen := make(map[[2]uint64]bool)
	var rs []ranked
	for _, c := range cands {
		if seen[[2]uint64{c.lo, c.hi}] {
			continue
		}
		seen[[2]uint64{c.lo, c.hi}] = true
		rs = append(rs, ranked{c, h.recount(c.lo, c.hi)})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := cmp.Compare(b.now, a.now); c != 0 {
			return c
		}
		return bytes.Compare(a.key, b.key)
	})
	for way := range t.ways {
		atomic.StoreUint64(t.fp(way), 0)
		atomic.StoreUint64(t.est(way), 0)
	}
	nf := h.noiseFloor()
	for _, r := range rs {
		if r.now <= nf {
			break
		}
		if uint64(len(r.key)) < min(r.length, uint64(t.keyBytes)) {
			// A prefix shorter than this table keeps (from a table that
			// keeps fewer bytes): written here, it would read as a whole
			// key, or a longer prefix, that is not the key. The key's
			// next add names it.
			continue
		}
		if way := t.emptyWay(t.bucketsOf(r.hi)); way >= 0 {
			// A prefix stays a prefix, with its whole length.
			t.write(uint64(way), fingerprint(r.lo), r.lo, r.hi, string(r.key), r.length, r.now)
		}
	}
	t.refloor(nf, true)
}

// copyTo copies the table, a word at a time and without the lock, into
// region (laid out as t's, the table at off), and keeps only the ways
// that read whole in the copy and did not change in t meanwhile: a way
// written during the copy is left empty in it.
func (t *candidateTable) copyTo(region []byte, off uint64) {
	d := tableAt(region, off, t.k, int(t.keyBytes), t.seed)
	copyWords(unsafe.Slice((*byte)(d.ctl), candidateTableBytes(t.k, int(t.keyBytes))), t.ctl)
	for way := range d.ways {
		fp := atomic.LoadUint64(d.fp(way))
		if fp == 0 {
			continue
		}
		c, ok := d.read(way)
		if !ok || !d.whole(c) || atomic.LoadUint64(t.fp(way)) != fp ||
			atomic.LoadUint64(t.slotWord(way, 0)) != atomic.LoadUint64(d.slotWord(way, 0)) {
			atomic.StoreUint64(d.fp(way), 0)
		}
	}
}

// layoutHost serves a table from a Count-Min region no handle holds yet
// (a window's snapshot being made).
type layoutHost struct{ l *cells.CountMin }

func (h layoutHost) recount(lo, hi uint64) uint64 { return h.l.EstimateHashed(lo, hi) }
func (h layoutHost) noiseFloor() uint64           { return h.l.AddCount() / (h.l.Mask + 1) }

// clear empties the table and its floor; the caller holds the lock.
func (t *candidateTable) clear() {
	for way := range t.ways {
		atomic.StoreUint64(t.fp(way), 0)
		atomic.StoreUint64(t.est(way), 0)
	}
	t.setFloor(0, true)
}

// CandidateStats describes a candidate table.
type CandidateStats struct {
	// Capacity is K, the most keys listed; the table has Ways ways (K
	// rounded up to a multiple of 8).
	Capacity int `json:"capacity"`
	Ways     int `json:"ways"`
	// KeyBytes is how much of a key a slot keeps.
	KeyBytes int `json:"key_bytes"`
	// Held is how many ways hold a key.
	Held int `json:"held"`
	// Floor is what an add's estimate must pass to be offered.
	Floor uint64 `json:"floor"`
	// Admissions counts the keys taken in, each under the write lock.
	Admissions uint64 `json:"admissions"`
	// Loudest are the table's StatsLoudest loudest keys, as Top lists
	// them, so that a status page or a metrics scrape shows who is loud.
	Loudest []HeavyHitter `json:"loudest"`
}

// StatsLoudest is how many of the loudest keys Stats reports
// (CandidateStats.Loudest); Top lists any number.
const StatsLoudest = 10

func (t *candidateTable) stats(h candidateHost, bound uint64) *CandidateStats {
	if t == nil {
		return nil
	}
	s := &CandidateStats{
		Capacity:   t.k,
		Ways:       int(t.ways),
		KeyBytes:   int(t.keyBytes),
		Admissions: atomic.LoadUint64(t.ctlWord(candAdmissions)),
	}
	s.Floor, _ = t.floor()
	for way := range t.ways {
		if atomic.LoadUint64(t.fp(way)) != 0 {
			s.Held++
		}
	}
	s.Loudest = t.top(h, StatsLoudest, bound)
	return s
}

// check verifies what a table can: every way that holds a key holds it
// whole (an even sequence count, the fingerprint of its hash), in one of
// its two buckets, once, and a key kept whole hashes to its hash. A
// crash never leaves anything else (a way being written reads as empty),
// so a finding is damage.
func (t *candidateTable) check() error {
	type held struct{ way, fp, seq uint64 }
	seen := make(map[[2]uint64]held)
	for way := range t.ways {
		fp := atomic.LoadUint64(t.fp(way))
		seq := atomic.LoadUint64(t.slotWord(way, 0))
		if fp == 0 {
			continue
		}
		c, ok := t.read(way)
		if !ok {
			if atomic.LoadUint64(t.fp(way)) != fp || atomic.LoadUint64(t.slotWord(way, 0)) != seq {
				// Written meanwhile: every write moves the sequence
				// count, even one that stores the fingerprint the way
				// had (a merge rewrites its keys).
				continue
			}
			return fmt.Errorf("%w: candidate way %d has a fingerprint but its slot is not whole", ErrCorrupt, way)
		}
		if b1, b2 := t.bucketsOf(c.hi); way/candidateBucketWays != b1 && way/candidateBucketWays != b2 {
			return fmt.Errorf("%w: candidate way %d holds a key of another bucket", ErrCorrupt, way)
		}
		if !t.whole(c) {
			return fmt.Errorf("%w: candidate way %d holds a key that does not hash to its slot's hash", ErrCorrupt, way)
		}
		if o, dup := seen[[2]uint64{c.lo, c.hi}]; dup {
			if atomic.LoadUint64(t.fp(o.way)) == o.fp && atomic.LoadUint64(t.slotWord(o.way, 0)) == o.seq {
				return fmt.Errorf("%w: candidate ways %d and %d hold the same key", ErrCorrupt, o.way, way)
			}
			// The other way was emptied or written since it was read: a
			// merge moved the key.
		}
		seen[[2]uint64{c.lo, c.hi}] = held{way, fp, seq}
	}
	return nil
}
