package fleet

import (
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
}

// openAndAdd is a row: the kind's constructor with its zero config, which
// attaches to any stored structure, and the agent's adder.
func openAndAdd[C any, S io.Closer](open func(sketch.Place, C, ...sketch.Option) (S, error), add func(*Agent, string, S) error) syncedKind {
	return func(a *Agent, name string, at sketch.Place) (io.Closer, error) {
		var cfg C
		s, err := open(at, cfg)
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
// arena, which must be the same on every host. The agent opens each
// structure and closes it on Close; the arena may be closed at once. The
// structures of kinds the agent does not sync are left out, and named in
// an ErrNotSynced error once the others are added.
func (a *Agent) AddArena(ar *sketch.Arena) error {
	var skipped []string
	for _, e := range ar.List() {
		row, ok := kinds[e.Kind]
		if !ok {
			skipped = append(skipped, fmt.Sprintf("%q (%s)", e.Name, e.Kind))
			continue
		}
		s, err := row(a, e.Name, ar.Place(e.Name))
		if err != nil {
			return fmt.Errorf("fleet: arena structure %q: %w", e.Name, err)
		}
		a.opened(s)
	}
	if len(skipped) > 0 {
		return fmt.Errorf("%w: %s left out", ErrNotSynced, strings.Join(skipped, ", "))
	}
	return nil
}

// AddFile syncs the sketch file at path: every structure of an arena (as
// AddArena), or a standalone structure under the file's base name. The
// agent opens what it syncs and closes it on Close.
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
		defer ar.Close()
		return a.AddArena(ar)
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
