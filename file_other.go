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

// createNewPath is createNewPath of file_linux.go: files at a path
// need Linux.
func createNewPath(path string, sp spec, o options) (*mapping, error) {
	return nil, ErrUnsupported
}

// Elsewhere than Linux an arena is plain memory of one process, with no
// descriptor: the counts of its handles say who holds a room, and these
// are never called.

func reopenForLocks(fd int, write bool) (int, bool, error) { return fd, false, nil }
func lockOldRoom(fd int, idx uint32, hold bool) error      { return nil }
func markRoom(fd int, idx uint32) (int64, bool, error)     { return 0, false, nil }
func unmarkRoom(fd int, off int64)                         {}
func roomMarked(fd int, idx uint32) bool                   { return true }
func oldRoomLocked(fd int, idx uint32) bool                { return true }

// Elsewhere than Linux a window lives in one handle's memory, so every
// clearer is one of the handle's own goroutines, which wait for each other:
// nobody is ever taken for dead.

// heldToken is what holdDeadToken holds: nothing here.
type heldToken struct{}

func tokenID(lk *fileLock) int                              { return 0 }
func tokenAlive(lk *fileLock, tag int) bool                 { return true }
func holdDeadToken(lk *fileLock, tag int) (heldToken, bool) { return heldToken{}, false }
func releaseDeadToken(lk *fileLock, h heldToken)            {}

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
