package sketch

// Rooms: who still uses the region of an arena's directory entry, so that
// a create reuses the region of a removed structure only once no
// read-write handle can touch it any more (docs/FORMAT.md, "Removing and
// reusing").
//
// Every read-write handle on a structure of an arena holds its entry's
// room from its open to its Close. In this process a count per entry says
// how many handles of one mapping do; the first one marks the room and
// the last one takes the mark back. The mark is an OFD write lock on one
// byte of the entry's mark range (roomMarkBase + i*roomMarkSpan, a byte no
// other description holds), through a descriptor of the mapping's own
// open for writing. A write lock needs a descriptor open for writing, and
// a create asks F_OFD_GETLK whether a read lock could be placed on the
// range, which only write locks prevent: so nobody who may only read the
// file can place a mark or fake one, and the read locks a reader may place
// anywhere are not seen. The kernel drops a mark when the process dies,
// whatever state it dies in; no process can drop another's.
//
// A reader can still keep a holder from placing its mark: a read lock on
// every byte of the range (one fcntl) conflicts with any write lock. The
// holder then pins the room instead: it adds one to the pin count in the
// high half of the entry's state word (pinRoom), which only who may write
// the file can change, and which a create reads. A pin is added only to a
// live entry (one compare-and-swap on the state word, so that a removal
// cannot slip between the look and the pin) and taken back at the last
// Close. Should its holder die before that, the count stays; so every
// read-write holder also keeps an OFD read lock on the entry's byte at
// roomBase + i (the byte earlier builds ask about, so that they see this
// build's holders), taken before the pin and given back after it: a
// create that finds a pin count but no lock there knows every pin's holder
// gone and clears the count. Only a room whose holder was kept from its
// mark and died holding it can then be kept by a reader's lock on that
// byte.
//
// A read-only handle holds nothing: a view of a removed structure takes
// its chance, as it risks only itself (its room may be reused under it).
//
// A create that has no description of its own (no /proc, or the file may
// not be reopened for writing) cannot see the marks of a description it
// shares with another handle (a child given the descriptor, or File passed
// on and opened again): F_OFD_GETLK never reports the asker's own
// description's locks. It then reuses no room at all: never two
// structures on one byte. Memory without a descriptor (plain memory,
// where Linux is not there) is one process's: the count is all there is
// to ask.

import "sync/atomic"

const (
	// entryStateMask is the state in an entry's state word; the high half
	// counts the room's pins.
	entryStateMask = 0xffff
	roomPinShift   = 16
	roomPinOne     = 1 << roomPinShift
)

// roomHolds is a mapping's holds on its arena's rooms, under resources.mu.
type roomHolds struct {
	held map[uint32]*roomMark // the rooms this mapping's handles hold
	// fd holds the marks: a descriptor of the mapping's own (opened at
	// the first hold or query), or the mapping's when it could not be
	// reopened; -1 before the first hold or without a descriptor.
	fd    int
	owned bool // fd is the mapping's own, to be closed with the mapping
	// sticky: fd's open file description may be another process's too
	// (fd is the mapping's own descriptor), so a lock on it is never given
	// back: giving it back would drop the other's.
	sticky bool
}

// roomMark is how a mapping holds one room.
type roomMark struct {
	n      int     // handles holding it
	locked bool    // the read lock on the room's byte at roomBase is held
	off    int64   // the mark's byte, or -1 when it has none
	pin    *uint32 // the entry's state word, when the room is pinned
}

// roomHold is one handle's hold on its entry's room: released by Close,
// or by a cleanup when the handle was dropped without it.
type roomHold struct {
	r    *resources
	idx  uint32
	done bool // under r.mu
}

// holdRoom takes a hold on entry idx's room for a handle about to open
// it; write says whether the mapping is read-write (only those hold the
// room for others to see), and state is the entry's state word. It is
// errRoomMoved when the room had to be pinned and the entry is no longer
// live.
func (r *resources) holdRoom(idx uint32, write bool, state *uint32) (*roomHold, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	h := &r.rooms
	if h.held == nil {
		h.held = map[uint32]*roomMark{}
	}
	m := h.held[idx]
	if m == nil {
		m = &roomMark{off: -1}
		if r.fd >= 0 && write {
			if err := r.markRoom(idx, m, state); err != nil {
				return nil, err
			}
		}
		h.held[idx] = m
	}
	m.n++
	return &roomHold{r: r, idx: idx}, nil
}

// markRoom marks entry idx's room for m, or pins it when it cannot.
func (r *resources) markRoom(idx uint32, m *roomMark, state *uint32) error {
	h := &r.rooms
	if err := r.roomFd(true); err != nil {
		return err
	}
	if err := lockOldRoom(h.fd, idx, true); err != nil {
		return err
	}
	m.locked = true
	off, ok, err := markRoom(h.fd, idx)
	switch {
	case err != nil:
	case ok:
		m.off = off
		return nil
	case pinRoom(state):
		m.pin = state
		return nil
	default:
		err = errRoomMoved
	}
	r.unmark(idx, m)
	return err
}

// pinRoom adds a pin to a live entry's state word; false when the entry
// is not live (or holds as many pins as the word can count).
func pinRoom(state *uint32) bool {
	for {
		s := atomic.LoadUint32(state)
		if s&entryStateMask != entryLive || s>>roomPinShift == entryStateMask {
			return false
		}
		if atomic.CompareAndSwapUint32(state, s, s+roomPinOne) {
			return true
		}
	}
}

// unpinRoom takes a pin back.
func unpinRoom(state *uint32) {
	for {
		s := atomic.LoadUint32(state)
		if s>>roomPinShift == 0 || atomic.CompareAndSwapUint32(state, s, s-roomPinOne) {
			return
		}
	}
}

// release gives the hold back; a second call does nothing.
func (rh *roomHold) release() {
	if rh == nil {
		return
	}
	rh.r.mu.Lock()
	defer rh.r.mu.Unlock()
	rh.releaseLocked()
}

// releaseLocked is release with r.mu held.
func (rh *roomHold) releaseLocked() {
	r := rh.r
	if rh.done {
		return
	}
	rh.done = true
	m := r.rooms.held[rh.idx]
	if m == nil {
		return
	}
	if m.n--; m.n > 0 {
		return
	}
	delete(r.rooms.held, rh.idx)
	r.unmark(rh.idx, m)
}

// unmark takes back what m holds of entry idx's room: the pin first, then
// the mark and the read lock (so that a pin is never seen without the
// lock while its holder lives). Once every reference is closed the
// descriptor that held them is closed, and the memory is gone.
func (r *resources) unmark(idx uint32, m *roomMark) {
	h := &r.rooms
	if r.closed || r.retired {
		return
	}
	if m.pin != nil {
		unpinRoom(m.pin)
		m.pin = nil
	}
	if h.fd < 0 || h.sticky {
		return
	}
	if m.off >= 0 {
		unmarkRoom(h.fd, m.off)
		m.off = -1
	}
	if m.locked {
		lockOldRoom(h.fd, idx, false)
		m.locked = false
	}
}

// roomFree reports whether nobody holds entry idx's room: no handle of
// this mapping, no mark of any other open file description, and no pin of
// a holder alive; write says whether the mapping is read-write, state is
// the entry's state word. A stale pin count is cleared (by a read-write
// mapping). An error from the kernel counts as held, and so does a room
// asked about through a description that may be shared: a room in use
// must never be reused.
func (r *resources) roomFree(idx uint32, write bool, state *uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || write && r.rooms.held[idx] != nil {
		return false // (a read-only mapping's views keep nothing)
	}
	if r.fd < 0 {
		return true // memory of this process alone
	}
	if err := r.roomFd(write); err != nil || !r.rooms.owned {
		return false
	}
	fd := r.rooms.fd
	if roomMarked(fd, idx) {
		return false
	}
	s := atomic.LoadUint32(state)
	if s>>roomPinShift == 0 {
		return true
	}
	// Pinned: a holder kept from its mark, alive while it keeps its lock
	// on the room's byte. A pin is added to a live entry only, so the
	// count of a removed one can only go down meanwhile.
	if oldRoomLocked(fd, idx) {
		return false
	}
	return !write || atomic.CompareAndSwapUint32(state, s, s&entryStateMask)
}

// roomFd opens the descriptor that holds the room locks, once: write for
// a read-write mapping, whose holds are write locks.
func (r *resources) roomFd(write bool) error {
	h := &r.rooms
	if h.fd >= 0 {
		return nil
	}
	fd, own, err := reopenForLocks(r.fd, write)
	if err != nil {
		return err
	}
	h.fd, h.owned = fd, own
	// Without a description of its own (no /proc), the mapping's may be
	// shared with another process (a descriptor handed over, or handed
	// on with File), whose lock on the same byte is the same lock: it is
	// never given back then, and goes when the descriptor is closed.
	h.sticky = !own
	return nil
}

// closeRooms closes the rooms' descriptor, which drops every lock on it;
// r.mu is held.
func (r *resources) closeRooms() {
	h := &r.rooms
	if h.owned {
		closeFd(h.fd)
	}
	h.fd, h.owned = -1, false
	clear(h.held)
}
