//go:build !linux

package sketch

// createNewPath is createNewPath of snapshot_linux.go: files at a path
// need Linux.
func createNewPath(path string, sp spec, o options) (*mapping, error) {
	return nil, ErrUnsupported
}
