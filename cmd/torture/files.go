package main

import (
	"fmt"
	"path/filepath"

	"github.com/shmsketch/sketch"
)

// The structures of the kill storm, each in a file of its own, with the same
// config in every process (the first open creates, the rest attach). Each is
// about 8 MiB, past any L2 cache, so that the cgo build serves batches from
// the C core (smaller ones stay in Go). The Count-Min sketch is wide for 4096
// keys, so a key nobody added reads zero in nearly every row and the negative
// control shows.
var (
	stormCountMin      = sketch.CountMinConfig{Rows: 4, Width: 1 << 18}
	stormBloom         = sketch.BloomConfig{Capacity: 1 << 22, FPRate: 0.001}
	stormCountingBloom = sketch.CountingBloomConfig{Capacity: 1 << 20, FPRate: 0.001}
)

// stormFiles are the storm's structures open in one process; the windows'
// shapes are in window.go.
type stormFiles struct {
	cms *sketch.CountMin
	bf  *sketch.Bloom
	cbf *sketch.CountingBloom
	cmw *sketch.CountMinWindow // turned by Rotate
	bw  *sketch.BloomWindow
	cmc *sketch.CountMinWindow // turned by the clock
	bwc *sketch.BloomWindow
}

func stormPath(dir, name string) string { return filepath.Join(dir, name) }

func openStorm(dir string, opts ...sketch.Option) (*stormFiles, error) {
	return openStormFiles(dir, true, opts...)
}

// openStormFiles opens the storm's structures, the clock windows only when
// clock is set (they are left nil otherwise).
func openStormFiles(dir string, clock bool, opts ...sketch.Option) (*stormFiles, error) {
	s := &stormFiles{}
	var err error
	if s.cms, err = sketch.OpenCountMin(sketch.Path(stormPath(dir, "storm.cms")), stormCountMin, opts...); err != nil {
		return nil, err
	}
	if s.bf, err = sketch.OpenBloom(sketch.Path(stormPath(dir, "storm.bloom")), stormBloom, opts...); err != nil {
		s.close()
		return nil, err
	}
	if s.cbf, err = sketch.OpenCountingBloom(sketch.Path(stormPath(dir, "storm.cbf")), stormCountingBloom, opts...); err != nil {
		s.close()
		return nil, err
	}
	if s.cmw, err = sketch.OpenCountMinWindow(sketch.Path(stormPath(dir, "storm.cmw")), sketch.CountMinWindowConfig{Window: stormWindow, CountMin: stormCountMinWindow}, opts...); err != nil {
		s.close()
		return nil, err
	}
	if s.bw, err = sketch.OpenBloomWindow(sketch.Path(stormPath(dir, "storm.bloomw")), sketch.BloomWindowConfig{Window: stormWindow, Bloom: stormBloomWindow}, opts...); err != nil {
		s.close()
		return nil, err
	}
	if !clock {
		return s, nil
	}
	if s.cmc, err = sketch.OpenCountMinWindow(sketch.Path(stormPath(dir, "storm.cmwclock")), sketch.CountMinWindowConfig{Window: stormClockWindow, CountMin: stormCountMinWindow}, opts...); err != nil {
		s.close()
		return nil, err
	}
	if s.bwc, err = sketch.OpenBloomWindow(sketch.Path(stormPath(dir, "storm.bloomwclock")), sketch.BloomWindowConfig{Window: stormClockWindow, Bloom: stormBloomWindow}, opts...); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *stormFiles) close() {
	// Each field is checked on its own: a nil pointer in an interface is not nil.
	if s.cms != nil {
		s.cms.Close()
	}
	if s.bf != nil {
		s.bf.Close()
	}
	if s.cbf != nil {
		s.cbf.Close()
	}
	if s.cmw != nil {
		s.cmw.Close()
	}
	if s.bw != nil {
		s.bw.Close()
	}
	if s.cmc != nil {
		s.cmc.Close()
	}
	if s.bwc != nil {
		s.bwc.Close()
	}
}

func stormFileNames() []string {
	return []string{"storm.cms", "storm.bloom", "storm.cbf", "storm.cmw", "storm.bloomw", "storm.cmwclock", "storm.bloomwclock"}
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
	a, err := sketch.OpenArena(sketch.Path(lockArenaPath(dir)), lockArenaSize)
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
