//go:build !unix

package main

import (
	"errors"
	"os"
)

// mapShared maps size bytes of f read-write and shared, so that what one
// process stores is what every other one mapping f loads, and survives the
// process. Keep in sync with mmap_unix.go.
func mapShared(f *os.File, size int) ([]byte, error) {
	return nil, errors.New("shared mappings need a Unix system (the library runs on Linux only)")
}

// unmap releases a mapping made by mapShared.
func unmap(mem []byte) error { return nil }
