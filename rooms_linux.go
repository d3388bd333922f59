package sketch

import (
	"io"

	"golang.org/x/sys/unix"
)

// roomBase is where the rooms' lock bytes start: after every liveness
// token's byte (tokenBase + id, id < maxSlots), far past any file; entry
// i's is roomBase + i (i < maxDirEntries).
const roomBase = tokenBase + maxSlots

// lockRoom takes (hold) or gives back an OFD read lock on entry idx's
// room byte, without waiting: a read lock conflicts only with a write
// lock, which nobody takes on these bytes. A filesystem without record
// locks holds nothing (and roomLocked then reports every room held).
func lockRoom(fd int, idx uint32, hold bool) error {
	typ := int16(unix.F_UNLCK)
	if hold {
		typ = unix.F_RDLCK
	}
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: roomBase + int64(idx), Len: 1}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		switch err {
		case unix.EINTR:
			continue
		case unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
			return nil
		case nil:
			return nil
		}
		return err
	}
}

// roomLocked reports whether another open file description holds any
// lock on entry idx's room byte, asking (through fd) whether a write lock
// could be placed there. An error counts as locked.
func roomLocked(fd int, idx uint32) bool {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: roomBase + int64(idx), Len: 1}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk)
		if err == unix.EINTR {
			continue
		}
		return err != nil || lk.Type != unix.F_UNLCK
	}
}

// reopenForLocks returns a descriptor with an open file description of
// its own for fd's file (reopened read-only through /proc/self/fd, as the
// liveness tokens' is), so that the room locks go when this process lets
// them go or dies, never with a description a child shares; own is false
// when it had to be fd itself (no /proc).
func reopenForLocks(fd int) (lfd int, own bool, err error) {
	nfd, err := unix.Open(procFdPath(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fd, false, nil
	}
	return nfd, true, nil
}
