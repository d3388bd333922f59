package sketch

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Option changes how a sketch file is created or opened.
type Option func(*options)

type options struct {
	mode        os.FileMode
	waitTimeout time.Duration
	noCreate    bool
}

func defaultOptions() options {
	return options{mode: 0o600, waitTimeout: 10 * time.Second}
}

// WithMode sets the permission bits of a file the call creates (or adopts:
// an empty or all-zero file left by an interrupted create). The bits are
// applied exactly, with fchmod, so the process umask does not apply. The
// default is 0600, owner only; pass 0660 to share a sketch with a group.
// Only permission bits (0777) are allowed. An existing sketch file keeps its
// own mode.
func WithMode(perm os.FileMode) Option {
	return func(o *options) { o.mode = perm }
}

// WithWaitTimeout bounds how long Open waits for another process that is
// creating the same file (default 10s); past it, Open fails with ErrTimeout.
func WithWaitTimeout(d time.Duration) Option {
	return func(o *options) { o.waitTimeout = d }
}

// WithoutCreate makes Open attach only: a missing file is an error that
// wraps fs.ErrNotExist, and an empty or all-zero file is not initialised.
// Tools that inspect a sketch (the CLI's check) use it.
func WithoutCreate() Option {
	return func(o *options) { o.noCreate = true }
}

func buildOptions(opts []Option) (options, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.mode&^os.ModePerm != 0 {
		return o, fmt.Errorf("%w: mode %v has bits other than permissions", ErrInvalidConfig, o.mode)
	}
	if o.waitTimeout <= 0 {
		return o, fmt.Errorf("%w: wait timeout %v is not positive", ErrInvalidConfig, o.waitTimeout)
	}
	return o, nil
}

// spec says what structure a caller wants from a file: what to create when
// the file is new, and how to judge a structure found in an existing file.
type spec struct {
	kind   uint32
	size   uint64    // bytes of the structure's region
	params [8]uint64 // kind-specific, stored in the directory entry
	seed   uint64    // requested seed; 0 means random at create, any on attach
	// match reports whether a stored entry is what the caller asked for,
	// with an error wrapping ErrIncompatible when it is not.
	match func(e entry) error
}

// mapping is one process's view of a sketch file: the descriptor, the
// shared mapping and the validated layout. It is shared by every structure.
type mapping struct {
	name string // the path, or "memfd:NAME", or "fd N": used in errors
	path string // "" when not backed by a path
	// dev and ino identify the file at path, so that Unlink removes this
	// sketch's file and never one created at the path since.
	dev, ino uint64
	lay      layout
	ent      entry // the structure this handle serves

	mu     sync.Mutex
	fd     int
	data   []byte
	closed bool
}

// entryBytes returns the mapped region of the handle's structure.
func (m *mapping) entryBytes() []byte {
	return m.data[m.ent.off : m.ent.off+m.ent.size]
}

func (m *mapping) errorf(op string, err error) error {
	return fmt.Errorf("sketch: %s %s: %w", op, m.name, err)
}

// close unmaps and closes the descriptor; a second call does nothing.
func (m *mapping) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	err := unmapAndClose(m.fd, m.data)
	m.data, m.fd = nil, -1
	if err != nil {
		return m.errorf("close", err)
	}
	return nil
}

func (m *mapping) sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return m.errorf("sync", ErrClosed)
	}
	if err := syncMapping(m.data); err != nil {
		return m.errorf("sync", err)
	}
	return nil
}

// file returns a duplicate of the descriptor, for a child process.
func (m *mapping) file() (*os.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, m.errorf("file", ErrClosed)
	}
	fd, err := dupCloexec(m.fd)
	if err != nil {
		return nil, m.errorf("file", err)
	}
	return os.NewFile(uintptr(fd), m.name), nil
}

// unlink removes the handle's file from its path; the mapping stays valid.
// A file already gone, or replaced by another, is left alone; a handle
// without a path does nothing.
func (m *mapping) unlink() error {
	if m.path == "" || !isFileAt(m.path, m.dev, m.ino) {
		return nil
	}
	if err := os.Remove(m.path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("sketch: unlink %s: %w", m.path, err)
	}
	return nil
}
