//go:build !linux

package sketch

import "os"

// Inspect reads the header, the directory and the lock state of a sketch
// file. Sketch files are Linux's: elsewhere it returns ErrUnsupported.
func Inspect(path string) (FileInfo, error) {
	return FileInfo{}, &os.PathError{Op: "sketch: inspect", Path: path, Err: ErrUnsupported}
}

// Remove removes the sketch file at path. Sketch files are Linux's:
// elsewhere it returns ErrUnsupported.
func Remove(path string) error {
	return &os.PathError{Op: "sketch: remove", Path: path, Err: ErrUnsupported}
}
