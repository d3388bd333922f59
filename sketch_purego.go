//go:build !cgo || purego

package sketch

// Backend names the core this build uses for batches and whole-array walks:
// "cgo" (the C core) or "purego". Single keys are served in Go either way.
// Keep in sync with sketch_cgo.go.
const Backend = "purego"

var defaultCore cmsCore = goCore{}
