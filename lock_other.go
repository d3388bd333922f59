//go:build !linux

package sketch

import "sync"

// Elsewhere than Linux a structure lives in plain memory of one process
// (createInMemory), so its lock needs no futex and no liveness tokens: a
// sync.RWMutex with the same methods serves.
type fileLock struct {
	mu sync.RWMutex
}

// rlock and lock never time out here: only this process's goroutines hold
// the lock, and each lets go.
func (l *fileLock) rlock() error { l.mu.RLock(); return nil }
func (l *fileLock) runlock()     { l.mu.RUnlock() }
func (l *fileLock) lock() error  { l.mu.Lock(); return nil }

func (l *fileLock) unlock() error {
	l.mu.Unlock()
	return nil
}

// joinLock gives the handle its in-process lock.
func (m *mapping) joinLock() error {
	r := m.res
	r.mu.Lock()
	defer r.mu.Unlock()
	if m.closed {
		return m.errorf("lock", ErrClosed)
	}
	if r.lk == nil {
		r.lk = &fileLock{}
	}
	m.lk = r.lk
	return nil
}

// lockStripe picks a handle's stripe of an operation counter.
func lockStripe(l *fileLock) int { return 0 }

// ownRecord is a token record to free at close: none here.
type ownRecord struct{}

func (l *fileLock) mapOwnRecord(fd int) *ownRecord { return nil }
func (o *ownRecord) leave()                        {}

// RLock and RUnlock are rlock and runlock for the cores (cells.Locker).
func (l *fileLock) RLock() error { return l.rlock() }
func (l *fileLock) RUnlock()     { l.runlock() }
