//go:build cgo && !purego

package sketch

// Keep in sync with sketch_purego.go.

// Backend names the core this build uses for batches and whole-array walks:
// "cgo" (the C core) or "purego". Single keys are served in Go either way.
const Backend = "cgo"

var defaultCore cmsCore = cCore{}

var defaultCBFCore cbfCore = cbfC{}
