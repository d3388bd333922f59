package sketch

// Futex wait and wake on words in a shared mapping: the primitives of the
// cross-process rwlock whose words the header reserves (offset 192).
//
// Contract (futex(2)): futexWait sleeps only while *addr == val, checked
// atomically with going to sleep, so a wake that follows a change of the
// word is never lost; it may also return spuriously, so callers re-check
// their condition in a loop. futexWake wakes up to n sleepers on the word.
// The private flag is never used: the word is shared between processes,
// and the kernel keys a shared futex by the mapped file and offset, so a
// waiter and a waker need not map the file at the same address.

import (
	"errors"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Operations of futex(2) without FUTEX_PRIVATE_FLAG; x/sys/unix has no
// futex wrapper.
const (
	futexOpWait = 0 // FUTEX_WAIT
	futexOpWake = 1 // FUTEX_WAKE
)

// errFutexTimeout is futexWait's timeout expiring.
var errFutexTimeout = errors.New("futex wait timed out")

// futexWait sleeps while *addr == val, until woken or until timeout has
// passed (errFutexTimeout); timeout <= 0 waits without a limit. It returns
// nil at once when *addr != val. Interrupted sleeps resume with the time
// that is left.
func futexWait(addr *uint32, val uint32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var ts *unix.Timespec
		if timeout > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return errFutexTimeout
			}
			t := unix.NsecToTimespec(left.Nanoseconds())
			ts = &t
		}
		_, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexOpWait, uintptr(val),
			uintptr(unsafe.Pointer(ts)), 0, 0)
		switch errno {
		case 0, unix.EAGAIN: // woken, or the word was not val
			return nil
		case unix.EINTR:
			continue
		case unix.ETIMEDOUT:
			return errFutexTimeout
		default:
			return errno
		}
	}
}

// futexWake wakes up to n processes or threads sleeping on addr and returns
// how many it woke.
func futexWake(addr *uint32, n int) (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexOpWake, uintptr(n), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
