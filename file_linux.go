package sketch

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openPath creates the file at path or attaches to the one there.
//
// Every opener, creator or not, takes an exclusive flock on the file before
// it looks at it and holds it until the file is valid or it gives up. A
// creator therefore never shows a half-written header to an attacher, and
// a creator that dies releases the lock with its descriptor, leaving a file
// the next opener can classify: empty or all zero (re-initialised when it
// is ours) or a partial header (ErrInterruptedCreate).
func openPath(path string, sp spec, o options) (*mapping, error) {
	fail := func(err error) (*mapping, error) {
		return nil, fmt.Errorf("sketch: open %s: %w", path, err)
	}
	deadline := time.Now().Add(o.waitTimeout)
	for {
		fd, created, err := openOrCreate(path, o)
		if err != nil {
			return fail(err)
		}
		m, retry, err := initOrAttach(fd, path, created, sp, o, deadline)
		if err != nil {
			unix.Close(fd)
			return fail(err)
		}
		if retry {
			// The path was replaced or unlinked while we waited for the
			// lock: start again on whatever is there now.
			unix.Close(fd)
			if time.Now().After(deadline) {
				return fail(ErrTimeout)
			}
			continue
		}
		m.path = path
		var st unix.Stat_t
		if err := unix.Fstat(m.fd, &st); err == nil {
			m.dev, m.ino = uint64(st.Dev), st.Ino
		}
		return m, nil
	}
}

// openOrCreate opens path with the hardened flags: O_EXCL so that creating
// never follows anything, O_NOFOLLOW so that a symlink planted at the path
// is refused rather than followed, O_CLOEXEC so no child inherits it by
// accident.
func openOrCreate(path string, o options) (fd int, created bool, err error) {
	mode := uint32(o.mode)
	for attempt := 0; ; attempt++ {
		fd, err = -1, error(unix.EEXIST)
		if !o.noCreate {
			fd, err = unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		}
		if err == nil {
			// The umask must not apply: set the mode exactly.
			if err := unix.Fchmod(fd, mode); err != nil {
				unix.Close(fd)
				unix.Unlink(path)
				return -1, false, err
			}
			return fd, true, nil
		}
		if err != unix.EEXIST {
			return -1, false, err
		}
		// O_NONBLOCK: a FIFO or device planted at the path must not block
		// the open; its type is refused right after.
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		switch {
		case err == nil:
			return fd, false, nil
		case err == unix.ELOOP:
			return -1, false, ErrSymlink
		case err == unix.EISDIR || err == unix.ENXIO:
			// A directory, or a socket: not a sketch file.
			return -1, false, fmt.Errorf("%w: %w", ErrCorrupt, err)
		case err == unix.ENOENT && !o.noCreate && attempt < 100:
			continue // removed between the two opens: try to create again
		default:
			return -1, false, err
		}
	}
}

// initOrAttach runs under the file's flock. retry means the descriptor no
// longer names the file at path.
func initOrAttach(fd int, path string, created bool, sp spec, o options, deadline time.Time) (m *mapping, retry bool, err error) {
	if err := lockFile(fd, deadline); err != nil {
		return nil, false, err
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	if !created && !samePath(path, fd) {
		return nil, true, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, fmt.Errorf("%w: not a regular file", ErrCorrupt)
	}
	ours := st.Uid == uint32(os.Geteuid())
	if st.Size == 0 {
		// Ours from O_EXCL, or an empty file an interrupted create left.
		if o.noCreate {
			return nil, false, fmt.Errorf("%w: empty file", ErrCorrupt)
		}
		if !ours {
			return nil, false, fmt.Errorf("%w: empty file owned by uid %d", ErrNotOwner, st.Uid)
		}
		if !created {
			if err := unix.Fchmod(fd, uint32(o.mode)); err != nil {
				return nil, false, err
			}
		}
		m, err := initFile(fd, path, sp)
		if err != nil && created {
			// Nothing valid was ever published here: leave no debris.
			removeIfSame(path, fd)
		}
		return m, false, err
	}
	m, err = attachFd(fd, path, uint64(st.Size), sp)
	if err == nil || !errors.Is(err, errNoMagic) {
		return m, false, err
	}
	// The magic is zero and we hold the lock, so nobody is writing the
	// header: the file is a create that was interrupted.
	zero, zerr := allZero(fd, st.Size)
	if zerr != nil {
		return nil, false, zerr
	}
	if !zero || o.noCreate {
		return nil, false, ErrInterruptedCreate
	}
	need := newLayout(1, []entry{{kind: sp.kind, size: sp.size}}).fileSize
	if uint64(st.Size) != need {
		return nil, false, fmt.Errorf("%w (an all-zero file of %d bytes; the requested shape needs %d)", ErrInterruptedCreate, st.Size, need)
	}
	if !ours {
		return nil, false, fmt.Errorf("%w: all-zero file owned by uid %d", ErrNotOwner, st.Uid)
	}
	if err := unix.Fchmod(fd, uint32(o.mode)); err != nil {
		return nil, false, err
	}
	m, err = initFile(fd, path, sp)
	return m, false, err
}

// lockFile takes the exclusive flock, polling so that the wait is bounded.
func lockFile(fd int, deadline time.Time) error {
	pause := 50 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
		default:
			return fmt.Errorf("flock: %w", err)
		}
		if time.Now().After(deadline) {
			return ErrTimeout
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}

// samePath reports whether fd is still the file at path.
func samePath(path string, fd int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Lstat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Nlink > 0
}

func removeIfSame(path string, fd int) {
	if samePath(path, fd) {
		unix.Unlink(path)
	}
}

func allZero(fd int, size int64) (bool, error) {
	buf := make([]byte, 1<<16)
	for off := int64(0); off < size; {
		n, err := unix.Pread(fd, buf, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		if n == 0 {
			return false, fmt.Errorf("%w: short read", ErrCorrupt)
		}
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		off += int64(n)
	}
	return true, nil
}

// initFile sizes the file, reserving its blocks, writes the header and the
// directory, and publishes the magic last.
func initFile(fd int, name string, sp spec) (*mapping, error) {
	seed := sp.seed
	for seed == 0 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		seed = binary.LittleEndian.Uint64(b[:])
	}
	lay := newLayout(seed, []entry{{kind: sp.kind, size: sp.size, params: sp.params}})
	if lay.fileSize > math.MaxInt {
		return nil, fmt.Errorf("%w: %d bytes cannot be mapped on this platform", ErrInvalidConfig, lay.fileSize)
	}
	if err := reserve(fd, lay.fileSize); err != nil {
		unix.Ftruncate(fd, 0)
		return nil, err
	}
	data, err := unix.Mmap(fd, 0, int(lay.fileSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Ftruncate(fd, 0)
		return nil, fmt.Errorf("mmap %d bytes: %w", lay.fileSize, err)
	}
	encodeHeader(data, lay)
	publishMagic(data)
	return &mapping{name: name, lay: lay, ent: lay.entries[0], fd: fd, data: data}, nil
}

// reserve sizes the file and has the filesystem allocate its blocks now, so
// that a full filesystem fails the create instead of raising SIGBUS in a
// later store through the mapping.
func reserve(fd int, size uint64) error {
	for {
		err := unix.Fallocate(fd, 0, 0, int64(size))
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.ENOSPC, unix.EDQUOT:
			return fmt.Errorf("%w: %d bytes: %w", ErrNoSpace, size, err)
		case unix.EOPNOTSUPP, unix.ENOSYS:
			// The filesystem cannot reserve; size the file sparse.
			return unix.Ftruncate(fd, int64(size))
		default:
			return fmt.Errorf("fallocate %d bytes: %w", size, err)
		}
	}
}

// publishMagic stores the magic with release semantics: every header byte
// written before it is visible to whoever sees the magic.
func publishMagic(data []byte) {
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&data[offMagic])), fileMagic)
}

// attachFd maps a file of the given size and validates it against sp. On
// success the mapping owns fd; on failure the caller still does.
func attachFd(fd int, name string, size uint64, sp spec) (*mapping, error) {
	if size < headerSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than a header", ErrCorrupt, size)
	}
	if size > 1<<48 || size > math.MaxInt {
		return nil, fmt.Errorf("%w: %d bytes is larger than any sketch this platform can map", ErrCorrupt, size)
	}
	data, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	// Read the magic with acquire semantics before anything it publishes.
	_ = atomic.LoadUint64((*uint64)(unsafe.Pointer(&data[offMagic])))
	lay, err := decodeHeader(data)
	if err == nil {
		var e entry
		e, err = pickEntry(lay, sp)
		if err == nil {
			return &mapping{name: name, lay: lay, ent: e, fd: fd, data: data}, nil
		}
	}
	unix.Munmap(data)
	return nil, err
}

// pickEntry finds the structure sp asks for in a standalone file.
func pickEntry(lay layout, sp spec) (entry, error) {
	if sp.seed != 0 && sp.seed != lay.seed {
		return entry{}, fmt.Errorf("%w: seed %#x requested, file has %#x", ErrIncompatible, sp.seed, lay.seed)
	}
	if len(lay.entries) == 0 {
		return entry{}, fmt.Errorf("%w: the directory is empty", ErrCorrupt)
	}
	e := lay.entries[0]
	if e.kind != sp.kind {
		return entry{}, fmt.Errorf("%w: the file holds a %s, not a %s", ErrIncompatible, kindName(e.kind), kindName(sp.kind))
	}
	return e, sp.match(e)
}

func kindName(k uint32) string {
	switch k {
	case kindCountMin:
		return "Count-Min sketch"
	}
	return fmt.Sprintf("structure of kind %d", k)
}

// createMemfd makes an anonymous file-backed sketch whose descriptor can be
// handed to child processes. Its size is sealed, so no holder of the
// descriptor can shrink it under the others' mappings.
func createMemfd(name string, sp spec) (*mapping, error) {
	label := "memfd:" + name
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("sketch: create %s: %w", label, err)
	}
	m, err := initFile(fd, label, sp)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
		if err != nil {
			unmapAndClose(fd, m.data)
			return nil, fmt.Errorf("sketch: create %s: seal: %w", label, err)
		}
		return m, nil
	}
	unix.Close(fd)
	return nil, fmt.Errorf("sketch: create %s: %w", label, err)
}

// attachInherited attaches to a sketch through a descriptor this process
// received (from exec.Cmd.ExtraFiles, say). The descriptor is duplicated,
// so it stays the caller's to close.
func attachInherited(fd uintptr, sp spec) (*mapping, error) {
	label := fmt.Sprintf("fd %d", fd)
	dup, err := dupCloexec(int(fd))
	if err != nil {
		return nil, fmt.Errorf("sketch: attach %s: %w", label, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(dup, &st); err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("sketch: attach %s: %w", label, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(dup)
		return nil, fmt.Errorf("sketch: attach %s: %w: not a regular file", label, ErrCorrupt)
	}
	if fl, err := unix.FcntlInt(uintptr(dup), unix.F_GETFL, 0); err != nil || fl&unix.O_ACCMODE != unix.O_RDWR {
		unix.Close(dup)
		return nil, fmt.Errorf("sketch: attach %s: %w: the descriptor is not open for reading and writing", label, ErrInvalidArgument)
	}
	m, err := attachFd(dup, label, uint64(st.Size), sp)
	if err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("sketch: attach %s: %w", label, err)
	}
	return m, nil
}

func dupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

func unmapAndClose(fd int, data []byte) error {
	var err error
	if data != nil {
		err = unix.Munmap(data)
	}
	if fd >= 0 {
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
	}
	return err
}

// isFileAt reports whether path still names the file with this identity.
func isFileAt(path string, dev, ino uint64) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && uint64(st.Dev) == dev && st.Ino == ino
}

func syncMapping(data []byte) error {
	return unix.Msync(data, unix.MS_SYNC)
}
