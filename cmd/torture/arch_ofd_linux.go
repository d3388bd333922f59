package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// blockTokenBytes read-locks every free token byte of the file at path
// (OFD locks, from 2^62: token_linux.go; the bytes of open handles are
// write-locked), as any reader of a file may, so that a handle opened
// meanwhile cannot take its byte and is asked by its PID and start time
// instead. unblock lets them go; handles opened meanwhile stay
// in PID mode. Keep in sync with arch_ofd_other.go.
func blockTokenBytes(path string) (unblock func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// Twice: a recovery elsewhere holds a dead holder's byte for a moment,
	// and that is the id the next handle takes.
	locked := 0
	for pass := 0; pass < 2; pass++ {
		if pass > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		locked = 0
		for id := int64(0); id < 1<<12; id++ {
			lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: io.SeekStart, Start: 1<<62 + id, Len: 1}
			if unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk) == nil {
				locked++
			}
		}
	}
	if locked == 0 {
		f.Close()
		return nil, fmt.Errorf("%s: no token byte could be read-locked", path)
	}
	return func() { f.Close() }, nil
}
