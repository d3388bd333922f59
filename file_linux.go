package sketch

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openPath creates the file at path or attaches to the one there.
//
// A file is published at its path only when it is complete: the creator
// builds it under no name (O_TMPFILE) or a private temporary name in the
// same directory, with its exact mode, reserved blocks and whole header,
// then links it to path, which fails if anything is there already. So an
// opener that finds a file with a magic attaches without any lock, a
// racing creator that loses the link attaches to the winner's file, and
// nobody who can merely read the file can delay anyone.
//
// The one file that is incomplete at its path is one the caller adopts: an
// empty file prepared for it (an administrator chose its owner and place),
// or the all-zero file an adopter killed part way left. Adopting takes an
// exclusive flock, held by the adopter only; openers that find such a file
// wait for its magic, bounded by the wait timeout.
func openPath(path string, sp spec, o options) (*mapping, error) {
	if path == "" {
		return nil, fmt.Errorf("sketch: open: %w", errEmptyPath)
	}
	if o.readOnly {
		return openReadOnly(path, sp, o)
	}
	fail := func(err error) (*mapping, error) {
		return nil, fmt.Errorf("sketch: open %s: %w", path, err)
	}
	deadline := time.Now().Add(o.waitTimeout)
	for {
		m, err := attachPath(path, sp, o, deadline)
		switch {
		case err == nil:
			return m, nil
		case errors.Is(err, errRetry):
			// The path changed while we looked: look again.
		case errors.Is(err, fs.ErrNotExist) && !o.noCreate && !descriptorPath(path):
			m, err = createPath(path, sp, o)
			if err == nil {
				return m, nil
			}
			if !errors.Is(err, fs.ErrExist) {
				return fail(err)
			}
			// Another opener published first: attach to its file.
		default:
			return fail(err)
		}
		if time.Now().After(deadline) {
			return fail(ErrTimeout)
		}
	}
}

// openExisting opens the file at path with access mode (O_RDWR or
// O_RDONLY). O_NOFOLLOW: a symlink planted at the path is refused
// (ErrSymlink) rather than followed. O_NONBLOCK: a FIFO or device planted
// there must not block the open; its type is refused after it.
//
// A descriptor's path (/proc/self/fd/N and the like, descriptorPath) is
// the one link followed: it names a file some process holds open, not a
// name in a directory anyone could plant a link in, and it is how a
// descriptor is often handed to a program. The file it opens is judged
// as any other.
func openExisting(path string, access int) (int, error) {
	flags := access | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK
	if descriptorPath(path) {
		flags &^= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(path, flags, 0)
	switch {
	case err == unix.ELOOP:
		return -1, ErrSymlink
	case err == unix.EISDIR || err == unix.ENXIO:
		// A directory, or a socket: not a sketch file.
		return -1, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return fd, err
}

// descriptorPath reports whether path names an open descriptor rather than
// a directory entry: /proc/self/fd/N, /proc/thread-self/fd/N,
// /proc/PID/fd/N or /dev/fd/N, exactly (no other component, no trailing
// slash). Such a path is followed to its file, never created, and is no
// path to Unlink.
func descriptorPath(path string) bool {
	var rest string
	switch {
	case strings.HasPrefix(path, "/proc/self/fd/"):
		rest = path[len("/proc/self/fd/"):]
	case strings.HasPrefix(path, "/proc/thread-self/fd/"):
		rest = path[len("/proc/thread-self/fd/"):]
	case strings.HasPrefix(path, "/dev/fd/"):
		rest = path[len("/dev/fd/"):]
	case strings.HasPrefix(path, "/proc/"):
		pid, fd, ok := strings.Cut(path[len("/proc/"):], "/fd/")
		if !ok || !allDigits(pid) {
			return false
		}
		rest = fd
	default:
		return false
	}
	return allDigits(rest)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// pathOf is the path a handle opened at path keeps for Path and Unlink:
// none for a descriptor's path, which names no directory entry.
func pathOf(path string) string {
	if descriptorPath(path) {
		return ""
	}
	return path
}

// errEmptyPath is the error for an empty path, which would otherwise read
// as a missing file with no name.
var errEmptyPath = fmt.Errorf("%w: the path is empty", ErrInvalidArgument)

// errShortFile is the one answer every route gives for a file shorter than
// a header: a damaged file (a create sizes it whole first), not an
// interrupted create.
func errShortFile(size uint64) error {
	return fmt.Errorf("%w: %d bytes is shorter than a header (a damaged or truncated file, not a create under way)", ErrCorrupt, size)
}

// errRetry means the file at the path changed while an opener looked at it.
var errRetry = errors.New("the path changed while it was opened")

// attachPath opens the file at path, which must be a regular file owned by
// someone the caller trusts, and attaches to it, adopting it first when it
// is empty or all zero and the caller may.
func attachPath(path string, sp spec, o options, deadline time.Time) (*mapping, error) {
	fd, err := openExisting(path, unix.O_RDWR)
	if err != nil {
		return nil, err
	}
	m, err := attachOpened(fd, path, sp, o, deadline)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	m.path = pathOf(path)
	m.dev, m.ino = fileID(fd)
	return m, nil
}

func attachOpened(fd int, path string, sp spec, o options, deadline time.Time) (*mapping, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: not a regular file", ErrCorrupt)
	}
	if err := checkOwner(path, &st, &o); err != nil {
		return nil, err
	}
	if err := checkLooseMode(&st, sizeSealed(fd)); err != nil {
		return nil, err
	}
	if st.Size != 0 {
		m, err := attachFd(fd, path, uint64(st.Size), sp, false)
		if err == nil || !errors.Is(err, errNoMagic) {
			return m, err
		}
	}
	return adopt(fd, path, sp, o, deadline)
}

// adopt handles a file at the path that is empty or whose magic is zero:
// it waits while another process initialises it, then attaches; when
// nobody is, it initialises the file itself if it is the caller's, has no
// other link, and is empty or all zero of the size the caller's shape
// needs. Anything else with a zero magic holds part of a header.
func adopt(fd int, path string, sp spec, o options, deadline time.Time) (*mapping, error) {
	if err := checkReadableCandidate(fd, sp, o); err != nil {
		return nil, err
	}
	if done, err := lockOrPublished(fd, deadline); err != nil {
		if errors.Is(err, ErrTimeout) && fileSize(fd) == 0 {
			return nil, fmt.Errorf("%w: another process held the empty file's flock all along: an opener adopting it, or one that opened it while others could (remove it and prepare it again with mode 0600)", err)
		}
		return nil, err
	} else if done {
		return attachFd(fd, path, fileSize(fd), sp, false)
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	if !samePath(path, fd) {
		return nil, errRetry
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Size != 0 {
		// Someone may have finished between our look and the lock.
		m, err := attachFd(fd, path, uint64(st.Size), sp, false)
		if err == nil || !errors.Is(err, errNoMagic) {
			return m, err
		}
	}
	// Nobody is initialising the file: it is ours to adopt, or debris.
	if o.noCreate {
		if st.Size == 0 {
			return nil, fmt.Errorf("%w: empty file (an opener without WithoutCreate initialises it)", ErrCorrupt)
		}
		return nil, ErrInterruptedCreate
	}
	if sp.size == 0 {
		// Nothing to create: a partly written header is still what a
		// create cut short left, and says so; an empty or all-zero file
		// has nothing to attach to.
		if st.Size != 0 {
			if zero, err := allZero(fd, st.Size, deadline); err != nil {
				return nil, err
			} else if !zero {
				return nil, ErrInterruptedCreate
			}
		}
		return nil, errCannotAdopt
	}
	if err := adoptable(fd, &st, sp, o, deadline); err != nil {
		return nil, err
	}
	return initOwnerOnly(fd, path, sp, o)
}

// adoptable refuses an empty or all-zero file that is not safe to
// initialise: not the requested shape, not the caller's, linked twice,
// or open to others beyond the requested mode.
func adoptable(fd int, st *unix.Stat_t, sp spec, o options, deadline time.Time) error {
	what := "empty file"
	if st.Size != 0 {
		need := sp.fileSize()
		if uint64(st.Size) != need {
			return fmt.Errorf("%w (%d bytes with a zero magic; the requested shape needs %d)", ErrInterruptedCreate, st.Size, need)
		}
		what = "all-zero file"
	}
	if st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("%w: an %s owned by %s is not adopted", ErrNotOwner, what, describeUID(st.Uid))
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%w: an %s with %d links is not adopted (another name could be someone else's file)", ErrHardLinked, what, st.Nlink)
	}
	if extra := uint32(st.Mode) & 0o777 &^ uint32(o.mode); extra&0o022 != 0 || st.Mode&0o006 != 0 {
		// Whoever could write it may hold a descriptor already, which the
		// fchmod below would not take back; whoever could open it may hold
		// its flock (checkReadableCandidate, which the mode passed before).
		return fmt.Errorf("%w: an %s of mode %#o lets others write or open it, more than the requested mode %#o; they may hold it open already", ErrLooseMode, what, st.Mode&0o777, uint32(o.mode))
	}
	if st.Size != 0 {
		zero, err := allZero(fd, st.Size, deadline)
		if err != nil {
			return err
		}
		if !zero {
			return ErrInterruptedCreate
		}
	}
	return nil
}

// initOwnerOnly initialises the file to adopt, owner-only until its magic
// is published, then gives it the requested mode.
func initOwnerOnly(fd int, path string, sp spec, o options) (*mapping, error) {
	// Owner only while the file is initialised: an adopter killed part
	// way leaves an all-zero file nobody else could open, which the next
	// adopter takes over (checkReadableCandidate). The requested mode
	// comes once the magic is published.
	if err := unix.Fchmod(fd, uint32(o.mode)&0o700); err != nil {
		return nil, err
	}
	m, err := initFile(fd, path, sp)
	if err != nil {
		return nil, err
	}
	if err := unix.Fchmod(fd, uint32(o.mode)); err != nil {
		m.res.drop()
		return nil, err
	}
	return m, nil
}

// checkReadableCandidate refuses, before any lock is waited for, an empty
// or all-zero file that the caller would adopt (its own, with a shape to
// create) when every user may open it (o+r or o+w): ErrLooseMode. The
// adopter's lock is an exclusive flock, and anyone who can open a file
// can hold a shared flock on it for as long as they like, which would
// keep every adoption waiting for good. No lock a reader cannot also
// block exists (a read lock conflicts with every write lock), so such a
// file is refused instead: prepare it with mode 0600 (or 0640 for a group
// trusted not to do that), and the adopter gives it the requested mode
// once it is a sketch.
func checkReadableCandidate(fd int, sp spec, o options) error {
	if o.noCreate || sp.size == 0 {
		return nil // it only waits for an adopter
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Uid != uint32(os.Geteuid()) || st.Mode&0o006 == 0 {
		return nil // not ours to adopt (refused under the lock), or closed to others
	}
	what := "empty file"
	if st.Size != 0 {
		what = "all-zero file"
	}
	return fmt.Errorf("%w: an %s of mode %#o, which every user may open, is not adopted: whoever opens it can hold its flock and keep it from adoption for good; remove it and prepare it again with mode 0600 (chmod o-rw does not close a descriptor opened already), and the adopter gives it the requested mode", ErrLooseMode, what, st.Mode&0o777)
}

// lockOrPublished takes the file's exclusive flock, or reports done when
// the magic appears while another process holds it (the adopter finished).
// The wait is bounded by deadline.
func lockOrPublished(fd int, deadline time.Time) (done bool, err error) {
	pause := 50 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch err {
		case nil:
			return false, nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
		default:
			return false, fmt.Errorf("flock: %w", err)
		}
		if hasMagic(fd) {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, ErrTimeout
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}

// hasMagic reports whether the file's magic has been published.
func hasMagic(fd int) bool {
	var b [8]byte
	n, err := unix.Pread(fd, b[:], offMagic)
	return err == nil && n == len(b) && native.Uint64(b[:]) != 0
}

func fileSize(fd int) uint64 {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	return uint64(st.Size)
}

func fileID(fd int) (dev, ino uint64) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0, 0
	}
	return uint64(st.Dev), st.Ino
}

// createPath builds a complete sketch file under no name and links it to
// path. It returns an error wrapping fs.ErrExist when something got there
// first; the caller then attaches to it.
func createPath(path string, sp spec, o options) (*mapping, error) {
	if sp.size == 0 {
		return nil, errCannotCreate
	}
	m, err := createAs(path, sp, o, true)
	if errors.Is(err, errCannotLinkTmpfile) {
		// The O_TMPFILE file could not be given a name (no /proc, and no
		// capability to link by descriptor): build it under a private one.
		m, err = createAs(path, sp, o, false)
	}
	return m, err
}

// errCannotLinkTmpfile means an O_TMPFILE file could not be linked by
// either route.
var errCannotLinkTmpfile = errors.New("cannot link an O_TMPFILE file here")

func createAs(path string, sp spec, o options, tmpfile bool) (*mapping, error) {
	tmp, err := newTempFile(path, o.mode, tmpfile)
	if err != nil {
		return nil, err
	}
	discard := func() {
		unix.Close(tmp.fd)
		if tmp.name != "" {
			unix.Unlink(tmp.name)
		}
	}
	// The umask must not apply: set the mode exactly, before anyone can
	// see the file.
	if err := unix.Fchmod(tmp.fd, uint32(o.mode)); err != nil {
		discard()
		return nil, err
	}
	m, err := initFile(tmp.fd, path, sp)
	if err != nil {
		discard()
		return nil, err
	}
	if err := tmp.publish(path); err != nil {
		m.res.drop()
		discard()
		return nil, err
	}
	m.path = path
	m.dev, m.ino = fileID(tmp.fd)
	return m, nil
}

// tempFile is a file being built before it is published at its path: an
// O_TMPFILE file with no name, or, where the filesystem has none, a file
// under a private name in the same directory.
type tempFile struct {
	fd   int
	name string // "" for an O_TMPFILE file
}

func newTempFile(path string, mode os.FileMode, tmpfile bool) (tempFile, error) {
	dir := filepath.Dir(path)
	if tmpfile {
		fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, uint32(mode))
		switch err {
		case nil:
			return tempFile{fd: fd}, nil
		case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL:
			// The filesystem has no O_TMPFILE: use a private name.
		default:
			return tempFile{}, noSpace(err)
		}
	}
	for {
		name := privateName(dir, ".tmp")
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode))
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return tempFile{}, noSpace(err)
		}
		return tempFile{fd: fd, name: name}, nil
	}
}

// noSpace makes a filesystem out of inodes (or of quota) while the file
// is made ErrNoSpace, as one out of blocks is while it is reserved.
func noSpace(err error) error {
	if err == unix.ENOSPC || err == unix.EDQUOT {
		return fmt.Errorf("%w: no inode for the file: %w", ErrNoSpace, err)
	}
	return err
}

// privateName is a hidden name in dir that nobody else uses. It does not
// repeat the sketch's own name, so that a long name still fits.
func privateName(dir, suffix string) string {
	var b [8]byte
	rand.Read(b[:])
	return filepath.Join(dir, ".sketch-"+strconv.FormatUint(binary.LittleEndian.Uint64(b[:]), 36)+suffix)
}

// publish links the complete file to path. link(2) never replaces what is
// there: an existing path fails with EEXIST, which wraps fs.ErrExist.
func (t tempFile) publish(path string) error {
	if t.name != "" {
		err := unix.Link(t.name, path)
		unix.Unlink(t.name)
		return err
	}
	// Linking a descriptor (AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH
	// before Linux 6.10; the /proc/self/fd route works for everyone where
	// /proc is mounted. When neither works, the caller starts again with a
	// private name.
	err := unix.Linkat(t.fd, "", unix.AT_FDCWD, path, unix.AT_EMPTY_PATH)
	if err == unix.ENOENT || err == unix.EPERM || err == unix.EINVAL {
		err = unix.Linkat(unix.AT_FDCWD, procFdPath(t.fd), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
		if err == unix.ENOENT || err == unix.EPERM || err == unix.EACCES {
			if _, serr := os.Stat(filepath.Dir(path)); serr == nil {
				return errCannotLinkTmpfile
			}
		}
	}
	return err
}

func procFdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// samePath reports whether fd is still the file at path.
func samePath(path string, fd int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Lstat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Nlink > 0
}

// allZero reports whether the file's first size bytes are all zero. It
// stops at the deadline (ErrTimeout): a huge sparse file must not hold an
// opener for longer than it agreed to wait.
func allZero(fd int, size int64, deadline time.Time) (bool, error) {
	buf := make([]byte, 1<<16)
	for off := int64(0); off < size; {
		if time.Now().After(deadline) {
			return false, fmt.Errorf("%w: reading the %d-byte all-zero candidate", ErrTimeout, size)
		}
		n, err := unix.Pread(fd, buf[:min(int64(len(buf)), size-off)], off)
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
	lay, err := sp.layout()
	if err != nil {
		return nil, err
	}
	if err := reserve(fd, lay.fileSize); err != nil {
		unix.Ftruncate(fd, 0)
		return nil, err
	}
	data, err := unix.Mmap(fd, 0, int(lay.fileSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Ftruncate(fd, 0)
		if err == unix.ENOMEM {
			return nil, fmt.Errorf("%w: mmap %d bytes: %w (more than this process may map; the config's Bytes method says what a shape needs)", ErrInvalidConfig, lay.fileSize, err)
		}
		return nil, fmt.Errorf("mmap %d bytes: %w", lay.fileSize, err)
	}
	encodeHeader(data, lay)
	if sp.fill != nil {
		if err := sp.fill(data, lay); err != nil {
			unix.Munmap(data)
			unix.Ftruncate(fd, 0)
			return nil, err
		}
	}
	publishMagic(data)
	return newMapping(name, fd, data, lay, lay.first()), nil
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
			// The filesystem cannot reserve; size the file sparse. Its
			// owner uses it as before; other users refuse it (ErrSparse),
			// since they would pay for its holes (checkBacked).
			return unix.Ftruncate(fd, int64(size))
		default:
			return fmt.Errorf("fallocate %d bytes: %w", size, err)
		}
	}
}

// attachFd maps a file of the given size and validates it against sp. On
// success the mapping owns fd; on failure the caller still does.
func attachFd(fd int, name string, size uint64, sp spec, readOnly bool) (*mapping, error) {
	if size < headerSize {
		return nil, errShortFile(size)
	}
	if size > maxFileSize || size > math.MaxInt {
		return nil, fmt.Errorf("%w: %d bytes is more than a sketch file may have on this platform (%d)", ErrCorrupt, size, uint64(min(maxFileSize, math.MaxInt)))
	}
	prot := unix.PROT_READ | unix.PROT_WRITE
	if readOnly {
		prot = unix.PROT_READ
	}
	data, err := unix.Mmap(fd, 0, int(size), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	// Read the magic with acquire semantics before anything it publishes.
	_ = atomic.LoadUint64((*uint64)(unsafe.Pointer(&data[offMagic])))
	lay, err := decodeHeader(data)
	if err == nil {
		// Only a valid file is judged by its blocks: one with a zero magic
		// may be an adoption candidate, which initialising fills.
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err == nil {
			err = checkBacked(&st)
		}
	}
	if err == nil && !readOnly && isSealed(data) {
		err = fmt.Errorf("%w: a sealed file opens read-only only (WithReadOnly)", ErrFrozen)
	}
	if err == nil {
		var e entry
		e, err = pickEntry(lay, sp)
		if err == nil {
			m := newMapping(name, fd, data, lay, e)
			m.readOnly = readOnly
			return m, nil
		}
	}
	unix.Munmap(data)
	return nil, err
}

// createMemfd makes an anonymous file-backed sketch whose descriptor can be
// handed to child processes. Its size is sealed, so no holder of the
// descriptor can shrink it under the others' mappings.
func createMemfd(name string, sp spec) (*mapping, error) {
	// A memfd lives in the kernel's internal tmpfs, which has no size
	// limit: reserving more than the machine's memory would end in the
	// OOM killer, not in an error.
	size := sp.fileSize()
	if ram, over := moreThanRAM(size); over {
		return nil, fmt.Errorf("sketch: create memfd:%s: %w: %d bytes is more than this machine's memory (%d)", name, ErrNoSpace, size, ram)
	}
	label := "memfd:" + name
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("sketch: create %s: %w", label, err)
	}
	m, err := initFile(fd, label, sp)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("sketch: create %s: seal: %w", label, err)
		}
		return m, nil
	}
	unix.Close(fd)
	return nil, fmt.Errorf("sketch: create %s: %w", label, err)
}

// createInMemory makes a structure for one process: an unnamed memfd, so
// that it works like a file's (a child can still be handed it) and its
// lock has liveness tokens.
func createInMemory(sp spec) (*mapping, error) {
	m, err := createMemfd("sketch", sp)
	if err != nil {
		return nil, err
	}
	m.name = "in-memory sketch"
	return m, nil
}

// attachInherited attaches to a sketch through a descriptor this process
// received (from exec.Cmd.ExtraFiles, say). The descriptor is duplicated,
// so it stays the caller's to close.
func attachInherited(fd uintptr, sp spec, o options) (*mapping, error) {
	label := fmt.Sprintf("fd %d", fd)
	fail := func(err error) (*mapping, error) {
		return nil, fmt.Errorf("sketch: attach %s: %w", label, err)
	}
	dup, err := dupCloexec(int(fd))
	if err != nil {
		return fail(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(dup, &st); err != nil {
		unix.Close(dup)
		return fail(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(dup)
		return fail(fmt.Errorf("%w: not a regular file", ErrCorrupt))
	}
	fl, err := unix.FcntlInt(uintptr(dup), unix.F_GETFL, 0)
	if err != nil || (fl&unix.O_ACCMODE != unix.O_RDWR && !(o.readOnly && fl&unix.O_ACCMODE == unix.O_RDONLY)) {
		unix.Close(dup)
		return fail(fmt.Errorf("%w: the descriptor is not open for reading and writing (WithReadOnly attaches a read-only one)", ErrInvalidArgument))
	}
	if !o.readOnly {
		// A read-only view skips the rule, as a read-only open does.
		if err := checkDescriptor(dup, &st, &o); err != nil {
			unix.Close(dup)
			return fail(err)
		}
	}
	if err := checkMemorySize(dup, uint64(st.Size)); err != nil {
		unix.Close(dup)
		return fail(err)
	}
	m, err := attachFd(dup, label, uint64(st.Size), sp, o.readOnly)
	if m != nil {
		m.sharedOFD = true
	}
	if errors.Is(err, errNoMagic) {
		// A descriptor is handed over after its creator initialised it,
		// so a zero magic is a create that never finished.
		err = ErrInterruptedCreate
	}
	if err != nil {
		unix.Close(dup)
		return fail(err)
	}
	return m, nil
}

// openReadOnly attaches to the file at path for reading only: O_RDONLY, a
// PROT_READ mapping, no create, no adoption, no owner rule (a reader risks
// only itself, though not another user's holes: attachFd refuses those)
// and no lock. A file whose magic is not published yet is
// waited for while someone initialises it (holds its flock), and is
// ErrInterruptedCreate otherwise.
func openReadOnly(path string, sp spec, o options) (*mapping, error) {
	fail := func(err error) (*mapping, error) {
		return nil, fmt.Errorf("sketch: open %s: %w", path, err)
	}
	fd, err := openExisting(path, unix.O_RDONLY)
	if err != nil {
		return fail(err)
	}
	m, err := readOnlyOpened(fd, path, sp, o)
	if err != nil {
		unix.Close(fd)
		return fail(err)
	}
	m.path = pathOf(path)
	m.dev, m.ino = fileID(fd)
	return m, nil
}

func readOnlyOpened(fd int, path string, sp spec, o options) (*mapping, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: not a regular file", ErrCorrupt)
	}
	if st.Size > 0 && st.Size < headerSize {
		// Every create and adoption sizes the file whole before it writes
		// a byte, so a short file is damaged, not a create under way.
		return nil, errShortFile(uint64(st.Size))
	}
	deadline := time.Now().Add(o.waitTimeout)
	pause := 50 * time.Microsecond
	for {
		if hasMagic(fd) {
			return attachFd(fd, path, fileSize(fd), sp, true)
		}
		// Someone initialising the file holds its flock; a shared one
		// taken at once means nobody does.
		err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			unix.Flock(fd, unix.LOCK_UN)
			if hasMagic(fd) {
				continue
			}
			if fileSize(fd) == 0 {
				return nil, fmt.Errorf("%w: empty file (not initialised yet)", ErrCorrupt)
			}
			return nil, ErrInterruptedCreate
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return nil, fmt.Errorf("flock: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, ErrTimeout
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}

func dupCloexec(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

func closeFd(fd int) error {
	if fd < 0 {
		return nil
	}
	return unix.Close(fd)
}

func unmap(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	return unix.MunmapPtr(unsafe.Pointer(&data[0]), uintptr(len(data)))
}

// replaceWithPlaceholder maps private anonymous memory over data, at the
// same addresses and in one step (MAP_FIXED), so the range never becomes
// unmapped and no other mapping can be placed there. MAP_NORESERVE: the
// placeholder costs address space only, until something writes to it.
func replaceWithPlaceholder(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&data[0]), uintptr(len(data)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	return err
}

// isFileAt reports whether path still names the file with this identity.
func isFileAt(path string, dev, ino uint64) bool {
	var st unix.Stat_t
	return unix.Lstat(path, &st) == nil && uint64(st.Dev) == dev && st.Ino == ino
}

// testHookBeforeUnlinkRename runs between removeFileAt's check and its
// rename, so that a test can replace the file in that window.
var testHookBeforeUnlinkRename func()

// removeFileAt removes path if it still names the file (dev, ino), and
// leaves a file that has replaced it alone. A check followed by unlink(2)
// could delete a file that replaced ours in between, so the file is first
// renamed aside, atomically and without replacing anything
// (RENAME_NOREPLACE); then what was moved is checked, and removed if it is
// ours or put back if it is not.
func removeFileAt(path string, dev, ino uint64) error {
	if !isFileAt(path, dev, ino) {
		return nil // gone or replaced already
	}
	if testHookBeforeUnlinkRename != nil {
		testHookBeforeUnlinkRename()
	}
	aside := privateName(filepath.Dir(path), ".unlink")
	err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, aside, unix.RENAME_NOREPLACE)
	switch {
	case err == unix.ENOENT:
		return nil
	case err == unix.EINVAL || err == unix.ENOSYS:
		// The filesystem cannot rename without replacing: check and
		// remove, which can race a replacement between the two steps.
		if isFileAt(path, dev, ino) {
			if err := unix.Unlink(path); err != nil && err != unix.ENOENT {
				return err
			}
		}
		return nil
	case err != nil:
		return err
	}
	if isFileAt(aside, dev, ino) {
		return unix.Unlink(aside)
	}
	// A newer file was at the path: put it back.
	if err := unix.Renameat2(unix.AT_FDCWD, aside, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE); err != nil {
		return fmt.Errorf("the file at the path was replaced by another, which could not be put back (it is at %s): %w", aside, err)
	}
	return nil
}

func syncMapping(data []byte) error {
	return unix.Msync(data, unix.MS_SYNC)
}

// createNewPath builds the file for sp under no name and links it at
// path, which must not exist: a snapshot never attaches to what is there
// (an error wrapping fs.ErrExist).
func createNewPath(path string, sp spec, o options) (*mapping, error) {
	if path == "" {
		return nil, errEmptyPath
	}
	return createPath(path, sp, o)
}
