package main

import "github.com/shmsketch/sketch"

// The kinds the commands know, one row each: a kind's row lives in its
// kind_*.go file beside its adapter (the type implementing structure),
// and cliKinds lists the rows. create sizes, checks and makes a kind
// through its row, and every command opens a file or an arena's
// structure as its kind through it (openEntry). A new kind is its
// kind_*.go file, its row in cliKinds, and its name in kindList and in
// create's usage (doc.go).

// cliKind is what the commands know of a kind.
type cliKind struct {
	kind   sketch.Kind
	sizing []string // the create flags that size it
	// validate refuses create flags that cannot make the kind (a flag it
	// requires), before the library is asked; nil when there is none.
	validate func(f createFlags) error
	// make makes (or opens) one at p, sized by f; open opens one at p
	// with the zero config, which attaches to what is stored.
	make func(p place, f createFlags) (structure, error)
	open func(p place) (structure, error)
}

// cliKinds are the kinds, in the order create's usage lists them.
var cliKinds = []cliKind{countMinKind, bloomKind, countingBloomKind, countMinWindowKind, bloomWindowKind, distinctKind, distinctWindowKind, gcraKind, countersKind, setKind, setWindowKind}

// cliKindOf makes a kind's row from its library constructor, its
// adapter, and the config create's flags give it.
func cliKindOf[C, S any](kind sketch.Kind, sizing []string, open func(sketch.Place, C, ...sketch.Option) (S, error),
	adapt func(S) structure, cfg func(f createFlags) C, validate func(f createFlags) error) cliKind {
	return cliKind{kind: kind, sizing: sizing, validate: validate,
		make: func(p place, f createFlags) (structure, error) { return openAt(p, open, cfg(f), adapt) },
		open: func(p place) (structure, error) {
			var zero C
			return openAt(p, open, zero, adapt)
		},
	}
}

// cliKindNamed is the row of the kind named k, nil for one this build
// does not know.
func cliKindNamed(k sketch.Kind) *cliKind {
	for i := range cliKinds {
		if cliKinds[i].kind == k {
			return &cliKinds[i]
		}
	}
	return nil
}
