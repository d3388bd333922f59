//go:build cgo && !purego

package cellsc

import (
	"runtime"

	"github.com/shmsketch/sketch/csrc"
	"github.com/shmsketch/sketch/internal/cells"
)

// The binding of the rate limiter to the C core (csrc/gcra.c). Keep in
// sync with internal/cells/gcra.go.

// GCRA serves batches of decisions from C. It keeps l, which points into
// the handle and so keeps its mapping reachable, alive until C has
// returned.
type GCRA struct{}

func (GCRA) Name() string { return "cgo" }

func (GCRA) DecideBatch(l *cells.GCRA, keys [][]byte, now, cost uint64, allowed []bool, tats []uint64) uint64 {
	g := csrc.GCRA{Cells: l.Cells, Seed: l.Seed, Mask: l.Mask, Rows: l.Rows, Interval: l.Interval, Window: l.Window}
	n := g.AllowBatch(keys, now, cost, allowed, tats)
	runtime.KeepAlive(l)
	return n
}

// The two cores keep a key's read values on the stack alike.
var (
	_ [csrc.GCRAMaxRows - cells.GCRAMaxRows]struct{}
	_ [cells.GCRAMaxRows - csrc.GCRAMaxRows]struct{}
)
