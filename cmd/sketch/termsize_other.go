//go:build !unix

package main

import "os"

// termSize is the width and height of the terminal f is, 0 when unknown.
func termSize(f *os.File) (width, height int) { return 0, 0 }
