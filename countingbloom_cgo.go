//go:build cgo && !purego

package sketch

import (
	"runtime"
	"unsafe"

	"github.com/shmsketch/sketch/csrc"
)

// The binding of the counting Bloom filter to the C core (csrc/cbf.c).
// Keep in sync with countingbloom_core.go.

// countingBloomCgo serves the counting Bloom filter's batches and whole-array walks
// from C, except batches too small to pay for a crossing, which it serves
// in Go. Its zero value is the default core; always makes it serve every
// batch from C and fetch ahead on any filter, so that the parity suite
// compares those paths on small filters and batches. Each method keeps l,
// which points into the handle and so keeps its mapping reachable, alive
// until C has returned.
type countingBloomCgo struct{ always bool }

func (c countingBloomCgo) name() string {
	if c.always {
		return "cgo-always"
	}
	return "cgo"
}

// filter is a value, not a pointer, so that it stays on the stack.
func (c countingBloomCgo) filter(l *cbfLayout, sealed *uint32) csrc.Filter {
	return csrc.Filter{
		Words: l.words, Sealed: unsafe.Pointer(sealed),
		Seed: l.seed, Mask: l.mask, K: l.k,
		Prefetch: c.always || (l.mask+1)/2 > l2Bytes()/4,
	}
}

// addMany takes the read lock once for the whole batch, as countingBloomGo's does.
// A batch of at most csrc.Batch keys is one crossing that takes the lock
// in C where the C lock is built (countingbloom_cgo_linux.go); a larger one
// takes it in Go and hands C its chunks.
func (c countingBloomCgo) addMany(l *cbfLayout, lk Locker, sealed *uint32, keys [][]byte, already []bool) (int, bool, error) {
	f := c.filter(l, sealed)
	if !c.always && (len(keys) < countingBloomMinBatchAhead || !f.Prefetch && len(keys) < countingBloomMinBatch) {
		return countingBloomGo{}.addMany(l, lk, sealed, keys, already)
	}
	var added int
	var frozen bool
	var err error
	if len(keys) <= csrc.Batch {
		added, frozen, err = cbfAddLocked(&f, lk, keys, already)
	} else if err = lk.RLock(); err == nil {
		added, frozen = f.AddMany(keys, already)
		lk.RUnlock()
	}
	runtime.KeepAlive(l)
	if frozen {
		added = 0
	}
	return added, frozen, err
}

func (c countingBloomCgo) countSet(l *cbfLayout) uint64 {
	f := c.filter(l, nil)
	n := f.CountSet()
	runtime.KeepAlive(l)
	return n
}

func (c countingBloomCgo) merge(l *cbfLayout, src []byte) {
	f := c.filter(l, nil)
	f.Merge(src)
	runtime.KeepAlive(l)
}

func (c countingBloomCgo) clear(l *cbfLayout) {
	f := c.filter(l, nil)
	f.Clear()
	runtime.KeepAlive(l)
}

// cbfAddUnder adds a batch in C under the read lock taken in Go.
func cbfAddUnder(f *csrc.Filter, lk Locker, keys [][]byte, already []bool) (int, bool, error) {
	if err := lk.RLock(); err != nil {
		return 0, false, err
	}
	defer lk.RUnlock()
	added, frozen := f.AddMany(keys, already)
	return added, frozen, nil
}
