//go:build cgo && !purego

package sketch

import (
	"github.com/shmsketch/sketch/internal/cells"
	"github.com/shmsketch/sketch/internal/cellsc"
)

// Keep in sync with sketch_purego.go: the two files choose the build's
// cores, and nothing else does.

// Backend names the core this build uses for batches and whole-array walks:
// "cgo" (the C core) or "purego". Single keys are served in Go either way.
const Backend = "cgo"

// buildCores serve batches and walks from C (internal/cellsc).
var buildCores = cells.Cores{
	CountMin:      cellsc.CountMin{},
	Bloom:         cellsc.Bloom{},
	CountingBloom: cellsc.CountingBloom{},
	Distinct:      cellsc.Distinct{},
	GCRA:          cellsc.GCRA{},
}
