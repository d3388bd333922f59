package sketch

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

const (
	// roomBase is where the rooms' shared bytes start: after every
	// liveness token's byte (tokenBase + id, id < maxSlots), far past any
	// file; entry i's is roomBase + i (i < maxDirEntries). A read-write
	// holder keeps an OFD read lock there (what earlier builds ask for),
	// which also says that its pin, if it has one, is still held.
	roomBase = tokenBase + maxSlots
	// roomMarkBase is where the rooms' mark ranges start: entry i's is
	// roomMarkSpan bytes from roomMarkBase + i*roomMarkSpan, and a
	// read-write holder keeps an OFD write lock on one byte of it.
	roomMarkBase = roomBase + maxDirEntries
	roomMarkSpan = 1 << 16
)

// reopenRoomFd opens a description of fd's file of its own, through
// /proc/self/fd; a test replaces it to play a system without /proc.
var reopenRoomFd = func(fd, flags int) (int, error) {
	return unix.Open(procFdPath(fd), flags|unix.O_CLOEXEC, 0)
}

// reopenForLocks returns a descriptor with an open file description of
// its own for fd's file (reopened through /proc/self/fd, read-write for a
// handle that holds rooms, read-only for one that only asks), so that the
// room locks go when this process lets them go or dies, never with a
// description a child shares, and so that a query through it sees every
// other handle's; own is false when it had to be fd itself (no /proc).
func reopenForLocks(fd int, write bool) (lfd int, own bool, err error) {
	flags := unix.O_RDONLY
	if write {
		flags = unix.O_RDWR
	}
	nfd, err := reopenRoomFd(fd, flags)
	if err != nil {
		return fd, false, nil
	}
	return nfd, true, nil
}

// setRoomLock places (F_RDLCK, F_WRLCK) or gives back (F_UNLCK) an OFD
// lock on bytes [start, start+n) of fd's file, without waiting.
func setRoomLock(fd int, typ int16, start, n int64) error {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: n}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		if err != unix.EINTR {
			return err
		}
	}
}

// getRoomLock asks through fd which lock of another open file description
// would conflict with a lock of type typ on [start, start+n): the
// conflicting lock, or one of type F_UNLCK when there is none.
func getRoomLock(fd int, typ int16, start, n int64) (unix.Flock_t, error) {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: n}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk)
		if err != unix.EINTR {
			return lk, err
		}
	}
}

// noRecordLocks reports whether err says the file cannot hold record
// locks at all.
func noRecordLocks(err error) bool {
	return err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP
}

// lockOldRoom takes (hold) or gives back the read lock on entry idx's
// byte at roomBase. A read lock conflicts only with a write lock, which
// nobody takes there. A filesystem without record locks holds nothing.
func lockOldRoom(fd int, idx uint32, hold bool) error {
	typ := int16(unix.F_UNLCK)
	if hold {
		typ = unix.F_RDLCK
	}
	err := setRoomLock(fd, typ, roomBase+int64(idx), 1)
	if err == nil || noRecordLocks(err) {
		return nil
	}
	return err
}

// markRoom takes an OFD write lock on a byte of entry idx's mark range
// through fd (a descriptor open for writing), looking from a byte that
// depends on the process and the descriptor and stepping past the locks
// others hold, and returns its offset; ok is false when no byte could be
// taken: every one is locked by someone (readers may read-lock them all)
// or the file holds no record locks.
func markRoom(fd int, idx uint32) (off int64, ok bool, err error) {
	base := roomMarkBase + int64(idx)*roomMarkSpan
	first := markStart(fd)
	// Two passes: from first to the end of the range, then from its
	// start to first.
	for _, pass := range [2][2]int64{{first, roomMarkSpan}, {0, first}} {
		j, end := pass[0], pass[1]
		for j < end {
			err := setRoomLock(fd, unix.F_WRLCK, base+j, 1)
			switch {
			case err == nil:
				return base + j, true, nil
			case noRecordLocks(err):
				return 0, false, nil
			case err != unix.EAGAIN && err != unix.EACCES:
				return 0, false, err
			}
			// Someone holds a lock there: skip past it.
			lk, err := getRoomLock(fd, unix.F_WRLCK, base+j, end-j)
			switch {
			case err != nil:
				return 0, false, nil
			case lk.Type == unix.F_UNLCK:
				continue // gone meanwhile: try the byte again
			case lk.Len == 0 || lk.Start+lk.Len >= base+end:
				j = end
			default:
				j = max(j+1, lk.Start+lk.Len-base)
			}
		}
	}
	return 0, false, nil
}

// markStart is where markRoom looks first in a mark range, for fd of this
// process: spread so that holders seldom try the same bytes.
func markStart(fd int) int64 {
	return int64(uint32(os.Getpid())*2654435761^uint32(fd)*40503) % roomMarkSpan
}

// unmarkRoom gives back the mark at off.
func unmarkRoom(fd int, off int64) {
	setRoomLock(fd, unix.F_UNLCK, off, 1)
}

// roomMarked reports whether another open file description holds a write
// lock on any byte of entry idx's mark range, asking (through fd)
// whether a read lock could be placed on it: read locks, which anyone who
// may read the file can place, neither conflict nor are reported. An
// error counts as marked.
func roomMarked(fd int, idx uint32) bool {
	lk, err := getRoomLock(fd, unix.F_RDLCK, roomMarkBase+int64(idx)*roomMarkSpan, roomMarkSpan)
	return err != nil || lk.Type != unix.F_UNLCK
}

// oldRoomLocked reports whether another open file description holds any
// lock on entry idx's byte at roomBase. An error counts as locked.
func oldRoomLocked(fd int, idx uint32) bool {
	lk, err := getRoomLock(fd, unix.F_WRLCK, roomBase+int64(idx), 1)
	return err != nil || lk.Type != unix.F_UNLCK
}
