package cells

import (
	"sync/atomic"
	"unsafe"
)

// The GCRA rate limiter's Go core. Keep in sync with csrc/gcra.c: the
// same cells, the same reads and compare-and-swaps in the same order.
//
// A cell holds a theoretical arrival time (TAT), in nanoseconds of the
// Unix clock; 0 is "never". A key's TAT is the least of its cells (one a
// row, placed as a Count-Min row's column), and a cell is the largest TAT
// of the keys that share it, so collisions only make a key look busier.
//
// A decision reads the key's cells in row order, decides on their least,
// and, when it allows, raises each cell below the new TAT with a CAS from
// the value it read, again in row order. A CAS that finds its cell moved
// since the read starts the decision again (the cells this attempt raised
// stay raised: stricter, never more lenient). That makes any two allowed
// decisions of one key ordered, the later having read the earlier's TAT:
// for two allowed decisions A and B whose reads did not see each other's
// TAT, B's least row k must have been read before A settled it and A's
// least row j before B settled it; j = k leaves one of the two CASes on
// that row failing, and j != k needs one of them to have read a row after
// the other's CASes began, which reading every row before the first CAS
// rules out. So a key is never allowed more than a serial GCRA allows.

// GCRAMaxRows is the most rows a limiter has: a decision keeps the
// values it read on its stack.
const GCRAMaxRows = 16

// GCRA locates a rate limiter's words in the mapping.
type GCRA struct {
	Cells    unsafe.Pointer // Rows x width uint64 TATs, row-major
	Stripes  unsafe.Pointer // StripeCount decision counters (GCRAStripe)
	Seed     uint64
	Salt     uint64 // the handle's own, random: mixed into Stripe
	Mask     uint64 // width - 1
	Rows     int
	RowBytes uintptr
	// Interval is the emission interval, nanoseconds a request of cost 1
	// moves a TAT; Window is (burst+1)·Interval, how far past now a TAT
	// may be after an allowed decision.
	Interval, Window uint64
}

// The words of a decision stripe: allowed and refused decisions, and
// the cost the allowed ones took past 1 each (so that a decision of cost
// 1, the usual one, is one atomic add).
const (
	GCRAAllowed = 0
	GCRARefused = 1
	GCRAExtra   = 2
)

// Decide decides a request of cost (at least 1, at most Window/Interval)
// for the key hashing to (lo, hi) at now (Unix ns, below 2^63): it
// returns whether it was allowed and the key's TAT after it (the new
// one when allowed, the one it was refused on otherwise). It does not
// count the decision (Count).
func (l *GCRA) Decide(lo, hi, now, cost uint64) (allowed bool, tat uint64) {
	var offs [GCRAMaxRows]uintptr
	var read [GCRAMaxRows]uint64
	h2 := hi | 1
	for i := 0; i < l.Rows; i++ {
		offs[i] = uintptr(i)*l.RowBytes + uintptr(Spread(lo+uint64(i)*h2)&l.Mask)*8
	}
	for {
		tat = ^uint64(0)
		for i := 0; i < l.Rows; i++ {
			read[i] = atomic.LoadUint64((*uint64)(unsafe.Add(l.Cells, offs[i])))
			tat = min(tat, read[i])
		}
		next := max(tat, now) + cost*l.Interval
		if next-now > l.Window {
			return false, tat
		}
		if l.raise(&offs, &read, next) {
			return true, next
		}
	}
}

// raise sets every cell read below next to next, each with a CAS from
// the value read, in row order; false when one moved since (the caller
// decides again).
func (l *GCRA) raise(offs *[GCRAMaxRows]uintptr, read *[GCRAMaxRows]uint64, next uint64) bool {
	for i := 0; i < l.Rows; i++ {
		if read[i] < next && !atomic.CompareAndSwapUint64((*uint64)(unsafe.Add(l.Cells, offs[i])), read[i], next) {
			return false
		}
	}
	return true
}

// TAT returns the key's TAT: the least of its cells.
func (l *GCRA) TAT(lo, hi uint64) uint64 {
	h2 := hi | 1
	tat := ^uint64(0)
	row := l.Cells
	for i := 0; i < l.Rows; i++ {
		tat = min(tat, atomic.LoadUint64((*uint64)(unsafe.Add(row, (Spread(lo+uint64(i)*h2)&l.Mask)*8))))
		row = unsafe.Add(row, l.RowBytes)
	}
	return tat
}

// Count counts decisions in the calling goroutine's stripe: allowed
// ones with the cost they took, and refused ones.
func (l *GCRA) Count(allowed, refused, cost uint64) {
	s := l.Stripe()
	if allowed != 0 {
		atomic.AddUint64((*uint64)(unsafe.Add(s, GCRAAllowed*8)), allowed)
		if cost > allowed {
			atomic.AddUint64((*uint64)(unsafe.Add(s, GCRAExtra*8)), cost-allowed)
		}
	}
	if refused != 0 {
		atomic.AddUint64((*uint64)(unsafe.Add(s, GCRARefused*8)), refused)
	}
}

// Counts sums the stripes: allowed and refused decisions, and the cost
// the allowed ones took (each wrapping at 2^64, which a decision a
// nanosecond would take five centuries to reach).
func (l *GCRA) Counts() (allowed, refused, cost uint64) {
	var extra uint64
	for i := 0; i < StripeCount; i++ {
		s := unsafe.Add(l.Stripes, uintptr(i)*StripeBytes)
		allowed += atomic.LoadUint64((*uint64)(unsafe.Add(s, GCRAAllowed*8)))
		refused += atomic.LoadUint64((*uint64)(unsafe.Add(s, GCRARefused*8)))
		extra += atomic.LoadUint64((*uint64)(unsafe.Add(s, GCRAExtra*8)))
	}
	return allowed, refused, allowed + extra
}

// Stripe returns the decision stripe for the calling goroutine, picked
// as CountMin.Stripe picks an add-count stripe.
func (l *GCRA) Stripe() unsafe.Pointer {
	var here byte
	sp := uint64(uintptr(unsafe.Pointer(&here))) >> 13
	i := ((sp ^ l.Salt) * 0x9E3779B97F4A7C15) >> stripeShift
	return unsafe.Add(l.Stripes, uintptr(i)*StripeBytes)
}

// Busy reports how many cells hold a TAT past now, and the largest TAT
// of any cell: how full the grid is, for Stats.
func (l *GCRA) Busy(now uint64) (busy, latest uint64) {
	n := uintptr(l.Rows) * l.RowBytes / 8
	for i := uintptr(0); i < n; i++ {
		v := atomic.LoadUint64((*uint64)(unsafe.Add(l.Cells, i*8)))
		if v > now {
			busy++
		}
		latest = max(latest, v)
	}
	return busy, latest
}

// Merge raises each cell to the other's where the other's is larger:
// afterwards every key is as busy as in either. It returns how many
// cells it raised.
func (l *GCRA) Merge(o *GCRA) uint64 {
	var raised uint64
	n := uintptr(l.Rows) * l.RowBytes / 8
	for i := uintptr(0); i < n; i++ {
		v := atomic.LoadUint64((*uint64)(unsafe.Add(o.Cells, i*8)))
		c := (*uint64)(unsafe.Add(l.Cells, i*8))
		for old := atomic.LoadUint64(c); old < v; old = atomic.LoadUint64(c) {
			if atomic.CompareAndSwapUint64(c, old, v) {
				raised++
				break
			}
		}
	}
	return raised
}

// Reset sets every cell to 0 (never) and the counters to 0.
func (l *GCRA) Reset() {
	n := uintptr(l.Rows) * l.RowBytes / 8
	for i := uintptr(0); i < n; i++ {
		atomic.StoreUint64((*uint64)(unsafe.Add(l.Cells, i*8)), 0)
	}
	for i := uintptr(0); i < StripesBytes/8; i++ {
		atomic.StoreUint64((*uint64)(unsafe.Add(l.Stripes, i*8)), 0)
	}
}

// GCRACore is one backend's batch of decisions: each key decided as
// Decide does, in order, filling allowed and tats; it returns how many
// were allowed. It counts nothing.
type GCRACore interface {
	Name() string
	DecideBatch(l *GCRA, keys [][]byte, now, cost uint64, allowed []bool, tats []uint64) uint64
}

// GCRAGo is the pure-Go core.
type GCRAGo struct{}

// Name is "purego".
func (GCRAGo) Name() string { return "purego" }

// DecideBatch decides each key in Go.
func (GCRAGo) DecideBatch(l *GCRA, keys [][]byte, now, cost uint64, allowed []bool, tats []uint64) uint64 {
	var n uint64
	for i, k := range keys {
		lo, hi := Hash(k, l.Seed)
		allowed[i], tats[i] = l.Decide(lo, hi, now, cost)
		if allowed[i] {
			n++
		}
	}
	return n
}
