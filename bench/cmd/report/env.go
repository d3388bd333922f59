package main

import (
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
	"github.com/shmsketch/sketch/bench/internal/floor"
)

// env holds what the subjects of one process share, made on first use:
// key streams, structures (files in dir, named by build so that the cgo
// and pure-Go workers of one run do not share them, while a peer process
// of the same build attaches to its parent's) and exact maps.
type env struct {
	dir   string // the run's directory for files
	build string // sketch.Backend of this process
	self  string // this executable, for peer processes
	small bool   // short streams and no large setup (op loops under callgrind)
	// attach is set in peer processes: their structures exist, made and
	// prepared by the parent, and are only attached to.
	attach bool

	streams map[string]*stream
	cms     map[string]*sketch.CountMin
	floors  map[string]*floor.Grid
	booms   map[string]*boom.CountMinSketch
	cbfs    map[string]*sketch.CountingBloom
	maps    map[string]any
	closers []func()
}

func newEnv(dir, self string, small bool) *env {
	return &env{
		dir: dir, build: sketch.Backend, self: self, small: small,
		streams: map[string]*stream{},
		cms:     map[string]*sketch.CountMin{},
		floors:  map[string]*floor.Grid{},
		booms:   map[string]*boom.CountMinSketch{},
		cbfs:    map[string]*sketch.CountingBloom{},
		maps:    map[string]any{},
	}
}

// close releases every structure.
func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// stream returns the named key stream.
func (e *env) stream(name string) *stream {
	if s := e.streams[name]; s != nil {
		return s
	}
	n := streamLen
	if name == "uniform10k" {
		n = 1 << 16
	}
	if e.small {
		n = 4096
	}
	s := makeStream(name, n)
	e.streams[name] = s
	return s
}

// countMin returns the sketch of the given shape, in a file of this
// build's, every page touched (Reset writes them all) so that no
// measurement pays page faults.
func (e *env) countMin(sh shape) (*sketch.CountMin, error) {
	if c := e.cms[sh.name]; c != nil {
		return c, nil
	}
	path := filepath.Join(e.dir, fmt.Sprintf("cms-%s-%s", e.build, sh.name))
	c, err := sketch.OpenCountMin(sketch.Path(path), sketch.CountMinConfig{Rows: sh.rows, Width: sh.width, Seed: keySeed})
	if err != nil {
		return nil, err
	}
	// Under callgrind pages cost no instructions: leave them. A peer
	// must not clear its parent's counts: it maps the pages by reading
	// them all (Stats walks the grid).
	switch {
	case e.small:
	case e.attach:
		c.Stats()
	default:
		if err := c.Reset(); err != nil {
			c.Close()
			return nil, err
		}
	}
	e.cms[sh.name] = c
	e.closers = append(e.closers, func() { c.Close() })
	return c, nil
}

// floorOf returns the bare floor of the given shape.
func (e *env) floorOf(sh shape) (*floor.Grid, error) {
	if f := e.floors[sh.name]; f != nil {
		return f, nil
	}
	f, err := floor.New(sh.rows, sh.width, keySeed, !e.small)
	if err != nil {
		return nil, err
	}
	e.floors[sh.name] = f
	e.closers = append(e.closers, func() { f.Close() })
	return f, nil
}

// boomEpsilon and boomDelta give the arguments for which BoomFilters'
// NewCountMinSketch makes width columns and rows rows (it takes
// ceil(e/ε) and ceil(ln 1/δ)).
func boomEpsilon(width int) float64 { return math.E / (float64(width) - 0.5) }
func boomDelta(rows int) float64    { return math.Exp(-(float64(rows) - 0.5)) }

// boomCMS returns BoomFilters' Count-Min sketch of the given shape, each
// counter written once so that its pages are in.
func (e *env) boomCMS(sh shape) *boom.CountMinSketch {
	if c := e.booms[sh.name]; c != nil {
		return c
	}
	c := boom.NewCountMinSketch(boomEpsilon(sh.width), boomDelta(sh.rows))
	c.Reset()
	e.booms[sh.name] = c
	return c
}

// countingBloom returns a counting Bloom filter for 1M items at 1% in a
// file of this build's: "query" holds the first half of the uniform
// stream and is never added to afterwards (so lookups see the same filter
// in every round); "add" takes the adds.
func (e *env) countingBloom(name string) (*sketch.CountingBloom, error) {
	if f := e.cbfs[name]; f != nil {
		return f, nil
	}
	path := filepath.Join(e.dir, fmt.Sprintf("cbf-%s-%s", e.build, name))
	f, err := sketch.OpenCountingBloom(sketch.Path(path), sketch.CountingBloomConfig{Capacity: cbfCapacity, FPRate: cbfFPRate, Seed: keySeed})
	if err != nil {
		return nil, err
	}
	switch {
	case e.small:
	case e.attach:
		f.Stats() // maps every page by reading it
	default:
		if err := f.Reset(); err != nil { // every page in first
			f.Close()
			return nil, err
		}
	}
	// An empty filter contains nothing: a peer attaching to a filled one
	// leaves it as it is.
	if keys := e.stream("uniform").bytes; name == "query" && !f.Contains(keys[0]) {
		if err := f.AddBatch(keys[:len(keys)/2], nil); err != nil {
			f.Close()
			return nil, err
		}
	}
	e.cbfs[name] = f
	e.closers = append(e.closers, func() { f.Close() })
	return f, nil
}

// cached returns the value made by mk under name, making it once.
func cached[T any](e *env, name string, mk func() T) T {
	if v, ok := e.maps[name]; ok {
		return v.(T)
	}
	v := mk()
	e.maps[name] = v
	return v
}

// cachedErr is cached for makers that can fail; a failure is not kept.
func cachedErr[T any](e *env, name string, mk func() (T, error)) (T, error) {
	if v, ok := e.maps[name]; ok {
		return v.(T), nil
	}
	v, err := mk()
	if err == nil {
		e.maps[name] = v
	}
	return v, err
}

// mutexMap is the exact baseline: a map behind one lock.
type mutexMap struct {
	mu sync.Mutex
	m  map[string]uint64
}

// syncMap is sync.Map with an atomic counter per key.
type syncMap struct{ m sync.Map }

func (s *syncMap) inc(k string) uint64 {
	if v, ok := s.m.Load(k); ok {
		return v.(*atomic.Uint64).Add(1)
	}
	v, _ := s.m.LoadOrStore(k, new(atomic.Uint64))
	return v.(*atomic.Uint64).Add(1)
}

func (s *syncMap) get(k string) uint64 {
	if v, ok := s.m.Load(k); ok {
		return v.(*atomic.Uint64).Load()
	}
	return 0
}

// spaceKeys calls f with every key of a space of n keys.
func spaceKeys(n int, f func(k string)) {
	var buf []byte
	for i := range uint64(n) {
		buf = appendKey(buf[:0], i)
		f(string(buf))
	}
}

// exactMutexMap returns a mutex map holding every key of a space of n
// keys, so that inserts measure a counter in its steady state, not growth.
func (e *env) exactMutexMap(n int) *mutexMap {
	return cached(e, fmt.Sprint("mutexmap", n), func() *mutexMap {
		m := &mutexMap{m: make(map[string]uint64, n)}
		spaceKeys(n, func(k string) { m.m[k] = 0 })
		return m
	})
}

// exactSyncMap is exactMutexMap for sync.Map.
func (e *env) exactSyncMap(n int) *syncMap {
	return cached(e, fmt.Sprint("syncmap", n), func() *syncMap {
		m := &syncMap{}
		spaceKeys(n, func(k string) { m.m.Store(k, new(atomic.Uint64)) })
		return m
	})
}
