package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes at dir, which it creates, with
// more mount options when given ("nr_inodes=8"), and returns what takes it
// away again (lazily when something still holds it) and removes dir. Not
// being root, or a refused mount, is a skip: the fault cannot run here.
func mountTmpfs(dir string, size int64, more ...string) (func() error, error) {
	if os.Geteuid() != 0 {
		return nil, skipped{"not root: mounting a tmpfs of its own needs root"}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	opts := strings.Join(append([]string{fmt.Sprintf("size=%d,mode=0700", size)}, more...), ",")
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return nil, skipped{fmt.Sprintf("mount -t tmpfs -o %s: %v", opts, err)}
	}
	return func() error {
		err := unix.Unmount(dir, 0)
		if errors.Is(err, unix.EBUSY) {
			err = unix.Unmount(dir, unix.MNT_DETACH)
		}
		if err != nil {
			return fmt.Errorf("unmount %s: %w", dir, err)
		}
		return os.Remove(dir)
	}, nil
}

// remountReadOnly makes the tmpfs at dir read-only. The kernel refuses
// (EBUSY) while any file on it is open for writing.
func remountReadOnly(dir string) error {
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", dir, err)
	}
	return nil
}

// freeBytes is what the filesystem of dir has left.
func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bfree * uint64(st.Bsize), nil
}

// listDir names what dir holds, hidden names (a library's temporary file)
// included, sorted.
func listDir(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// openFds counts this process's open descriptors below limit without
// opening one (reading /proc/self/fd would need a descriptor, which at
// the limit there is not).
func openFds(limit int) int {
	n := 0
	for fd := 0; fd < limit; fd++ {
		if fdOpen(fd) {
			n++
		}
	}
	return n
}

func fdOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}
