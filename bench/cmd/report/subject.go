package main

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Key names one measurement: an operation of a structure through one
// implementation, on one shape and key stream, with a batch size and a
// number of writers. Its String is the subject's ID.
type Key struct {
	Struct string // countmin, countingbloom, bloom, window, heavy, distinct, map, cgo
	// Op is add, estimate, merge, contains, countof, addremove, check,
	// addstring, count, countwalk, insert, lookup or call.
	Op string
	// Impl is sketch (this module's), floor, boom (tylertreat/BoomFilters),
	// bitsblooms (bits-and-blooms/bloom/v3), axiomhq (axiomhq/hyperloglog),
	// mutexmap, rwmutexmap, syncmap or cgo.
	Impl string
	// Build is the build the subject runs in: cgo or purego for this
	// module's structures, whose batches and walks differ by build; empty
	// for the rest, which run in whichever build is at hand.
	Build string
	// Shape is a Count-Min shape (A, default, B, C, D), a capacity (1M), a
	// key space (10k, 1M), the K of a heavy-hitter table (k20, k200) or a
	// distinct count's precision (p14).
	Shape   string
	Dist    string // zipf, uniform, uniform10k, uint64
	Batch   int    // keys per call: 1 for single keys
	Writers int    // goroutines in each process
	Procs   int    // processes
	// Lanes and Handles are the lanes rows' (rows_lanes.go): the
	// Count-Min file's lanes (CountMinConfig.Lanes; for the bare floor,
	// its private grids, one a writer) and the read-write handles in each
	// process (1, or one a goroutine). Zero elsewhere, where the ID has no
	// part for them.
	Lanes, Handles int
}

func (k Key) String() string {
	impl := k.Impl
	if k.Build != "" {
		impl += "." + k.Build
	}
	id := fmt.Sprintf("%s/%s/%s/%s/%s/b%d/g%dp%d", k.Struct, k.Op, impl, k.Shape, k.Dist, k.Batch, k.Writers, k.Procs)
	if k.Lanes > 0 {
		id += fmt.Sprintf("/l%dh%d", k.Lanes, k.Handles)
	}
	return id
}

// single returns the key with one writer in one process.
func (k Key) single() Key { k.Writers, k.Procs = 1, 1; return k }

// with returns the key with another build.
func (k Key) with(build string) Key { k.Build = build; return k }

// subject is one row of the table of measurements.
type subject struct {
	Key
	// Bytes is the structure's size, for charts by size (0 when it has
	// none of its own).
	Bytes int64
	// open prepares the structure and returns an operation over a run of
	// keys; each goroutine gets its own (batches keep a buffer each).
	open func(e *env) (opener, error)
}

// opener makes the operations of a subject: each goroutine gets its own
// (batches keep a buffer each), over keys lo to hi of the stream the
// subject walks (hi-lo is a multiple of Batch).
type opener struct {
	n   int // keys in the stream
	new func() func(lo, hi int)
}

// over is an opener over keys, a stream's as []byte or as string: each
// goroutine's op runs over keys lo to hi, and what it returns goes to
// sink, so that no loop is optimised away.
func over[K []byte | string](keys []K, mk func() func(keys []K) uint64) opener {
	return opener{n: len(keys), new: func() func(lo, hi int) {
		do := mk()
		return func(lo, hi int) { sink.Add(do(keys[lo:hi])) }
	}}
}

// overKeys is over the keys of stream dist as []byte, for a structure
// whose opening returned err: no opener if it failed.
func overKeys(e *env, dist string, err error, mk func() func(keys [][]byte) uint64) (opener, error) {
	if err != nil {
		return opener{}, err
	}
	return over(e.stream(dist).Bytes, mk), nil
}

// ID is the subject's name in requests and results.
func (s subject) ID() string { return s.Key.String() }

// unit is the number of keys a run is a multiple of.
func (s subject) unit() int { return s.Batch * s.Writers * s.Procs }

// sink keeps results alive, so that no loop is optimised away.
var sink atomic.Uint64

// walker does an op over the keys of a stream from its own position on,
// wrapping at the end (streams are a power of two long, and positions stay
// multiples of the batch).
type walker struct {
	n, pos int
	do     func(lo, hi int)
}

func (w *walker) run(n int) {
	for n > 0 {
		m := min(n, w.n-w.pos)
		w.do(w.pos, w.pos+m)
		w.pos = (w.pos + m) & (w.n - 1)
		n -= m
	}
}

// runFunc does n keys' worth of a subject's op.
type runFunc func(n int)

// start opens s and returns its run function: one walker from key start
// on, or one per goroutine spread over the stream, with an equal share of
// each run handed to each peer process when s has more than one process.
func (s subject) start(e *env, start int) (runFunc, func(), error) {
	op, err := s.open(e)
	if err != nil {
		return nil, nil, err
	}
	n := op.n
	if n&(n-1) != 0 || n%s.Batch != 0 {
		return nil, nil, fmt.Errorf("%s: a stream of %d keys", s.ID(), n)
	}
	// Writers start evenly spread over the stream, each peer process at
	// its own part of it, so that no two read the same keys.
	spread := n / (s.Writers * s.Procs) / s.Batch * s.Batch
	walkers := make([]*walker, s.Writers)
	for i := range walkers {
		walkers[i] = &walker{n: n, pos: (start + i*spread) % n, do: op.new()}
	}
	var stop func()
	var peers []*peer
	if s.Procs > 1 {
		stop = func() {
			for _, p := range peers {
				p.stop()
			}
		}
	}
	for i := 1; i < s.Procs; i++ {
		p, err := e.startPeer(s.Key, i*s.Writers*spread)
		if err != nil {
			stop()
			return nil, nil, err
		}
		peers = append(peers, p)
	}
	run := func(n int) {
		n /= s.Procs
		for _, p := range peers {
			p.begin(n)
		}
		if len(walkers) == 1 {
			walkers[0].run(n)
		} else {
			var wg sync.WaitGroup
			per := n / len(walkers)
			for _, w := range walkers[1:] {
				wg.Go(func() { w.run(per) })
			}
			walkers[0].run(n - per*(len(walkers)-1))
			wg.Wait()
		}
		for _, p := range peers {
			p.wait()
		}
	}
	return run, stop, nil
}

// table returns every subject for the given builds of this module
// (sketch.Backend values), in report order. The same table is built in
// every process, so an ID names the same subject in each.
func table(builds []string) []subject {
	var all []subject
	all = append(all, countMinRows(builds)...)
	all = append(all, lanesRows(builds)...)
	all = append(all, countingBloomRows(builds)...)
	all = append(all, bloomRows(builds)...)
	all = append(all, windowRows(builds)...)
	all = append(all, heavyRows(builds)...)
	all = append(all, distinctRows(builds)...)
	all = append(all, exactRows()...)
	all = append(all, cgoRows()...)
	return all
}

// lookup finds a subject by ID.
func lookup(subjects []subject, id string) (subject, bool) {
	for _, s := range subjects {
		if s.ID() == id {
			return s, true
		}
	}
	return subject{}, false
}
