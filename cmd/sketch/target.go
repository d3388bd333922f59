package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/shmsketch/sketch"
)

// The one place that knows which structures exist: FILE[:NAME] parsing,
// and opening a file as whatever structure it holds. A new structure is a
// case in openEntry and a type implementing structure.

// target is a FILE[:NAME] argument.
type target struct {
	path string
	name string // a structure in an arena; "" for a standalone file
}

func (t target) String() string {
	if t.name == "" {
		return t.path
	}
	return t.path + ":" + t.name
}

// parseTarget splits FILE[:NAME] at its last colon. A path that exists as
// given is taken whole, so a file whose name has a colon can still be
// named; so is one whose part after the colon holds a slash.
func parseTarget(arg string) (target, error) {
	if arg == "" {
		return target{}, usageError("the file name is empty")
	}
	if _, err := os.Lstat(arg); err == nil {
		return target{path: arg}, nil
	}
	i := strings.LastIndexByte(arg, ':')
	if i < 0 || strings.Contains(arg[i+1:], "/") {
		return target{path: arg}, nil
	}
	t := target{path: arg[:i], name: arg[i+1:]}
	if t.path == "" || t.name == "" {
		return target{}, usageError("%q: give FILE or FILE:NAME", arg)
	}
	return t, nil
}

// structure is what the commands do with a structure of any kind.
type structure interface {
	Close() error
	// kind is the name Inspect and --kind use ("countmin").
	kind() string
	// describe says what it is and its shape, in a few words.
	describe() string
	// add counts each key once, or weights[i] times when weights is not
	// nil.
	add(keys [][]byte, weights []uint64) error
	// query answers each key; the answers' JSON and text are the kind's.
	query(keys [][]byte) []answer
	// stats returns the rows of the stats table and the JSON value (the
	// library's Stats).
	stats() (rows [][2]string, js any)
	// sample is what watch shows of it at one moment.
	sample() sample
	// check verifies what the open did not: nil when sound, an error
	// wrapping sketch.ErrInconsistent for an operation cut short.
	check() error
	reset() error
	freeze() error
	// merge adds src, a structure of the same kind, shape and seed.
	merge(src structure) error
	unlink() error
}

// answer is one key's answer to a query.
type answer interface {
	// text is the answer's line, without the key.
	text() string
	// weight orders answers for --top: larger is louder.
	weight() uint64
}

// sample is what watch shows: a total that grows with the structure's
// writes, and what the kind adds to it.
type sample struct {
	Total      uint64   `json:"total"` // Count-Min: everything counted; counting Bloom: write operations
	ErrorBound *uint64  `json:"error_bound,omitempty"`
	Fill       *float64 `json:"fill,omitempty"`  // counting Bloom: counters set / counters
	Count      *float64 `json:"count,omitempty"` // counting Bloom: estimated items present
	Frozen     bool     `json:"frozen"`
	what       string   // what Total counts, for the text view
}

// openTarget opens the structure t names: read-only, or read-write (an
// existing file only; create makes new ones). An error names the file.
func openTarget(t target, readWrite bool) (structure, error) {
	fi, err := sketch.Inspect(t.path)
	if err != nil {
		return nil, err
	}
	if t.name != "" {
		return nil, &exitError{exitUsage, fmt.Errorf("%s: FILE:NAME addresses a structure in an arena; %s holds a %s, not an arena", t, t.path, fi.Entries[0].Description)}
	}
	if len(fi.Entries) != 1 {
		return nil, fmt.Errorf("%s holds %d structures; name one as %s:NAME", t.path, len(fi.Entries), t.path)
	}
	opts := []sketch.Option{sketch.WithoutCreate()}
	if !readWrite {
		opts = []sketch.Option{sketch.ReadOnly()}
	}
	return openEntry(t.path, fi.Entries[0].Kind, opts)
}

// openEntry opens the file at path as the given kind.
func openEntry(path, kind string, opts []sketch.Option) (structure, error) {
	switch kind {
	case "countmin":
		c, err := sketch.OpenCountMin(path, sketch.CountMinConfig{}, opts...)
		if err != nil {
			return nil, err
		}
		return &countMin{c}, nil
	case "countingbloom":
		b, err := sketch.OpenCountingBloom(path, sketch.CountingBloomConfig{}, opts...)
		if err != nil {
			return nil, err
		}
		return &countingBloom{b}, nil
	}
	return nil, fmt.Errorf("%s holds a structure this build does not know (%s)", path, kind)
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

// errNotSupported reports an operation a structure does not have.
func errNotSupported(op, what string) error {
	return fmt.Errorf("a %s has no %s", what, op)
}

// isFrozen reports whether err says the file is sealed.
func isFrozen(err error) bool { return errors.Is(err, sketch.ErrFrozen) }
