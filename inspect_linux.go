package sketch

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Inspect reads the header, the directory and the lock state of the sketch
// file at path, whatever structures it holds, for reading only: it opens
// the file O_RDONLY, maps it PROT_READ and takes no lock and no token, so
// it works on a file the caller may only read, while other processes use
// it. The file is validated as an open validates it (ErrCorrupt and the
// sentinels that wrap it); a file without a published magic is
// ErrInterruptedCreate (ErrCorrupt when empty), without waiting.
//
// The lock state is a snapshot: holders come and go while it is read.
// Whether a token's handle is alive is asked as the lock's waiters ask it,
// one fcntl(F_OFD_GETLK) or kill(pid, 0) per id, which need no write
// permission.
func Inspect(path string) (FileInfo, error) {
	if path == "" {
		return FileInfo{}, fmt.Errorf("sketch: inspect: %w", errEmptyPath)
	}
	fi, err := inspect(path)
	if err != nil {
		return FileInfo{}, fmt.Errorf("sketch: inspect %s: %w", path, err)
	}
	return fi, nil
}

func inspect(path string) (FileInfo, error) {
	fd, err := openExisting(path, unix.O_RDONLY)
	if err != nil {
		return FileInfo{}, err
	}
	defer unix.Close(fd)
	return inspectFd(fd, path)
}

// Remove removes the sketch file at path, a structure of any kind or an
// arena, as Unlink does for a handle: processes that have it open keep
// using it, and new opens of the path create a new one. Only a valid
// sketch file is removed: anything else (ErrCorrupt and the sentinels
// that wrap it, an interrupted create's ErrInterruptedCreate among them)
// is left where it is, as is a symlink planted at the path (ErrSymlink),
// and a file that replaces the one judged at the path while Remove runs
// is never removed. A path with no file is not an error: what was asked
// for is done. It needs only read permission on the file (and write
// permission on its directory).
func Remove(path string) error {
	if path == "" {
		return fmt.Errorf("sketch: remove: %w", errEmptyPath)
	}
	if descriptorPath(path) {
		return fmt.Errorf("sketch: remove %s: %w: a descriptor's path names no file to remove", path, ErrInvalidArgument)
	}
	fd, err := openExisting(path, unix.O_RDONLY)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err == nil {
		// fd stays open until the file is gone, so that its inode
		// number cannot pass to a file that replaces it meanwhile.
		_, err = inspectFd(fd, path)
		if err == nil {
			dev, ino := fileID(fd)
			err = removeFileAt(path, dev, ino)
		}
		unix.Close(fd)
	}
	if err != nil {
		return fmt.Errorf("sketch: remove %s: %w", path, err)
	}
	return nil
}

// inspectFd is inspect of the file open at fd.
func inspectFd(fd int, path string) (FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return FileInfo{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return FileInfo{}, fmt.Errorf("%w: not a regular file", ErrCorrupt)
	}
	size := uint64(st.Size)
	switch {
	case size == 0:
		return FileInfo{}, fmt.Errorf("%w: empty file", ErrCorrupt)
	case size < headerSize:
		return FileInfo{}, errShortFile(size)
	case size > maxFileSize || size > math.MaxInt:
		return FileInfo{}, fmt.Errorf("%w: %d bytes is more than a sketch file may have on this platform", ErrCorrupt, size)
	}
	data, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return FileInfo{}, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	defer unix.Munmap(data)
	_ = atomic.LoadUint64((*uint64)(unsafe.Pointer(&data[offMagic]))) // acquire what the magic publishes
	lay, err := decodeHeader(data)
	if errors.Is(err, errNoMagic) {
		err = ErrInterruptedCreate
	}
	if err == nil {
		err = checkBacked(&st)
	}
	if err != nil {
		return FileInfo{}, err
	}
	fi := FileInfo{
		Path:              path,
		FormatVersion:     formatVersion,
		ByteOrder:         byteOrderName(),
		Bytes:             lay.fileSize,
		Mode:              os.FileMode(st.Mode & 0o777),
		UID:               st.Uid,
		GID:               st.Gid,
		HeaderBytes:       headerSize,
		DataOffset:        lay.dataOff,
		Sealed:            isSealed(data),
		Arena:             lay.isArena(),
		ReaderSlots:       lay.slots,
		DirectoryCapacity: lay.dirCap,
		Seed:              lay.seed,
	}
	for _, e := range lay.entries {
		if !e.live() {
			fi.Removed++
			continue
		}
		fi.Entries = append(fi.Entries, entryInfo(e, data))
	}
	fi.Lock = inspectLock(fd, data, int(lay.slots))
	return fi, nil
}

// inspectLock reads the lock words and the reader slots below the high
// water mark, and asks the kernel which of their tokens are held.
func inspectLock(fd int, data []byte, nslots int) LockInfo {
	base := unsafe.Pointer(&data[0])
	l := &fileLock{
		fd:     fd,
		state:  (*uint32)(unsafe.Add(base, lockStateOff)),
		drain:  (*uint32)(unsafe.Add(base, lockDrainOff)),
		hw:     (*uint32)(unsafe.Add(base, lockHWOff)),
		slots:  unsafe.Add(base, slotsOff),
		nslots: nslots,
	}
	tokens := newTokenTable(data, nslots)
	s := atomic.LoadUint32(l.state)
	li := LockInfo{
		Writer:        s&stW != 0,
		WriterToken:   -1,
		WritersParked: s&stWParked != 0,
		ReadersParked: s&stRParked != 0,
		ReadersTurn:   s&stRTurn != 0,
		SlotsClaimed:  atomic.LoadUint32(l.hw),
	}
	if li.Writer && s&stOwner != 0 {
		li.WriterToken = int(s&stOwner) - 1
		li.WriterAlive = tokenHeld(fd, tokens, li.WriterToken)
	}
	for id := 0; id < min(int(li.SlotsClaimed), nslots); id++ {
		alive := tokenHeld(fd, tokens, id)
		if alive {
			li.Handles++
		}
		n := uint32(atomic.LoadUint64(l.slotAt(id)))
		if n == 0 {
			continue
		}
		li.Readers += uint64(n)
		li.ReaderSlots++
		if !alive {
			li.DeadReaderSlots++
		}
	}
	return li
}

// tokenHeld reports whether some handle holds token id, as the lock's
// waiters ask it (token_linux.go): with queries a descriptor open for
// reading may make. An error counts as held, as it does for the lock.
func tokenHeld(fd int, tokens tokenTable, id int) bool {
	if id < 0 || id >= tokens.n {
		return false
	}
	return tokens.alive(fd, id, atomic.LoadUint64(tokens.word(id)))
}
