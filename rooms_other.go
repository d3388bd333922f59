//go:build !linux

package sketch

// Elsewhere than Linux an arena is plain memory of one process, with no
// descriptor: the counts of its handles say who holds a room, and these
// are never called.

func reopenForLocks(fd int, write bool) (int, bool, error) { return fd, false, nil }
func lockOldRoom(fd int, idx uint32, hold bool) error      { return nil }
func markRoom(fd int, idx uint32) (int64, bool, error)     { return 0, false, nil }
func unmarkRoom(fd int, off int64)                         {}
func roomMarked(fd int, idx uint32) bool                   { return true }
func oldRoomLocked(fd int, idx uint32) bool                { return true }
