//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapShared maps size bytes of f read-write and shared, so that what one
// process stores is what every other one mapping f loads, and survives the
// process. Keep in sync with mmap_other.go.
func mapShared(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// unmap releases a mapping made by mapShared.
func unmap(mem []byte) error { return unix.Munmap(mem) }
