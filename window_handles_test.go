//go:build linux

package sketch

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Handles of one window in one process: the handles of an arena share the
// process's lock token, so a clear one of them runs must never be taken
// for one left by a dead predecessor under the same token by another.

// winOps is what the test does with a window handle, whatever its kind.
type winOps struct {
	add    func(key []byte) error
	has    func(key []byte) (found bool, p uint64) // p: the window's last period
	cur    func() uint64
	first  func(p uint64) uint64
	rotate func() error
}

func countMinOps(w *CountMinWindow) winOps {
	return winOps{
		add: func(key []byte) error { _, err := w.Add(key); return err },
		has: func(key []byte) (bool, uint64) {
			lo, hi := hashKey(key, w.slots[0].seed)
			est, p := w.estimateOne(lo, hi)
			return est > 0, p
		},
		cur: w.Current, first: w.ctl.first, rotate: w.Rotate,
	}
}

func bloomOps(w *BloomWindow) winOps {
	return winOps{
		add: func(key []byte) error { _, err := w.Add(key); return err },
		has: func(key []byte) (bool, uint64) {
			lo, hi := hashKey(key, w.slots[0].seed)
			return w.lookup(lo, hi)
		},
		cur: w.Current, first: w.ctl.first, rotate: w.Rotate,
	}
}

func handleKey(j int) []byte { return binary.LittleEndian.AppendUint64([]byte("key-"), uint64(j)) }

// checkAddsKept adds a new key at a time through a while a and b both turn
// the window, rounds times each (each clear pausing once after it won its
// slot, so that clears overlap), and checks through b that every key whose
// add returned is found in the windows that cover its period: for each
// key, the period before its add began is recorded once the add returned,
// so that a window that ends at or after the record was read, and starts
// at or before that period, holds the key.
func checkAddsKept(t *testing.T, a, b winOps, rounds int) {
	const maxKeys = 1 << 18
	testHookWindowClear = func(s, p uint64) { runtime.Gosched() }
	t.Cleanup(func() { testHookWindowClear = nil })
	started := make([]uint64, maxKeys) // the period before each add
	var added atomic.Int64             // keys whose add returned
	var stop atomic.Bool
	var writers, rotators sync.WaitGroup
	writers.Add(1)
	go func() {
		defer writers.Done()
		for j := 0; j < maxKeys && !stop.Load(); j++ {
			p := a.cur()
			if err := a.add(handleKey(j)); err != nil {
				t.Error(err)
				return
			}
			started[j] = p
			added.Store(int64(j + 1)) // publishes started[j]
		}
	}()
	for _, h := range []winOps{a, b} {
		rotators.Add(1)
		go func() {
			defer rotators.Done()
			for range rounds {
				if err := h.rotate(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	turned := make(chan struct{})
	go func() { rotators.Wait(); close(turned) }()

	checks, lost := 0, 0
	deadline := time.Now().Add(5 * time.Minute) // only a hang gets near it
	// Once the rotators are done, the writer goes on adding into a window
	// that no longer turns: passes go on until one has checked a key.
	for done := false; time.Now().Before(deadline); {
		if done && checks > 0 {
			break
		}
		select {
		case <-turned:
			done = true
		default:
		}
		n := int(added.Load())
		p0 := b.cur()
		first := b.first(p0)
		j0 := sort.Search(n, func(j int) bool { return started[j] >= first })
		for j := j0; j < n; j++ {
			found, p := b.has(handleKey(j))
			if p != p0 || b.cur() != p0 {
				break // the window turned: a key may be gone for good
			}
			checks++
			if !found {
				lost++
				if lost <= 3 {
					t.Errorf("key %d, added from period %d on, not found in the window of periods %d..%d", j, started[j], first, p0)
				}
			}
		}
	}
	stop.Store(true)
	writers.Wait()
	if checks == 0 {
		t.Fatalf("no key checked in a window that covers it (%d keys added, period %d)", added.Load(), b.cur())
	}
	t.Logf("%d keys added, %d checks, %d lost, period %d", added.Load(), checks, lost, b.cur())
	if lost > 0 {
		t.Errorf("%d of %d checks found a returned add lost", lost, checks)
	}
}

// checkSiblingClear holds a clear of a's in the middle while b turns the
// window: b must wait for it, never take it over. Had b taken it over, b's
// Rotate returns, a key added then lands in the slot a clears afterwards,
// and is lost.
func checkSiblingClear(t *testing.T, a, b winOps) {
	for range 3 {
		if err := a.rotate(); err != nil {
			t.Fatal(err)
		}
	}
	var armed atomic.Bool
	held, release, waiting := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var waitOnce sync.Once
	testHookWindowClear = func(s, p uint64) {
		if armed.CompareAndSwap(true, false) {
			close(held)
			<-release
		}
	}
	testHookWindowWait = func(s, p uint64) { waitOnce.Do(func() { close(waiting) }) }
	t.Cleanup(func() { testHookWindowClear, testHookWindowWait = nil, nil })

	armed.Store(true)
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	go func() { aDone <- a.rotate() }() // its clear ahead is held
	<-held
	p := a.cur()
	go func() { bDone <- b.rotate() }()
	bReturned := false
	select {
	case err := <-bDone:
		bReturned = true // it took the clear over
		if err != nil {
			t.Fatal(err)
		}
	case <-waiting:
	case <-time.After(time.Minute):
		close(release)
		t.Fatal("the second handle's Rotate neither returned nor waited for the held clear")
	}
	key := []byte("added while a clear is held")
	if err := b.add(key); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if !bReturned {
		if err := <-bDone; err != nil {
			t.Fatal(err)
		}
	}
	if q := b.cur(); q != p+1 {
		t.Fatalf("period %d after two turns from %d", q, p-1)
	}
	if found, q := b.has(key); !found {
		if bReturned {
			t.Errorf("key added in period %d, after the second handle's Rotate returned while the first's clear was held, not found in the window ending at %d", p+1, q)
		} else {
			t.Errorf("key added in period %d not found in the window ending at %d", p, q)
		}
	}
}

// twoHandles runs check, for each keep, on two handles of one window:
// from one arena (one token), and from two arenas of one path (two
// tokens).
func twoHandles(t *testing.T, keeps []int, open func(t *testing.T, a *Arena, keep int) winOps, check func(t *testing.T, a, b winOps)) {
	for _, keep := range keeps {
		for _, shared := range []bool{true, false} {
			name := fmt.Sprintf("keep=%d/two arenas", keep)
			if shared {
				name = fmt.Sprintf("keep=%d/one arena", keep)
			}
			t.Run(name, func(t *testing.T) {
				path := tempPath(t, "arena")
				arena := func() *Arena {
					a, err := OpenArena(Path(path), 1<<20)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { a.Close() })
					return a
				}
				a1 := arena()
				a2 := a1
				if !shared {
					a2 = arena()
				}
				check(t, open(t, a1, keep), open(t, a2, keep))
			})
		}
	}
}

func openCountMinOps(t *testing.T, a *Arena, keep int) winOps {
	w, err := OpenCountMinWindow(a.Place("w"), CountMinWindowConfig{Window: Window{Keep: keep}, CountMin: CountMinConfig{Rows: 2, Width: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return countMinOps(w)
}

func openBloomOps(t *testing.T, a *Arena, keep int) winOps {
	w, err := OpenBloomWindow(a.Place("w"), BloomWindowConfig{Window: Window{Keep: keep}, Bloom: BloomConfig{Capacity: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return bloomOps(w)
}

func checkAddsKept3000(t *testing.T, a, b winOps) { checkAddsKept(t, a, b, 3000) }

// TestCountMinWindow_HandlesShareToken: two handles of one Count-Min
// window turn it while one of them adds: no add that returned is lost
// (estimated 0) in a window that covers it, and no Rotate fails because
// the other turned the window meanwhile. Two handles from one arena share
// the process's token; two arenas of one path, whose handles have tokens
// of their own, are the control.
func TestCountMinWindow_HandlesShareToken(t *testing.T) {
	twoHandles(t, []int{1, 3}, openCountMinOps, checkAddsKept3000)
}

// TestBloomWindow_HandlesShareToken: as the Count-Min test, for a Bloom
// window: no false negative for a key whose add returned.
func TestBloomWindow_HandlesShareToken(t *testing.T) {
	twoHandles(t, []int{1, 3}, openBloomOps, checkAddsKept3000)
}

// TestCountMinWindow_SiblingClearWaitedFor: a handle's Rotate waits for
// the clear another handle of the same process runs, under the same token
// or another, and an add made meanwhile is kept.
func TestCountMinWindow_SiblingClearWaitedFor(t *testing.T) {
	twoHandles(t, []int{2}, openCountMinOps, checkSiblingClear)
}

// TestBloomWindow_SiblingClearWaitedFor: as the Count-Min test, for a
// Bloom window.
func TestBloomWindow_SiblingClearWaitedFor(t *testing.T) {
	twoHandles(t, []int{2}, openBloomOps, checkSiblingClear)
}
