package main

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
)

// An arenaRecord is one arena worker's tally, a shared mapping like the
// storm's record (record.go): raised only after the call it records returned,
// so a SIGKILL loses at most the call in hand, and the worker restarted in
// the same slot goes on with it. Per arena and name it holds what the
// worker's opens returned and the adds of each key.
type arenaRecord struct {
	mem   []byte
	words []uint64
	names int // the plan's maxNames: the stride between arenas
}

// The head of an arena record.
const (
	awCalls    = 0 // calls that returned
	awInflight = 1 // the open in flight, inflight(...), or 0
	awArena    = 2 // the arena the worker is on, plus one
	awDone     = 3 // the fill phase: the last arena the worker asked every name of, plus one
	awSlowest  = 4 // the longest open that returned, in nanoseconds
	awHead     = 8
)

// The words of one (arena, name), then a word per key.
const (
	anOpened        = iota // opens with the name's spec that returned a structure
	anIncompatible         // opens with its conflicting spec that returned ErrIncompatible
	anConflictOpen         // opens with the conflicting spec that returned a structure: a violation
	anWantRefused          // opens with the name's own spec that returned ErrIncompatible: a violation
	anFull                 // opens that returned ErrArenaFull
	anKeys          = 8
	anWords         = anKeys + keysPerName
	inflightCreate  = 1 << 62 // the name was not listed just before the open
	inflightPresent = 1 << 63 // the word names an open
)

func arenaRecordPath(dir, phase string, slot int) string {
	return filepath.Join(dir, fmt.Sprintf("%s.record.%02d", phase, slot))
}

func openArenaRecord(path string, p *arenaPlan) (*arenaRecord, error) {
	names := p.maxNames()
	mem, words, err := openWords(path, awHead+len(p.Arenas)*names*anWords)
	if err != nil {
		return nil, err
	}
	return &arenaRecord{mem: mem, words: words, names: names}, nil
}

func (r *arenaRecord) close() error { return unmap(r.mem) }

func (r *arenaRecord) word(arena, name, w int) *uint64 {
	return &r.words[awHead+(arena*r.names+name)*anWords+w]
}

func (r *arenaRecord) raise(arena, name, w int, n uint64) {
	atomic.AddUint64(r.word(arena, name, w), n)
}

// mark records a filter add of a key: the word becomes 1 once.
func (r *arenaRecord) mark(arena, name, key int) {
	w := r.word(arena, name, anKeys+key)
	if atomic.LoadUint64(w) == 0 {
		atomic.StoreUint64(w, 1)
	}
}

func (r *arenaRecord) load(arena, name, w int) uint64 {
	return atomic.LoadUint64(r.word(arena, name, w))
}

func (r *arenaRecord) head(w int) uint64 { return atomic.LoadUint64(&r.words[w]) }

func (r *arenaRecord) setHead(w int, v uint64) { atomic.StoreUint64(&r.words[w], v) }

// inflight encodes the open in flight: the arena, the name and whether it
// may create (the name was not listed just before).
func inflight(arena, name int, create bool) uint64 {
	v := inflightPresent | uint64(arena)<<24 | uint64(name)
	if create {
		v |= inflightCreate
	}
	return v
}

// An arenaTally is what every record says of one arena, summed: per name
// the outcomes of its opens and the adds of each key (weights for the
// counting kinds; for the filters, 1 once any record marked the key).
type arenaTally struct {
	opened, incompatible, conflictOpen, wantRefused, full []uint64
	keys                                                  [][keysPerName]uint64
}

func newArenaTally(names int) *arenaTally {
	return &arenaTally{
		opened: make([]uint64, names), incompatible: make([]uint64, names),
		conflictOpen: make([]uint64, names), wantRefused: make([]uint64, names),
		full: make([]uint64, names), keys: make([][keysPerName]uint64, names),
	}
}

// add sums one record's words for the arena's names into t.
func (t *arenaTally) add(r *arenaRecord, arena int, set []arenaName) {
	for i, n := range set {
		t.opened[i] += r.load(arena, i, anOpened)
		t.incompatible[i] += r.load(arena, i, anIncompatible)
		t.conflictOpen[i] += r.load(arena, i, anConflictOpen)
		t.wantRefused[i] += r.load(arena, i, anWantRefused)
		t.full[i] += r.load(arena, i, anFull)
		for k := range keysPerName {
			v := r.load(arena, i, anKeys+k)
			if countsKind(n.Want.Kind) {
				t.keys[i][k] += v
			} else {
				t.keys[i][k] |= v
			}
		}
	}
}
