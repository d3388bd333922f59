package sketch

import (
	"sync"
	"sync/atomic"
)

// clearMarks are the window slots that the handles sharing one lock token
// (the structures of one arena in this process) are clearing. A slot word
// records only the clearer's token id, so a handle that finds a clear under
// its own id cannot tell from the word whether a dead predecessor with that
// id left it or a sibling handle runs it now: the marks tell. A clear
// under the process's own id is dead only when no handle marks its slot;
// taking over a live one would clear the slot again after its clearer
// published it, losing the adds made in between.
type clearMarks struct {
	mu sync.Mutex
	n  map[*uint64]int // slot word: clears running on it
}

// win swaps slot word wp from old to clearing, this token's word for a
// clear, and marks the slot until done is called. With idle set it does
// so only while no handle of the token marks the slot: the test and the
// swap are one step, so a sibling's clear is never taken for dead.
func (m *clearMarks) win(wp *uint64, old, clearing uint64, idle bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if idle && m.n[wp] > 0 {
		return false
	}
	if !atomic.CompareAndSwapUint64(wp, old, clearing) {
		return false
	}
	if m.n == nil {
		m.n = make(map[*uint64]int)
	}
	m.n[wp]++
	return true
}

// done ends a clear that win marked.
func (m *clearMarks) done(wp *uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n[wp]--; m.n[wp] <= 0 {
		delete(m.n, wp)
	}
}

// busy reports whether a handle of the token is clearing slot word wp.
func (m *clearMarks) busy(wp *uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[wp] > 0
}
