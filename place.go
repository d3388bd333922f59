package sketch

import (
	"fmt"
)

// A Place says where a structure lives: a file at a path, a new memfd, a
// descriptor this process inherited, memory for this process alone, or a
// name in an arena. Every kind has one constructor, which takes the place
// and the kind's config (OpenCountMin(Path("/dev/shm/hits"), cfg)), so what
// a structure is and where it lives are said once each. The zero Place is
// no place: constructors refuse it with ErrInvalidArgument.
type Place struct {
	how   placeHow
	name  string // the path, the memfd's name or the arena entry's name
	fd    uintptr
	arena *Arena
	// exact, for an arena's place, opens that entry only (a snapshot's
	// copy), never another of the name nor a new one.
	exact *entry
}

type placeHow uint8

const (
	atNothing placeHow = iota
	atPath
	atMemfd
	atInherited
	atMemory
	atArena
)

// Path places a structure in the file at path, which every process opens by
// that path: the first creates it, the rest attach, also when they race.
// Creating takes the file's lock while the header is written; attaching to
// a complete file takes no lock and never waits. A symlink at path is
// refused (ErrSymlink), except the descriptor paths /proc/self/fd/N,
// /proc/thread-self/fd/N, /proc/PID/fd/N and /dev/fd/N, which open the
// file behind the descriptor; so is a file owned by a user the caller does
// not trust (ErrNotOwner; see WithOwner). An empty file owned by the
// caller, prepared for it, is initialised in place, and so is the all-zero
// file of exactly the size the config needs that an interrupted
// initialisation leaves; such a file with another hard link is refused
// (ErrHardLinked), and a partly written header is ErrInterruptedCreate. An
// existing structure is validated (ErrCorrupt and the sentinels that wrap
// it) and must match an explicit config (ErrIncompatible). A prepared file
// every user may open is refused (ErrLooseMode: prepare it 0600), and so is
// an existing file every user may write, unless opened WithReadOnly.
//
// A file has room for 1024 read-write handles open at once, in all
// processes together (one token and reader slot each; a Bloom filter, a
// counting Bloom filter, a window, a Count-Min sketch with a Top table, or
// an arena once it creates, removes or freezes, takes one when opened):
// the 1025th is refused with ErrTooManyHandles until one is closed (or its
// process dies). A read-only handle (WithReadOnly) takes none. The same holds for Inherited
// and Memfd places.
func Path(path string) Place { return Place{how: atPath, name: path} }

// Memfd places a structure in a new memfd, an anonymous file that lives as
// long as a descriptor or mapping of it does. Hand it to a child process
// with File and exec.Cmd.ExtraFiles; the child opens it with Inherited. The
// memfd's size is sealed, so no holder can shrink or grow it under the
// others (a memfd made any other way is refused by Inherited unless it is
// sealed too). name shows in /proc and in errors only. The config must say
// what to create (a Bloom filter's Capacity, a window's Window); options
// about files on a path (WithMode, WithOwner) do not apply, and WithReadOnly
// is refused (ErrInvalidConfig).
func Memfd(name string) Place { return Place{how: atMemfd, name: name} }

// Inherited places a structure behind a descriptor this process inherited
// or received, such as fd 3 in a child started with exec.Cmd.ExtraFiles.
// The descriptor must be open for reading and writing (ErrInvalidArgument
// otherwise), or for reading with WithReadOnly; it is duplicated, so it stays
// the caller's to close. The file is validated as Path validates it
// (ErrCorrupt and the sentinels that wrap it, and ErrSparse for another
// user's file with holes), but a descriptor has no path, so its trust has
// its own rule: a memfd must carry the seals that fix its size
// (ErrUnsealed), and a memfd or any other file must be made or owned by the
// caller, root or a uid named with WithOwner (ErrNotOwner); whoever could
// change its size could kill this process with SIGBUS, and whoever made a
// memfd may keep a writable descriptor to it and write its lock words. A
// file every user may write is ErrLooseMode, unless it is a size-sealed
// memfd. A memory-backed file larger than the
// machine's memory is ErrNoSpace. With WithReadOnly, the trust rule does not
// apply, as for Path.
func Inherited(fd uintptr) Place { return Place{how: atInherited, fd: fd} }

// Memory places a new structure in memory, for one process: its goroutines
// share it as they would a file's, and code that uses the package runs its
// unit tests with it on any system. On Linux it is an unnamed memfd (File
// still hands it to a child); elsewhere, plain memory. The config must say
// what to create; of the options, WithReadOnly is refused
// (ErrInvalidConfig), and the options about files on a path do nothing.
func Memory() Place { return Place{how: atMemory} }

// errNoPlace is the zero Place's error.
var errNoPlace = fmt.Errorf("%w: no place given (the zero Place; use Path, Memfd, Inherited, Memory or Arena.Place)", ErrInvalidArgument)

// openAs opens a structure at p (see open) and builds its handle with
// build: every Open<Kind> is this call with its kind's specs and builder.
func openAs[H any](p Place, specOf, createOf func() (spec, error), opts []Option, build func(*mapping) (*H, error)) (*H, error) {
	m, err := p.open(specOf, createOf, opts)
	if err != nil {
		return nil, err
	}
	if o, err := buildOptions(opts); err == nil {
		m.noLane = o.noLane
	}
	return build(m)
}

// open maps the structure that specOf describes at p: specOf gives the
// spec to open or create, createOf the one for places that always create
// (a memfd, memory), which refuses configs that only attach.
func (p Place) open(specOf, createOf func() (spec, error), opts []Option) (*mapping, error) {
	switch p.how {
	case atPath:
		sp, err := specOf()
		return openSpec(p.name, sp, err, opts)
	case atMemfd:
		sp, err := createOf()
		return memfdSpec(p.name, sp, err, opts)
	case atMemory:
		sp, err := createOf()
		return inMemorySpec(sp, err, opts)
	case atInherited:
		sp, err := specOf()
		return attachSpec(p.fd, sp, err, opts)
	case atArena:
		if p.arena == nil {
			break
		}
		sp, err := specOf()
		if err == nil {
			err = p.arena.entryOptions(opts)
		}
		return p.arena.structure(p.name, sp, err, p.exact)
	}
	return nil, fmt.Errorf("sketch: open: %w", errNoPlace)
}
