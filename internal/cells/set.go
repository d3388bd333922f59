package cells

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// The exact set's table, served in Go in every build: its mutations run
// under the file's write lock and its reads are a few atomic loads a
// slot, so a C core would save nothing worth a crossing. docs/FORMAT.md
// (kind 10) has the layout and docs/DESIGN.md the protocol.
//
// The table is open addressing with linear probing: a key's path starts
// at slot Hash(key).lo mod slots and goes on slot by slot to the first
// empty slot. A slot is a state word, a period word in a window's table,
// and the key's bytes as words (zero past its length). The state word:
//
//	 63          21 20    13 12      2 1   0
//	+--------------+--------+---------+-----+
//	|  generation  |  tag   |  length | st  |
//	+--------------+--------+---------+-----+
//
// st is empty (0), live (1) or tombstone (2); the tag is the top byte of
// the hash's high half, the length the key's bytes (a live slot's; both
// zero otherwise). Every change of the word raises the generation, so a
// reader that loads the same word before and after the key words read a
// key nobody wrote meanwhile: key words are written only while the slot
// is not live, and the word is published last, one atomic store.
//
// Invariant: every slot on a live key's path before its own is not
// empty. Inserts fill the first tombstone or empty slot of the path,
// removes leave tombstones, and only compaction (under the same lock)
// empties slots: it first moves each key to the first tombstone of its
// path, then empties the tombstones, which no path crosses any more.

// Set locates an exact set's table in the mapping.
type Set struct {
	Head      unsafe.Pointer // the header line: SetHead* words
	Slots     unsafe.Pointer
	Mask      uint64  // slots - 1, slots a power of two
	SlotBytes uintptr // 8 (state) [+ 8 (period)] + KeyBytes
	KeyOff    uintptr // where a slot's key words start: 8, or 16 in a window's
	KeyBytes  int     // a multiple of 8
	Seed      uint64
	Windowed  bool // slots keep the period their key was added in
}

// The header line's words.
const (
	SetHeadLive    = 0  // live slots (a window's: expired ones included)
	SetHeadTombs   = 8  // tombstones
	SetHeadDirty   = 16 // 1 while a writer changes more than one word
	SetHeadMoves   = 24 // raised at each key compaction moves
	SetHeadChanges = 32 // raised at the end of each mutation
	SetHeadAdds    = 40 // keys added since create (a kill may lose one)
	SetHeadRemoves = 48 // keys removed since create (likewise)
	SetHeadBytes   = 64
)

// Slot states.
const (
	SetEmpty = 0
	SetLive  = 1
	SetTomb  = 2

	setLenShift = 2
	setLenMask  = 1<<11 - 1
	setTagShift = 13
	setGenShift = 21
	setIDMask   = 1<<setGenShift - 1 // state, length, tag
)

// SetMaxKeyBytes is the largest key a table may be made for.
const SetMaxKeyBytes = 1024

func setWord(state uint64, n int, tag, gen uint64) uint64 {
	return state | uint64(n)<<setLenShift | tag<<setTagShift | gen<<setGenShift
}

// next is the word that replaces w with state st (of a key of n bytes
// with tag, when live).
func next(w, st uint64, n int, tag uint64) uint64 {
	return setWord(st, n, tag, w>>setGenShift+1)
}

func setTag(hi uint64) uint64 { return hi >> 56 }

// SetTestHookStore, when set, runs before each store a mutation makes to
// a table, so that a test can stop the mutation at any point, as a kill
// would.
var SetTestHookStore func()

func (t *Set) store(p *uint64, v uint64) {
	if SetTestHookStore != nil {
		SetTestHookStore()
	}
	atomic.StoreUint64(p, v)
}

func (t *Set) add(p *uint64, v uint64) {
	if SetTestHookStore != nil {
		SetTestHookStore()
	}
	atomic.AddUint64(p, v)
}

func (t *Set) head(off uintptr) *uint64 { return (*uint64)(unsafe.Add(t.Head, off)) }
func (t *Set) word(i uint64) *uint64    { return (*uint64)(unsafe.Add(t.Slots, uintptr(i)*t.SlotBytes)) }
func (t *Set) period(i uint64) *uint64 {
	return (*uint64)(unsafe.Add(t.Slots, uintptr(i)*t.SlotBytes+8))
}
func (t *Set) keyWord(i uint64, w int) *uint64 {
	return (*uint64)(unsafe.Add(t.Slots, uintptr(i)*t.SlotBytes+t.KeyOff+uintptr(w)*8))
}

// Load reads a header word.
func (t *Set) Load(off uintptr) uint64 { return atomic.LoadUint64(t.head(off)) }

// Size is the table's slots.
func (t *Set) Size() uint64 { return t.Mask + 1 }

// chunk is word w of key, zero past its end, as the slot stores it.
func chunk(key []byte, w int) uint64 {
	if len(key) >= 8*w+8 {
		return binary.NativeEndian.Uint64(key[8*w:])
	}
	var b [8]byte
	copy(b[:], key[8*w:])
	return binary.NativeEndian.Uint64(b[:])
}

// holds reports whether slot i's key words are key's (its length is the
// word's, checked by the caller).
func (t *Set) holds(i uint64, key []byte) bool {
	for w := 0; w*8 < len(key); w++ {
		if atomic.LoadUint64(t.keyWord(i, w)) != chunk(key, w) {
			return false
		}
	}
	return true
}

// expired reports whether live slot i holds a key of a period before
// oldest (never in a set without periods).
func (t *Set) expired(i, oldest uint64) bool {
	return t.Windowed && atomic.LoadUint64(t.period(i)) < oldest
}

// Find reports whether key (hashed lo, hi) is in the set, in a period
// from oldest on in a window's. It takes no lock: each slot is read
// between two loads of its word, and an answer of absent is given only
// when no compaction moved a key meanwhile. A key live throughout the
// call is found; one absent throughout is not.
func (t *Set) Find(key []byte, lo, hi, oldest uint64) bool {
	for {
		mv := t.Load(SetHeadMoves)
		if t.lookup(key, lo, hi, oldest) {
			return true
		}
		if t.Load(SetHeadMoves) == mv {
			return false
		}
	}
}

func (t *Set) lookup(key []byte, lo, hi, oldest uint64) bool {
	want := setWord(SetLive, len(key), setTag(hi), 0)
	i := lo & t.Mask
	for range t.Mask + 1 {
		wp := t.word(i)
		for {
			w := atomic.LoadUint64(wp)
			if w&3 == SetEmpty {
				return false
			}
			if w&setIDMask != want || !t.holds(i, key) {
				break // another key, or a tombstone
			}
			stale := t.expired(i, oldest)
			if atomic.LoadUint64(wp) != w {
				continue // rewritten under the read: read it again
			}
			return !stale // a key has one slot: an expired one is absent
		}
		i = (i + 1) & t.Mask
	}
	return false
}

// probe walks key's path under the lock: at is the slot holding key live
// (in any period), free the first slot an insert may take (empty,
// tombstone, or an expired key's), each -1 when there is none.
func (t *Set) probe(key []byte, lo, hi, oldest uint64) (at, free int64) {
	want := setWord(SetLive, len(key), setTag(hi), 0)
	at, free = -1, -1
	i := lo & t.Mask
	for range t.Mask + 1 {
		w := atomic.LoadUint64(t.word(i))
		switch w & 3 {
		case SetEmpty:
			if free < 0 {
				free = int64(i)
			}
			return at, free
		case SetTomb:
			if free < 0 {
				free = int64(i)
			}
		case SetLive:
			mine := w&setIDMask == want && t.holds(i, key)
			if free < 0 && t.expired(i, oldest) {
				free = int64(i)
			}
			if mine {
				return int64(i), free
			}
		}
		i = (i + 1) & t.Mask
	}
	return at, free
}

// Insert adds key (hashed lo, hi) under the write lock, in period (of a
// window's table), unless it is there (from oldest on): added reports
// that it was not. full reports that it was not there and the set holds
// capacity keys (after a window's expired keys were swept out), so that
// nothing changed. The word order makes a kill at any point harmless:
// the key's words go into a slot that is not live, the slot's word is
// published last; the counts are fixed by the next writer (Recover), as
// dirty stays set.
func (t *Set) Insert(key []byte, lo, hi, period, oldest, capacity uint64) (added, full bool) {
	for try := 0; ; try++ {
		at, free := t.probe(key, lo, hi, oldest)
		if at >= 0 && !t.expired(uint64(at), oldest) {
			return false, false
		}
		reuse := free >= 0 && atomic.LoadUint64(t.word(uint64(free)))&3 == SetLive
		if free < 0 || !reuse && t.Load(SetHeadLive) >= capacity {
			if try == 0 && t.Windowed && t.Sweep(oldest) > 0 {
				continue
			}
			return false, true
		}
		t.write(uint64(free), key, hi, period, at)
		return true, false
	}
}

// write puts key into slot f (not live, or an expired key's) and, when
// at is another slot, the key's expired copy there, tombstones that.
func (t *Set) write(f uint64, key []byte, hi, period uint64, at int64) {
	t.store(t.head(SetHeadDirty), 1)
	wp := t.word(f)
	w := atomic.LoadUint64(wp)
	was := w & 3
	if was == SetLive {
		w = next(w, SetTomb, 0, 0)
		t.store(wp, w) // readers skip it from here
	}
	if t.Windowed {
		t.store(t.period(f), period)
	}
	for k := 0; 8*k < len(key); k++ { // words past the length are never read
		t.store(t.keyWord(f, k), chunk(key, k))
	}
	t.store(wp, next(w, SetLive, len(key), setTag(hi)))
	live, tombs := t.Load(SetHeadLive), t.Load(SetHeadTombs)
	switch was {
	case SetEmpty:
		live++
	case SetTomb:
		live, tombs = live+1, tombs-1
	}
	if at >= 0 && uint64(at) != f {
		t.tombstone(uint64(at))
		live, tombs = live-1, tombs+1
	}
	t.commit(live, tombs, SetHeadAdds)
}

// commit ends a mutation: the counts, its counter, the change count, and
// dirty cleared; then a compaction when tombstones took a quarter of the
// table.
func (t *Set) commit(live, tombs uint64, counter uintptr) {
	t.store(t.head(SetHeadLive), live)
	t.store(t.head(SetHeadTombs), tombs)
	t.add(t.head(counter), 1)
	t.add(t.head(SetHeadChanges), 1)
	t.store(t.head(SetHeadDirty), 0)
	if tombs > (t.Mask+1)/4 {
		t.Compact()
	}
}

func (t *Set) tombstone(i uint64) {
	wp := t.word(i)
	t.store(wp, next(atomic.LoadUint64(wp), SetTomb, 0, 0))
}

// Remove takes key out under the write lock and reports whether it was
// there (from oldest on): one store of a tombstone.
func (t *Set) Remove(key []byte, lo, hi, oldest uint64) bool {
	at, _ := t.probe(key, lo, hi, oldest)
	if at < 0 || t.expired(uint64(at), oldest) {
		return false
	}
	t.store(t.head(SetHeadDirty), 1)
	t.tombstone(uint64(at))
	t.commit(t.Load(SetHeadLive)-1, t.Load(SetHeadTombs)+1, SetHeadRemoves)
	return true
}

// Sweep tombstones a window's expired keys under the write lock and
// returns how many.
func (t *Set) Sweep(oldest uint64) uint64 {
	var n uint64
	t.store(t.head(SetHeadDirty), 1)
	for i := range t.Mask + 1 {
		if atomic.LoadUint64(t.word(i))&3 == SetLive && t.expired(i, oldest) {
			t.tombstone(i)
			n++
		}
	}
	if n == 0 {
		t.store(t.head(SetHeadDirty), 0)
		return 0
	}
	t.commit(t.Load(SetHeadLive)-n, t.Load(SetHeadTombs)+n, SetHeadChanges)
	return n
}

// Recover finishes what a writer killed in a mutation left, under the
// write lock: when dirty is set, it compacts the table, which drops a
// copy a killed move left and recounts.
func (t *Set) Recover() {
	if t.Load(SetHeadDirty) != 0 {
		t.Compact()
	}
}

// Compact moves every key to the first tombstone of its path, then
// empties every tombstone, under the write lock. Each move writes the key
// into its new slot, raises the moves word, then tombstones the old one:
// a reader that passed the new slot before the write and reaches the old
// one after sees the moves word change and looks again. A second copy of
// a key (a move cut short by a kill) is tombstoned. It recounts the
// table, so it also repairs the counts of a mutation cut short.
func (t *Set) Compact() {
	t.store(t.head(SetHeadDirty), 1)
	start := uint64(0) // a run of occupied slots is taken in probe order from an empty slot before it
	for i := range t.Mask + 1 {
		if atomic.LoadUint64(t.word(i))&3 == SetEmpty {
			start = i
			break
		}
	}
	buf := make([]byte, t.KeyBytes)
	var live uint64
	for n := uint64(1); n <= t.Mask+1; n++ {
		j := (start + n) & t.Mask
		w := atomic.LoadUint64(t.word(j))
		if w&3 != SetLive || int(w>>setLenShift&setLenMask) > t.KeyBytes {
			continue
		}
		key := t.keyOf(j, w, buf)
		if t.settle(j, w, key) {
			live++
		}
	}
	for i := range t.Mask + 1 {
		if w := atomic.LoadUint64(t.word(i)); w&3 == SetTomb {
			t.store(t.word(i), next(w, SetEmpty, 0, 0))
		}
	}
	t.store(t.head(SetHeadTombs), 0)
	t.store(t.head(SetHeadLive), live)
	t.add(t.head(SetHeadChanges), 1)
	t.store(t.head(SetHeadDirty), 0)
}

// keyOf reads slot j's key (of word w) into buf.
func (t *Set) keyOf(j, w uint64, buf []byte) []byte {
	n := int(w >> setLenShift & setLenMask)
	for k := 0; 8*k < n; k++ {
		binary.NativeEndian.PutUint64(buf[8*k:], atomic.LoadUint64(t.keyWord(j, k)))
	}
	return buf[:n]
}

// settle moves the key in slot j (word w) to the first tombstone (or
// empty slot, in a damaged table) of its path, or tombstones it when an
// earlier slot holds it too; it reports whether j's key stays live.
func (t *Set) settle(j, w uint64, key []byte) bool {
	lo, _ := Hash(key, t.Seed)
	for i := lo & t.Mask; i != j; i = (i + 1) & t.Mask {
		wi := atomic.LoadUint64(t.word(i))
		switch wi & 3 {
		case SetLive:
			if wi&setIDMask == w&setIDMask && t.holds(i, key) {
				t.tombstone(j) // a second copy
				t.add(t.head(SetHeadMoves), 1)
				return false
			}
			continue
		case SetEmpty, SetTomb:
			if t.Windowed {
				t.store(t.period(i), atomic.LoadUint64(t.period(j)))
			}
			for k := 0; 8*k < len(key); k++ {
				t.store(t.keyWord(i, k), atomic.LoadUint64(t.keyWord(j, k)))
			}
			t.store(t.word(i), next(wi, SetLive, int(w>>setLenShift&setLenMask), w>>setTagShift&0xff))
			t.add(t.head(SetHeadMoves), 1)
			t.tombstone(j)
			return true
		}
	}
	return true
}

// Reset empties every slot under the write lock. It is not atomic: a
// reader meanwhile may find some keys and not others.
func (t *Set) Reset() {
	t.store(t.head(SetHeadDirty), 1)
	for i := range t.Mask + 1 {
		if w := atomic.LoadUint64(t.word(i)); w&3 != SetEmpty {
			t.store(t.word(i), next(w, SetEmpty, 0, 0))
		}
	}
	t.store(t.head(SetHeadLive), 0)
	t.store(t.head(SetHeadTombs), 0)
	t.add(t.head(SetHeadMoves), 1)
	t.add(t.head(SetHeadChanges), 1)
	t.store(t.head(SetHeadDirty), 0)
}

// ReadSlot reads slot i between two loads of its word, without a lock:
// its state, its key (into buf, of KeyBytes) and its period. ok is false
// for a word no writer leaves (a state of 3, a length past KeyBytes).
func (t *Set) ReadSlot(i uint64, buf []byte) (state uint64, key []byte, period uint64, ok bool) {
	wp := t.word(i)
	for {
		w := atomic.LoadUint64(wp)
		if w&3 == 3 || int(w>>setLenShift&setLenMask) > t.KeyBytes {
			return 3, nil, 0, false
		}
		if w&3 != SetLive {
			return w & 3, nil, 0, true
		}
		key = t.keyOf(i, w, buf)
		if t.Windowed {
			period = atomic.LoadUint64(t.period(i))
		}
		if atomic.LoadUint64(wp) == w {
			return SetLive, key, period, true
		}
	}
}

// Keys calls fn with each key live from oldest on, reading each slot as
// ReadSlot does; stable reports that no compaction moved a key during the
// walk (so no key was missed or given twice), dirty that a writer was in
// a mutation, or was killed in one (whose copy of a key may be given
// twice).
func (t *Set) Keys(oldest uint64, fn func(key []byte)) (stable, dirty bool) {
	mv, d := t.Load(SetHeadMoves), t.Load(SetHeadDirty)
	buf := make([]byte, t.KeyBytes)
	for i := range t.Mask + 1 {
		st, key, p, ok := t.ReadSlot(i, buf)
		if ok && st == SetLive && (!t.Windowed || p >= oldest) {
			fn(key)
		}
	}
	return t.Load(SetHeadMoves) == mv, d != 0 || t.Load(SetHeadDirty) != 0
}

// Census counts the table's slots by state, without a lock, and measures
// its longest run of slots that are not empty (which bounds any probe),
// and how many live keys are from oldest on.
func (t *Set) Census(oldest uint64) (live, tombs, current, longest uint64) {
	var run uint64
	for i := range 2 * (t.Mask + 1) { // twice round, for the run that wraps
		w := atomic.LoadUint64(t.word(i & t.Mask))
		if w&3 == SetEmpty {
			run = 0
			continue
		}
		run++
		longest = max(longest, min(run, t.Mask+1))
		if i > t.Mask {
			continue
		}
		switch w & 3 {
		case SetLive:
			live++
			if !t.expired(i, oldest) {
				current++
			}
		case SetTomb:
			tombs++
		}
	}
	return live, tombs, current, longest
}

// Check walks the table without a lock and describes the first thing no
// writer leaves: a state of 3, a length past KeyBytes, a key whose tag
// is not its hash's or that its path does not reach (an empty slot
// before it), a second copy of a key, or counts that disagree with the
// slots while no writer ran (changes and dirty unchanged and clear).
// It returns "" for a sound table.
func (t *Set) Check() string {
	changes, dirty := t.Load(SetHeadChanges), t.Load(SetHeadDirty)
	buf, path := make([]byte, t.KeyBytes), make([]byte, t.KeyBytes)
	quiet := func() bool { return dirty == 0 && t.Load(SetHeadDirty) == 0 && t.Load(SetHeadChanges) == changes }
	var live, tombs uint64
	for i := range t.Mask + 1 {
		st, key, _, ok := t.ReadSlot(i, buf)
		if !ok {
			return fmt.Sprintf("slot %d holds word %#x, which no writer leaves", i, atomic.LoadUint64(t.word(i)))
		}
		switch st {
		case SetTomb:
			tombs++
		case SetLive:
			live++
			if msg := t.checkKey(i, key, path); msg != "" && quiet() {
				return msg
			}
		}
	}
	if !quiet() {
		return "" // a writer ran (or was killed: the next one recounts)
	}
	if hl, ht := t.Load(SetHeadLive), t.Load(SetHeadTombs); hl != live || ht != tombs {
		return fmt.Sprintf("the counts say %d keys and %d tombstones, the slots hold %d and %d", hl, ht, live, tombs)
	}
	return ""
}

// checkKey checks that live slot i's key has its tag and is reached
// first at i from its home slot.
func (t *Set) checkKey(i uint64, key, buf []byte) string {
	lo, hi := Hash(key, t.Seed)
	w := atomic.LoadUint64(t.word(i))
	if w>>setTagShift&0xff != setTag(hi) {
		return fmt.Sprintf("slot %d holds a key whose tag is not its hash's", i)
	}
	for j := lo & t.Mask; j != i; j = (j + 1) & t.Mask {
		st, k, _, _ := t.ReadSlot(j, buf)
		if st == SetEmpty {
			return fmt.Sprintf("slot %d holds a key its lookups cannot reach (slot %d before it is empty)", i, j)
		}
		if st == SetLive && bytes.Equal(k, key) {
			return fmt.Sprintf("slots %d and %d hold the same key", j, i)
		}
	}
	return ""
}
