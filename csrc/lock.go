//go:build cgo && !purego && linux

package csrc

// The binding to lock.c, the file's reader/writer lock in C. The calls
// may sleep in futex waits; that is fine in a cgo call (the runtime hands
// the P on), and none calls back into Go. C keeps no pointer after it
// returns, so noescape holds too.

/*
#cgo noescape sk_lock_write
#cgo nocallback sk_lock_write
#cgo noescape sk_unlock_write
#cgo nocallback sk_unlock_write
#cgo noescape sk_lock_read
#cgo nocallback sk_lock_read
#cgo noescape sk_unlock_read
#cgo nocallback sk_unlock_read
#include "sketch.h"
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"
)

// Lock is one handle's view of a sketch file's reader/writer lock, as
// package sketch's fileLock holds it: the words in the mapping, the
// handle's reader slot, token id and descriptor; one handle may lock
// through either core.
type Lock struct {
	State, Drain, HW unsafe.Pointer // uint32 words in the mapping
	Slots            unsafe.Pointer // NSlots uint64 words in the mapping
	NSlots           int
	Slot             unsafe.Pointer // this handle's slot; nil for a slotless handle
	Tokens           unsafe.Pointer // NSlots token records of two words in the mapping
	Self             uint64         // this process in a token record
	Owner            uint64         // this process in a record's second word
	ID               int            // this handle's token id
	FD               int            // holds the token's byte; asks about others
	Timeout          time.Duration  // how long a lock wait may last (> 0)
}

// cLock has sk_lock's layout with addresses as integers: Held is Go
// memory, and a Go pointer stored in memory passed to C is what cgo
// forbids. The flag stays put (Go's heap does not move) and alive (l
// points to it) for the whole call, and C forgets it on return.
type cLock struct {
	state, drain, hw, slots, slot, tokens uintptr
	self, owner                           uint64
	nslots, id                            uint32
	fd                                    int32
	timeout                               int64
}

// cLock must have sk_lock's layout (compile-time checks).
var (
	_ [unsafe.Sizeof(cLock{}) - unsafe.Sizeof(C.sk_lock{})]struct{}
	_ [unsafe.Sizeof(C.sk_lock{}) - unsafe.Sizeof(cLock{})]struct{}
	_ [unsafe.Offsetof(cLock{}.slot) - unsafe.Offsetof(C.sk_lock{}.slot)]struct{}
	_ [unsafe.Offsetof(C.sk_lock{}.slot) - unsafe.Offsetof(cLock{}.slot)]struct{}
	_ [unsafe.Offsetof(cLock{}.fd) - unsafe.Offsetof(C.sk_lock{}.fd)]struct{}
	_ [unsafe.Offsetof(C.sk_lock{}.fd) - unsafe.Offsetof(cLock{}.fd)]struct{}
	_ [unsafe.Offsetof(cLock{}.self) - unsafe.Offsetof(C.sk_lock{}.self)]struct{}
	_ [unsafe.Offsetof(C.sk_lock{}.self) - unsafe.Offsetof(cLock{}.self)]struct{}
	_ [unsafe.Offsetof(cLock{}.owner) - unsafe.Offsetof(C.sk_lock{}.owner)]struct{}
	_ [unsafe.Offsetof(C.sk_lock{}.owner) - unsafe.Offsetof(cLock{}.owner)]struct{}
	_ [unsafe.Offsetof(cLock{}.timeout) - unsafe.Offsetof(C.sk_lock{}.timeout)]struct{}
	_ [unsafe.Offsetof(C.sk_lock{}.timeout) - unsafe.Offsetof(cLock{}.timeout)]struct{}
)

func (l *Lock) c() cLock {
	return cLock{
		state: uintptr(l.State), drain: uintptr(l.Drain), hw: uintptr(l.HW),
		slots: uintptr(l.Slots), slot: uintptr(l.Slot), tokens: uintptr(l.Tokens),
		self: l.Self, owner: l.Owner, nslots: uint32(l.NSlots), id: uint32(l.ID), fd: int32(l.FD),
		timeout: int64(l.Timeout),
	}
}

// The sk_lock is passed through a pointer computed beforehand, as the
// batches' keys are (csrc.go), so that it stays on the stack.

// LockWrite takes the write lock, recovering it from a dead holder. It
// returns false, holding nothing, when a live holder kept the lock (or a
// reader its slot) past Timeout.
func (l *Lock) LockWrite() bool {
	c := l.c()
	ok := C.sk_lock_write((*C.sk_lock)(unsafe.Pointer(&c))) == 0
	runtime.KeepAlive(l)
	return ok
}

// UnlockWrite releases the write lock. It returns false, touching
// nothing, when the lock is no longer this handle's: it had been taken for
// dead and recovered.
func (l *Lock) UnlockWrite() bool {
	c := l.c()
	ok := C.sk_unlock_write((*C.sk_lock)(unsafe.Pointer(&c))) == 0
	runtime.KeepAlive(l)
	return ok
}

// LockRead takes the read lock; a slotless handle takes the write lock.
// It returns false, holding nothing, when a live writer kept the lock past
// Timeout.
func (l *Lock) LockRead() bool {
	c := l.c()
	ok := C.sk_lock_read((*C.sk_lock)(unsafe.Pointer(&c))) == 0
	runtime.KeepAlive(l)
	return ok
}

// UnlockRead releases the read lock.
func (l *Lock) UnlockRead() {
	c := l.c()
	C.sk_unlock_read((*C.sk_lock)(unsafe.Pointer(&c)))
	runtime.KeepAlive(l)
}
