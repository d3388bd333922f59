//go:build linux

package sketch

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// TestWindows_FoldTakenOver: a clear left by a dead clearer, before or
// after its fold committed, is finished without losing or counting twice
// what the slot held: the fold is done once.
func TestWindows_FoldTakenOver(t *testing.T) {
	forEachKind(t, func(t *testing.T, k *windowKind) {
		for _, committed := range []bool{false, true} {
			t.Run(fmt.Sprintf("committed=%v", committed), func(t *testing.T) {
				w := mustOpenKind(t, k, Path(tempPath(t, "win")), Window{Keep: 2}, exactCfgs)
				ctl := &w.base().ctl
				for i := range 6 {
					w.addN(fmt.Appendf(nil, "old%d", i), 1) // period 0, slot 0
				}
				// Period 1; the clear ahead took slot 2, never used.
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				want := countsOf(t, w.handle()).adds
				if want != 6 {
					t.Fatalf("Adds = %d before the turn, want 6", want)
				}
				// Period 3's slot (0) holds period 0: make it look won for
				// period 3 by a dead process (a token id past the table),
				// with or without its fold. The next Rotate clears it ahead.
				s := ctl.slotOf(3)
				if committed {
					ctl.fold(s, 3)
				}
				atomic.StoreUint64(ctl.word(s), clearingWord(3, 4000))
				if got := countsOf(t, w.handle()).adds; got != want {
					t.Errorf("Adds = %d while the slot is left clearing, want %d", got, want)
				}
				if err := w.Rotate(); err != nil {
					t.Fatal(err)
				}
				if got := atomic.LoadUint64(ctl.word(s)); got != heldWord(3) {
					t.Fatalf("slot word %#x, want held(3)", got)
				}
				w.addN([]byte("new"), 1)
				if got := countsOf(t, w.handle()).adds; got != want+1 {
					t.Errorf("Adds = %d after the takeover and one add, want %d", got, want+1)
				}
			})
		}
	})
}
