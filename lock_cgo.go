//go:build cgo && !purego && linux

package sketch

// The file's lock taken through the C core (csrc/lock.c), which follows
// lock_linux.go word for word: C batches take it in the same crossing as
// their updates, and a handle may lock in Go at one moment and in C at the
// next: both keep all their state in the mapping.

import (
	"unsafe"

	"github.com/shmsketch/sketch/csrc"
)

// cLock returns the handle's lock as the C core sees it. It is built
// afresh from the handle on each call, so it always names its current
// slot.
func (l *fileLock) cLock() *csrc.Lock {
	return &csrc.Lock{
		State:   unsafe.Pointer(l.state),
		Drain:   unsafe.Pointer(l.drain),
		HW:      unsafe.Pointer(l.hw),
		Slots:   l.slots,
		NSlots:  l.nslots,
		Slot:    unsafe.Pointer(l.slot),
		Tokens:  l.tokens.words,
		Self:    l.self,
		Owner:   l.owner,
		ID:      l.id,
		FD:      l.fd,
		Timeout: l.bound,
	}
}

// CLock and TimeoutError let the C core's counting filter batch take the
// lock in C (internal/cellsc's cLocker).
func (l *fileLock) CLock() csrc.Lock                 { return *l.cLock() }
func (l *fileLock) TimeoutError(holder string) error { return l.errLockTimeout(holder) }

// lockC, unlockC, rlockC and runlockC are lock, unlock, rlock and runlock
// through the C core, which gives up at the same bound.
func (l *fileLock) lockC() error {
	if !l.cLock().LockWrite() {
		return l.errLockTimeout("a writer, or a reader the write waited for")
	}
	return nil
}

func (l *fileLock) unlockC() error {
	if !l.cLock().UnlockWrite() {
		return errLockLost
	}
	return nil
}

func (l *fileLock) rlockC() error {
	if !l.cLock().LockRead() {
		return l.errLockTimeout("a writer")
	}
	return nil
}
func (l *fileLock) runlockC() { l.cLock().UnlockRead() }
