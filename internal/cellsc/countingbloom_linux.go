//go:build cgo && !purego && linux

package cellsc

import (
	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// Keep in sync with countingbloom_other.go.

// cbfAddLocked adds at most csrc.Batch keys in one crossing that takes the
// file's read lock in C (csrc/lock.c), checks the sealed word under it,
// adds and releases it; it fails as cells.CountingBloomCore's AddBatch does.
func cbfAddLocked(f *csrc.Filter, lk cells.Locker, keys [][]byte, already []bool) (int, bool, error) {
	c, ok := lk.(cLockable)
	if !ok {
		return cbfAddUnder(f, lk, keys, already)
	}
	cl := c.CLock()
	added, frozen, timedOut := f.AddBatchLocked(keys, already, &cl)
	if timedOut {
		return 0, false, c.TimeoutError("a writer")
	}
	return added, frozen, nil
}

// cLockable is a Locker the C core can take itself: the root's file lock
// on Linux (lock.go).
type cLockable interface {
	// CLock is the lock as C takes it, by value: through an interface a
	// pointer would be allocated on every batch.
	CLock() csrc.Lock
	// TimeoutError is the error of a lock wait that gave up, blaming holder.
	TimeoutError(holder string) error
}
