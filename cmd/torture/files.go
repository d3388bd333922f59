package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/shmsketch/sketch"
)

// The structures of the kill storm, each in a file of its own, with the same
// config in every process (the first open creates, the rest attach). Each is
// about 8 MiB, past any L2 cache, so that the cgo build serves batches from
// the C core (smaller ones stay in Go). The Count-Min sketch is wide for 4096
// keys, so a key nobody added reads zero in nearly every row and the negative
// control shows. It keeps a candidate table, so that kills meet admissions,
// and three lanes, fewer than the workers, so that kills meet lanes owned,
// taken over from a dead owner, and the shared lane; with conservative
// update, so that kills meet raises, whose one writer a lane a second
// writer would make low.
var (
	stormCountMin      = sketch.CountMinConfig{Rows: 4, Width: 1 << 18, Candidates: 64, Lanes: 3, ConservativeUpdate: true}
	stormBloom         = sketch.BloomConfig{Capacity: 1 << 22, FPRate: 0.001}
	stormCountingBloom = sketch.CountingBloomConfig{Capacity: 1 << 20, FPRate: 0.001}
	// The distinct count has Redis's 16384 registers: the 4096 keys leave
	// most of them zero, so most control keys would raise one.
	stormDistinct = sketch.DistinctConfig{Precision: 14}
)

// stormFiles are the storm's structures open in one process; the windows'
// shapes are in window.go.
type stormFiles struct {
	cms *sketch.CountMin
	bf  *sketch.Bloom
	cbf *sketch.CountingBloom
	hll *sketch.Distinct
	gl  *sketch.GCRA           // the rate limiter (ratelimit.go)
	ctr *sketch.Counters       // the exact counters (counters.go)
	cmw *sketch.CountMinWindow // turned by Rotate
	bw  *sketch.BloomWindow
	cmc *sketch.CountMinWindow // turned by the clock
	bwc *sketch.BloomWindow
	// opened are those that opened, to close: a field that did not is a
	// nil pointer, which in an io.Closer is not nil.
	opened []io.Closer
}

func stormPath(dir, name string) string { return filepath.Join(dir, name) }

func openStorm(dir string, opts ...sketch.Option) (*stormFiles, error) {
	return openStormFiles(dir, true, opts...)
}

// A stormPart is one structure a kind has in the kill storm: its file,
// its config, and the field of stormFiles that keeps its handle.
type stormPart struct {
	file   string
	config any
	clock  bool // a window turned by the clock, opened only when asked for
	keep   func(s *stormFiles, h any)
	// merge is how workers merge into the structure; nil for the
	// windows, which have no Merge.
	merge *stormMerge
}

// openStormFiles opens the storm's structures, the storm parts of the
// kinds' rows in the table's order, the clock windows only when clock is
// set (they are left nil otherwise).
func openStormFiles(dir string, clock bool, opts ...sketch.Option) (*stormFiles, error) {
	s := &stormFiles{}
	for _, k := range structKinds {
		for _, p := range k.storm {
			if p.clock && !clock {
				continue
			}
			h, err := k.open(sketch.Path(stormPath(dir, p.file)), p.config, opts...)
			if err != nil {
				s.close()
				return nil, err
			}
			p.keep(s, h)
			s.opened = append(s.opened, h.(io.Closer))
		}
	}
	return s, nil
}

func (s *stormFiles) close() {
	for _, c := range s.opened {
		c.Close()
	}
}

// stormFileNames are the files of every storm part of the kinds' rows.
func stormFileNames() []string {
	var names []string
	for _, k := range structKinds {
		for _, p := range k.storm {
			names = append(names, p.file)
		}
	}
	return names
}

// recordPath is the record of worker slot i; the negative control's is
// slot -1.
func recordPath(dir string, slot int) string {
	if slot < 0 {
		return filepath.Join(dir, "record.control")
	}
	return filepath.Join(dir, fmt.Sprintf("record.%02d", slot))
}

// The lock-recovery arena: one large counting Bloom filter that holders keep
// inside Reset (write lock) or AddBatch (read lock) for milliseconds, and a
// tiny one the supervisor clears to time the next writer in. Structures of
// one arena share the file's lock.
const lockArenaSize = 32 << 20

var (
	lockBig   = sketch.CountingBloomConfig{Capacity: 2 << 20, FPRate: 0.01}
	lockProbe = sketch.CountingBloomConfig{Capacity: 64, FPRate: 0.01}
)

func lockArenaPath(dir string) string { return filepath.Join(dir, "lock.arena") }
func phasePath(dir string) string     { return filepath.Join(dir, "lock.phase") }

// openLockArena opens the arena and the named counting Bloom filter in it.
func openLockArena(dir, name string, cfg sketch.CountingBloomConfig) (*sketch.Arena, *sketch.CountingBloom, error) {
	a, err := sketch.OpenArena(sketch.Path(lockArenaPath(dir)), sketch.ArenaConfig{Size: lockArenaSize})
	if err != nil {
		return nil, nil, err
	}
	cb, err := sketch.OpenCountingBloom(a.Place(name), cfg)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, cb, nil
}
