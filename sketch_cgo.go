//go:build cgo && !purego

package sketch

// Keep in sync with sketch_purego.go: the two files choose the build's
// cores, and nothing else does.

// Backend names the core this build uses for batches and whole-array walks:
// "cgo" (the C core) or "purego". Single keys are served in Go either way.
const Backend = "cgo"

// buildCores serve batches and walks from C (the <kind>_cgo.go bindings).
var buildCores = cores{
	countMin:      countMinCgo{},
	bloom:         bloomCgo{},
	countingBloom: countingBloomCgo{},
	distinct:      distinctCgo{},
}
