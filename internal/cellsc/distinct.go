//go:build cgo && !purego

package cellsc

import (
	"runtime"

	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// The binding of the distinct count to the C core (csrc/distinct.c). Keep
// in sync with internal/cells/distinct.go.

// Distinct serves batches from C. It keeps l, which points into the
// handle and so keeps its mapping reachable, alive until C has returned.
type Distinct struct{}

func (Distinct) Name() string { return "cgo" }

func (Distinct) AddBatch(l *cells.Distinct, keys [][]byte) uint64 {
	r := csrc.Registers{Regs: l.Regs, Seed: l.Seed, P: l.P, Profile: l.Profile}
	raised := r.AddBatch(keys)
	runtime.KeepAlive(l)
	return raised
}
