//go:build !linux

package sketch

import "os"

// Inspect reads the header, the directory and the lock state of a sketch
// file. Sketch files are Linux's: elsewhere it returns ErrUnsupported.
func Inspect(path string) (FileInfo, error) {
	return FileInfo{}, &os.PathError{Op: "sketch: inspect", Path: path, Err: ErrUnsupported}
}
