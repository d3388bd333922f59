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
	"strings"

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

// Descriptors. A descriptor handed over (inherited, or received over a
// unix socket) has no path, so only the owner's uid and WithOwner can
// vouch for a file behind one. A memfd is owned by the user whose process
// made it (fstat gives its uid): a memfd another user made is held to the
// owner rule as that user's file would be. Sealing its size keeps its
// maker from truncating it, but not from keeping a writable descriptor and
// writing its lock words and counters while this process uses it.

// sizeSeals are the seals that fix a memfd's size.
const sizeSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW

// checkDescriptor refuses the file behind a descriptor another process
// handed over when someone the caller has no reason to trust could change
// it under this process: a memfd without sizeSeals, which any holder could
// truncate (ErrUnsealed), any file whose owner, or memfd whose maker, is
// not trusted (ErrNotOwner), and a file every user may write that is not
// size-sealed (ErrLooseMode).
func checkDescriptor(fd int, st *unix.Stat_t, o *options) error {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	sealed := err == nil && seals&sizeSeals == sizeSeals
	memfd := isMemfd(fd, st, err == nil)
	if !sealed && memfd {
		return fmt.Errorf("%w: a memfd of %s without the F_SEAL_SHRINK and F_SEAL_GROW seals, which any holder could truncate under this process; create it with the Memfd place, which seals it", ErrUnsealed, describeUID(st.Uid))
	}
	if !trustedUID(st.Uid, o) {
		if sealed {
			return fmt.Errorf("%w: %s made the memfd behind the descriptor and may keep a writable descriptor to it, with which it could write its lock words and counters under this process; pass sketch.WithOwner(%d) to trust that user", ErrNotOwner, describeUID(st.Uid), st.Uid)
		}
		return fmt.Errorf("%w: %s owns the file behind the descriptor and could truncate it under this process; pass sketch.WithOwner(%d) to trust that user", ErrNotOwner, describeUID(st.Uid), st.Uid)
	}
	return checkLooseMode(st, sealed)
}

// checkLooseMode refuses, for reading and writing, a file that every user
// may write (o+w), with ErrLooseMode: any of them could truncate it under
// this process (SIGBUS), rewrite it or hold its lock, whoever owns it. A
// memfd whose size is sealed is exempt: its mode (0777) opens nothing,
// since it has no name to open it by, and no holder can change its size.
// Reading such a file is allowed (WithReadOnly): a reader risks only itself.
func checkLooseMode(st *unix.Stat_t, sizeSealed bool) error {
	if st.Mode&0o002 == 0 || sizeSealed {
		return nil
	}
	return fmt.Errorf("%w: mode %#o lets every user write it, and so truncate it under this process (which dies with SIGBUS) or hold its lock; take their write permission away (chmod o-w) and, since a descriptor another user opened while it was writable stays writable, make a new file (sketch snapshot, or create and merge) rather than trust this one after a chmod; or open it with WithReadOnly", ErrLooseMode, st.Mode&0o7777)
}

// sizeSealed reports whether fd's size is sealed (a memfd the Memfd place
// made, or sealed like one).
func sizeSealed(fd int) bool {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	return err == nil && seals&sizeSeals == sizeSeals
}

// isMemfd reports whether fd is a memfd: /proc names it "/memfd:NAME".
// Without /proc, a file that takes seals (shmem) and has no link is one,
// or a tmpfs file unlinked since, which is held to the same rule.
func isMemfd(fd int, st *unix.Stat_t, sealable bool) bool {
	if link, err := os.Readlink(procFdPath(fd)); err == nil {
		return strings.HasPrefix(link, "/memfd:")
	}
	return sealable && st.Nlink == 0
}

// checkMemorySize refuses a memory-backed file (a memfd, or tmpfs: the
// files that take seals) larger than the machine's memory, as a create
// does: a memfd has no size limit of its own, and walking one that is
// sparse would end in the OOM killer, not in an error.
func checkMemorySize(fd int, size uint64) error {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0); err != nil {
		return nil // not memory-backed
	}
	if ram, over := moreThanRAM(size); over {
		return fmt.Errorf("%w: a memory-backed file of %d bytes is more than this machine's memory (%d)", ErrNoSpace, size, ram)
	}
	return nil
}

// moreThanRAM reports whether size bytes exceed the machine's memory, and
// that memory (false when it cannot be told).
func moreThanRAM(size uint64) (ram uint64, over bool) {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0, false
	}
	ram = uint64(si.Totalram) * uint64(si.Unit)
	return ram, size > ram
}

// Holes. Every page a process touches in a hole of a file is allocated
// then, at that process's cost: a read fault on tmpfs takes a page of the
// shared filesystem (or of memory, for a memfd), and a walk over a huge
// file on disk takes as long as the file is big. The file's owner spent
// nothing. So a file of another user is attached only when its allocated
// blocks cover its size, as the library's creates make them (fallocate).
//
// Blocks, not SEEK_HOLE: ext4 reports a fallocated but unwritten extent as
// a hole until it is written, which would refuse every new file, while
// st_blocks counts those blocks as they are reserved. A file's own
// caller is exempt: its holes cost only itself, and a filesystem without
// fallocate leaves the library's own creates sparse.

// checkBacked refuses a file of another user whose allocated blocks fall
// short of its size (ErrSparse).
func checkBacked(st *unix.Stat_t) error {
	if st.Uid == uint32(os.Geteuid()) || st.Size <= 0 {
		return nil
	}
	if allocated := st.Blocks * 512; allocated < st.Size {
		return fmt.Errorf("%w: %d of its %d bytes are holes (%s owns it; a process that reads them pays for their pages, not the owner)", ErrSparse, st.Size-allocated, st.Size, describeUID(st.Uid))
	}
	return nil
}
