//go:build cgo && !purego

package cellsc

import (
	"runtime"
	"unsafe"

	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// The binding of the counting Bloom filter to the C core (csrc/cbf.c).
// Keep in sync with internal/cells/countingbloom.go.

// CountingBloom serves the counting Bloom filter's batches and whole-array walks
// from C, except batches too small to pay for a crossing, which it serves
// in Go. Its zero value is the default core; always makes it serve every
// batch from C and fetch ahead on any filter, so that the parity suite
// compares those paths on small filters and batches. Each method keeps l,
// which points into the handle and so keeps its mapping reachable, alive
// until C has returned.
type CountingBloom struct{ Always bool }

func (c CountingBloom) Name() string {
	if c.Always {
		return "cgo-always"
	}
	return "cgo"
}

// Filter is a value, not a pointer, so that it stays on the stack.
func (c CountingBloom) Filter(l *cells.CountingBloom, sealed *uint32) csrc.Filter {
	return csrc.Filter{
		Words: l.Words, Sealed: unsafe.Pointer(sealed),
		Seed: l.Seed, Mask: l.Mask, K: l.K,
		Prefetch: c.Always || (l.Mask+1)/2 > cells.L2Bytes()/4,
	}
}

// AddBatch takes the read lock once for the whole batch, as
// cells.CountingBloomGo's does, and counts the keys under it. A filter
// with a fleet part is added to by the Go core. A batch of
// at most csrc.Batch keys is one crossing that takes the lock in C where
// the C lock is built (countingbloom_linux.go); a larger one takes it in
// Go and hands C its chunks.
func (c CountingBloom) AddBatch(l *cells.CountingBloom, lk cells.Locker, sealed *uint32, stripe int, keys [][]byte, already []bool) (int, bool, error) {
	f := c.Filter(l, sealed)
	if l.Fleet != nil {
		// New to the fleet is a question about the fleet part too, which
		// only the Go core reads.
		return cells.CountingBloomGo{}.AddBatch(l, lk, sealed, stripe, keys, already)
	}
	if !c.Always && (len(keys) < cells.CountingBloomMinBatchAhead || !f.Prefetch && len(keys) < cells.CountingBloomMinBatch) {
		return cells.CountingBloomGo{}.AddBatch(l, lk, sealed, stripe, keys, already)
	}
	f.Adds = l.AddsWord(stripe)
	var added int
	var frozen bool
	var err error
	if len(keys) <= csrc.Batch {
		added, frozen, err = cbfAddLocked(&f, lk, keys, already)
	} else {
		added, frozen, err = cbfAddUnder(&f, lk, keys, already)
	}
	runtime.KeepAlive(l)
	if frozen {
		added = 0
	}
	return added, frozen, err
}

func (c CountingBloom) CountSet(l *cells.CountingBloom) uint64 {
	f := c.Filter(l, nil)
	n := f.CountSet()
	runtime.KeepAlive(l)
	return n
}

func (c CountingBloom) Merge(l *cells.CountingBloom, src []byte) {
	f := c.Filter(l, nil)
	f.Merge(src)
	runtime.KeepAlive(l)
}

func (c CountingBloom) Reset(l *cells.CountingBloom) {
	f := c.Filter(l, nil)
	f.Reset()
	runtime.KeepAlive(l)
}

// cbfAddUnder adds a batch in C under the read lock taken in Go.
func cbfAddUnder(f *csrc.Filter, lk cells.Locker, keys [][]byte, already []bool) (int, bool, error) {
	if err := lk.RLock(); err != nil {
		return 0, false, err
	}
	defer lk.RUnlock()
	added, frozen := f.AddBatch(keys, already)
	return added, frozen, nil
}
