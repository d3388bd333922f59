package cells

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// The pure-Go core of the counting Bloom filter. It is always compiled: it
// serves single keys in every build, everything in the pure-Go build, and
// the parity suite runs it beside the C core. Keep in sync with
// csrc/cbf.c.
//
// Counters are 4 bits, two to a byte: counter i is in byte i/2, the low
// nibble when i is even. They are read and changed through the aligned
// 32-bit word that holds them, with atomic loads and compare-and-swap, so
// that a byte's two counters never overwrite each other.

// CountingBloom locates a counting Bloom filter's words in the mapping.
type CountingBloom struct {
	Words   unsafe.Pointer // m/8 uint32 words of 8 counters each
	Stripes unsafe.Pointer // stripeCount operation counters, one per cache line
	Seed    uint64
	Mask    uint64 // m - 1
	K       int

	// A filter with a fleet part (nil pointers without one) keeps two
	// more arrays of m bytes, each byte read through its aligned 32-bit
	// word as the counters are:
	//   - Fleet: the rest of the fleet's count of each counter (the sum
	//     of the other hosts' exports, an int8; FleetSaturated when a
	//     host's counter is saturated), written only by SetFleet;
	//   - Unheld: this host's removes of copies it never held (the
	//     fleet's), per counter, a uint8, written under the write lock.
	// A counter's fleet-wide count is then own - Unheld + Fleet.
	Fleet  unsafe.Pointer
	Unheld unsafe.Pointer
}

// CbfMax is where a counter saturates: it sticks there, never incremented
// nor decremented again, so that no item it counts can be lost.
const CbfMax = 15

// nibbleShift[j] is the bit position, in the 32-bit word loaded natively,
// of the low nibble of the word's byte j.
var nibbleShift = func() (s [4]uint) {
	var probe uint32 = 0x03020100
	b := (*[4]byte)(unsafe.Pointer(&probe))
	for pos, j := range b {
		s[j] = uint(8 * pos)
	}
	return s
}()

// Cell returns the word holding counter i and the counter's bit position.
func (l *CountingBloom) Cell(i uint64) (*uint32, uint) {
	w := (*uint32)(unsafe.Add(l.Words, (i/8)*4))
	return w, nibbleShift[(i/2)%4] + uint(i%2)*4
}

// Get returns counter i.
func (l *CountingBloom) Get(i uint64) uint32 {
	w, sh := l.Cell(i)
	return atomic.LoadUint32(w) >> sh & 0xf
}

// Inc adds one to counter i unless it is saturated, and returns its value
// before.
func (l *CountingBloom) Inc(i uint64) uint32 {
	w, sh := l.Cell(i)
	for {
		old := atomic.LoadUint32(w)
		v := old >> sh & 0xf
		if v == CbfMax || atomic.CompareAndSwapUint32(w, old, old+1<<sh) {
			return v
		}
	}
}

// Dec takes one from counter i unless it is saturated or zero.
func (l *CountingBloom) Dec(i uint64) {
	w, sh := l.Cell(i)
	for {
		old := atomic.LoadUint32(w)
		v := old >> sh & 0xf
		if v == CbfMax || v == 0 || atomic.CompareAndSwapUint32(w, old, old-1<<sh) {
			return
		}
	}
}

// Probe is the i-th counter of the key hashing to (h1, h2) (column.go).
func (l *CountingBloom) Probe(h1, h2 uint64, i int) uint64 { return Spread(h1+uint64(i)*h2) & l.Mask }

// AddHashed increments the key's k counters and reports whether one of
// them was zero before: the key was not in the filter. It loads every
// counter's word before the first compare-and-swap: a locked instruction
// waits for the loads before it, so this way the k cache misses overlap
// instead of following one another.
func (l *CountingBloom) AddHashed(h1, hi uint64) (isNew bool) {
	h2 := hi | 1
	if l.Fleet != nil {
		// New to the fleet, not only to this host's counters.
		isNew = !l.ContainsHashed(h1, hi)
		for i := 0; i < l.K; i++ {
			l.Inc(l.Probe(h1, h2, i))
		}
		return isNew
	}
	l.Touch(h1, h2)
	for i := 0; i < l.K; i++ {
		if l.Inc(l.Probe(h1, h2, i)) == 0 {
			isNew = true
		}
	}
	return isNew
}

// Touch loads the words of the key's counters, so that their cache lines
// are on their way together.
func (l *CountingBloom) Touch(h1, h2 uint64) uint32 {
	var sink uint32
	for i := 0; i < l.K; i++ {
		w, _ := l.Cell(l.Probe(h1, h2, i))
		sink += atomic.LoadUint32(w)
	}
	return sink
}

// ContainsHashed reports whether all the key's counters are above zero.
func (l *CountingBloom) ContainsHashed(h1, hi uint64) bool {
	h2 := hi | 1
	fleet := l.Fleet != nil // asked once, not a counter at a time
	for i := 0; i < l.K; i++ {
		c := l.Probe(h1, h2, i)
		if fleet && !l.present(c) || !fleet && l.Get(c) == 0 {
			return false
		}
	}
	return true
}

// CountHashed returns the smallest of the key's counters.
func (l *CountingBloom) CountHashed(h1, hi uint64) uint32 {
	h2 := hi | 1
	n := uint32(CbfMax)
	for i := 0; i < l.K && n > 0; i++ {
		c := l.Probe(h1, h2, i)
		if l.Fleet == nil {
			n = min(n, l.Get(c))
			continue
		}
		v, _ := l.FleetCount(c)
		n = min(n, uint32(min(max(v, 0), CbfMax)))
	}
	return n
}

// RemoveHashed decrements the key's counters if all are above zero, and
// reports whether it did. Callers hold the write lock: two removes of one
// copy must not both pass the check.
func (l *CountingBloom) RemoveHashed(h1, hi uint64) bool {
	if !l.ContainsHashed(h1, hi) {
		return false
	}
	h2 := hi | 1
	for i := 0; i < l.K; i++ {
		if l.Fleet != nil {
			l.removeFleet(l.Probe(h1, h2, i))
		} else {
			l.Dec(l.Probe(h1, h2, i))
		}
	}
	return true
}

// CountAdds adds n to the add count, in the handle's stripe.
func (l *CountingBloom) CountAdds(stripe int, n uint64) {
	atomic.AddUint64((*uint64)(l.AddsWord(stripe)), n)
}

// AddsWord is the add count's word in the handle's stripe.
func (l *CountingBloom) AddsWord(stripe int) unsafe.Pointer {
	return unsafe.Add(l.Stripes, (stripe%StripeCount)*StripeBytes)
}

// ResetAdds zeroes the add count's stripes; Reset calls it under the
// write lock, after the counters.
func (l *CountingBloom) ResetAdds() {
	for i := 0; i < StripeCount; i++ {
		atomic.StoreUint64((*uint64)(unsafe.Add(l.Stripes, i*StripeBytes)), 0)
	}
}

// Adds sums the add count's stripes.
func (l *CountingBloom) Adds() uint64 {
	var sum uint64
	for i := 0; i < StripeCount; i++ {
		sum += atomic.LoadUint64((*uint64)(unsafe.Add(l.Stripes, i*StripeBytes)))
	}
	return sum
}

// FleetSaturated is the fleet count of a counter saturated on some host:
// it reads as present, as a saturated counter of the host's own does.
const FleetSaturated = 127

// fleetByte returns byte i of a fleet part's array.
func fleetByte(arr unsafe.Pointer, i uint64) uint32 {
	w := (*uint32)(unsafe.Add(arr, (i/4)*4))
	return atomic.LoadUint32(w) >> nibbleShift[i%4] & 0xff
}

// FleetCount returns counter i's fleet-wide count, and whether it is
// saturated (on this host or on another).
func (l *CountingBloom) FleetCount(i uint64) (int, bool) {
	own, fleet := l.Get(i), fleetByte(l.Fleet, i)
	if own == CbfMax || fleet == FleetSaturated {
		return CbfMax, true
	}
	return int(own) - int(fleetByte(l.Unheld, i)) + int(int8(fleet)), false
}

// present reports whether counter i counts a copy anywhere in the fleet,
// or only here without a fleet part.
func (l *CountingBloom) present(i uint64) bool {
	if l.Fleet == nil {
		return l.Get(i) > 0
	}
	n, sat := l.FleetCount(i)
	return sat || n > 0
}

// ExportHost is this host's own count of each counter, the fleet's unit
// of exchange: own - Unheld as an int8 (clamped up to -128, which only
// raises the fleet's counts), FleetSaturated for a saturated counter.
// The caller holds the read lock, so that no Remove moves a copy from one
// array to the other during the walk.
func (l *CountingBloom) ExportHost(dst []byte) {
	for i := range uint64(len(dst)) {
		own := l.Get(i)
		switch {
		case own == CbfMax:
			dst[i] = FleetSaturated
		default:
			dst[i] = byte(int8(max(int(own)-int(fleetByte(l.Unheld, i)), -128)))
		}
	}
}

// SumHosts sums hosts' exports (ExportHost) into dst, every slice of one
// length: a counter saturated on any host is FleetSaturated, any other
// sum is clamped to [-128, 126]. The sums are taken whole before the
// clamp, so that no order of the hosts clamps a partial sum low.
func SumHosts(dst []byte, hosts [][]byte) {
	for i := range dst {
		sum, sat := 0, false
		for _, h := range hosts {
			if h[i] == FleetSaturated {
				sat = true
				break
			}
			sum += int(int8(h[i]))
		}
		if sat {
			dst[i] = FleetSaturated
		} else {
			dst[i] = byte(int8(min(max(sum, -128), FleetSaturated-1)))
		}
	}
}

// SetFleet stores the rest of the fleet's counts, m int8s. Plain stores,
// as Reset's clear: no store tears a byte, so a lock-free reader sees
// each count as before or after. The caller holds the write lock, so
// that a Remove's check and its change see one fleet part.
func (l *CountingBloom) SetFleet(src []byte) {
	copy(unsafe.Slice((*byte)(l.Fleet), l.Mask+1), src)
}

// ResetUnheld zeroes the Unheld array; Reset calls it under the write
// lock.
func (l *CountingBloom) ResetUnheld() {
	clear(unsafe.Slice((*byte)(l.Unheld), l.Mask+1))
}

// removeFleet takes one copy off counter i, as Dec does, with a fleet
// part: off the host's own counter when it holds one, else off the
// fleet's, by counting an unheld remove (the fleet learns it from the
// next export). Saturated counters stay. The caller holds the write lock.
func (l *CountingBloom) removeFleet(i uint64) {
	if _, sat := l.FleetCount(i); sat {
		return
	}
	if l.Get(i) > 0 {
		l.Dec(i)
		return
	}
	w := (*uint32)(unsafe.Add(l.Unheld, (i/4)*4))
	sh := nibbleShift[i%4]
	for {
		old := atomic.LoadUint32(w)
		if old>>sh&0xff == 0xff || atomic.CompareAndSwapUint32(w, old, old+1<<sh) {
			return // 255 unheld removes: the count stays higher, never lower
		}
	}
}

// FleetSet counts the counters whose fleet-wide count is above zero.
func (l *CountingBloom) FleetSet() uint64 {
	var n uint64
	for i := uint64(0); i <= l.Mask; i++ {
		if l.present(i) {
			n++
		}
	}
	return n
}

// Nwords is the number of 32-bit counter words.
func (l *CountingBloom) Nwords() uint64 { return (l.Mask + 1) / 8 }

// CountingBloomCore is one implementation of the counting Bloom filter's batch and
// whole-array operations; the Go core and (with cgo) the C core agree bit
// for bit.
type CountingBloomCore interface {
	Name() string
	// AddBatch adds every key under the read lock, unless the file is
	// sealed (then it adds nothing and reports frozen), counts them in
	// the add count's stripe before it releases the lock (a Reset or
	// Freeze finds a batch counted whole or not at all), and returns how
	// many keys were new; already, when not nil, receives each key's
	// answer (true: it was not new).
	// It fails, adding nothing, with the lock's error (a timeout).
	AddBatch(l *CountingBloom, lk Locker, sealed *uint32, stripe int, keys [][]byte, already []bool) (added int, frozen bool, err error)
	// CountSet returns how many counters are above zero.
	CountSet(l *CountingBloom) uint64
	// Merge adds src, another filter's counter bytes, into l's counters,
	// saturating at CbfMax. The caller holds l's write lock.
	Merge(l *CountingBloom, src []byte)
	// Reset zeroes every counter. The caller holds the write lock.
	Reset(l *CountingBloom)
}

// Locker is the file's read lock as a counting filter's batch takes it
// (a Reset's or Merge's write lock excludes it). The C core takes it in
// C when the lock also has a CLock method (internal/cellsc).
type Locker interface {
	RLock() error
	RUnlock()
}

// CountingBloomGo is the pure-Go core.
type CountingBloomGo struct{}

func (CountingBloomGo) Name() string { return "purego" }

func (CountingBloomGo) AddBatch(l *CountingBloom, lk Locker, sealed *uint32, stripe int, keys [][]byte, already []bool) (int, bool, error) {
	if err := lk.RLock(); err != nil {
		return 0, false, err
	}
	defer lk.RUnlock()
	if atomic.LoadUint32(sealed) != 0 {
		return 0, true, nil
	}
	added := 0
	for i, k := range keys {
		h1, hi := Hash(k, l.Seed)
		isNew := l.AddHashed(h1, hi)
		if isNew {
			added++
		}
		if already != nil {
			already[i] = !isNew
		}
	}
	l.CountAdds(stripe, uint64(len(keys)))
	return added, false, nil
}

func (CountingBloomGo) CountSet(l *CountingBloom) uint64 {
	var n uint64
	for w := uint64(0); w < l.Nwords(); w++ {
		v := atomic.LoadUint32((*uint32)(unsafe.Add(l.Words, w*4)))
		// A nibble is set when any of its 4 bits is: fold each onto its
		// low bit and count.
		v = (v | v>>1 | v>>2 | v>>3) & 0x11111111
		n += uint64(bits.OnesCount32(v))
	}
	return n
}

func (CountingBloomGo) Merge(l *CountingBloom, src []byte) {
	for w := uint64(0); w < l.Nwords(); w++ {
		add := binary.NativeEndian.Uint32(src[w*4:])
		if add == 0 {
			continue
		}
		p := (*uint32)(unsafe.Add(l.Words, w*4))
		for {
			old := atomic.LoadUint32(p)
			if atomic.CompareAndSwapUint32(p, old, saturatingNibbleAdd(old, add)) {
				break
			}
		}
	}
}

// saturatingNibbleAdd adds two words of eight 4-bit counters counter by
// counter, each sum capped at CbfMax.
func saturatingNibbleAdd(a, b uint32) uint32 {
	var r uint32
	for sh := uint(0); sh < 32; sh += 4 {
		r |= min(a>>sh&0xf+b>>sh&0xf, CbfMax) << sh
	}
	return r
}

// clear zeroes the counters with Go's clear (wide plain stores), as
// Bloom.Reset and CountMin.Reset do: an atomic store per word is an XCHG
// on amd64, twenty times slower, and the write lock is held throughout.
// The write lock keeps every adder and remover out; a lock-free reader
// (Contains, Estimate) sees each counter as before or as zero, since no
// store tears a byte, which is what a clear under way means.
func (CountingBloomGo) Reset(l *CountingBloom) {
	clear(unsafe.Slice((*uint32)(l.Words), l.Nwords()))
}
