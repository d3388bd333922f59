//go:build !linux

package sketch

import "os"

// Shared sketches need Linux's shared mappings, memfds and futexes. On
// other systems the package builds, so that code importing it compiles
// everywhere, and every constructor returns ErrUnsupported.

func openPath(path string, sp spec, o options) (*mapping, error) {
	return nil, &os.PathError{Op: "sketch: open", Path: path, Err: ErrUnsupported}
}

func createMemfd(name string, sp spec) (*mapping, error) {
	return nil, &os.PathError{Op: "sketch: create", Path: "memfd:" + name, Err: ErrUnsupported}
}

func attachInherited(fd uintptr, sp spec) (*mapping, error) {
	return nil, &os.PathError{Op: "sketch: attach", Path: "inherited descriptor", Err: ErrUnsupported}
}

func dupCloexec(fd int) (int, error)                  { return -1, ErrUnsupported }
func closeFd(fd int) error                            { return nil }
func unmap(data []byte) error                         { return nil }
func replaceWithPlaceholder(data []byte) error        { return nil }
func syncMapping(data []byte) error                   { return ErrUnsupported }
func removeFileAt(path string, dev, ino uint64) error { return ErrUnsupported }
