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

func handleKey(j int) []byte { return binary.LittleEndian.AppendUint64([]byte("key-"), uint64(j)) }

// checkAddsKept adds a new key at a time through a while a and b both turn
// the window, rounds times each (each clear pausing once after it won its
// slot, so that clears overlap), and checks through b that every key whose
// add returned is found in the windows that cover its period: for each
// key, the period before its add began is recorded once the add returned,
// so that a window that ends at or after the record was read, and starts
// at or before that period, holds the key.
func checkAddsKept(t *testing.T, a, b testWindow, rounds int) {
	const maxKeys = 1 << 18
	testHookWindowClear = func(s, p uint64) { runtime.Gosched() }
	t.Cleanup(func() { testHookWindowClear = nil })
	started := make([]uint64, maxKeys) // the period before each add
	var added atomic.Int64             // keys whose add returned
	var stop atomic.Bool
	var writers, rotators sync.WaitGroup
	turned := make(chan struct{})
	writers.Add(1)
	go func() {
		defer writers.Done()
		for j := 0; j < maxKeys && !stop.Load(); j++ {
			if j == maxKeys-1024 {
				// The last keys wait for the last turn, so that, however
				// slowly the rotators run beside the writer, some keys
				// land in the window that no longer turns and the checks
				// below have keys to check.
				<-turned
			}
			p := a.Current()
			if _, err := a.addN(handleKey(j), 1); err != nil {
				t.Error(err)
				return
			}
			started[j] = p
			added.Store(int64(j + 1)) // publishes started[j]
		}
	}()
	for _, h := range []testWindow{a, b} {
		rotators.Add(1)
		go func() {
			defer rotators.Done()
			for range rounds {
				if err := h.Rotate(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
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
		p0 := b.Current()
		first := b.base().ctl.first(p0)
		j0 := sort.Search(n, func(j int) bool { return started[j] >= first })
		for j := j0; j < n; j++ {
			n, p := b.countAt(handleKey(j))
			if p != p0 || b.Current() != p0 {
				break // the window turned: a key may be gone for good
			}
			checks++
			if n == 0 {
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
		t.Fatalf("no key checked in a window that covers it (%d keys added, period %d)", added.Load(), b.Current())
	}
	t.Logf("%d keys added, %d checks, %d lost, period %d", added.Load(), checks, lost, b.Current())
	if lost > 0 {
		t.Errorf("%d of %d checks found a returned add lost", lost, checks)
	}
}

// checkSiblingClear holds a clear of a's in the middle while b turns the
// window: b must wait for it, never take it over. Had b taken it over, b's
// Rotate returns, a key added then lands in the slot a clears afterwards,
// and is lost.
func checkSiblingClear(t *testing.T, a, b testWindow) {
	for range 3 {
		if err := a.Rotate(); err != nil {
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
	go func() { aDone <- a.Rotate() }() // its clear ahead is held
	<-held
	p := a.Current()
	go func() { bDone <- b.Rotate() }()
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
	if _, err := b.addN(key, 1); err != nil {
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
	if q := b.Current(); q != p+1 {
		t.Fatalf("period %d after two turns from %d", q, p-1)
	}
	if n, q := b.countAt(key); n == 0 {
		if bReturned {
			t.Errorf("key added in period %d, after the second handle's Rotate returned while the first's clear was held, not found in the window ending at %d", p+1, q)
		} else {
			t.Errorf("key added in period %d not found in the window ending at %d", p, q)
		}
	}
}

// twoHandles runs check, for each kind and keep, on two handles of one
// window: from one arena (one token), and from two arenas of one path (two
// tokens).
func twoHandles(t *testing.T, keeps []int, check func(t *testing.T, a, b testWindow)) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, keep := range keeps {
			for _, shared := range []bool{true, false} {
				name := fmt.Sprintf("keep=%d/two arenas", keep)
				if shared {
					name = fmt.Sprintf("keep=%d/one arena", keep)
				}
				t.Run(name, func(t *testing.T) {
					path := tempPath(t, "arena")
					arena := func() *Arena {
						a, err := OpenArena(Path(path), ArenaConfig{Size: 1 << 20})
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
					cfgs := windowCfgs{CountMin: CountMinConfig{Rows: 2, Width: 1 << 12}, Bloom: BloomConfig{Capacity: 1 << 12}}
					open := func(a *Arena) testWindow { return mustOpenKind(t, k, a.Place("w"), Window{Keep: keep}, cfgs) }
					check(t, open(a1), open(a2))
				})
			}
		}
	})
}

// TestWindows_HandlesShareToken: two handles of one window turn it while
// one of them adds: no add that returned is lost (a Count-Min estimate of
// 0, a Bloom false negative) in a window that covers it, and no Rotate
// fails because the other turned the window meanwhile. Two handles from
// one arena share the process's token; two arenas of one path, whose
// handles have tokens of their own, are the control.
func TestWindows_HandlesShareToken(t *testing.T) {
	twoHandles(t, []int{1, 3}, func(t *testing.T, a, b testWindow) { checkAddsKept(t, a, b, raceScale(3000)) })
}

// TestWindows_SiblingClearWaitedFor: a handle's Rotate waits for the
// clear another handle of the same process runs, under the same token or
// another, and an add made meanwhile is kept.
func TestWindows_SiblingClearWaitedFor(t *testing.T) {
	twoHandles(t, []int{2}, checkSiblingClear)
}
