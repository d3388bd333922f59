package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/shmsketch/sketch"
)

// The one table of the library's kinds, for the parts that drive every
// kind alike (faults, mutate, arena): what is the kind's own (its open,
// its config's type, its Merge) is in structKinds, and what the kinds do
// alike is asked of a handle through the interfaces below, not case by
// case.

// handle is what every structure, and an arena, does alike: its
// sketch.Handle and Close.
type handle interface {
	Close() error
	Check() error
	Freeze() error
	Unlink() error
	String() string
	Seed() uint64
	Frozen() bool
	ReadOnly() bool
	Path() string
	StatsVar() sketch.StatsVar
}

// adding is how every kind adds, whatever its answer A: a Count-Min
// kind's estimate after the add, a filter's "already" (every bit or
// counter of the key was set before).
type adding[A any] interface {
	Add(key []byte) (A, error)
	AddString(key string) (A, error)
	AddBatch(keys [][]byte, answers []A) error
}

// counter is what the Count-Min kinds do alike.
type counter interface {
	handle
	adding[uint64]
	AddN(key []byte, n uint64) (uint64, error)
	Estimate(key []byte) uint64
	EstimateString(key string) uint64
	EstimateBatch(keys [][]byte, estimates []uint64) error
	Total() uint64
	ErrorBound() uint64
}

// filter is what the Bloom kinds and the counting Bloom filter do alike.
type filter interface {
	handle
	adding[bool]
	Contains(key []byte) bool
	ContainsString(key string) bool
	ContainsBatch(keys [][]byte, out []bool) error
}

// distinctCount is the distinct count's adds, which answer nothing: a key
// raises a register or not, and says nothing of itself.
type distinctCount interface {
	handle
	Add(key []byte) error
	AddString(key string) error
	AddBatch(keys [][]byte) error
	Count() uint64
}

// limiter is the rate limiter's decisions, which the generic parts take
// for adds: a decision of cost 1 now, whose answer they drop, and a peek
// (cost 0) refused for "maybe present" (ratelimit.go).
type limiter interface {
	handle
	Allow(key []byte, cost uint64) (sketch.RateDecision, error)
	AllowString(key string, cost uint64) (sketch.RateDecision, error)
	AllowBatch(keys [][]byte, cost uint64, out []sketch.RateDecision) error
	Snapshot(at sketch.Place, opts ...sketch.Option) (*sketch.GCRA, error)
}

// windowed is what both windows do alike.
type windowed interface {
	Rotate() error
	Current() uint64
}

// Each kind is what the tables take it for: one that lost a call would
// otherwise drop out of their rows unseen.
var (
	_ counter       = (*sketch.CountMin)(nil)
	_ counter       = (*sketch.CountMinWindow)(nil)
	_ filter        = (*sketch.Bloom)(nil)
	_ filter        = (*sketch.CountingBloom)(nil)
	_ filter        = (*sketch.BloomWindow)(nil)
	_ distinctCount = (*sketch.Distinct)(nil)
	_ distinctCount = (*sketch.DistinctWindow)(nil)
	_ limiter       = (*sketch.GCRA)(nil)
	_ handle        = (*sketch.Counters)(nil)
	_ windowed      = (*sketch.DistinctWindow)(nil)
	_ windowed      = (*sketch.CountMinWindow)(nil)
	_ windowed      = (*sketch.BloomWindow)(nil)
	_ handle        = (*sketch.Arena)(nil)
)

// A structKind is one kind of structure.
type structKind struct {
	kind  sketch.Kind
	short string // the faults' name for it, in file names: "cm"
	// open opens the kind at a place with a config of the kind's type, or
	// nil for the zero config, which attaches to whatever shape the place
	// holds. What opened is nil with an error.
	open func(at sketch.Place, cfg any, opts ...sketch.Option) (any, error)
	// config is h's stored config, and false when h is not of the kind.
	config func(h any) (any, bool)
	// merge merges h into itself; nil for the windows, which do not merge.
	merge func(h any) error
	kindParts
}

// kindParts are what the harness's parts ask of a kind beyond its open.
// The faults, the arena phases and the byte-order part read their fields
// here instead of naming kinds, so that a new kind joins them by its row
// (and, in the arena phases, a slot of arenaKindCount). The storm takes
// its structures and merges from here, but its workers, records and
// checkers still name each structure (worker.go, record.go, checker.go).
type kindParts struct {
	// faultConfig is a config of the kind of about size bytes
	// (faults_handles.go).
	faultConfig func(size uint64) any
	// faultMost is the largest file the kind makes, 0 when any size can
	// be asked for.
	faultMost uint64
	// faultAnswers sets how a fault adds to h, a structure of the kind,
	// and what it reads back.
	faultAnswers func(f *faultHandle, h any)
	// arena is the kind's part in the arena phases (arenaplan.go); nil for
	// a kind they leave out.
	arena *arenaKind
	// storm are the kind's structures in the kill storm (files.go); none
	// for a kind it leaves out.
	storm []stormPart
	// byteOrder is the config the byte-order part opens files with
	// through the kind's open (arch_byteorder.go); nil for a kind it
	// leaves out.
	byteOrder any
}

var structKinds = []structKind{
	kindOf(sketch.KindCountMin, "cm", sketch.OpenCountMin, mergeSelf[*sketch.CountMin], kindParts{
		faultConfig:  func(size uint64) any { return countMinFor(size) },
		faultAnswers: answerWeights,
		storm: []stormPart{{file: "storm.cms", config: stormCountMin,
			keep: func(s *stormFiles, h any) { s.cms = h.(*sketch.CountMin) },
			merge: mergeInto(1, fieldCountMin, false, func(s *stormFiles) *sketch.CountMin { return s.cms }, sketch.OpenCountMin,
				func(seed uint64) sketch.CountMinConfig { c := stormCountMin; c.Seed = seed; return c }, "count-min")}},
		byteOrder: boCountMin,
		arena: &arenaKind{
			counts: true,
			small:  func(rng *rand.Rand) structSpec { return structSpec{Rows: 2 + rng.IntN(3), Width: 256 << rng.IntN(4)} },
			fill:   func(rng *rand.Rand) structSpec { return structSpec{Rows: 2, Width: 1024 << rng.IntN(4)} },
			large:  structSpec{Rows: 4, Width: 1 << 17}, // 4 MiB
			grow:   func(s *structSpec) { s.Width *= 2 },
			shape:  countMinShape,
		},
	}),
	kindOf(sketch.KindBloom, "bloom", sketch.OpenBloom, mergeSelf[*sketch.Bloom], kindParts{
		faultConfig:  func(size uint64) any { return bloomFor(size) },
		faultAnswers: answerPresence,
		storm: []stormPart{{file: "storm.bloom", config: stormBloom,
			keep: func(s *stormFiles, h any) { s.bf = h.(*sketch.Bloom) },
			merge: mergeInto(1, fieldBloom, true, func(s *stormFiles) *sketch.Bloom { return s.bf }, sketch.OpenBloom,
				func(seed uint64) sketch.BloomConfig { c := stormBloom; c.Seed = seed; return c }, "bloom")}},
		byteOrder: boBloom,
		arena: &arenaKind{
			small: func(rng *rand.Rand) structSpec { return structSpec{Capacity: 200 + rng.Uint64N(1800), FPRate: 0.01} },
			fill:  func(rng *rand.Rand) structSpec { return structSpec{Capacity: 10000 + rng.Uint64N(50000), FPRate: 0.01} },
			large: structSpec{Capacity: 1 << 21, FPRate: 0.01}, // about 2.4 MiB
			grow:  growCapacity,
			shape: bloomShape,
		},
	}),
	kindOf(sketch.KindCountingBloom, "cbf", sketch.OpenCountingBloom, mergeSelf[*sketch.CountingBloom], kindParts{
		faultConfig:  func(size uint64) any { return countingBloomFor(size) },
		faultAnswers: answerCountedAdds,
		// Counting Bloom merges come four times as often as the others'.
		storm: []stormPart{{file: "storm.cbf", config: stormCountingBloom,
			keep: func(s *stormFiles, h any) { s.cbf = h.(*sketch.CountingBloom) },
			merge: mergeInto(4, fieldCountingBloom, false, func(s *stormFiles) *sketch.CountingBloom { return s.cbf }, sketch.OpenCountingBloom,
				func(seed uint64) sketch.CountingBloomConfig { c := stormCountingBloom; c.Seed = seed; return c }, "counting bloom")}},
		byteOrder: boCountingBloom,
		arena: &arenaKind{
			small: func(rng *rand.Rand) structSpec { return structSpec{Capacity: 100 + rng.Uint64N(900), FPRate: 0.01} },
			fill:  func(rng *rand.Rand) structSpec { return structSpec{Capacity: 5000 + rng.Uint64N(20000), FPRate: 0.01} },
			large: structSpec{Capacity: 1 << 20, FPRate: 0.01}, // about 4 MiB
			grow:  growCapacity,
			shape: countingBloomShape,
		},
	}),
	kindOf(sketch.KindCountMinWindow, "cmw", sketch.OpenCountMinWindow, nil, kindParts{
		faultConfig: func(size uint64) any {
			return sketch.CountMinWindowConfig{Window: faultWindow, CountMin: countMinFor(size / slots)}
		},
		faultAnswers: answerWeights,
		storm: []stormPart{{file: "storm.cmw", config: sketch.CountMinWindowConfig{Window: stormWindow, CountMin: stormCountMinWindowLanes},
			keep: func(s *stormFiles, h any) { s.cmw = h.(*sketch.CountMinWindow) }},
			{file: "storm.cmwclock", config: sketch.CountMinWindowConfig{Window: stormClockWindow, CountMin: stormCountMinWindow}, clock: true,
				keep: func(s *stormFiles, h any) { s.cmc = h.(*sketch.CountMinWindow) }}},
		byteOrder: sketch.CountMinWindowConfig{Window: boWindow, CountMin: boWindowCountMin},
		arena: &arenaKind{
			counts: true,
			small: func(rng *rand.Rand) structSpec {
				return structSpec{Rows: 2 + rng.IntN(2), Width: 256 << rng.IntN(2), Keep: 2 + rng.IntN(3)}
			},
			fill:  func(rng *rand.Rand) structSpec { return structSpec{Rows: 2, Width: 1024 << rng.IntN(2), Keep: 2} },
			large: structSpec{Rows: 2, Width: 1 << 16, Keep: 2}, // 3 MiB
			grow:  func(s *structSpec) { s.Keep++ },
			shape: countMinWindowShape,
		},
	}),
	kindOf(sketch.KindBloomWindow, "bw", sketch.OpenBloomWindow, nil, kindParts{
		faultConfig: func(size uint64) any {
			return sketch.BloomWindowConfig{Window: faultWindow, Bloom: bloomFor(size / slots)}
		},
		faultAnswers: answerPresence,
		storm: []stormPart{{file: "storm.bloomw", config: sketch.BloomWindowConfig{Window: stormWindow, Bloom: stormBloomWindow},
			keep: func(s *stormFiles, h any) { s.bw = h.(*sketch.BloomWindow) }},
			{file: "storm.bloomwclock", config: sketch.BloomWindowConfig{Window: stormClockWindow, Bloom: stormBloomWindow}, clock: true,
				keep: func(s *stormFiles, h any) { s.bwc = h.(*sketch.BloomWindow) }}},
		byteOrder: sketch.BloomWindowConfig{Window: boWindow, Bloom: boWindowBloom},
		arena: &arenaKind{
			small: func(rng *rand.Rand) structSpec {
				return structSpec{Capacity: 100 + rng.Uint64N(400), FPRate: 0.01, Keep: 2 + rng.IntN(2)}
			},
			fill: func(rng *rand.Rand) structSpec {
				return structSpec{Capacity: 5000 + rng.Uint64N(10000), FPRate: 0.01, Keep: 2}
			},
			large: structSpec{Capacity: 1 << 19, FPRate: 0.01, Keep: 2}, // about 1.8 MiB
			grow:  growCapacity,
			shape: bloomWindowShape,
		},
	}),
	// The distinct counts answer no key, which the arena phases and the
	// byte-order part read back: they leave them out.
	kindOf(sketch.KindDistinct, "hll", sketch.OpenDistinct, mergeSelf[*sketch.Distinct], kindParts{
		faultConfig:  func(size uint64) any { return distinctFor(size) },
		faultMost:    distinctMost(1),
		faultAnswers: answerPresence,
		storm: []stormPart{{file: "storm.hll", config: stormDistinct,
			keep: func(s *stormFiles, h any) { s.hll = h.(*sketch.Distinct) },
			merge: mergeInto(1, fieldDistinct, true, func(s *stormFiles) *sketch.Distinct { return s.hll }, sketch.OpenDistinct,
				func(seed uint64) sketch.DistinctConfig { c := stormDistinct; c.Seed = seed; return c }, "distinct")}},
	}),
	kindOf(sketch.KindDistinctWindow, "hllw", sketch.OpenDistinctWindow, nil, kindParts{
		faultConfig: func(size uint64) any {
			return sketch.DistinctWindowConfig{Window: faultWindow, Distinct: distinctFor(size / slots)}
		},
		faultMost:    distinctMost(slots),
		faultAnswers: answerPresence,
	}),
	// The rate limiter is a presence filter in the generic parts
	// (ratelimit.go); in the storm, workers decide at the rate and log
	// what was allowed.
	kindOf(sketch.KindGCRA, "gcra", sketch.OpenGCRA, mergeSelf[*sketch.GCRA], kindParts{
		faultConfig:  func(size uint64) any { return gcraFor(size) },
		faultAnswers: answerPresence,
		storm: []stormPart{{file: "storm.gcra", config: stormGCRA,
			keep: func(s *stormFiles, h any) { s.gl = h.(*sketch.GCRA) }}},
		byteOrder: boGCRA,
		arena: &arenaKind{
			small: func(rng *rand.Rand) structSpec { return structSpec{Rows: 2 + rng.IntN(3), Width: 64 << rng.IntN(4)} },
			fill:  func(rng *rand.Rand) structSpec { return structSpec{Rows: 2, Width: 1024 << rng.IntN(4)} },
			large: structSpec{Rows: 4, Width: 1 << 17}, // 4 MiB
			grow:  func(s *structSpec) { s.Width *= 2 },
			shape: gcraShape,
		},
	}),
	// Exact counters are a one-row Count-Min sketch in the generic parts
	// (a key adds to the counter its hash picks, counters.go); in the
	// storm, workers add to named counters and log each add.
	kindOf(sketch.KindCounters, "ctr", sketch.OpenCounters, mergeSelf[*sketch.Counters], kindParts{
		faultConfig:  func(size uint64) any { return countersFor(size) },
		faultMost:    countersMost(),
		faultAnswers: answerCounterWeights,
		storm: []stormPart{{file: "storm.ctr", config: stormCounters,
			keep: func(s *stormFiles, h any) { s.ctr = h.(*sketch.Counters) }}},
		byteOrder: boCounters,
		arena: &arenaKind{
			counts: true,
			small:  func(rng *rand.Rand) structSpec { return structSpec{Width: 32 << rng.IntN(4)} },
			fill:   func(rng *rand.Rand) structSpec { return structSpec{Width: 256 << rng.IntN(3)} },
			large:  structSpec{Width: sketch.CountersMaxNames}, // 72 KiB, the most a counters structure takes
			grow:   func(s *structSpec) { s.Width = s.Width%sketch.CountersMaxNames + 1 },
			shape:  countersShape,
		},
	}),
	// The exact sets answer presence exactly (set.go); the storm leaves
	// them out.
	kindOf(sketch.KindSet, "set", sketch.OpenSet, mergeSelf[*sketch.Set], kindParts{
		faultConfig:  func(size uint64) any { return setFor(size) },
		faultAnswers: answerPresence,
		byteOrder:    boExactSet,
		arena:        setArena,
	}),
	kindOf(sketch.KindSetWindow, "setw", sketch.OpenSetWindow, nil, kindParts{
		// One table serves every period: it is sized as a set is.
		faultConfig:  func(size uint64) any { return sketch.SetWindowConfig{Window: faultWindow, Set: setFor(size)} },
		faultAnswers: answerPresence,
		byteOrder:    boExactSetWindow,
		arena:        setWindowArena,
	}),
}

// kindOf is the row of the kind whose constructor is open.
func kindOf[C any, S interface{ Config() C }](k sketch.Kind, short string, open func(sketch.Place, C, ...sketch.Option) (S, error), merge func(any) error, parts kindParts) structKind {
	return structKind{
		kind:      k,
		short:     short,
		kindParts: parts,
		open: func(at sketch.Place, cfg any, opts ...sketch.Option) (any, error) {
			var c C
			if cfg != nil {
				var ok bool
				if c, ok = cfg.(C); !ok {
					panic(fmt.Sprintf("torture: a %T config for %s", cfg, k))
				}
			}
			s, err := open(at, c, opts...)
			if err != nil {
				return nil, err
			}
			return s, nil
		},
		config: func(h any) (any, bool) {
			s, ok := h.(S)
			if !ok {
				return nil, false
			}
			return s.Config(), true
		},
		merge: merge,
	}
}

// mergeSelf merges h, an S, into itself.
func mergeSelf[S interface{ Merge(others ...S) error }](h any) error {
	s := h.(S)
	return s.Merge(s)
}

// structKindIndex is the index of kind k in structKinds, or -1 for a kind
// this build does not know.
func structKindIndex(k sketch.Kind) int {
	for i := range structKinds {
		if structKinds[i].kind == k {
			return i
		}
	}
	return -1
}

// structKindOf is the row of kind k; nil for a kind this build does not
// know.
func structKindOf(k sketch.Kind) *structKind {
	if i := structKindIndex(k); i >= 0 {
		return &structKinds[i]
	}
	return nil
}

// kindsWith are the kinds whose rows say they take part: the lists of
// the parts that leave some kinds out, in the table's order.
func kindsWith(takesPart func(k *structKind) bool) []sketch.Kind {
	var ks []sketch.Kind
	for i := range structKinds {
		if takesPart(&structKinds[i]) {
			ks = append(ks, structKinds[i].kind)
		}
	}
	return ks
}

// kindOfHandle is the row of h's kind; nil for an arena.
func kindOfHandle(h any) *structKind {
	for i := range structKinds {
		if _, ok := structKinds[i].config(h); ok {
			return &structKinds[i]
		}
	}
	return nil
}

// adds are a structure's adds with their answers dropped: the same calls
// for every kind.
type adds struct {
	add       func(key []byte) error
	addString func(key string) error
	addBatch  func(keys [][]byte) error // the batch call, asking no answers
}

// addsOf are h's adds, for a structure of any kind.
func addsOf(h any) adds {
	switch h := h.(type) {
	case counter:
		return dropAnswers[uint64](h)
	case filter:
		return dropAnswers[bool](h)
	case distinctCount:
		return adds{add: h.Add, addString: h.AddString, addBatch: h.AddBatch}
	case *sketch.Counters:
		return countersAdds(h)
	case exactSet:
		return setAdds(h)
	case limiter:
		return adds{
			add:       func(key []byte) error { _, err := h.Allow(key, 1); return err },
			addString: func(key string) error { _, err := h.AllowString(key, 1); return err },
			addBatch: func(keys [][]byte) error {
				return h.AllowBatch(keys, 1, make([]sketch.RateDecision, len(keys)))
			},
		}
	}
	panic(fmt.Sprintf("torture: no adds on a %T", h))
}

func dropAnswers[A any](h adding[A]) adds {
	return adds{
		add:       func(key []byte) error { _, err := h.Add(key); return err },
		addString: func(key string) error { _, err := h.AddString(key); return err },
		addBatch:  func(keys [][]byte) error { return h.AddBatch(keys, nil) },
	}
}

// ask is the answer a kind promises never to give low: a Count-Min
// estimate or the value of a key's counter, or 1 for a filter's "maybe present" (a set's
// "present") and 0 for "absent"; a
// distinct count, which answers no key, promises only that a count that
// holds an add is never 0.
func ask(h any, key []byte) uint64 {
	switch h := h.(type) {
	case counter:
		return h.Estimate(key)
	case filter:
		if h.Contains(key) {
			return 1
		}
		return 0
	case distinctCount:
		return min(h.Count(), 1)
	case limiter:
		return busy(h, key)
	case *sketch.Counters:
		return counterAnswer(h, key)
	case exactSet:
		return setAnswer(h, key)
	}
	panic(fmt.Sprintf("torture: no answers from a %T", h))
}
