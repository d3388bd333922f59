//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// termSize is the width and height of the terminal f is, 0 when unknown.
func termSize(f *os.File) (width, height int) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}
