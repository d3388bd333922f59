//go:build !cgo || purego

package sketch

import "github.com/shmsketch/sketch/internal/cells"

// Keep in sync with sketch_cgo.go: the two files choose the build's cores,
// and nothing else does.

// Backend names the core this build uses for batches and whole-array walks:
// "cgo" (the C core) or "purego". Single keys are served in Go either way.
const Backend = "purego"

// buildCores are the Go cores (internal/cells).
var buildCores = cells.Go
