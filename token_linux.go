package sketch

// Liveness tokens: how a handle of a file tells whether another handle,
// in any process, is still open. Every waiter that finds the lock, a
// reader slot or a window's clear left by someone asks this before it
// takes over, so it must never call a live handle dead, and nobody who may
// only read the file may keep a dead one alive or keep a writer out.
//
// A handle's token is a record in the file's token table (two 64-bit
// words per reader slot, right after the slot table), claimed with a
// compare-and-swap of its first word. Only a process that may write the
// file can write a record: a reader maps the file PROT_READ. The record
// says how to ask whether its holder lives:
//
//	word 0:  63..32   31..10   9..2   1     0
//	        +--------+--------+------+-----+---------+
//	        | PIDNS  | PID    | GEN  | OFD | CLAIMED |
//	        +--------+--------+------+-----+---------+
//	word 1:  63..8                         7..0
//	        +-----------------------------+------+
//	        | START                       | GEN  |
//	        +-----------------------------+------+
//
//   - OFD: the holder holds an OFD write lock on byte tokenBase+id of the
//     file. The kernel drops it when the holder's descriptor is closed or
//     its process dies, whatever state the process died in. A write lock
//     needs a descriptor open for writing, and a query for a read lock
//     (F_OFD_GETLK with F_RDLCK) reports write locks only, so the read
//     locks a reader may place anywhere neither fake nor hide it.
//   - Without OFD: the holder could not take its byte (a reader had locked
//     it first: one fcntl can read-lock every byte of a file), and it is
//     asked by PID, in PID namespace PIDNS: dead when no process has the
//     PID (kill(PID, 0) is ESRCH), when the process with it is a zombie,
//     or when it started at another time than START (word 1, in clock
//     ticks since boot, once its GEN matches: a reader who starts
//     processes until one gets a dead holder's PID does not revive it).
//     A waiter in another namespace, or
//     one that cannot tell its own, cannot ask, and takes the holder for
//     alive: only then can a reader still delay recovery (docs/DESIGN.md).
//
// GEN counts the claims of the record, so that a compare-and-swap against
// a record read before a holder left and another came fails; a window's
// clear records the low bits of its clearer's GEN, so that a clear left
// by a dead holder is not taken for live when a new handle took its id.

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

// word 1 of a record: when the holder started, and the GEN of the claim
// it goes with.
const tokStartShift = 8

// tokensOffset is where the token table starts in a file with nslots
// reader slots: right after the slot table, one record per slot.
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

// processStart is word 1 of this process's records, without GEN: its
// start time, or 0 when /proc does not tell it.
var processStart = sync.OnceValue(func() uint64 {
	_, _, start, ok := procTask(os.Getpid())
	if !ok {
		return 0
	}
	return start << tokStartShift
})

// procTask reads the state, thread count and start time (clock ticks since
// boot) of process pid from /proc/PID/task/PID/stat, the main thread's
// entry: under qemu-user /proc/PID/stat of the emulator's own process is
// made up, that one is not.
func procTask(pid int) (state byte, threads int, start uint64, ok bool) {
	p := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(p + "/task/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	// The command name, in parentheses, may hold anything: fields
	// start after the last ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	threads, err1 := strconv.Atoi(f[17])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return f[0][0], threads, start, true
}

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

// tokenGen is a record's GEN.
func tokenGen(v uint64) uint64 { return v & tokGenMask >> tokGenShift }

// tokenTable is a file's token records.
type tokenTable struct {
	words unsafe.Pointer
	n     int
}

func newTokenTable(data []byte, nslots int) tokenTable {
	return tokenTable{words: unsafe.Pointer(&data[tokensOffset(uint32(nslots))]), n: nslots}
}

// word returns token id's first word; owner its second.
func (t tokenTable) word(id int) *uint64  { return (*uint64)(unsafe.Add(t.words, id*tokenSize)) }
func (t tokenTable) owner(id int) *uint64 { return (*uint64)(unsafe.Add(t.words, id*tokenSize+8)) }

// alive reports whether token id, whose first word read v, names a live
// handle, asking through fd (any descriptor of the file, even read-only,
// other than those holding id's byte). An error from the kernel counts as
// alive: a live holder must never be taken for dead.
func (t tokenTable) alive(fd, id int, v uint64) bool {
	switch {
	case v&tokClaimed == 0:
		return false
	case v&tokOFD != 0:
		return ofdWriteLocked(fd, id)
	}
	return pidAlive(v, atomic.LoadUint64(t.owner(id)))
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

// pidAlive reports whether the process a record without OFD names (first
// word v, second owner) may be alive. It is dead only when it was in this
// process's PID namespace and no process has its PID any more, or the one
// that has it is a zombie with no thread left or, once owner goes with v,
// started at another time (the PID was used again).
func pidAlive(v, owner uint64) bool {
	self := processToken()
	ns, pid := v>>tokNSShift, int(v>>tokPIDShift&tokPIDMask)
	if self == 0 || ns != self>>tokNSShift || pid == 0 {
		return true
	}
	if unix.Kill(pid, 0) == unix.ESRCH {
		return false
	}
	state, threads, start, ok := procTask(pid)
	switch {
	case !ok:
		return true // hidden (hidepid) or gone meanwhile: kill said it was there
	case (state == 'Z' || state == 'X') && threads <= 1:
		return false
	case owner>>tokStartShift != 0 && owner&0xff == tokenGen(v):
		return start == owner>>tokStartShift
	}
	return true
}

// claim claims the lowest token id that is free or whose holder is dead,
// and returns it with the record written.
func (t tokenTable) claim(fd int) (int, uint64, error) {
	for id := 0; id < t.n; id++ {
		rec, ok, alive := t.takeIfDead(fd, id)
		switch {
		case ok:
			return id, rec, nil
		case !alive:
			id-- // the record changed under us: look at it again
		}
	}
	return -1, 0, fmt.Errorf("%w: all %d read-write handles of this file are open (its token and reader-slot tables are full); close one, or open a reader with WithReadOnly, which takes none", ErrTooManyHandles, t.n)
}

// takeIfDead claims token id for this process when it is free or its
// holder is dead, and writes the claim's second word. alive reports that
// the holder lives; neither ok nor alive means the record changed between
// the look and the compare-and-swap.
func (t tokenTable) takeIfDead(fd, id int) (rec uint64, ok, alive bool) {
	w := t.word(id)
	v := atomic.LoadUint64(w)
	if v&tokClaimed != 0 && t.alive(fd, id, v) {
		return 0, false, true
	}
	rec = nextClaim(v)
	if !atomic.CompareAndSwapUint64(w, v, rec) {
		return 0, false, false
	}
	atomic.StoreUint64(t.owner(id), processStart()|tokenGen(rec))
	return rec, true, false
}

// errTokenLost means a handle found its own record rewritten: another
// process took it for dead.
var errTokenLost = errors.New("the handle's liveness token was taken over")

// lockByte takes token id's OFD byte on fd and, when it gets it, marks the
// record so that others ask the lock instead of the PID. A reader that
// read-locked the byte first only costs the handle that mark.
func (t tokenTable) lockByte(fd, id int, rec uint64) (uint64, error) {
	if !setByteLock(fd, id, unix.F_WRLCK) {
		return rec, nil
	}
	if !atomic.CompareAndSwapUint64(t.word(id), rec, rec|tokOFD) {
		return 0, errTokenLost
	}
	return rec | tokOFD, nil
}

// setByteLock takes (F_WRLCK) or gives back (F_UNLCK) token id's byte on
// fd, without waiting.
func setByteLock(fd, id int, typ int16) bool {
	lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: tokenBase + int64(id), Len: 1}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

// heldToken is a dead holder's token claimed by holdDead: its record, and
// the private descriptor that holds its byte (-1 when a reader's lock was
// on the byte).
type heldToken struct {
	id  int
	rec uint64
	fd  int
}

// holdDead claims token id for the caller while it recovers what the
// token's dead holder left, so that no new handle can take the id and act
// under it meanwhile. It fails when the holder is alive or the record
// changed. The claim holds the token's byte too, on a descriptor of its
// own (reopened from fd): should the caller die while it recovers, others
// see the claim dead at once, from any PID namespace, and another
// goroutine of this process, asking through fd, does not take it for a
// dead one.
func (t tokenTable) holdDead(fd, id int) (heldToken, bool) {
	rec, ok, _ := t.takeIfDead(fd, id)
	if !ok {
		return heldToken{}, false
	}
	h := heldToken{id: id, rec: rec, fd: -1}
	own, err := unix.Open(procFdPath(fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return h, true // no /proc: the claim is asked by PID
	}
	if rec, err := t.lockByte(own, id, h.rec); err == nil && rec != h.rec {
		h.rec, h.fd = rec, own
		return h, true
	}
	unix.Close(own)
	return h, true
}

// release frees a token holdDead claimed, then lets its byte go.
func (t tokenTable) release(h heldToken) {
	atomic.CompareAndSwapUint64(t.word(h.id), h.rec, freeRecord(h.rec))
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}

// leave frees record id if it still holds rec.
func (t tokenTable) leave(id int, rec uint64) {
	atomic.CompareAndSwapUint64(t.word(id), rec, freeRecord(rec))
}

// loadToken loads token id's first word.
func loadToken(t tokenTable, id int) uint64 { return atomic.LoadUint64(t.word(id)) }
