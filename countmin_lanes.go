package sketch

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// Lanes of a Count-Min sketch (CountMinConfig.Lanes; docs/DESIGN.md,
// "Lanes"): which grid a handle's adds write. Every add is atomic, so a
// lane shared, or taken for a dead owner's while its owner lives (a holder
// the tokens cannot ask about), still counts right: lanes only keep
// writers off each other's cache lines, and nothing here can make an
// answer low.

// laneOwnerOff is where, in stripe j's cache line, the owner of lane j
// is recorded: the tag of the handle that claimed it (its token id and
// GEN bits, window_linux.go) plus one; 0 is free.
const laneOwnerOff = 48

func laneOwner(l *cells.CountMin, j int) *uint64 {
	return stripeWord(l, uintptr(j)*cells.StripeBytes+laneOwnerOff)
}

// laneSlot is a lane a handle holds, with the flag a goroutine of the
// handle sets while its blind batch adds to it, so that two goroutines
// pick two lanes. Padded to a cache line: the flags are written once a
// batch by every goroutine of the handle.
type laneSlot struct {
	busy atomic.Uint32
	lane int
	tag  uint64 // the owner word it claimed; 0: a lane shared
	_    [64 - 24]byte
}

// handleLanes are a handle's lanes: the one claimed at open, which
// single adds and merges write, and those its goroutines claimed since,
// when their blind batches met.
type handleLanes struct {
	lk    *fileLock
	mu    sync.Mutex                  // held to claim a lane
	slots atomic.Pointer[[]*laneSlot] // grows under mu
	// retry counts blind batches that found every slot busy: a lane is
	// looked for once in a while, not at every one, since a look asks the
	// tokens about every owner.
	retry atomic.Uint32
}

// newHandleLanes claims the handle's first lane and points l's adds at
// it.
func newHandleLanes(l *cells.CountMin, lk *fileLock) *handleLanes {
	h := &handleLanes{lk: lk}
	s := claimLane(l, lk)
	if s == nil {
		// Every lane has a live owner: share one, spread by token id.
		s = &laneSlot{lane: lockStripe(lk) % l.Lanes}
	}
	s.busy.Store(0)
	h.slots.Store(&[]*laneSlot{s})
	l.Lane = laneGrid(l, s.lane)
	return h
}

func laneGrid(l *cells.CountMin, j int) unsafe.Pointer {
	return unsafe.Add(l.Cells, uintptr(j)*l.LaneBytes)
}

// claimLane claims a free lane, else one whose owner is dead (its counts
// stay: they are valid adds), and returns it busy; nil when every lane
// has a live owner.
func claimLane(l *cells.CountMin, lk *fileLock) *laneSlot {
	tag := uint64(tokenID(lk)) + 1
	for pass := range 2 {
		for j := range l.Lanes {
			w := laneOwner(l, j)
			v := atomic.LoadUint64(w)
			free := v == 0
			if pass == 1 {
				free = v != 0 && !tokenAlive(lk, int(v-1))
			}
			if free && atomic.CompareAndSwapUint64(w, v, tag) {
				s := &laneSlot{lane: j, tag: tag}
				s.busy.Store(1)
				return s
			}
		}
	}
	return nil
}

// first is the lane claimed at open (a zero slot for a handle without
// lanes).
func (h *handleLanes) first() *laneSlot {
	if h == nil {
		return &laneSlot{}
	}
	return (*h.slots.Load())[0]
}

// take returns a lane no other goroutine of the handle adds to now,
// claiming one more from the file when every one it holds is busy and a
// lane is free (every 64th time such a batch comes), or nil: then the
// caller adds to the first lane beside the goroutine there.
func (h *handleLanes) take(l *cells.CountMin) *laneSlot {
	for _, s := range *h.slots.Load() {
		if s.busy.CompareAndSwap(0, 1) {
			return s
		}
	}
	if h.retry.Add(1)%64 != 1 || !h.mu.TryLock() {
		return nil
	}
	defer h.mu.Unlock()
	s := claimLane(l, h.lk)
	if s != nil {
		grown := append(append([]*laneSlot(nil), *h.slots.Load()...), s)
		h.slots.Store(&grown)
	}
	return s
}

// release frees every lane the handle claimed, for the next handles.
func (h *handleLanes) release(l *cells.CountMin) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range *h.slots.Load() {
		if s.tag != 0 {
			atomic.CompareAndSwapUint64(laneOwner(l, s.lane), s.tag, 0)
		}
	}
}

// addBlind is AddBatch without estimates on a sketch of lanes: the keys
// go to a lane no other goroutine of the handle adds to at the moment, so
// that goroutines of one handle scale as handles do.
func (c *CountMin) addBlind(keys [][]byte) {
	s := c.lanes.take(&c.l)
	if s == nil {
		c.batchCore(len(keys)).AddBatch(&c.l, keys, 1, nil)
		return
	}
	l := c.l
	l.Lane = laneGrid(&c.l, s.lane)
	c.batchCore(len(keys)).AddBatch(&l, keys, 1, nil)
	s.busy.Store(0)
}
