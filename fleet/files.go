package fleet

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/shmsketch/sketch"
)

// syncedKind is a row of the kinds the agent syncs: how to open a
// structure of the kind at a place (attaching to what is there) and add it.
type syncedKind func(a *Agent, name string, at sketch.Place) (io.Closer, error)

// kinds is the fleet's table of kinds. A kind not in it is not synced
// (ErrNotSynced).
var kinds = map[sketch.Kind]syncedKind{
	sketch.KindDistinct:       openAndAdd(sketch.OpenDistinct, (*Agent).AddDistinct),
	sketch.KindBloom:          openAndAdd(sketch.OpenBloom, (*Agent).AddBloom),
	sketch.KindDistinctWindow: openAndAdd(sketch.OpenDistinctWindow, (*Agent).AddDistinctWindow),
	sketch.KindBloomWindow:    openAndAdd(sketch.OpenBloomWindow, (*Agent).AddBloomWindow),
	sketch.KindCountMin:       openAndAdd(sketch.OpenCountMin, (*Agent).AddCountMin),
	sketch.KindCountMinWindow: openAndAdd(sketch.OpenCountMinWindow, (*Agent).AddCountMinWindow),
	sketch.KindGCRA:           openAndAdd(sketch.OpenGCRA, (*Agent).AddGCRA),
	sketch.KindCountingBloom:  openAndAdd(sketch.OpenCountingBloom, (*Agent).AddCountingBloom),
	sketch.KindSet:            openAndAdd(sketch.OpenSet, (*Agent).AddSet),
}

// openAndAdd is a row: the kind's constructor with its zero config, which
// attaches to any stored structure, and the agent's adder.
func openAndAdd[C any, S io.Closer](open func(sketch.Place, C, ...sketch.Option) (S, error), add func(*Agent, string, S) error) syncedKind {
	return func(a *Agent, name string, at sketch.Place) (io.Closer, error) {
		var cfg C
		// The agent's handle stores fleet counts and exports; it adds
		// nothing, so the lanes stay the writers'.
		s, err := open(at, cfg, sketch.WithoutLane())
		if err != nil {
			return nil, err
		}
		if err := add(a, name, s); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
}

// AddArena syncs every structure of the arena under its name in the
// arena, which must be the same on every host. The agent follows the
// arena while it runs: each round lists it again, so that a structure
// created later is synced from the next round on, one removed is let go,
// and one removed and created again under its name is opened again. Keep
// the arena open until the agent is closed. The agent opens each
// structure itself and closes it when it lets it go or on Close. The
// structures of kinds the agent does not sync are left out, and named in
// an ErrNotSynced error once the others are added.
func (a *Agent) AddArena(ar *sketch.Arena) error {
	return a.followArena(ar, nil)
}

// followedArena is an arena the agent follows: what it opened there,
// by name, and the arena's handle to close on Close when it is the
// agent's own (AddFile).
type followedArena struct {
	ar     *sketch.Arena
	own    io.Closer
	opened map[string]arenaStructure
}

// arenaStructure is a structure the agent opened in an arena: where its
// entry was (a new entry under the name is another structure) and its
// handle.
type arenaStructure struct {
	offset uint64
	handle io.Closer
}

func (a *Agent) followArena(ar *sketch.Arena, own io.Closer) error {
	f := &followedArena{ar: ar, own: own, opened: map[string]arenaStructure{}}
	skipped, err := a.rescan(f)
	if err != nil {
		if own != nil {
			own.Close()
		}
		return err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		f.close()
		return ErrClosed
	}
	a.arenas = append(a.arenas, f)
	a.mu.Unlock()
	if len(skipped) > 0 {
		return fmt.Errorf("%w: %s left out", ErrNotSynced, strings.Join(skipped, ", "))
	}
	return nil
}

// rescan brings what the agent syncs of f's arena up to its directory:
// it opens the structures it has not, lets go of those removed, and opens
// again those created anew under their name. It returns the structures
// left out (kinds not synced) and the first error of an open.
func (a *Agent) rescan(f *followedArena) (skipped []string, err error) {
	live := map[string]bool{}
	for _, e := range f.ar.List() {
		live[e.Name] = true
		if got, ok := f.opened[e.Name]; ok && got.offset == e.Offset {
			continue
		}
		if _, ok := f.opened[e.Name]; ok {
			a.letGo(f, e.Name)
		}
		row, ok := kinds[e.Kind]
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%q (%s)", e.Name, e.Kind))
			continue
		}
		h, rerr := row(a, e.Name, f.ar.Place(e.Name))
		if errors.Is(rerr, ErrNotSynced) {
			skipped = append(skipped, fmt.Sprintf("%q (%s)", e.Name, strings.TrimPrefix(rerr.Error(), ErrNotSynced.Error()+": ")))
			continue
		}
		if rerr != nil {
			if err == nil {
				err = fmt.Errorf("fleet: arena structure %q: %w", e.Name, rerr)
			}
			continue
		}
		f.opened[e.Name] = arenaStructure{offset: e.Offset, handle: h}
	}
	for name := range f.opened {
		if !live[name] {
			a.letGo(f, name)
		}
	}
	return skipped, err
}

// letGo stops syncing the arena structure name and closes its handle.
func (a *Agent) letGo(f *followedArena, name string) {
	a.mu.Lock()
	a.members = slices.DeleteFunc(a.members, func(m *member) bool { return m.name == name })
	delete(a.names, name)
	a.mu.Unlock()
	f.opened[name].handle.Close()
	delete(f.opened, name)
}

// close closes what the agent opened in the arena, and the arena when it
// is the agent's.
func (f *followedArena) close() error {
	var errs []error
	for _, s := range f.opened {
		errs = append(errs, s.handle.Close())
	}
	f.opened = nil
	if f.own != nil {
		errs = append(errs, f.own.Close())
	}
	return errors.Join(errs...)
}

// AddFile syncs the sketch file at path: every structure of an arena (as
// AddArena, on a handle of the arena the agent keeps until Close), or a
// standalone structure under the file's base name. The agent opens what
// it syncs and closes it on Close.
func (a *Agent) AddFile(path string) error {
	info, err := sketch.Inspect(path)
	if err != nil {
		return err
	}
	if info.Arena {
		ar, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{})
		if err != nil {
			return err
		}
		return a.followArena(ar, ar)
	}
	if len(info.Entries) != 1 {
		return fmt.Errorf("fleet: %s: a standalone file of %d structures", path, len(info.Entries))
	}
	kind := info.Entries[0].Kind
	row, ok := kinds[kind]
	if !ok {
		return fmt.Errorf("%w: %s holds a %s", ErrNotSynced, path, kind)
	}
	s, err := row(a, filepath.Base(path), sketch.Path(path))
	if err != nil {
		return fmt.Errorf("fleet: %s: %w", path, err)
	}
	a.opened(s)
	return nil
}

// opened hands the agent a structure to close on Close; closed already,
// it closes it now.
func (a *Agent) opened(c io.Closer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		c.Close()
		return
	}
	a.closers = append(a.closers, c.Close)
}

// SyncedKinds lists the kinds the agent syncs, sorted.
func SyncedKinds() []sketch.Kind {
	return slices.Sorted(maps.Keys(kinds))
}
