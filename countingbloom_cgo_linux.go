//go:build cgo && !purego && linux

package sketch

import "github.com/shmsketch/sketch/csrc"

// Keep in sync with countingbloom_cgo_other.go.

// cbfAddLocked adds at most csrc.Batch keys in one crossing that takes the
// file's read lock in C (csrc/lock.c), checks the sealed word under it,
// adds and releases it.
func cbfAddLocked(f *csrc.Filter, lk *fileLock, keys [][]byte, already []bool) (added int, frozen bool) {
	return f.AddManyLocked(keys, already, lk.cLock())
}
