//go:build !linux

package sketch

import (
	"fmt"
	"os"
	"unsafe"
)

// Shared sketches need Linux's shared mappings, memfds and futexes. On
// other systems the package builds, so that code importing it compiles
// everywhere, and every constructor returns ErrUnsupported.

func openPath(path string, sp spec, o options) (*mapping, error) {
	return nil, &os.PathError{Op: "sketch: open", Path: path, Err: ErrUnsupported}
}

func createMemfd(name string, sp spec) (*mapping, error) {
	return nil, &os.PathError{Op: "sketch: create", Path: "memfd:" + name, Err: ErrUnsupported}
}

func attachInherited(fd uintptr, sp spec, o options) (*mapping, error) {
	return nil, &os.PathError{Op: "sketch: attach", Path: "inherited descriptor", Err: ErrUnsupported}
}

// createInMemory makes a structure in plain memory, for one process: the
// in-memory constructors work everywhere, so code that uses the package
// runs its tests on any system.
func createInMemory(sp spec) (*mapping, error) {
	lay, err := sp.layout()
	if err != nil {
		return nil, fmt.Errorf("sketch: create in memory: %w", err)
	}
	words := make([]uint64, lay.fileSize/8) // 8-byte aligned, for atomics
	data := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), lay.fileSize)
	encodeHeader(data, lay)
	if sp.fill != nil {
		if err := sp.fill(data, lay); err != nil {
			return nil, fmt.Errorf("sketch: create in memory: %w", err)
		}
	}
	publishMagic(data)
	return newMapping("in-memory sketch", -1, data, lay, lay.first()), nil
}

func dupCloexec(fd int) (int, error)                  { return -1, ErrUnsupported }
func closeFd(fd int) error                            { return nil }
func unmap(data []byte) error                         { return nil }
func replaceWithPlaceholder(data []byte) error        { return nil }
func syncMapping(data []byte) error                   { return nil } // plain memory: nothing to flush
func removeFileAt(path string, dev, ino uint64) error { return ErrUnsupported }
