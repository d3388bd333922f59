//go:build !linux

package main

import "errors"

// blockTokenBytes read-locks every free token byte of the file at path
// (OFD locks, from 2^62: token_linux.go; the bytes of open handles are
// write-locked), as any reader of a file may, so that a handle opened
// meanwhile cannot take its byte and is asked by its PID and start time
// instead. unblock lets them go; handles opened meanwhile stay
// in PID mode. Keep in sync with arch_ofd_linux.go.
func blockTokenBytes(path string) (unblock func(), err error) {
	return nil, errors.New("OFD locks are Linux's")
}
