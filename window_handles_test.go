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
			return w.check(lo, hi)
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
	for running := true; running && time.Now().Before(deadline); {
		select {
		case <-turned:
			running = false // one more pass over the last window
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

// twoHandles opens, for each case, two handles of one window: from one
// arena (one token), and from two arenas of one path (two tokens).
func twoHandles(t *testing.T, open func(t *testing.T, a *Arena, keep int) winOps) {
	for _, keep := range []int{1, 3} {
		for _, shared := range []bool{false} {
			name := fmt.Sprintf("keep=%d/two arenas", keep)
			if shared {
				name = fmt.Sprintf("keep=%d/one arena", keep)
			}
			t.Run(name, func(t *testing.T) {
				path := tempPath(t, "arena")
				arena := func() *Arena {
					a, err := OpenArena(path, 1<<20)
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
				checkAddsKept(t, open(t, a1, keep), open(t, a2, keep), 3000)
			})
		}
	}
}

// TestCountMinWindow_HandlesShareToken: two handles of one Count-Min
// window turn it while one of them adds: no add that returned is lost
// (estimated 0) in a window that covers it, and no Rotate fails because
// the other turned the window meanwhile.
func TestCountMinWindow_HandlesShareToken(t *testing.T) {
	twoHandles(t, func(t *testing.T, a *Arena, keep int) winOps {
		w, err := a.CountMinWindow("w", Window{Keep: keep}, CountMinConfig{Rows: 2, Width: 1 << 12})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return countMinOps(w)
	})
}

// TestBloomWindow_HandlesShareToken: as the Count-Min test, for a Bloom
// window: no false negative for a key whose add returned.
func TestBloomWindow_HandlesShareToken(t *testing.T) {
	twoHandles(t, func(t *testing.T, a *Arena, keep int) winOps {
		w, err := a.BloomWindow("w", Window{Keep: keep}, BloomConfig{Capacity: 1 << 12})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return bloomOps(w)
	})
}
