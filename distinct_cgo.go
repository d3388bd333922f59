//go:build cgo && !purego

package sketch

import (
	"runtime"

	"github.com/shmsketch/sketch/csrc"
)

// The binding of the distinct count to the C core (csrc/distinct.c). Keep
// in sync with distinct_core.go.

// distinctCgo serves batches from C. It keeps l, which points into the
// handle and so keeps its mapping reachable, alive until C has returned.
type distinctCgo struct{}

func (distinctCgo) name() string { return "cgo" }

func (distinctCgo) addBatch(l *distinctLayout, keys [][]byte) uint64 {
	r := csrc.Registers{Regs: l.regs, Seed: l.seed, P: l.p, Redis: l.redis}
	raised := r.AddBatch(keys)
	runtime.KeepAlive(l)
	return raised
}
