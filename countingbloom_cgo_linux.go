//go:build cgo && !purego && linux

package sketch

import "github.com/shmsketch/sketch/csrc"

// Keep in sync with countingbloom_cgo_other.go.

// cbfAddLocked adds at most csrc.Batch keys in one crossing that takes the
// file's read lock in C (csrc/lock.c), checks the sealed word under it,
// adds and releases it; it fails as countingBloomCore's addMany does.
func cbfAddLocked(f *csrc.Filter, lk *fileLock, keys [][]byte, already []bool) (int, error) {
	added, frozen, timedOut := f.AddManyLocked(keys, already, lk.cLock())
	switch {
	case timedOut:
		return 0, lk.errLockTimeout("a writer")
	case frozen:
		return 0, ErrFrozen
	}
	return added, nil
}
