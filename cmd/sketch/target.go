package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shmsketch/sketch"
)

// FILE[:NAME] parsing, and opening a file as whatever structure it holds,
// through its kind's row (kinds.go).

// target is a FILE[:NAME] argument.
type target struct {
	path string
	name string // a structure in an arena; "" for a standalone file
}

// String is the target as messages and text output show it, the name
// quoted when it holds more than letters, digits and "._-/" (quoteName).
func (t target) String() string {
	if t.name == "" {
		return t.path
	}
	return t.path + ":" + quoteName(t.name)
}

// arg is the target as it was given, for JSON, which escapes for itself.
func (t target) arg() string {
	if t.name == "" {
		return t.path
	}
	return t.path + ":" + t.name
}

// parseTarget splits FILE[:NAME] at its last colon. A path that exists as
// given is taken whole, so a file whose name has a colon can still be
// named; so is one whose part after the colon holds a slash. When both
// readings name a file (FILE:NAME exists, and so does FILE), the owner
// rule decides: whoever may write a shared directory such as /dev/shm can
// plant x.arena:banned beside the arena x.arena, but the planted file is
// theirs, so the reading whose file a trusted user owns (the caller, root,
// or a user named with --owner) is the one the user meant when the other's
// is not. When both or neither are trusted, it refuses, naming both: a
// command must not answer from the file the user did not mean.
func parseTarget(arg string) (target, error) {
	if arg == "" {
		return target{}, usageError("the file name is empty")
	}
	i := strings.LastIndexByte(arg, ':')
	split := i >= 0 && !strings.Contains(arg[i+1:], "/")
	if _, err := os.Lstat(arg); err == nil {
		if split && i > 0 && i < len(arg)-1 {
			if st, err := os.Stat(arg[:i]); err == nil && st.Mode().IsRegular() {
				whole, inArena := trustedPath(arg), trustedPath(arg[:i])
				switch {
				case whole && !inArena:
					return target{path: arg}, nil
				case inArena && !whole:
					return target{path: arg[:i], name: arg[i+1:]}, nil
				}
				return target{}, ambiguousError(arg, arg[:i], arg[i+1:], whole)
			}
		}
		return target{path: arg}, nil
	}
	if !split {
		return target{path: arg}, nil
	}
	t := target{path: arg[:i], name: arg[i+1:]}
	if t.path == "" || t.name == "" {
		return target{}, usageError("%q: give FILE or FILE:NAME", arg)
	}
	return t, nil
}

// trustedPath reports whether the name path and the file it leads to are
// owned by users the command trusts: the caller, root, or a user named
// with --owner (the library's owner rule, without its private directory:
// the two readings of one argument sit in one directory). A symlink counts
// as its own owner's and its target's.
func trustedPath(path string) bool {
	for _, stat := range []func(string) (os.FileInfo, error){os.Lstat, os.Stat} {
		st, err := stat(path)
		if err != nil {
			return false
		}
		uid, ok := fileUID(st)
		if !ok || !trustedUID(uid) {
			return false
		}
	}
	return true
}

// trustedUID reports whether the command trusts the files uid owns: the
// caller's, root's, and those of the users named with --owner.
func trustedUID(uid uint32) bool {
	if uid == 0 || int(uid) == os.Geteuid() {
		return true
	}
	for _, o := range owners {
		if uint32(o) == uid {
			return true
		}
	}
	return false
}

// ownerOf names the owner of the file at path for a message.
func ownerOf(path string) string {
	st, err := os.Lstat(path)
	if err != nil {
		return "?"
	}
	if uid, ok := fileUID(st); ok {
		return "uid " + strconv.FormatUint(uint64(uid), 10)
	}
	return "?"
}

// ambiguousError refuses an argument that names both the file arg and the
// structure name in the file path, both owned by trusted users (trusted)
// or neither.
func ambiguousError(arg, path, name string, trusted bool) error {
	why := "both are owned by users this command trusts (you, root, or --owner)"
	if !trusted {
		why = fmt.Sprintf("neither is owned by you, root or a user named with --owner (%s owns the first, %s the second): give --owner UID for the owner of the one you mean", ownerOf(arg), ownerOf(path))
	}
	return fmt.Errorf("%s is ambiguous: it names the file %s and the structure %s in the file %s, and %s; "+
		"refusing to guess (another user may have planted one): remove or rename the one you do not mean",
		arg, arg, quoteName(name), path, why)
}

// structure is what the commands do with a structure of any kind. Close,
// Check, Freeze, Unlink and Reset are the library's, promoted from the
// library type each kind's adapter embeds (Check, Freeze and Unlink are its
// sketch.Handle's, the same for every kind); a window refuses Reset
// (kind_window.go).
type structure interface {
	Close() error
	// Check verifies what the open did not: nil when sound, an error
	// wrapping sketch.ErrInconsistent for an operation cut short (a
	// Count-Min sketch's rows; a filter's bits and a window's slots have
	// nothing more to verify). What the lock shows is check's (check.go).
	Check() error
	Freeze() error
	Unlink() error
	Reset() error
	// kind is the name Inspect and --kind use ("countmin").
	kind() string
	// describe says what it is and its shape, in a few words.
	describe() string
	// add counts each key once, or weights[i] times when weights is not
	// nil.
	add(keys [][]byte, weights []uint64) error
	// addKey counts key n times and returns the answer add prints.
	addKey(key []byte, n uint64) (answer, error)
	// query answers each key; the answers' JSON and text are the kind's.
	query(keys [][]byte) []answer
	// stats returns the rows of the stats table and the JSON value (the
	// library's Stats).
	stats() (rows [][2]string, js any)
	// summary is the structure's state in a few words: its row in an
	// arena's stats.
	summary() string
	// sample is what watch shows of it at one moment.
	sample() sample
	// merge adds src, a structure of the same kind, shape and seed.
	merge(src structure) error
}

// answer is one key's answer to a query.
type answer interface {
	// text is the answer's line, without the key.
	text() string
	// weight orders answers for --top: larger is louder.
	weight() uint64
}

// rotator is a windowed structure: Rotate (the library's) turns its period
// now.
type rotator interface {
	Rotate() error
}

// sample is what watch shows: a total that grows with the structure's
// writes, and what the kind adds to it.
type sample struct {
	// Total is everything counted (Count-Min), the adds (Bloom and counting
	// Bloom filters), or what the periods a window covers counted, which
	// drops as old periods leave it.
	Total uint64 `json:"total"`
	// Adds is a Count-Min or Bloom window's adds since it was made, which
	// only grows (Total drops as periods leave): watch's rate is of it.
	Adds       *uint64  `json:"adds,omitempty"`
	ErrorBound *uint64  `json:"error_bound,omitempty"`
	Fill       *float64 `json:"fill,omitempty"`  // Bloom: bits set / bits; counting Bloom: counters set / counters
	Count      *float64 `json:"count,omitempty"` // Bloom, counting Bloom: estimated keys present
	// Refused and Busy are a rate limiter's: the decisions of Total that
	// refused, and the share of its cells that hold a time to come.
	Refused *uint64  `json:"refused,omitempty"`
	Busy    *float64 `json:"busy_rate,omitempty"`
	// Counters are an exact counters structure's, each with its rate
	// since the sample before (watch fills it in: counterRates).
	Counters []counterSample `json:"counters,omitempty"`
	// Current and Oldest are a window's periods: it covers Oldest to
	// Current.
	Current *uint64 `json:"current,omitempty"`
	Oldest  *uint64 `json:"oldest,omitempty"`
	// Start is when the current period started, when the clock alone has
	// turned the window (periodClock).
	Start  *time.Time `json:"start,omitempty"`
	Frozen bool       `json:"frozen"`
	// Loudest are the loudest keys of a candidate table, at most
	// watchLoudest.
	Loudest []sketch.HeavyHitter `json:"loudest,omitempty"`
	what    string               // what Total counts, for the text view
	clock   periodClock          // a window's, for the text view's times
}

// place is where a structure is opened or made (the library's Place),
// with the options that open it and the name messages give it.
type place struct {
	at    sketch.Place
	opts  []sketch.Option // a standalone file's
	label string          // FILE or FILE:NAME, quoted as messages show it
	entry string          // the name in an arena, "" for a standalone file
}

// filePlace is the standalone file at path.
func filePlace(path string, opts []sketch.Option) place {
	return place{at: sketch.Path(path), opts: opts, label: path}
}

// entryPlace is the structure named name in the arena a, at path.
func entryPlace(a *sketch.Arena, path, name string) place {
	return place{at: a.Place(name), label: path + ":" + quoteName(name), entry: name}
}

// fileOpts are the options that open an existing file: read-only, or
// read-write without creating (create makes new ones), trusting the
// owners named with --owner.
func fileOpts(readWrite bool) []sketch.Option {
	opts := []sketch.Option{sketch.WithReadOnly()}
	if readWrite {
		opts = []sketch.Option{sketch.WithoutCreate()}
	}
	return append(opts, owners.options()...)
}

// openTarget opens the structure t names. A whole arena is a usage error:
// the commands that take one use openWhole.
func openTarget(t target, readWrite bool) (structure, error) {
	s, a, err := openWhole(t, readWrite)
	if a != nil {
		names := arenaNames(a)
		a.Close()
		return nil, &exitError{exitUsage, fmt.Errorf("%s is an arena of %s%s: name one as %s:NAME", t.path, plural(len(names), "structure", "structures"), listNames(names), t.path)}
	}
	return s, err
}

// openWhole opens what t names: a structure, or (FILE alone naming an
// arena) the whole arena. Exactly one of s and a is not nil without an
// error.
func openWhole(t target, readWrite bool) (s structure, a *sketch.Arena, err error) {
	fi, err := sketch.Inspect(t.path)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !fi.Arena && t.name != "":
		return nil, nil, &exitError{exitUsage, fmt.Errorf("%s: FILE:NAME addresses a structure in an arena; %s holds a %s, not an arena", t, t.path, fi.Entries[0].Description)}
	case !fi.Arena:
		s, err = openEntry(filePlace(t.path, fileOpts(readWrite)), fi.Entries[0].Kind)
		return s, nil, err
	}
	a, err = sketch.OpenArena(sketch.Path(t.path), sketch.ArenaConfig{}, fileOpts(readWrite)...)
	if err != nil || t.name == "" {
		return nil, a, err
	}
	// The structure keeps the file mapped: the arena's handle can go.
	defer a.Close()
	for _, e := range a.List() {
		if e.Name == t.name {
			s, err = openEntry(entryPlace(a, t.path, t.name), e.Kind)
			return s, nil, err
		}
	}
	has := "it is empty"
	if names := arenaNames(a); len(names) > 0 {
		has = "it has " + strings.Join(names, ", ")
	}
	return nil, nil, fmt.Errorf("%s: the arena %s has no structure named %s (%s)", t, t.path, quoteName(t.name), has)
}

// openEntry opens the structure of the given kind at p, through its
// row of cliKinds.
func openEntry(p place, kind sketch.Kind) (structure, error) {
	if k := cliKindNamed(kind); k != nil {
		return k.open(p)
	}
	return nil, fmt.Errorf("%s holds a structure this build does not know (%s)", p.label, kind)
}

// openAt opens (or, with a config that can create, makes) a structure at p
// with its kind's constructor and config, and gives it to the commands
// through the kind's adapter.
func openAt[C, S any](p place, open func(sketch.Place, C, ...sketch.Option) (S, error), cfg C, adapt func(S) structure) (structure, error) {
	s, err := open(p.at, cfg, p.opts...)
	if err != nil {
		return nil, err
	}
	return adapt(s), nil
}

// arenaNames are the names of a's structures, quoted for messages.
func arenaNames(a *sketch.Arena) []string {
	var names []string
	for _, e := range a.List() {
		names = append(names, quoteName(e.Name))
	}
	return names
}

// listNames is " (a, b, c)" for messages; "" for none.
func listNames(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, ", ") + ")"
}

// oneTarget is the one FILE[:NAME] argument of a command.
func oneTarget(args []string) (target, error) {
	if len(args) != 1 {
		return target{}, usageError("want one FILE[:NAME]")
	}
	return parseTarget(args[0])
}

// oneFile is the one FILE argument of a command that works on a whole
// file; does says what it does with it ("check verifies"), for the
// refusal of FILE:NAME.
func oneFile(args []string, does string) (target, error) {
	if len(args) != 1 {
		return target{}, usageError("want one FILE")
	}
	t, err := parseTarget(args[0])
	if err == nil && t.name != "" {
		return t, usageError("%s a whole file: give FILE, not %s", does, t)
	}
	return t, err
}

// onOne is a command that runs f on the structure its one FILE[:NAME]
// argument names, opened read-write or read-only, and closes it after.
func onOne(readWrite bool, f func(s structure, t target) error) func(args []string) error {
	return func(args []string) error {
		if len(args) != 1 {
			return usageError("want one FILE[:NAME]")
		}
		s, t, err := openTargetArg(args[0], readWrite)
		if err != nil {
			return err
		}
		defer s.Close()
		return f(s, t)
	}
}

// openTargetArg parses and opens a FILE[:NAME] argument.
func openTargetArg(arg string, readWrite bool) (structure, target, error) {
	t, err := parseTarget(arg)
	if err != nil {
		return nil, t, err
	}
	s, err := openTarget(t, readWrite)
	return s, t, err
}

// unsupportedError reports an operation a structure does not have.
type unsupportedError struct{ op, what string }

func (e *unsupportedError) Error() string { return fmt.Sprintf("a %s has no %s", e.what, e.op) }

func errNotSupported(op, what string) error { return &unsupportedError{op, what} }

// nameTarget puts the target in front of err when err does not come from
// the library, whose errors name the file.
func nameTarget(t target, err error) error {
	var ue *unsupportedError
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", t, err)
	}
	return err
}

// isFrozen reports whether err says the file is sealed.
func isFrozen(err error) bool { return errors.Is(err, sketch.ErrFrozen) }
