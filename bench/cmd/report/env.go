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
	// parent is set in peer processes too: the ID of the subject they are
	// a process of, whose files they attach to (group).
	parent string

	streams map[string]*stream
	made    map[string]any // structures and maps by name (cached)
	closers []func()
}

func newEnv(dir, self string, small bool) *env {
	return &env{
		dir: dir, build: sketch.Backend, self: self, small: small,
		streams: map[string]*stream{},
		made:    map[string]any{},
	}
}

// close releases every structure.
func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// onClose has close release c.
func (e *env) onClose(c interface{ Close() error }) {
	e.closers = append(e.closers, func() { c.Close() })
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

// prefix returns the first n keys of the named stream (n a power of two),
// the same keys in every process.
func (e *env) prefix(name string, n int) [][]byte {
	return cached(e, fmt.Sprintf("prefix-%s-%d", name, n), func() *stream { return makeStream(name, n) }).Bytes
}

// group is the ID of the subject whose processes share k's files: k's
// own, or in a peer process its parent's.
func (e *env) group(k Key) string {
	if e.parent != "" {
		return e.parent
	}
	return k.String()
}

// file is the path of this build's file of a kind of structure.
func (e *env) file(kind, name string) string {
	return filepath.Join(e.dir, fmt.Sprintf("%s-%s-%s", kind, e.build, name))
}

// structure is one of this module's structures in a file.
type structure interface {
	Reset() error
	Close() error
}

// keep prepares a structure just opened and has close release it: every
// page of its file is touched (Reset writes them all) so that no
// measurement pays page faults. A peer must not clear its parent's
// counts: it maps the pages by reading them all instead (walk, which
// calls Stats). Under callgrind pages cost no instructions: they are
// left. Then fill, if any, runs. keep closes s if it fails.
func (e *env) keep(s structure, walk func(), fill func() error) error {
	var err error
	switch {
	case e.small:
	case e.attach:
		walk()
	default:
		err = s.Reset()
	}
	if err == nil && fill != nil {
		err = fill()
	}
	if err != nil {
		s.Close()
		return err
	}
	e.onClose(s)
	return nil
}

// filter is a Bloom or counting Bloom filter.
type filter interface {
	structure
	Contains(key []byte) bool
	AddBatch(keys [][]byte, already []bool) error
}

// keepFilter is keep for a filter named "query" or "add" (filterFor):
// "query" then holds the first half of the uniform stream and is never
// added to afterwards (so lookups see the same filter in every round);
// "add" takes the adds. An empty filter contains nothing: a peer
// attaching to a filled one leaves it as it is.
func (e *env) keepFilter(f filter, name string, walk func()) error {
	return e.keep(f, walk, func() error {
		if keys := e.stream("uniform").Bytes; name == "query" && !f.Contains(keys[0]) {
			return f.AddBatch(keys[:len(keys)/2], nil)
		}
		return nil
	})
}

// filterFor is the name of the filter an op runs on: "add" for adds,
// "query" for the rest.
func filterFor(op string) string {
	if op == "add" {
		return "add"
	}
	return "query"
}

// countMin returns the sketch of the given shape, in a file of this
// build's, kept (keep).
func (e *env) countMin(sh shape) (*sketch.CountMin, error) {
	return cachedErr(e, "cms-"+sh.name, func() (*sketch.CountMin, error) {
		c, err := sketch.OpenCountMin(sketch.Path(e.file("cms", sh.name)), sh.config())
		if err != nil {
			return nil, err
		}
		return c, e.keep(c, func() { c.Stats() }, nil)
	})
}

// floorOf returns the bare floor of the given shape.
func (e *env) floorOf(sh shape) (*floor.Grid, error) {
	return cachedErr(e, "floor-"+sh.name, func() (*floor.Grid, error) {
		f, err := floor.New(sh.rows, sh.width, keySeed, !e.small)
		if err != nil {
			return nil, err
		}
		e.onClose(f)
		return f, nil
	})
}

// boomEpsilon and boomDelta give the arguments for which BoomFilters'
// NewCountMinSketch makes width columns and rows rows (it takes
// ceil(e/ε) and ceil(ln 1/δ)).
func boomEpsilon(width int) float64 { return math.E / (float64(width) - 0.5) }
func boomDelta(rows int) float64    { return math.Exp(-(float64(rows) - 0.5)) }

// boomCMS returns BoomFilters' Count-Min sketch of the given shape, each
// counter written once so that its pages are in.
func (e *env) boomCMS(sh shape) *boom.CountMinSketch {
	return cached(e, "boomcms-"+sh.name, func() *boom.CountMinSketch {
		c := boom.NewCountMinSketch(boomEpsilon(sh.width), boomDelta(sh.rows))
		c.Reset()
		return c
	})
}

// countingBloom returns a counting Bloom filter for 1M items at 1% in a
// file of this build's, kept (keepFilter).
func (e *env) countingBloom(name string) (*sketch.CountingBloom, error) {
	return cachedErr(e, "cbf-"+name, func() (*sketch.CountingBloom, error) {
		f, err := sketch.OpenCountingBloom(sketch.Path(e.file("cbf", name)), sketch.CountingBloomConfig{Capacity: cbfCapacity, FPRate: cbfFPRate, Seed: keySeed})
		if err != nil {
			return nil, err
		}
		return f, e.keepFilter(f, name, func() { f.Stats() })
	})
}

// cached returns the value made by mk under name, making it once.
func cached[T any](e *env, name string, mk func() T) T {
	if v, ok := e.made[name]; ok {
		return v.(T)
	}
	v := mk()
	e.made[name] = v
	return v
}

// cachedErr is cached for makers that can fail; a failure is not kept.
func cachedErr[T any](e *env, name string, mk func() (T, error)) (T, error) {
	if v, ok := e.made[name]; ok {
		return v.(T), nil
	}
	v, err := mk()
	if err == nil {
		e.made[name] = v
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
