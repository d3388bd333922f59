package sketch

// The reader/writer lock in a sketch file's lock region, shared by every
// process that maps the file. docs/DESIGN.md describes the protocol;
// csrc/lock.c implements it word for word for the C core's batches, so a
// cgo process and a pure-Go process exclude each other. Keep in sync with
// csrc/lock.c.
//
// The state word (offset 192), drawn:
//
//	 31   30       29     28       27..16   15..0
//	+---+--------+------+--------+--------+----------------+
//	| W | WPARKED| RTURN| RPARKED| 0      | OWNER (id + 1) |
//	+---+--------+------+--------+--------+----------------+
//
// Readers count in their handle's slot of the reader-slot table and back
// off while W is set; a writer sets W, then waits for every slot to drain.
// Each read-write handle holds a liveness token while it is open
// (token_linux.go): a waiter asks it before it takes a lock or a slot
// from a holder it believes dead.
//
// Every wait is bounded (the handle's lock timeout, WithLockTimeout): a
// holder that is alive, or that a token record names as alive, can keep a
// lock for as long as it likes (stopped, stuck, or a user who may write
// the file writing the words on purpose), and no recovery takes a lock
// from the living. Past the bound the waiter gives up with ErrTimeout,
// touching nothing of the protocol: a reader has already left its slot,
// and a writer that claimed W but timed out draining readers releases it
// as unlock does. csrc/lock.c gives up at the same points.

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	lockStateOff = lockOff     // uint32: the futex word of the lock
	lockDrainOff = lockOff + 4 // uint32: futex word of a writer waiting for readers
	lockHWOff    = lockOff + 8 // uint32: one past the highest slot id claimed

	stW       uint32 = 1 << 31 // a writer holds the lock or drains readers
	stWParked uint32 = 1 << 30 // a writer sleeps on state
	stRTurn   uint32 = 1 << 29 // readers' turn: writers hold off briefly
	stRParked uint32 = 1 << 28 // a reader sleeps on state
	stOwner   uint32 = 0xffff  // the holder's token id + 1

	// lockPatience is how long a waiter sleeps before it asks the kernel
	// whether the holder is alive.
	lockPatience = 10 * time.Millisecond
	// readersTurn is how long writers hold off after a writer let parked
	// readers in.
	readersTurn = time.Millisecond

	wakeAll = math.MaxInt32
)

// errLockLost means a write unlock found the lock no longer this handle's:
// it had been taken for dead (its descriptor was closed) and recovered.
var errLockLost = errors.New("the write lock was lost: another process recovered it")

// errLockTimeout is a lock wait's bound running out; the error says who
// held the lock (a writer, or a reader a writer waited for) and how long.
func (l *fileLock) errLockTimeout(holder string) error {
	return fmt.Errorf("%w: the file's lock was still held by %s after %v, a process that is alive or that the file's lock words name as alive (stopped, stuck, or a user who may write the file holding it on purpose); WithLockTimeout sets the bound", ErrTimeout, holder, l.bound)
}

// fileLock is one handle's part in the file's lock.
type fileLock struct {
	fd     int // holds the handle's token byte; asks about other tokens
	id     int
	base   unsafe.Pointer // the file's first byte in the mapping
	rec    uint64         // the handle's token record, as it claimed it
	self   uint64         // processToken(), for the C core
	owner  uint64         // processStart(), for the C core
	tokens tokenTable
	state  *uint32
	drain  *uint32
	hw     *uint32
	slots  unsafe.Pointer // the reader-slot table
	nslots int
	slot   *uint64       // this handle's slot; nil for a slotless handle
	bound  time.Duration // how long a lock wait may last (ErrTimeout past it)
}

// newFileLock claims a token, its byte on fd (which must be this handle's
// own open file description) and the handle's reader slot. Its waits are
// bounded by bound (defaultLockTimeout when zero).
func newFileLock(fd int, data []byte, nslots int, bound time.Duration) (*fileLock, error) {
	if bound <= 0 {
		bound = defaultLockTimeout
	}
	tokens := newTokenTable(data, nslots)
	id, rec, err := tokens.claim(fd)
	if err != nil {
		return nil, err
	}
	if rec, err = tokens.lockByte(fd, id, rec); err != nil {
		return nil, err
	}
	base := unsafe.Pointer(&data[0])
	l := &fileLock{
		fd:     fd,
		id:     id,
		base:   base,
		rec:    rec,
		self:   processToken(),
		owner:  processStart(),
		tokens: tokens,
		state:  (*uint32)(unsafe.Add(base, lockStateOff)),
		drain:  (*uint32)(unsafe.Add(base, lockDrainOff)),
		hw:     (*uint32)(unsafe.Add(base, lockHWOff)),
		slots:  unsafe.Add(base, slotsOff),
		nslots: nslots,
		bound:  bound,
	}
	if id < nslots {
		l.slot = l.slotAt(id)
		// Whatever a dead predecessor with this id left is discarded, and
		// the new generation makes a recovering writer's compare-and-swap
		// on the old value fail.
		for {
			v := atomic.LoadUint64(l.slot)
			if atomic.CompareAndSwapUint64(l.slot, v, (v>>32+1)<<32) {
				break
			}
		}
		for {
			hw := atomic.LoadUint32(l.hw)
			if hw > uint32(id) || atomic.CompareAndSwapUint32(l.hw, hw, uint32(id)+1) {
				break
			}
		}
	}
	// A write lock under this id was left by a dead predecessor that had
	// it (this handle has locked nothing yet): recover it now, so that
	// later an owner with this id is always one of this handle's
	// goroutines.
	for {
		s := atomic.LoadUint32(l.state)
		if s&stW == 0 || s&stOwner != uint32(id+1) {
			break
		}
		if atomic.CompareAndSwapUint32(l.state, s, s&(stWParked|stRParked)) {
			futexWake(l.state, wakeAll)
			atomic.AddUint32(l.drain, 1)
			futexWake(l.drain, wakeAll)
			break
		}
	}
	return l, nil
}

// slotAt returns slot id's word. Slots are spread so that the first n/8
// handles each count on a cache line of their own.
func (l *fileLock) slotAt(id int) *uint64 {
	pos := id
	if l.nslots%8 == 0 {
		lines := l.nslots / 8
		pos = id%lines*8 + id/lines
	}
	return (*uint64)(unsafe.Add(l.slots, pos*slotSize))
}

// nextPos returns the position of the slot after the one at pos, in id
// order: slotAt(id+1) given pos = slotAt(id).
func (l *fileLock) nextPos(pos int) int {
	if l.nslots%8 != 0 {
		return pos + 1
	}
	if pos += 8; pos >= l.nslots {
		pos -= l.nslots - 1
	}
	return pos
}

// alive reports whether the handle with token id is open, in any process.
func (l *fileLock) alive(id int) bool {
	return l.tokens.alive(l.fd, id, atomic.LoadUint64(l.tokens.word(id)))
}

// ownRecord is the page of the file that holds a handle's token record,
// mapped apart from the file's mapping so that the record can be freed
// after that mapping has been taken away.
type ownRecord struct {
	page []byte
	word *uint64
	rec  uint64
}

// mapOwnRecord maps the page of fd's file that holds the handle's token
// record, or returns nil when it cannot (the record is then left to be
// found dead: its byte goes with the descriptor).
func (l *fileLock) mapOwnRecord(fd int) *ownRecord {
	size := uintptr(unix.Getpagesize())
	off := uintptr(l.tokens.words) - uintptr(l.base) + uintptr(l.id)*tokenSize
	start := off &^ (size - 1)
	page, err := unix.Mmap(fd, int64(start), int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &ownRecord{page: page, word: (*uint64)(unsafe.Pointer(&page[off-start])), rec: l.rec}
}

// leave frees the handle's token record, once its descriptor holding the
// token's byte is closed: from then on nobody takes the handle for alive.
func (o *ownRecord) leave() {
	if o == nil {
		return
	}
	atomic.CompareAndSwapUint64(o.word, o.rec, freeRecord(o.rec))
	unix.Munmap(o.page)
}

// testHookRecovering runs while recoverWriter holds a dead holder's token,
// before its compare-and-swap.
var testHookRecovering func(dead int)

// waitLeft returns how much of the lock wait's bound is left, starting
// the bound (in *deadline, zero until then) at its first call: an
// uncontended lock never reads the clock.
func (l *fileLock) waitLeft(deadline *time.Time) time.Duration {
	if deadline.IsZero() {
		*deadline = time.Now().Add(l.bound)
	}
	return time.Until(*deadline)
}

// rlock takes the read lock, or fails with ErrTimeout, holding nothing,
// when a writer keeps it past the bound. A slotless handle takes the
// write lock.
func (l *fileLock) rlock() error {
	if l.slot == nil {
		return l.lock()
	}
	var deadline time.Time
	for {
		atomic.AddUint64(l.slot, 1)
		s := atomic.LoadUint32(l.state)
		if s&stW == 0 {
			return nil
		}
		// A writer holds the lock or waits for readers: back off.
		l.leaveSlot()
		left := l.waitLeft(&deadline)
		if left <= 0 {
			return l.errLockTimeout("a writer")
		}
		l.sleep(s, stRParked, min(lockPatience, left))
	}
}

// runlock releases the read lock.
func (l *fileLock) runlock() {
	if l.slot == nil {
		l.unlock()
		return
	}
	l.leaveSlot()
}

// leaveSlot takes one read lock off the handle's slot and, when a writer
// is waiting for readers to leave, wakes it.
func (l *fileLock) leaveSlot() {
	atomic.AddUint64(l.slot, ^uint64(0))
	if atomic.LoadUint32(l.state)&stW != 0 {
		atomic.AddUint32(l.drain, 1)
		futexWake(l.drain, wakeAll)
	}
}

// lock takes the write lock: it claims W, then waits for the readers. It
// fails with ErrTimeout, holding nothing, when another writer keeps the
// lock or a reader its slot past the bound; W claimed before is released.
func (l *fileLock) lock() error {
	var deadline time.Time
	// The uncontended case is one compare-and-swap from a state with no
	// bit set at all.
	if !atomic.CompareAndSwapUint32(l.state, 0, stW|uint32(l.id+1)) {
		if err := l.claimSlow(&deadline); err != nil {
			return err
		}
	}
	if err := l.drainReaders(&deadline); err != nil {
		l.unlock()
		return err
	}
	return nil
}

// claimSlow claims W when the state has bits set: a holder, sleepers, or
// the readers' turn.
func (l *fileLock) claimSlow(deadline *time.Time) error {
	me := uint32(l.id + 1)
	var turnSince time.Time
	for {
		s := atomic.LoadUint32(l.state)
		if s&stW != 0 {
			left := l.waitLeft(deadline)
			if left <= 0 {
				return l.errLockTimeout("a writer")
			}
			l.sleep(s, stWParked, min(lockPatience, left))
			continue
		}
		if s&stRTurn != 0 {
			// Parked readers were let in: give them a moment first.
			if turnSince.IsZero() {
				turnSince = time.Now()
			}
			if left := readersTurn - time.Since(turnSince); left > 0 {
				l.sleep(s, stWParked, left)
				continue
			}
		}
		if atomic.CompareAndSwapUint32(l.state, s, s&(stWParked|stRParked)|stW|me) {
			return nil
		}
	}
}

// drainReaders waits until no slot counts a read lock, clearing the slots
// of readers that died. A slot that has counted a read lock for lockPatience
// has its holder asked about, however often live readers leaving other
// slots woke the wait meanwhile. It fails with ErrTimeout when a slot
// still counts past the bound; the caller then releases W.
func (l *fileLock) drainReaders(deadline *time.Time) error {
	hw := min(int(atomic.LoadUint32(l.hw)), l.nslots)
	// pos walks slotAt(id) without its divisions, which cost more than
	// the rest of an uncontended lock.
	for id, pos := 0, 0; id < hw; id, pos = id+1, l.nextPos(pos) {
		slot := (*uint64)(unsafe.Add(l.slots, pos*slotSize))
		var since time.Time
		for {
			v := atomic.LoadUint64(slot)
			if uint32(v) == 0 {
				break
			}
			d := atomic.LoadUint32(l.drain)
			if uint32(atomic.LoadUint64(slot)) == 0 {
				break
			}
			if since.IsZero() {
				since = time.Now()
			}
			left := l.waitLeft(deadline)
			if left <= 0 {
				return l.errLockTimeout("a reader")
			}
			futexWait(l.drain, d, min(lockPatience, left))
			if id == l.id || time.Since(since) < lockPatience {
				continue
			}
			since = time.Now()
			if !l.alive(id) {
				// Same generation only: a new handle that took the id
				// since has reset the slot, and its count is live.
				atomic.CompareAndSwapUint64(slot, v, v&^math.MaxUint32)
			}
		}
	}
	return nil
}

// unlock releases the write lock. It fails, touching nothing, when the
// lock is no longer this handle's.
func (l *fileLock) unlock() error {
	me := uint32(l.id + 1)
	if atomic.CompareAndSwapUint32(l.state, stW|me, 0) {
		return nil // nobody parked, no readers' turn
	}
	for {
		s := atomic.LoadUint32(l.state)
		if s&stW == 0 || s&stOwner != me {
			return errLockLost
		}
		next := uint32(0)
		if s&stRParked != 0 {
			next = stRTurn
		}
		if atomic.CompareAndSwapUint32(l.state, s, next) {
			if s&(stWParked|stRParked) != 0 {
				futexWake(l.state, wakeAll)
			}
			return nil
		}
	}
}

// sleep waits on the state word while it still reads s (with the parked
// bit set), for at most timeout. When it times out with the lock still
// held, it asks whether the holder is alive and recovers the lock from a
// dead one.
func (l *fileLock) sleep(s, parked uint32, timeout time.Duration) {
	if s&parked == 0 {
		if !atomic.CompareAndSwapUint32(l.state, s, s|parked) {
			return // the word changed: look again
		}
		s |= parked
	}
	if futexWait(l.state, s, timeout) == errFutexTimeout {
		l.recoverWriter()
	}
}

// recoverWriter clears W when its owner is dead: a token nobody holds, or
// no owner at all (a damaged word). An owner with this handle's id is a
// goroutine of this handle: a dead predecessor with the same id was
// recovered from when the handle joined (newFileLock).
func (l *fileLock) recoverWriter() {
	s := atomic.LoadUint32(l.state)
	if s&stW == 0 {
		return
	}
	owner := s & stOwner
	switch {
	case owner == 0:
	case int(owner-1) == l.id:
		return // a goroutine of this handle holds it
	default:
		// Hold the dead holder's token while recovering: otherwise a new
		// handle could take its id, join, and lock under the same OWNER
		// between the check and the compare-and-swap, which would then
		// see the word it expects and wipe a live lock. Holding it is
		// also the liveness check: it fails while the holder lives.
		dead := int(owner - 1)
		if dead >= l.tokens.n {
			break // no such token: a damaged word
		}
		held, ok := l.tokens.holdDead(l.fd, dead)
		if !ok {
			return
		}
		defer l.tokens.release(held)
		if testHookRecovering != nil {
			testHookRecovering(dead)
		}
	}
	if atomic.CompareAndSwapUint32(l.state, s, s&(stWParked|stRParked)) {
		futexWake(l.state, wakeAll)
		atomic.AddUint32(l.drain, 1)
		futexWake(l.drain, wakeAll)
	}
}

// lockStripe picks a handle's stripe of an operation counter: its token id,
// so that handles, and so processes, count on cache lines of their own.
func lockStripe(l *fileLock) int { return l.id }

// joinLock gives the handle its part in the file's lock: a liveness token
// and a reader slot. The token is taken on an open file description of the
// handle's own, reopened through /proc/self/fd: one that File hands to a
// child (a dup shares the description and its locks) would keep the token
// alive after this process died. Without /proc a handle opened by path or
// that created its memfd uses its own descriptor (then a child holding a
// descriptor from File keeps this handle alive in the lock's eyes), and an
// attached descriptor, which may share its description, cannot lock.
func (m *mapping) joinLock() error {
	r := m.res
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.closed {
		return m.errorf("lock", ErrClosed)
	}
	if m.lk != nil {
		return nil
	}
	if r.lk != nil {
		// Another structure of the arena joined for this process.
		m.lk = r.lk
		return nil
	}
	fd := r.fd
	own, err := unix.Open(procFdPath(r.fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		r.tokenFd, fd = own, own
	case m.sharedOFD:
		return m.errorf("lock", fmt.Errorf("reopening the descriptor through /proc/self/fd, for a lock token of its own: %w", err))
	}
	lk, err := newFileLock(fd, m.data, int(m.lay.slots), r.lockTimeout)
	if err != nil {
		return m.errorf("lock", err)
	}
	m.lk, r.lk = lk, lk
	return nil
}

// RLock and RUnlock are rlock and runlock for the cores (cells.Locker).
func (l *fileLock) RLock() error { return l.rlock() }
func (l *fileLock) RUnlock()     { l.runlock() }
