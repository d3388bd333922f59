package sketch

import (
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// A window's adds since it was made, and its turns, counted without a cost
// to any add. A slot already knows what it took in its period (a Count-Min
// slot's row sum, a Bloom slot's stripe counts, a distinct slot's change
// count); what a clear would lose, the clearer first folds into the slot's
// retired count. A window's adds are then the sum, over its slots, of the
// retired count and what the slot holds now.
//
// The fold words of a slot are three words at foldOff in the slot, in its
// first line, which no add, clear or reset touches (a Count-Min slot's
// stripe 0 holds the stripe count and the reset generation before them, a
// Bloom slot's its added and seen counts, a distinct slot's its change
// count):
//
//	foldOff+0   commit: (q+1)<<1 | v, the clear to period q whose fold is
//	            done, and which of the two next words is current (0: none)
//	foldOff+8   retired count, version 0
//	foldOff+16  retired count, version 1
//
// Only the clearer of a slot, which owns it, folds: it writes the
// retired count that is not current, then the commit word, one atomic
// store. A clearer killed before the commit left the slot whole (it clears
// only after the commit) and its successor, clearing for the same period,
// folds again from the same numbers; one killed after the commit left a
// fold its successor sees and skips. So a kill neither loses nor counts
// twice what a slot held.

const (
	foldOff = 16

	// wcTurns is the control word that counts a clock window's turns
	// (see windowCtl.raiseLatest).
	wcTurns = 24
)

// testHookWindowFolded runs in a clearer of slot s for period p after its
// fold is committed and before the slot is cleared.
var testHookWindowFolded func(s, p uint64)

// setFolds gives the control each slot's start, where its fold words are,
// and what a slot holds now (total). Called before start.
func (c *windowCtl) setFolds(slots []unsafe.Pointer, total func(s uint64) uint64) {
	c.folds, c.slotTotal = slots, total
}

func (c *windowCtl) foldCommit(s uint64) *uint64 {
	return (*uint64)(unsafe.Add(c.folds[s], foldOff))
}

func (c *windowCtl) foldRetired(s, v uint64) *uint64 {
	return (*uint64)(unsafe.Add(c.folds[s], foldOff+8+8*(v&1)))
}

// fold adds what slot s holds to its retired count, once for the clear to
// period p: the caller owns the slot (its word says it clears it for p).
func (c *windowCtl) fold(s, p uint64) {
	if c.folds == nil {
		return
	}
	f := atomic.LoadUint64(c.foldCommit(s))
	if f>>1 == p+1 {
		return // a clearer of p killed after its fold committed
	}
	v := f & 1
	r := atomic.LoadUint64(c.foldRetired(s, v))
	atomic.StoreUint64(c.foldRetired(s, 1-v), addSat64(r, c.slotTotal(s)))
	atomic.StoreUint64(c.foldCommit(s), (p+1)<<1|(1-v))
	if testHookWindowFolded != nil {
		testHookWindowFolded(s, p)
	}
}

// addSat64 adds, saturating at the largest uint64.
func addSat64(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}

// adds returns the adds the window took since it was made: each slot's
// retired count and what it holds now. A slot is read between two loads
// of its word and its commit word; when either moved (the slot was won for
// a clear, or folded, meanwhile), it is read again. A slot whose clear has
// committed its fold counts its retired count alone: its clear may have
// begun.
func (c *windowCtl) adds() uint64 {
	if c.folds == nil {
		return 0
	}
	var sum uint64
	for s := range c.n {
		sum = addSat64(sum, c.slotAdds(s))
	}
	return sum
}

func (c *windowCtl) slotAdds(s uint64) uint64 {
	for try := 0; ; try++ {
		f := atomic.LoadUint64(c.foldCommit(s))
		w := atomic.LoadUint64(c.word(s))
		n := atomic.LoadUint64(c.foldRetired(s, f&1))
		if st := decodeSlotWord(w); !st.clearing || f>>1 != st.period+1 {
			n = addSat64(n, c.slotTotal(s))
		}
		if (atomic.LoadUint64(c.word(s)) == w && atomic.LoadUint64(c.foldCommit(s)) == f) || try == 16 {
			return n
		}
	}
}

// raiseLatest raises the latest word to period v (clock mode) and counts
// the periods it moved in the turns word. The first period a window
// takes (latest still 0) is no turn; countFirst is what counts then (a
// Rotate's own turn). A process killed between the two loses those turns
// from the count.
func (c *windowCtl) raiseLatest(v, countFirst uint64) {
	w := c.latestWord()
	for {
		old := atomic.LoadUint64(w)
		if old >= v {
			return
		}
		if atomic.CompareAndSwapUint64(w, old, v) {
			n := v - old
			if old == 0 {
				n = countFirst
			}
			if n != 0 {
				atomic.AddUint64((*uint64)(unsafe.Add(c.ctl, wcTurns)), n)
			}
			return
		}
	}
}

// turns returns how many times the window's period turned, by Rotate or
// by the clock: without a clock, the Rotate calls; with one, the turns
// counted in the file as processes met them.
func (c *windowCtl) turns() uint64 {
	if c.clk == nil {
		return c.epoch()
	}
	return atomic.LoadUint64((*uint64)(unsafe.Add(c.ctl, wcTurns)))
}
