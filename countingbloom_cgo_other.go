//go:build cgo && !purego && !linux

package sketch

import "github.com/shmsketch/sketch/csrc"

// Keep in sync with countingbloom_cgo_linux.go.

// cbfAddLocked adds at most csrc.Batch keys under the file's read lock,
// taken in Go: the C lock (csrc/lock.c) is Linux-only.
func cbfAddLocked(f *csrc.Filter, lk *fileLock, keys [][]byte, already []bool) (int, error) {
	if err := lk.rlock(); err != nil {
		return 0, err
	}
	defer lk.runlock()
	added, frozen := f.AddMany(keys, already)
	if frozen {
		return 0, ErrFrozen
	}
	return added, nil
}
