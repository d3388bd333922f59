package sketch

// Rooms: who still uses the region of an arena's directory entry, so that
// a create reuses the region of a removed structure only once nobody can
// touch it any more (docs/FORMAT.md, "Removing and reusing").
//
// Every handle on a structure of an arena holds its entry's room from its
// open to its Close. In this process a count per entry says how many
// handles of one mapping do; the first one takes an OFD read lock on byte
// roomBase+i of the file (i the entry's index) through a descriptor of
// the mapping's own, and the last one gives it back. The kernel drops the
// lock when the process dies, whatever state it dies in. A create asks
// F_OFD_GETLK for a write lock on the byte: it is reported free only when
// no other open file description holds any lock on it. A read lock needs
// only a descriptor open for reading, so a read-only handle holds its room
// too, and anyone who may read the file can keep a room from being reused;
// nobody can make one reused early, as no process can drop another's lock.
//
// Memory without a descriptor (plain memory, where Linux is not there) is
// one process's: the count is all there is to ask.

// roomHolds is a mapping's holds on its arena's rooms, under resources.mu.
type roomHolds struct {
	n map[uint32]int // handles of this mapping holding entry i's room
	// fd holds the locks: a descriptor of the mapping's own (opened at
	// the first hold), or the mapping's when it could not be reopened;
	// -1 before the first hold or without a descriptor.
	fd    int
	owned bool // fd is to be closed with the mapping
	// sticky: fd's open file description may be another process's too
	// (fd is the mapping's own descriptor), so a lock on it is never given
	// back: giving it back would drop the other's.
	sticky bool
}

// roomHold is one handle's hold on its entry's room: released by Close,
// or by a cleanup when the handle was dropped without it.
type roomHold struct {
	r    *resources
	idx  uint32
	done bool // under r.mu
}

// holdRoom takes a hold on entry idx's room for a handle about to open it.
func (r *resources) holdRoom(idx uint32) (*roomHold, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	h := &r.rooms
	if h.n == nil {
		h.n = map[uint32]int{}
	}
	if h.n[idx] == 0 && r.fd >= 0 {
		if err := r.roomFd(); err != nil {
			return nil, err
		}
		if err := lockRoom(h.fd, idx, true); err != nil {
			return nil, err
		}
	}
	h.n[idx]++
	return &roomHold{r: r, idx: idx}, nil
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
	h := &r.rooms
	if h.n[rh.idx]--; h.n[rh.idx] > 0 {
		return
	}
	delete(h.n, rh.idx)
	if h.fd >= 0 && !h.sticky && !r.closed {
		lockRoom(h.fd, rh.idx, false)
	}
}

// roomFree reports whether nobody holds entry idx's room: no handle of
// this mapping, and no lock of any other open file description. An error
// from the kernel counts as held: a room in use must never be reused.
func (r *resources) roomFree(idx uint32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.rooms.n[idx] > 0 {
		return false
	}
	if r.fd < 0 {
		return true // memory of this process alone
	}
	if err := r.roomFd(); err != nil {
		return false
	}
	return !roomLocked(r.rooms.fd, idx)
}

// roomFd opens the descriptor that holds the room locks, once.
func (r *resources) roomFd() error {
	h := &r.rooms
	if h.fd >= 0 {
		return nil
	}
	fd, own, err := reopenForLocks(r.fd)
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
	clear(h.n)
}
