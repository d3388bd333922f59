//go:build unix

package main

import (
	"os"
	"syscall"
)

// fileUID is the owner of the file st describes; false when it cannot be
// told.
func fileUID(st os.FileInfo) (uint32, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return sys.Uid, true
}
