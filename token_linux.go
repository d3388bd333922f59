package sketch

// Liveness tokens: how a handle of a file tells whether another handle,
// in any process, is still open. Every waiter that finds the lock, a
// reader slot or a window's clear left by someone asks this before it
// takes over, so it must never call a live handle dead, and nobody who may
// only read the file may keep a dead one alive or keep a writer out.
//
// A handle's token is a record in the file's token table (one 64-bit word
// per reader slot, right after the slot table), claimed with a
// compare-and-swap. Only a process that may write the file can write a
// record: a reader maps the file PROT_READ. The record says how to ask
// whether its holder lives:
//
//	 63..32   31..10   9..2   1     0
//	+--------+--------+------+-----+---------+
//	| PIDNS  | PID    | GEN  | OFD | CLAIMED |
//	+--------+--------+------+-----+---------+
//
//   - OFD: the holder holds an OFD write lock on byte tokenBase+id of the
//     file. The kernel drops it when the holder's descriptor is closed or
//     its process dies, whatever state the process died in. A write lock
//     needs a descriptor open for writing, and a query for a read lock
//     (F_OFD_GETLK with F_RDLCK) reports write locks only, so the read
//     locks a reader may place anywhere neither fake nor hide it.
//   - Without OFD: the holder could not take its byte (a reader had locked
//     it first: one fcntl can read-lock every byte of a file), and it is
//     alive while a process with PID exists in PID namespace PIDNS
//     (kill(PID, 0) is not ESRCH). A waiter in another namespace, or one
//     that cannot tell its own, cannot ask, and takes the holder for alive:
//     only then can a reader still delay recovery (docs/DESIGN.md).
//
// GEN counts the claims of the record, so that a compare-and-swap against
// a record read before a holder left and another came fails.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	tokClaimed  uint64 = 1
	tokOFD      uint64 = 2
	tokGenShift        = 2
	tokGenMask  uint64 = 0xff << tokGenShift
	tokPIDShift        = 10
	tokPIDMask  uint64 = 1<<22 - 1
	tokNSShift         = 32

	// tokenBase is where the OFD liveness bytes start: far past any file,
	// so no lock there ever covers data.
	tokenBase = 1 << 62
)

// tokensOffset is where the token table starts in a file with nslots
// reader slots: right after the slot table, one word per slot.
func tokensOffset(nslots uint32) uint64 { return slotsOff + uint64(nslots)*slotSize }

// processToken is this process's identity in a record: its PID namespace
// and PID, or zero when it cannot tell its namespace (no /proc), which
// makes its records unaskable without OFD: alive to everyone.
var processToken = sync.OnceValue(func() uint64 {
	ns := selfPIDNamespace()
	pid := uint64(os.Getpid())
	if ns == 0 || pid > tokPIDMask {
		return 0
	}
	return ns<<tokNSShift | pid<<tokPIDShift
})

// selfPIDNamespace returns the inode of this process's PID namespace, read
// from the /proc/self/ns/pid link ("pid:[4026531836]"), or 0.
func selfPIDNamespace() uint64 {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0
	}
	digits := strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]")
	ns, err := strconv.ParseUint(digits, 10, 32)
	if err != nil {
		return 0
	}
	return ns
}

// nextClaim is the record this process writes to claim a token that read
// v: its identity, the next generation, claimed.
func nextClaim(v uint64) uint64 {
	gen := (v + 1<<tokGenShift) & tokGenMask
	return processToken() | gen | tokClaimed
}

// freeRecord is the record of a token nobody holds, keeping v's generation.
func freeRecord(v uint64) uint64 { return v & tokGenMask }

// tokenTable is a file's token records.
type tokenTable struct {
	words unsafe.Pointer
	n     int
}

func newTokenTable(data []byte, nslots int) tokenTable {
	return tokenTable{words: unsafe.Pointer(&data[tokensOffset(uint32(nslots))]), n: nslots}
}

func (t tokenTable) word(id int) *uint64 { return (*uint64)(unsafe.Add(t.words, id*8)) }

// alive reports whether the record v of token id names a live handle,
// asking through fd (any descriptor of the file, even read-only, other
// than the one holding id's byte). An error from the kernel counts as
// alive: a live holder must never be taken for dead.
func recordAlive(fd, id int, v uint64) bool {
	switch {
	case v&tokClaimed == 0:
		return false
	case v&tokOFD != 0:
		return ofdWriteLocked(fd, id)
	}
	return pidAlive(v)
}

// ofdWriteLocked reports whether some open file description holds a write
// lock on token id's byte. The query is for a read lock, with which only
// write locks conflict: read locks, which anyone who can read the file may
// place, are not reported.
func ofdWriteLocked(fd, id int) bool {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: tokenBase + int64(id), Len: 1}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk)
		if err == unix.EINTR {
			continue
		}
		return err != nil || lk.Type != unix.F_UNLCK
	}
}

// pidAlive reports whether the process a record without OFD names may be
// alive: it is dead only when it was in this process's PID namespace and
// no process has its PID any more.
func pidAlive(v uint64) bool {
	self := processToken()
	ns, pid := v>>tokNSShift, int(v>>tokPIDShift&tokPIDMask)
	if self == 0 || ns != self>>tokNSShift || pid == 0 {
		return true
	}
	return unix.Kill(pid, 0) != unix.ESRCH
}

// claimToken claims the lowest token id that is free or whose holder is
// dead, and returns it with the record written.
func (t tokenTable) claim(fd int) (int, uint64, error) {
	for id := 0; id < t.n; id++ {
		w := t.word(id)
		v := atomic.LoadUint64(w)
		if v&tokClaimed != 0 && recordAlive(fd, id, v) {
			continue
		}
		if rec := nextClaim(v); atomic.CompareAndSwapUint64(w, v, rec) {
			return id, rec, nil
		}
		id-- // the record changed under us: look at it again
	}
	return -1, 0, fmt.Errorf("all %d handles of this file are in use (its reader-slot table is full)", t.n)
}

// errTokenLost means a handle found its own record rewritten: another
// process took it for dead.
var errTokenLost = errors.New("the handle's liveness token was taken over")

// lockByte takes token id's OFD byte on fd and, when it gets it, marks the
// record so that others ask the lock instead of the PID. A reader that
// read-locked the byte first only costs the handle that mark.
func (t tokenTable) lockByte(fd, id int, rec uint64) (uint64, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: tokenBase + int64(id), Len: 1}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return rec, nil
		}
		break
	}
	if !atomic.CompareAndSwapUint64(t.word(id), rec, rec|tokOFD) {
		return 0, errTokenLost
	}
	return rec | tokOFD, nil
}

// holdDead claims token id for the caller while it recovers what the
// token's dead holder left, so that no new handle can take the id and act
// under it meanwhile. It fails when the holder is alive or the record
// changed. The claim reads as this process, alive, until release.
func (t tokenTable) holdDead(fd, id int) (uint64, bool) {
	w := t.word(id)
	v := atomic.LoadUint64(w)
	if v&tokClaimed != 0 && recordAlive(fd, id, v) {
		return 0, false
	}
	rec := nextClaim(v)
	return rec, atomic.CompareAndSwapUint64(w, v, rec)
}

// release frees token id if it still holds rec.
func (t tokenTable) release(id int, rec uint64) {
	atomic.CompareAndSwapUint64(t.word(id), rec, freeRecord(rec))
}

// releaseHeld frees token id when it holds a claim holdDead made in this
// process: nobody else can change such a claim, which reads as alive.
func (t tokenTable) releaseHeld(id int) {
	w := t.word(id)
	if v := atomic.LoadUint64(w); v&^tokGenMask == processToken()|tokClaimed {
		atomic.CompareAndSwapUint64(w, v, freeRecord(v))
	}
}
