package sketch

// Whose files a process attaches to. Whoever owns a sketch file can change
// its mode, rewrite its seed, or truncate it under every process that maps
// it (those processes die with SIGBUS, which recover cannot catch). A file
// found at a path is therefore attached only when its owner is someone the
// caller has reason to trust:
//
//   - the caller itself, or root;
//   - a uid named with WithOwner;
//   - the owner of the directory the file sits in, when nobody else can
//     write that directory and every directory above it is owned by root,
//     the caller or a trusted uid and writable by nobody else (the
//     reasoning of sshd's StrictModes): then the path the caller chose is
//     that user's private place, and only that user could have put the
//     file there. A file in a shared directory such as /dev/shm or /tmp,
//     where anyone may create names, never qualifies this way.

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// checkOwner refuses a file at path (with stat st) whose owner the caller
// has no reason to trust, with an error wrapping ErrNotOwner.
func checkOwner(path string, st *unix.Stat_t, o *options) error {
	uid := st.Uid
	if trustedUID(uid, o) || privateDirOf(path, uid, o) {
		return nil
	}
	return fmt.Errorf("%w: %s owns it and could rewrite or truncate it under this process; pass sketch.WithOwner(%d) to trust that user", ErrNotOwner, describeUID(uid), uid)
}

func trustedUID(uid uint32, o *options) bool {
	return uid == uint32(os.Geteuid()) || uid == 0 || o.trusts(uid)
}

// privateDirOf reports whether the directory holding path belongs to uid
// and nobody else can write it, every directory above it belongs to a
// trusted user and is writable by nobody else, and the same holds for
// every directory the path passes through as written: a symlink in a
// shared directory (say /dev/shm/app pointing into uid's directory) would
// otherwise let uid choose what the caller's path means.
func privateDirOf(path string, uid uint32, o *options) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	dir := filepath.Dir(abs)
	// The directories that hold each component of the path as written,
	// up to the file's own directory.
	for d := dir; d != "/"; {
		d = filepath.Dir(d)
		if !unsharedDir(d, o) {
			return false
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	if unix.Stat(real, &st) != nil || st.Uid != uid || st.Mode&0o022 != 0 {
		return false
	}
	for real != "/" {
		real = filepath.Dir(real)
		if !unsharedDir(real, o) {
			return false
		}
	}
	return true
}

// unsharedDir reports whether dir (followed through symlinks) belongs to a
// trusted user and nobody else may write it.
func unsharedDir(dir string, o *options) bool {
	var st unix.Stat_t
	return unix.Stat(dir, &st) == nil && trustedUID(st.Uid, o) && st.Mode&0o022 == 0
}

// describeUID names a uid for a message: "uid 65534 (nobody)".
func describeUID(uid uint32) string {
	s := "uid " + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}
