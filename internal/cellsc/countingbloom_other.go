//go:build cgo && !purego && !linux

package cellsc

import (
	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// Keep in sync with countingbloom_linux.go.

// cbfAddLocked adds at most csrc.Batch keys under the file's read lock,
// taken in Go: the C lock (csrc/lock.c) is Linux-only.
func cbfAddLocked(f *csrc.Filter, lk cells.Locker, keys [][]byte, already []bool) (int, bool, error) {
	return cbfAddUnder(f, lk, keys, already)
}
