package main

import (
	"fmt"

	"github.com/shmsketch/sketch"
)

// listFindings is what an arena's List says against the records.
type listFindings struct {
	Listed int `json:"listed"`
	// Dups are names listed more than once: two structures under one name.
	Dups int `json:"dups"`
	// Unknown are listed names no worker asks for.
	Unknown int `json:"unknown"`
	// BadConfig are entries whose kind and config are not the name's spec:
	// a conflicting open that created, or a damaged entry.
	BadConfig int `json:"bad_config"`
	// Lost are names an open returned a structure for that are not listed.
	Lost int `json:"lost"`
	// FullListed are names some open was refused with ErrArenaFull that are
	// listed: an arena that refused a name never holds it later (free room
	// and directory entries only shrink).
	FullListed int    `json:"full_listed"`
	First      string `json:"first,omitempty"`
}

func (f listFindings) violations() int {
	return f.Dups + f.Unknown + f.BadConfig + f.Lost + f.FullListed
}

func (f *listFindings) problem(format string, args ...any) {
	if f.First == "" {
		f.First = fmt.Sprintf(format, args...)
	}
}

// judgeList checks an arena's listing against its set of names and the
// records' tally: every name at most once, only the set's names, each with
// its spec's kind and config, every name an open returned listed, no name
// refused as full listed. index maps each listed name of the set to its
// position in list (the first, if listed twice).
func judgeList(set []arenaName, list []sketch.ArenaEntry, t *arenaTally) (f listFindings, index map[int]int) {
	byName := map[string]int{}
	for i, n := range set {
		byName[n.Name] = i
	}
	index = map[int]int{}
	f.Listed = len(list)
	for at, e := range list {
		i, ok := byName[e.Name]
		if !ok {
			f.Unknown++
			f.problem("listed %q, which nobody asks for", e.Name)
			continue
		}
		if _, dup := index[i]; dup {
			f.Dups++
			f.problem("%q listed twice", e.Name)
			continue
		}
		index[i] = at
		if s, ok := specOfEntry(e); !ok || s != set[i].Want {
			f.BadConfig++
			f.problem("%q is listed as %s %+v, want %s %+v", e.Name, e.Kind, e.Config, set[i].Want.Kind, set[i].Want.config())
		}
	}
	for i, n := range set {
		_, listed := index[i]
		if t.opened[i] > 0 && !listed {
			f.Lost++
			f.problem("%q: %d opens returned it, but the arena does not list it", n.Name, t.opened[i])
		}
		if t.full[i] > 0 && listed {
			f.FullListed++
			f.problem("%q: %d opens were refused with ErrArenaFull, yet the arena lists it", n.Name, t.full[i])
		}
	}
	return f, index
}

// lowAnswer reports whether a structure's answer for a key breaks its
// promise against what the records say returned: a Count-Min estimate
// (plain or window) below the recorded weight, or a filter's "absent" for
// a key whose add returned.
func lowAnswer(kind sketch.Kind, recorded, answer uint64) bool {
	if countsKind(kind) {
		return answer < recorded
	}
	return recorded != 0 && answer == 0
}

// controlClaim is what the negative control claims was added of a control
// key nobody adds: a weight for the counting kinds, a mark for the filters.
func controlClaim(kind sketch.Kind) uint64 {
	if countsKind(kind) {
		return 3
	}
	return 1
}
