package sketch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// CountMinConfig sizes a Count-Min sketch. The zero value asks for the
// defaults when creating (ErrorRate 0.001, Confidence 0.99: 5 rows of 4096
// counters) and accepts whatever is stored when attaching.
//
// Give either ErrorRate and Confidence (either may be left zero for its
// default) or an explicit shape, Rows and Width, not both.
type CountMinConfig struct {
	// ErrorRate is ε: an estimate exceeds the true count by more than
	// ε·total with probability at most 1-Confidence. Default 0.001.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// Confidence is 1-δ. Default 0.99.
	Confidence float64 `json:"confidence,omitempty"`
	// Rows and Width give the shape directly instead; Width is rounded up
	// to a power of two. Sizing by ErrorRate is almost always better.
	Rows  int `json:"rows,omitempty"`
	Width int `json:"width,omitempty"`
	// Candidates, when not zero, keeps a table of the loudest keys beside
	// the counters (K, at most 16384), so that Top can say who is loud:
	// see Top. CandidateKeyBytes is how much of each key the table keeps
	// (DefaultCandidateKeyBytes when zero, at most 1024, rounded up to a
	// multiple of 8); a longer key is kept as that prefix and its full
	// hash. Zero attaches to a table of any size, or none.
	Candidates        int `json:"candidates,omitempty"`
	CandidateKeyBytes int `json:"candidate_key_bytes,omitempty"`
	// Fleet keeps a fleet part beside the counters: a second grid of the
	// same shape holding the rest of a fleet's counts (the sum of the
	// other hosts' counters), which only SetFleetCounts writes and every
	// answer adds to the sketch's own counters (see SetFleetCounts). Adds
	// write only the own counters. False attaches to a sketch with a
	// fleet part or without; true only to one with a fleet part
	// (ErrIncompatible otherwise).
	Fleet bool `json:"fleet,omitempty"`
	// Lanes keeps that many grids of the shape (at most MaxLanes), a lane
	// for each writing handle, so that writers in several processes add
	// to counters no other core writes: every read sums a counter's lanes,
	// so answers are those of one grid. Each read-write handle claims a
	// free lane at open (one whose handle closed or died is free; its
	// counts stay) and adds to it; handles past the lanes share them. A
	// blind batch that finds its handle's lane busy with another
	// goroutine's claims another lane for the handle, when one is free.
	// Only an add that returns nothing (AddBatch with nil estimates) then
	// scales with the writers: one that returns the estimate reads every
	// lane's lines, which the other writers keep writing. Lanes cost
	// memory and reads: a read touches a line of every lane a row. Zero
	// creates one grid and attaches to any number; 1 is one grid, today's
	// layout. With Fleet the fleet part is one grid after the lanes, and
	// ExportCounts sums the lanes. In a window every slot keeps the lanes,
	// and a handle claims one lane for the whole window.
	Lanes int `json:"lanes,omitempty"`
	// ConservativeUpdate makes an add raise only the key's least counters
	// (conservative update, Estan and Varghese, 2002): each of the key's
	// counters is raised to the least of them plus n, no further, so that
	// a light key sharing a counter with a heavy one no longer lifts it.
	// Estimates stay never low and come out lower: on the words of the Go
	// sources, 0.56x the mean and 0.48x the 99th-percentile over-estimate
	// of plain adds at the default shape (docs/BENCHMARKS.md). A raise is
	// a load and a store, safe only with one writer a grid, so the sketch
	// keeps lanes (Lanes of them, at least 1) plus one more grid, the
	// shared lane: a handle raises in the lane it claimed, and what has no
	// lane of its own to itself at that moment (a handle past the lanes, a
	// goroutine whose handle's lanes are all busy, a merge) adds to the
	// shared lane as plain adds do. That grid costs memory: for one
	// writer, a plain sketch twice as wide takes the same bytes and
	// over-estimates less; with lanes for several writers, it adds one
	// grid to L. False attaches to either; true only to a sketch with it
	// (ErrIncompatible otherwise). Not in a window: ErrInvalidConfig.
	ConservativeUpdate bool `json:"conservative_update,omitempty"`
	// Seed is the hash seed. Zero means a random seed at create, so that
	// nobody who cannot read the file can craft colliding keys; on attach,
	// zero accepts the stored seed, and another seed is ErrIncompatible.
	// Structures merge only when they hash with one seed: create the files
	// of every host that are to be merged with one (another file's Seed,
	// or one kept as secretly as a key). A structure in an arena hashes
	// with the arena's seed (ArenaConfig.Seed): Seed must be zero or that.
	Seed uint64 `json:"seed"`
}

// Default sizing of a Count-Min sketch.
const (
	DefaultErrorRate  = 0.001
	DefaultConfidence = 0.99
)

const (
	maxRows = 64
	// maxWidth keeps rows x width x 8 bytes mappable: 2^40 counters a row
	// on 64-bit platforms, 2^24 on 32-bit ones.
	maxWidth = 1 << (24 + 16*(bits.UintSize/64))
)

// CountMin is a Count-Min sketch (Cormode and Muthukrishnan, 2005) in a
// shared mapping: a grid of 64-bit counters, one row per hash function.
// Any number of goroutines and processes may add and estimate at once,
// lock-free. An estimate is never below the true count, and with
// probability Confidence it exceeds it by at most ErrorRate times the total
// of everything added.
//
// Calls after Close return ErrClosed (Estimate returns ClosedEstimate).
// Close may run while other goroutines still use the handle: their calls
// then either complete or report the handle closed, and never touch a
// page that is unmapped or another file's. An add cut short that way may
// have landed in some rows of the file and not others, as a killed
// process's add would (Check reports ErrTornAdd; nothing needs repair).
type CountMin struct {
	Handle
	l    cells.CountMin
	core cells.CountMinCore // serves batches and whole-array walks
	top  *candidateTable    // nil without Candidates
	// weighed is the weight this handle last saw recorded in the file
	// (noteWeight): an AddN of no more skips the file's word.
	weighed atomic.Uint64
	// lanes are the lanes this handle adds to (handleLanes, below); nil
	// for a sketch of one grid and on a read-only handle.
	lanes *handleLanes
	// conservative: adds raise the least counters in an owned lane
	// (CountMinConfig.ConservativeUpdate); l.Lane is the shared lane.
	conservative bool
}

// ClosedEstimate is what Estimate returns on a closed handle, and on a zero
// CountMin. No count can be this large (counters stop at 2^63), so a closed
// handle never passes for a quiet key; a limiter comparing estimates with a
// threshold treats every key as loud.
const ClosedEstimate = math.MaxUint64

// CountMinStats describes a Count-Min sketch at one moment.
type CountMinStats struct {
	// Rows and Width are the shape: hash functions, counters per row.
	Rows  int `json:"rows"`
	Width int `json:"width"`
	// Fleet says that the sketch keeps a fleet part (CountMinConfig.Fleet).
	Fleet bool `json:"fleet,omitempty"`
	// Lanes is the lanes the sketch keeps (CountMinConfig.Lanes); 0 for
	// one grid. Lane is the one this handle adds to, and LaneOwned
	// whether it claimed it (false: it shares a lane with other handles,
	// every lane having a live owner, or it is read-only).
	Lanes     int  `json:"lanes,omitempty"`
	Lane      int  `json:"lane,omitempty"`
	LaneOwned bool `json:"lane_owned,omitempty"`
	// ConservativeUpdate says that adds raise the least counters
	// (CountMinConfig.ConservativeUpdate); Lanes then counts the lanes
	// handles claim, and Lane is Lanes (the shared lane) when this handle
	// owns none.
	ConservativeUpdate bool `json:"conservative_update,omitempty"`
	// Total is everything counted since the last reset (the largest row
	// sum, so an add interrupted by a crash can only raise it), in the
	// sketch's own counters. With conservative update, whose raises leave
	// every row below what was added, it is at least Adds.
	Total uint64 `json:"total"`
	// FleetTotal is what the rest of the fleet counted, as last stored by
	// SetFleetCounts: the fleet part's largest row sum, or the other
	// hosts' add total when it came with the counts and is greater
	// (saturating at 2^63). Zero without a fleet part.
	FleetTotal uint64 `json:"fleet_total,omitempty"`
	// Adds is what the add count holds: the total of every completed add
	// (n for AddN), kept in 64 cache-line stripes and moved after the
	// counters, so it trails Total by the adds running now or cut short by
	// a crash. Total() returns it without walking the grid.
	Adds uint64 `json:"adds"`
	// ErrorBound is the absolute error bound at the current total,
	// ceil(e/Width · Total): an estimate is at most that much too high,
	// with probability Confidence (for each key asked about). With a
	// fleet part it is the bound at Total + FleetTotal.
	ErrorBound uint64 `json:"error_bound"`
	// ErrorRate is the effective ε, e/Width, which is at least as good as
	// the rate the sketch was sized for.
	ErrorRate float64 `json:"error_rate"`
	// Confidence is the effective 1-δ, 1 - e^-Rows, for one query.
	Confidence float64 `json:"confidence"`
	// Candidates describes the candidate table, if the sketch keeps one.
	Candidates *CandidateStats `json:"candidates,omitempty"`
	FileStats
}

// SuggestCountMin returns the shape that gives estimates within
// errorRate·total of the truth with the given confidence:
// rows = ceil(ln(1/(1-confidence))) and width = e/errorRate rounded up to
// a power of two. It returns 0, 0 when either argument is outside (0, 1)
// or the shape would be too large to map.
func SuggestCountMin(errorRate, confidence float64) (rows, width int) {
	rows, width, err := suggestCountMin(errorRate, confidence)
	if err != nil {
		return 0, 0
	}
	return rows, width
}

func suggestCountMin(errorRate, confidence float64) (rows, width int, err error) {
	if !(errorRate > 0 && errorRate < 1) {
		return 0, 0, fmt.Errorf("%w: error rate %v is not in (0, 1)", ErrInvalidConfig, errorRate)
	}
	if !(confidence > 0 && confidence < 1) {
		return 0, 0, fmt.Errorf("%w: confidence %v is not in (0, 1)", ErrInvalidConfig, confidence)
	}
	r := math.Ceil(math.Log(1 / (1 - confidence)))
	w := math.Ceil(math.E / errorRate)
	if r > maxRows || w > maxWidth {
		return 0, 0, fmt.Errorf("%w: error rate %v with confidence %v needs %v x %v counters, more than %d x %d", ErrInvalidConfig, errorRate, confidence, r, w, maxRows, maxWidth)
	}
	return max(1, int(r)), nextPow2(int(w)), nil
}

// Bytes returns the size of the file (or memory) a sketch of this config
// needs, header included, so that a config can be checked before it is
// opened: SuggestCountMin(1e-9, 0.99) asks for 5 x 2^32 counters, 160 GiB.
// A zero config asks for the default shape. In an arena the structure
// takes this less the file's header and directory (12 KiB with a
// standalone file's directory).
func (cfg CountMinConfig) Bytes() (uint64, error) {
	sp, err := cfg.spec()
	if err != nil {
		return 0, err
	}
	return newLayout(1, []entry{{kind: sp.kind, size: sp.size}}).fileSize, nil
}

// shape resolves a config to the grid it asks for. explicit reports whether
// the caller asked for anything, in which case an existing file must match.
func (cfg CountMinConfig) shape() (rows, width int, explicit bool, err error) {
	if cfg.Rows != 0 || cfg.Width != 0 {
		if cfg.ErrorRate != 0 || cfg.Confidence != 0 {
			return 0, 0, false, fmt.Errorf("%w: give either ErrorRate/Confidence or Rows/Width, not both", ErrInvalidConfig)
		}
		if cfg.Width == 0 {
			return 0, 0, false, fmt.Errorf("%w: Width is missing (give Rows and Width together, or size by ErrorRate)", ErrInvalidConfig)
		}
		if cfg.Rows == 0 {
			return 0, 0, false, fmt.Errorf("%w: Rows is missing (give Rows and Width together, or size by ErrorRate)", ErrInvalidConfig)
		}
		if cfg.Rows < 1 || cfg.Rows > maxRows {
			return 0, 0, false, fmt.Errorf("%w: rows %d is not in [1, %d]", ErrInvalidConfig, cfg.Rows, maxRows)
		}
		if cfg.Width < 1 || cfg.Width > maxWidth {
			return 0, 0, false, fmt.Errorf("%w: width %d is not in [1, %d]", ErrInvalidConfig, cfg.Width, maxWidth)
		}
		return cfg.Rows, nextPow2(cfg.Width), true, nil
	}
	explicit = cfg.ErrorRate != 0 || cfg.Confidence != 0
	er, conf := cfg.ErrorRate, cfg.Confidence
	if er == 0 {
		er = DefaultErrorRate
	}
	if conf == 0 {
		conf = DefaultConfidence
	}
	rows, width, err = suggestCountMin(er, conf)
	return rows, width, explicit, err
}

func countMinBytes(rows, width int) uint64 {
	return cells.StripesBytes + uint64(rows)*uint64(width)*8
}

// countMinGridsBytes is countMinBytes with the fleet grid, when there is
// one, after the own counters: where a candidate table starts.
func countMinGridsBytes(rows, width int, fleet bool) uint64 {
	return countMinLanesBytes(rows, width, 1, fleet)
}

// countMinLanesBytes is countMinGridsBytes with lanes grids of own
// counters.
func countMinLanesBytes(rows, width, lanes int, fleet bool) uint64 {
	grids := uint64(max(lanes, 1))
	if fleet {
		grids++
	}
	return cells.StripesBytes + grids*uint64(rows)*uint64(width)*8
}

// countMinGrids is how many grids of own counters a sketch keeps, from its
// stored lanes word and conservative update flag: the lanes, and the
// shared lane with conservative update.
func countMinGrids(lanes, conservative uint64) int {
	return int(max(lanes, 1) + conservative)
}

// MaxLanes is the most lanes a Count-Min sketch keeps (CountMinConfig.Lanes):
// one per add-count stripe, whose cache lines hold the lanes' owners.
const MaxLanes = cells.StripeCount

// lanesWord is the stored lanes parameter: 0 for one grid, so that a
// sketch of one lane keeps the layout of a version without lanes; with
// conservative update, the lanes handles claim, at least 1.
func lanesWord(lanes int, conservative bool) uint64 {
	if conservative {
		return uint64(max(lanes, 1))
	}
	if lanes <= 1 {
		return 0
	}
	return uint64(lanes)
}

// checkLanes refuses a Lanes the sketch cannot keep.
func (cfg CountMinConfig) checkLanes() error {
	if cfg.Lanes < 0 || cfg.Lanes > MaxLanes {
		return fmt.Errorf("%w: %d lanes: from 1 to %d", ErrInvalidConfig, cfg.Lanes, MaxLanes)
	}
	return nil
}

// flagWord is a stored flag word: 1 for true.
func flagWord(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// errNoFleetPart refuses a fleet verb on a structure made without Fleet.
var errNoFleetPart = fmt.Errorf("%w: the structure keeps no fleet part (create it with Fleet)", ErrIncompatible)

// matchFleet is the match of a config's Fleet against the stored flag
// word: Fleet asks for a fleet part; without it a config attaches to
// either.
func matchFleet(want bool, stored uint64) error {
	if want && stored != 1 {
		return fmt.Errorf("%w: asked for a fleet part, the file keeps none", ErrIncompatible)
	}
	return nil
}

func (cfg CountMinConfig) spec() (spec, error) {
	rows, width, explicit, err := cfg.shape()
	if err != nil {
		return spec{}, err
	}
	k, keyBytes, withCands, err := cfg.candidates()
	if err != nil {
		return spec{}, err
	}
	if err := cfg.checkLanes(); err != nil {
		return spec{}, err
	}
	size := withTable(countMinLanesBytes(rows, width, countMinGrids(lanesWord(cfg.Lanes, cfg.ConservativeUpdate), flagWord(cfg.ConservativeUpdate)), cfg.Fleet), k, keyBytes)
	if size > maxFileSize-pageSize*4 {
		return spec{}, fmt.Errorf("%w: %d x %d counters need %d bytes, more than a sketch file may have (%d)", ErrInvalidConfig, rows, width, size, uint64(maxFileSize))
	}
	sp := spec{
		kind:   kindCountMin,
		size:   size,
		params: [8]uint64{uint64(rows), uint64(width), uint64(k), uint64(keyBytes), flagWord(cfg.Fleet), lanesWord(cfg.Lanes, cfg.ConservativeUpdate), flagWord(cfg.ConservativeUpdate)},
		seed:   cfg.Seed,
	}
	sp.match = func(e entry) error {
		if explicit && (e.params[0] != uint64(rows) || e.params[1] != uint64(width)) {
			return fmt.Errorf("%w: asked for %d x %d counters, the file has %d x %d", ErrIncompatible, rows, width, e.params[0], e.params[1])
		}
		if err := matchFleet(cfg.Fleet, e.params[4]); err != nil {
			return err
		}
		if cfg.Lanes != 0 && uint64(max(cfg.Lanes, 1)) != max(e.params[5], 1) {
			return fmt.Errorf("%w: asked for %d lanes, the file has %d", ErrIncompatible, cfg.Lanes, max(e.params[5], 1))
		}
		if cfg.ConservativeUpdate && e.params[6] != 1 {
			return fmt.Errorf("%w: asked for conservative update, the file's adds are plain", ErrIncompatible)
		}
		return matchCandidates(e, 2, k, keyBytes, withCands)
	}
	return sp, nil
}

func countMinEntryConfig(e entry) any {
	return CountMinConfig{Rows: int(e.params[0]), Width: int(e.params[1]), Candidates: int(e.params[2]), CandidateKeyBytes: int(e.params[3]), Fleet: e.params[4] == 1, Lanes: int(e.params[5]), ConservativeUpdate: e.params[6] == 1}
}

func countMinEntryParams(e entry) map[string]float64 {
	p := map[string]float64{"rows": float64(e.params[0]), "width": float64(e.params[1])}
	if e.params[2] != 0 {
		p["candidates"], p["candidate_key_bytes"] = float64(e.params[2]), float64(e.params[3])
	}
	if e.params[5] != 0 {
		p["lanes"] = float64(e.params[5])
	}
	if e.params[4] != 0 {
		p["fleet"] = float64(e.params[4])
	}
	if e.params[6] != 0 {
		p["conservative_update"] = float64(e.params[6])
	}
	return p
}

func validateCountMinEntry(e entry) error {
	rows, width := e.params[0], e.params[1]
	switch {
	case rows < 1 || rows > maxRows:
		return fmt.Errorf("count-min rows %d", rows)
	case width < 1 || width > maxWidth || width&(width-1) != 0:
		return fmt.Errorf("count-min width %d", width)
	case e.params[4] > 1:
		return fmt.Errorf("count-min fleet flag %d", e.params[4])
	case e.params[6] > 1:
		return fmt.Errorf("count-min conservative update flag %d", e.params[6])
	case e.params[5] > MaxLanes || e.params[5] == 1 && e.params[6] == 0 || e.params[5] == 0 && e.params[6] == 1:
		return fmt.Errorf("count-min lanes %d (fleet part %d, conservative update %d)", e.params[5], e.params[4], e.params[6])
	}
	if err := validateCandidates(e.params[2], e.params[3]); err != nil {
		return err
	}
	if want := withTable(countMinLanesBytes(int(rows), int(width), countMinGrids(e.params[5], e.params[6]), e.params[4] == 1), int(e.params[2]), int(e.params[3])); e.size != want {
		return fmt.Errorf("count-min region of %d bytes, %d x %d (fleet part %d) with %d candidates needs %d", e.size, rows, width, e.params[4], e.params[2], want)
	}
	return nil
}

// OpenCountMin opens the Count-Min sketch at a place (a file, a new memfd,
// an inherited descriptor, memory, a name in an arena: see Place),
// creating it with cfg where there is none. Every process may call it with
// the same place and config: the first creates the sketch, the rest attach.
// The zero config creates the default shape and attaches to any; an
// explicit one must match the stored shape (ErrIncompatible).
func OpenCountMin(at Place, cfg CountMinConfig, opts ...Option) (*CountMin, error) {
	return openAs(at, cfg.spec, cfg.spec, opts, newCountMin)
}

// newCountMin builds the handle for the sketch at m.ent. A read-write
// handle of a sketch with a candidate table joins the file's lock, which
// admissions take.
func newCountMin(m *mapping) (*CountMin, error) {
	rows, width := int(m.ent.params[0]), m.ent.params[1]
	base := m.entryBase()
	c := &CountMin{
		l: cells.CountMin{
			Stripes:  base,
			Cells:    unsafe.Add(base, cells.StripesBytes),
			Seed:     m.lay.seed,
			Salt:     rand.Uint64(),
			Mask:     width - 1,
			Rows:     rows,
			RowBytes: uintptr(width * 8),
			Prefetch: uint64(rows)*width*8 > cells.L2Bytes(),
		},
		core: buildCores.CountMin,
	}
	fleet := m.ent.params[4] == 1
	lanes := int(max(m.ent.params[5], 1)) // the lanes handles claim
	grids := countMinGrids(m.ent.params[5], m.ent.params[6])
	c.conservative = m.ent.params[6] == 1
	if fleet { // after every lane
		c.l.Fleet = unsafe.Add(c.l.Cells, uint64(grids)*uint64(rows)*width*8)
	}
	k := int(m.ent.params[2])
	if (k != 0 || grids > 1) && !m.readOnly {
		if err := m.joinLock(); err != nil {
			m.close()
			return nil, err
		}
	}
	if grids > 1 {
		c.l.Lanes, c.l.LaneBytes = grids, uintptr(rows)*uintptr(width)*8
		if !m.readOnly {
			c.lanes = newHandleLanes(&c.l, m.lk, lanes, c.conservative, !m.noLane)
		}
	}
	if k != 0 {
		c.top = newCandidateTable(m.entryBytes(), countMinLanesBytes(rows, int(width), grids, fleet), k, int(m.ent.params[3]), m)
	}
	c.init(m, c)
	c.open.Store(true)
	return c, nil
}

// Add counts key once and returns the sketch's new estimate for it: the
// smallest of its counters after this add, so never below the true count.
// It returns ErrClosed after Close.
func (c *CountMin) Add(key []byte) (uint64, error) {
	if c.readOnlyNow() {
		return ClosedEstimate, c.refuse("add")
	}
	lo, hi := cells.Hash(key, c.l.Seed)
	est := c.addHashed(lo, hi, 1)
	if c.top != nil && c.top.passes(est, 1) {
		c.offer(lo, hi, unsafe.String(unsafe.SliceData(key), len(key)), est)
	}
	return c.afterUse(est, "add")
}

// ownedLanes is the lanes handles claim, as the file stores them: 0 for
// one grid.
func (c *CountMin) ownedLanes() int {
	if c.conservative {
		return c.l.Lanes - 1 // the last is the shared lane
	}
	return int(lanesWord(c.l.Lanes, false))
}

// addHashed counts n for the key hashing to (lo, hi) and returns its
// estimate.
func (c *CountMin) addHashed(lo, hi, n uint64) uint64 {
	if c.conservative {
		c.addConservative(lo, hi, n)
		return c.l.EstimateHashed(lo, hi)
	}
	return c.l.AddHashed(lo, hi, n)
}

// addBatchConservativeTop is addBatchConservative with the candidate
// table's offers, which need each key's estimate.
func (c *CountMin) addBatchConservativeTop(keys [][]byte, estimates []uint64) {
	if c.top == nil || estimates != nil {
		c.addBatchConservative(keys, estimates)
		if c.top != nil {
			c.offerBatch(keys, estimates)
		}
		return
	}
	var buf [cells.BatchChunk]uint64
	for base := 0; base < len(keys); base += cells.BatchChunk {
		chunk := keys[base:min(base+cells.BatchChunk, len(keys))]
		c.addBatchConservative(chunk, buf[:len(chunk)])
		c.offerBatch(chunk, buf[:len(chunk)])
	}
}

// AddN counts key n times and returns the new estimate. Counters saturate
// at 2^63 rather than wrap. AddN with n == 0 counts nothing and returns the
// current estimate. The file records the largest n added (rounded up to a
// power of two; a handle writes it once per power), which bounds what
// Check takes for adds cut short rather than damage.
func (c *CountMin) AddN(key []byte, n uint64) (uint64, error) {
	if c.readOnlyNow() {
		return ClosedEstimate, c.refuse("add")
	}
	lo, hi := cells.Hash(key, c.l.Seed)
	if n == 0 {
		return c.afterUse(c.l.EstimateHashed(lo, hi), "add")
	}
	if n > 1 && n > c.weighed.Load() {
		c.noteWeight(n) // before the counters: Check bounds a torn add by it
	}
	est := c.addHashed(lo, hi, n)
	if c.top != nil && c.top.passes(est, n) {
		c.offer(lo, hi, unsafe.String(unsafe.SliceData(key), len(key)), est)
	}
	return c.afterUse(est, "add")
}

// AddString is Add for a string key, without converting it to a []byte.
func (c *CountMin) AddString(key string) (uint64, error) {
	if c.readOnlyNow() {
		return ClosedEstimate, c.refuse("add")
	}
	lo, hi := cells.HashString(key, c.l.Seed)
	est := c.addHashed(lo, hi, 1)
	if c.top != nil && c.top.passes(est, 1) {
		c.offer(lo, hi, key, est)
	}
	return c.afterUse(est, "add")
}

// afterUse passes on an estimate read from the mapping, unless Close ran
// meanwhile: then the estimate may have come from the placeholder that
// replaced the file's pages, and the call reports the handle closed.
func (c *CountMin) afterUse(est uint64, op string) (uint64, error) {
	if !c.open.Load() {
		return ClosedEstimate, c.closedErr(op)
	}
	return est, nil
}

// AddBatch counts each key once. When estimates is not nil it must have
// len(keys) elements and receives each key's estimate right after its add.
// On a sketch larger than the CPU's L2 cache a batch hashes and fetches
// keys ahead of their adds (in the C core on the cgo build), so the cache
// misses of several keys overlap and a key costs well under a single Add.
// The add count moves once per 256 keys.
func (c *CountMin) AddBatch(keys [][]byte, estimates []uint64) error {
	if c.readOnlyNow() {
		return c.refuse("add")
	}
	if estimates != nil && len(estimates) != len(keys) {
		return c.m.errorf("add", fmt.Errorf("%w: %d estimates for %d keys", ErrInvalidArgument, len(estimates), len(keys)))
	}
	if c.conservative {
		c.addBatchConservativeTop(keys, estimates)
		return c.afterBatch(estimates, "add")
	}
	if c.top != nil && estimates == nil {
		// The table needs each key's estimate.
		var buf [cells.BatchChunk]uint64
		for base := 0; base < len(keys); base += cells.BatchChunk {
			chunk := keys[base:min(base+cells.BatchChunk, len(keys))]
			c.batchCore(len(chunk)).AddBatch(&c.l, chunk, 1, buf[:len(chunk)])
			c.offerBatch(chunk, buf[:len(chunk)])
		}
		return c.afterBatch(nil, "add")
	}
	if estimates == nil && c.lanes != nil {
		c.addBlind(keys)
		return c.afterBatch(nil, "add")
	}
	c.batchCore(len(keys)).AddBatch(&c.l, keys, 1, estimates)
	if c.top != nil {
		c.offerBatch(keys, estimates)
	}
	return c.afterBatch(estimates, "add")
}

// EstimateBatch stores each key's estimate in estimates, which must have
// len(keys) elements. Like AddBatch it fetches ahead on large sketches.
// After Close it fills estimates with ClosedEstimate and returns ErrClosed.
func (c *CountMin) EstimateBatch(keys [][]byte, estimates []uint64) error {
	if len(estimates) != len(keys) {
		return fmt.Errorf("sketch: estimate %s: %w: %d estimates for %d keys", c.name(), ErrInvalidArgument, len(estimates), len(keys))
	}
	if !c.open.Load() {
		return c.afterBatch(estimates, "estimate")
	}
	c.batchCore(len(keys)).EstimateBatch(&c.l, keys, estimates)
	return c.afterBatch(estimates, "estimate")
}

// afterBatch is afterUse for a batch's estimates.
func (c *CountMin) afterBatch(estimates []uint64, op string) error {
	if !c.open.Load() {
		for i := range estimates {
			estimates[i] = ClosedEstimate
		}
		return c.closedErr(op)
	}
	return nil
}

// batchCore picks the core for a batch of n keys. The C core serves
// batches over grids larger than L2, where fetching keys ahead pays; over
// a grid in L2, and for batches too small to pay for a cgo crossing, the
// Go core is as fast or faster (measured: bench_test.go).
func (c *CountMin) batchCore(n int) cells.CountMinCore {
	if n < cells.CountMinMinBatch || !c.l.Prefetch {
		return cells.CountMinGo{}
	}
	return c.core
}

// raiseCore picks the core for a blind batch of n conservative updates:
// the C core whenever the batch pays for the crossing, since its store is
// a plain one where the Go core's atomic store is a locked exchange on
// amd64.
func (c *CountMin) raiseCore(n int) cells.CountMinCore {
	if n < cells.CountMinMinBatch {
		return cells.CountMinGo{}
	}
	return c.core
}

// Estimate returns the sketch's estimate of how often key was counted: the
// smallest of its counters. It is never below the true count, and exceeds
// it by more than ErrorBound() with probability at most
// 1-Confidence. After Close it returns ClosedEstimate, which no count
// can equal.
func (c *CountMin) Estimate(key []byte) uint64 {
	if !c.open.Load() {
		return ClosedEstimate
	}
	lo, hi := cells.Hash(key, c.l.Seed)
	est, _ := c.afterUse(c.l.EstimateHashed(lo, hi), "estimate")
	return est
}

// EstimateString is Estimate for a string key.
func (c *CountMin) EstimateString(key string) uint64 {
	if !c.open.Load() {
		return ClosedEstimate
	}
	lo, hi := cells.HashString(key, c.l.Seed)
	est, _ := c.afterUse(c.l.EstimateHashed(lo, hi), "estimate")
	return est
}

// Reset forgets everything, in every process. It is not atomic: it clears
// the counters one by one, so an estimate made at the same moment may see
// the sketch half cleared and answer low for a key being forgotten, and an
// add made at the same moment may survive in some rows and not others
// (Check then reports ErrInconsistent, naming the Reset, until the next
// Reset that no add races). To forget at the turn of a window without
// that, rotate two sketches: add to one, estimate the sum of both, and
// reset the older one at the turn. A sketch with a candidate table empties
// it first and holds the file's write lock until the counters are
// cleared: admissions, and everything else that takes the lock (in an
// arena, the other structures' too), wait for the Reset. A fleet part
// (Fleet) is left as it is: it holds the other hosts' counts, which only
// SetFleetCounts rewrites.
func (c *CountMin) Reset() error {
	if err := c.refuse("reset"); err != nil {
		return err
	}
	if c.top != nil {
		// The table is emptied first, its floor with it, and the lock is
		// held until the counters are cleared: no admission comes in
		// between, and a Reset cut short (a Close, a kill) leaves no
		// floor from before it, under which a loud key would not be
		// taken in until it reached the old counts.
		if err := c.top.lk.lock(); err != nil {
			return c.m.errorf("reset", err)
		}
		defer c.top.lk.unlock()
		c.top.clear()
	}
	// Go's clear outruns the C core's memset here (measured:
	// BenchmarkCountMinReset), so both builds reset in Go.
	done := c.l.ResetTracked(&c.open)
	if testHookResetCleared != nil {
		testHookResetCleared()
	}
	if !done || !c.open.Load() {
		return c.closedErr("reset")
	}
	return nil
}

// testHookResetCleared runs in Reset once the counters are cleared: a
// Close or a kill there ends the Reset.
var testHookResetCleared func()

// Stats reports the shape, the total and the error bound at that total.
// It walks the whole grid, so it belongs on a status page, not in a loop.
func (c *CountMin) Stats() CountMinStats {
	s := CountMinStats{
		Rows:               c.l.Rows,
		Width:              int(c.l.Mask + 1),
		Fleet:              c.l.Fleet != nil,
		Lanes:              c.ownedLanes(),
		Lane:               c.lanes.first().lane,
		LaneOwned:          c.lanes.first().tag != 0,
		ConservativeUpdate: c.conservative,
		ErrorRate:          math.E / float64(c.l.Mask+1),
		Confidence:         1 - math.Exp(-float64(c.l.Rows)),
	}
	if c.m != nil {
		s.Bytes = c.m.ownBytes()
	}
	if !c.open.Load() {
		s.Closed, s.Total, s.ErrorBound = true, ClosedEstimate, ClosedEstimate
		return s
	}
	sums := make([]uint64, c.l.Rows)
	c.core.RowSums(&c.l, sums)
	for _, v := range sums {
		s.Total = max(s.Total, v)
	}
	if c.l.Fleet != nil {
		fleet := c.l
		fleet.Cells, fleet.Lanes = c.l.Fleet, 1
		c.core.RowSums(&fleet, sums)
		// Saturating at 2^63, as the fleet total word and every sum of
		// counts do: a fleet part's counters are whatever was stored.
		// The stored word may be higher: the others' add total, which a
		// conservative host's raised rows fall short of.
		s.FleetTotal = max(min(slices.Max(sums), cells.MaxCount), storedFleetTotal(&c.l))
	}
	s.Adds = c.core.Adds(&c.l)
	if c.conservative {
		// Raised rows hold less than was added: the add count is the total.
		s.Total = max(s.Total, s.Adds)
	}
	s.ErrorBound = errorBound(satAdd(s.Total, s.FleetTotal), s.Width)
	s.Candidates = c.top.stats(c, s.ErrorBound)
	s.Frozen = atomic.LoadUint32(c.sealed) != 0
	s.ReadOnly = c.ReadOnly()
	if !c.open.Load() {
		s.Closed, s.Total, s.ErrorBound, s.Adds, s.FleetTotal = true, ClosedEstimate, ClosedEstimate, 0, 0
	}
	return s
}

// Total returns everything counted since the last reset, from the add
// count: 64 cache lines, not a grid walk, so a rate limiter can ask on
// every request. It trails Stats().Total by the adds running at this
// moment (each moves its counters first), and saturates at 2^63. After
// Close it returns ClosedEstimate.
func (c *CountMin) Total() uint64 {
	if !c.open.Load() {
		return ClosedEstimate
	}
	t := c.l.AddCount()
	if !c.open.Load() {
		return ClosedEstimate
	}
	return t
}

// ErrorBound returns the absolute error bound at Total(), ceil(e/Width ·
// Total()): an estimate exceeds the true count by more than this with
// probability at most 1-Confidence, for each key asked about. With a fleet
// part (Fleet) it is the bound at Total() plus the fleet part's total as
// last stored, since every estimate counts both. As cheap as Total. After
// Close it returns ClosedEstimate.
func (c *CountMin) ErrorBound() uint64 {
	t := c.Total()
	if t == ClosedEstimate {
		return ClosedEstimate
	}
	return errorBound(satAdd(t, storedFleetTotal(&c.l)), int(c.l.Mask+1))
}

// errorBound is ceil(e/width · total), computed without losing a count to
// rounding for totals that fit a float exactly.
func errorBound(total uint64, width int) uint64 {
	b := math.Ceil(math.E / float64(width) * float64(total))
	if b >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(b)
}

// Close releases the descriptor and the file's pages. It is safe to call
// twice, and while other goroutines use the handle: calls that started
// before it finish on memory that stays mapped (a private placeholder at
// the same addresses, released once the handle is unreachable), never on
// an unmapped page or on another file mapped later; calls after it return
// ErrClosed, and Estimate returns ClosedEstimate.
func (c *CountMin) Close() error {
	if c == nil {
		return nil
	}
	if c.open.Load() {
		c.lanes.release(&c.l)
	}
	return c.close()
}

func (c *CountMin) describe() (string, string) {
	if c.top != nil {
		return "CountMin", fmt.Sprintf("%d x %d, %d candidates", c.l.Rows, c.l.Mask+1, c.top.k)
	}
	return "CountMin", fmt.Sprintf("%d x %d", c.l.Rows, c.l.Mask+1)
}

func (c *CountMin) statsOf() any { return c.Stats() }

// Config returns the config stored in the file: the sketch's shape, Rows and Width, without the seed
// (a secret: see Seed). Opening the same place with it attaches; creating
// another structure with it (and the same seed) makes one that merges with
// this one. A zero handle returns the zero config.
func (c *CountMin) Config() CountMinConfig {
	if c.m == nil {
		return CountMinConfig{}
	}
	return countMinEntryConfig(c.m.ent).(CountMinConfig)
}

// What Check can tell of a Count-Min sketch's counters, and the words of
// the first stripe line it reads to tell it (docs/FORMAT.md).
//
// Every add puts its weight n into one counter of each row, from the first
// row to the last, and only then into the add count. So a row never holds
// more than the add count plus the weights of the adds that wrote it and
// not yet the add count: adds running now, and adds cut short (by a killed
// process or a Close) since the last Reset. The file records the largest
// weight any add or merge put into one counter (rounded up to a power of
// two), so a row's excess over the add count of more than
// maxTornAdds such weights is more than any plausible set of adds cut
// short: damage (ErrDamaged), as is a counter past what saturating adds
// can leave. A merge cut short leaves rows that differ by up to a whole
// sketch; the merges started and finished, counted in the file, say when
// one may have been, and the excess is not judged then.
const (
	// weightOff is the word holding the largest weight recorded: a power
	// of two, at least the n of every AddN and the counters of every
	// merged sketch's recorded weight; 0 when no add weighed more than 1.
	weightOff = 16
	// mergesOff counts the merges started into the sketch (and the
	// merges a merged sketch had left unfinished), mergedOff those that
	// finished: a difference means one runs or was cut short.
	mergesOff = 24
	mergedOff = 32
	// fleetTotalOff holds, with a fleet part, its total as last stored
	// (its largest row sum, at most maxCount): what error bounds add to
	// the own total. A window's slots keep theirs at the same offset,
	// after their fold words.
	fleetTotalOff = 40
	// maxTornAdds is how many adds of the largest recorded weight Check
	// lets be cut short (or be running) before it calls a row's excess
	// damage: 2^28. A batch moves the add count once per chunk of 256
	// keys, after their counters, so each handle closed or process killed
	// mid-batch may leave up to 255 adds in the rows and not in the count
	// (about 120 a kill measured): 2^28 is 2^20 such batches, more than
	// kills and Closes leave in a file's life, and still under the excess
	// a damaged word of a counter usually adds (4 bytes of 0xff add about
	// 2^32). A bound of 2^20 adds called a service's file damaged after
	// 8,500 Closes under AddBatch.
	maxTornAdds = 1 << 28
	// overSaturated is how far past maxCount adds racing a saturated
	// counter can carry it before one clamps it back (at most fastAdd
	// each, and 2^20 of them): a counter past maxCount by more is damage.
	overSaturated = cells.FastAdd << 20
)

func stripeWord(l *cells.CountMin, off uintptr) *uint64 {
	return (*uint64)(unsafe.Add(l.Stripes, off))
}

// recordedWeight returns the largest weight recorded, at least 1.
func recordedWeight(l *cells.CountMin) uint64 {
	return max(atomic.LoadUint64(stripeWord(l, weightOff)), 1)
}

// recordWeight raises the recorded weight to n rounded up to a power of
// two (at most maxCount) and returns the recorded weight.
func recordWeight(l *cells.CountMin, n uint64) uint64 {
	w := uint64(cells.MaxCount)
	if n <= cells.MaxCount {
		w = 1 << bits.Len64(n-1) // n >= 1
	}
	p := stripeWord(l, weightOff)
	for {
		old := atomic.LoadUint64(p)
		if old >= w {
			return old
		}
		if atomic.CompareAndSwapUint64(p, old, w) {
			return w
		}
	}
}

// noteWeight records the weight of an add of n > 1 before it lands, once
// per handle and power of two: the usual AddN reads a handle field only.
func (c *CountMin) noteWeight(n uint64) {
	c.weighed.Store(recordWeight(&c.l, n))
}

// pendingMerges is how many merges were started and not finished: zero
// unless one is running or was cut short.
func pendingMerges(l *cells.CountMin) uint64 {
	done := atomic.LoadUint64(stripeWord(l, mergedOff))
	return atomic.LoadUint64(stripeWord(l, mergesOff)) - done
}

// beginMerge counts a merge of src started (and the merges src had left
// unfinished, whose partial counters it brings along) and raises the
// recorded weight to src's, before any counter moves.
func beginMerge(l *cells.CountMin, src *cells.CountMin) {
	atomic.AddUint64(stripeWord(l, mergesOff), 1+pendingMerges(src))
	recordWeight(l, recordedWeight(src))
}

// endMerge counts a merge finished.
func endMerge(l *cells.CountMin) { atomic.AddUint64(stripeWord(l, mergedOff), 1) }

// stampCopy brings a copy's recorded weight and merges started up to the
// source's now, after the copy read the counters: an AddN or a merge that
// ran during the copy recorded them before its counters moved, possibly
// after the copy read these words. A merge that started or finished
// during the copy then leaves the copy's merges started past its merges
// finished, as a merge cut short does. The adds that completed during the
// copy (the add count moved by delta since before, which the copy read
// first) may be in some of its rows and not in its add count: the copy's
// weight is raised so that the bound Check applies covers them too.
func stampCopy(l *cells.CountMin, dst []byte, before uint64) {
	for _, off := range []uintptr{weightOff, mergesOff} {
		w := wordAt(dst, off)
		*w = max(*w, atomic.LoadUint64(stripeWord(l, off)))
	}
	if after := l.AddCount(); after > before {
		w := wordAt(dst, weightOff)
		*w = max(*w, copyWeight(max(*w, 1), after-before))
	}
}

// copyWeight is a recorded weight w' (a power of two, at most maxCount)
// with maxTornAdds·w' >= maxTornAdds·w + delta: room for delta more in
// the rows than in the add count.
func copyWeight(w, delta uint64) uint64 {
	need := w + delta/maxTornAdds
	if delta%maxTornAdds != 0 {
		need++
	}
	if need < w || need > cells.MaxCount {
		return cells.MaxCount
	}
	return 1 << bits.Len64(need-1)
}

// check is the Count-Min part of Check: the candidate table first (see
// candidateTable.check), then the rows. Every row must sum to the same
// total, as it must since every add puts its count in exactly one counter
// of each row. Rows that disagree are not damage (ErrInconsistent): adds
// that raced a Reset leave them, and Check says so, or an add was cut
// short by a killed process (ErrTornAdd), which leaves a pattern of its
// own (see resetTracked). Either way nothing needs repair: estimates stay
// upper bounds for every key but the few caught in the middle, and a
// Reset with no adds running clears the finding. Row sums are exact only
// while no add is running (a concurrent add lands in some rows before
// others), and are not compared once a counter has saturated. What no
// add cut short explains is damage (ErrDamaged): a counter far past
// saturation, or a row holding more than the add count by more than
// maxTornAdds adds of the largest weight recorded. A fleet part is not
// judged: it holds absolute values stored whole by SetFleetCounts, with
// no add count or row rule to hold them to, and the next store replaces
// whatever it holds.
func (c *CountMin) check() error {
	if c.top != nil {
		if err := c.top.check(); err != nil {
			return c.m.errorf("check", err)
		}
	}
	return c.checkCounters()
}

// checkCounters is check without the candidate table: the rows.
func (c *CountMin) checkCounters() error {
	sums := make([]uint64, c.l.Rows)
	var adds, after, weight uint64
	judge := false // the excess over the add count can be judged
	for try := 0; ; try++ {
		gen := c.l.Resets()
		done := atomic.LoadUint64(stripeWord(&c.l, mergedOff))
		// The add count moves after the counters: read before the rows,
		// it never exceeds them unless something but an add changed them.
		adds = c.l.AddCount()
		saturated := c.core.RowSums(&c.l, sums)
		// Read after the rows: every add the walk saw is counted in it
		// unless it is running or was cut short, and weighs at most the
		// recorded weight, which moves before an add's counters.
		after = c.l.AddCount()
		weight = recordedWeight(&c.l)
		started := atomic.LoadUint64(stripeWord(&c.l, mergesOff))
		if c.l.Resets() != gen && try < 3 {
			continue // a Reset ran during the walk: walk again
		}
		if saturated {
			if err := c.overSaturated(); err != nil {
				return err
			}
			return nil
		}
		judge = c.l.Resets() == gen && started == done
		break
	}
	if !c.open.Load() {
		return c.closedErr("check")
	}
	if judge && weight <= math.MaxUint64/maxTornAdds {
		for i, v := range sums {
			if v > after && v-after > maxTornAdds*weight {
				return c.m.errorf("check", fmt.Errorf("%w: row %d sums to %d, %d more than the add count (%d): more than %d adds cut short of the largest weight added (%d) could leave; the counters were changed by something other than this package's adds, merges and resets", ErrDamaged, i, v, v-after, after, maxTornAdds, weight))
			}
		}
	}
	if c.conservative {
		// A raise moves each row by n at most, and rows by different
		// amounts: no row sum may pass the add count (above), and rows
		// that disagree are what raises leave.
		return nil
	}
	return c.rowFinding(sums, adds)
}

// overSaturated walks the counters of a sketch with a saturated one for a
// counter past maxCount by more than racing adds can carry it: damage.
func (c *CountMin) overSaturated() error {
	width := uintptr(c.l.Mask + 1)
	for i := 0; i < c.l.Rows*max(c.l.Lanes, 1); i++ { // a lane's rows follow the last's
		row := unsafe.Add(c.l.Cells, uintptr(i)*c.l.RowBytes)
		for j := uintptr(0); j < width; j++ {
			if v := atomic.LoadUint64((*uint64)(unsafe.Add(row, j*8))); v > cells.MaxCount+overSaturated {
				if !c.open.Load() {
					return c.closedErr("check")
				}
				return c.m.errorf("check", fmt.Errorf("%w: counter %d of row %d holds %d, past the largest count 2^63 by more than adds racing it can carry it", ErrDamaged, j, i%c.l.Rows, v))
			}
		}
	}
	return nil
}

// rowFinding classifies row sums that disagree: a prefix of rows counting
// more is an add cut short (ErrTornAdd); sums that only rise from the
// first row to the last are what adds racing a Reset leave (see
// resetTracked).
func (c *CountMin) rowFinding(sums []uint64, adds uint64) error {
	lo, hi := sums[0], sums[0]
	rising := true
	for i, v := range sums {
		lo, hi = min(lo, v), max(hi, v)
		if i > 0 && v < sums[i-1] {
			rising = false
		}
	}
	if lo == hi {
		if adds > lo {
			return c.m.errorf("check", fmt.Errorf("%w: the add count holds %d, %d more than every row: adds that raced a Reset (their count survived it, their counters did not); the file is not damaged, and a Reset with no adds running clears this", ErrInconsistent, adds, adds-lo))
		}
		return nil
	}
	diff := fmt.Sprintf("row sums range from %d to %d, a difference of %d", lo, hi, hi-lo)
	if c.l.Resets()%2 == 1 {
		return c.m.errorf("check", fmt.Errorf("%w: %s, and a Reset is running or was cut short part way (by a killed process or a Close); the file is not damaged, and a Reset that completes clears this", ErrInconsistent, diff))
	}
	if rising && c.l.Resets() != 0 {
		return c.m.errorf("check", fmt.Errorf("%w: %s, left by adds that raced a Reset (they survive in some rows only); the file is not damaged, and a Reset with no adds running clears this", ErrInconsistent, diff))
	}
	if pendingMerges(&c.l) != 0 {
		return c.m.errorf("check", fmt.Errorf("%w: %s, and a merge into the sketch is running or was cut short (by a killed process or a Close); the file is not damaged: every estimate stays an upper bound, and a Reset clears this", ErrTornAdd, diff))
	}
	return c.m.errorf("check", fmt.Errorf("%w: %s; the file is not damaged: every estimate stays an upper bound but that of the key whose add was cut, and a Reset clears this", ErrTornAdd, diff))
}

// Merge adds the counters of others into c's, counter by counter,
// saturating at 2^63 as adds do, and their add counts into c's: afterwards
// every estimate of c is at least what c and the others estimated
// together, and c is what one sketch fed every stream would be (equal
// counters, byte for byte, when no counter saturated). The sketches must
// have c's shape and seed (ErrIncompatible, whose message says what
// differs, never the seeds); they may be read-only views or frozen copies,
// such as files shipped from other hosts, and c itself (doubling it). c
// must be writable (ErrReadOnly, ErrFrozen).
//
// Merge takes no lock: it reads each source counter once with an atomic
// load and adds it with an atomic add, so adds running in any process at
// the same time, on c or on a source, land whole, and a source written
// meanwhile contributes some of the new adds and not others. A merge cut
// short (a killed process, a Close) has added a prefix of the counters;
// the sketch counts the merges started and finished, so that Check knows
// then that its rows may differ by up to a whole sketch (ErrTornAdd, not
// damage). c records the largest weight the others recorded. A sketch
// whose counters Check calls damaged (ErrDamaged) is refused, naming it,
// before anything changes: its counters would spread into c's for good.
// Both builds merge in Go: it is one pass of loads and adds, as fast in
// either core.
//
// When c keeps a candidate table (Candidates), its keys and those of the
// others' tables are counted again in the merged sketch, and the loudest
// fill c's table, under the file's write lock: the union of candidates,
// cut to c's table. A slot whose key is kept whole but does not hash to
// the slot's hash (Check of its sketch: ErrCorrupt) is left out, as Top
// leaves it out, rather than refusing the merge: the counters merge
// sound, and the key's next add names it again. A prefix's label cannot
// be checked and is taken as it is (see HeavyHitter.Key).
//
// Merge adds the others' own counters only, never a fleet part (Fleet):
// a fleet part holds the other hosts' counts, which merged into own
// counters would count the fleet twice. c's fleet part stays as it is.
func (c *CountMin) Merge(others ...*CountMin) error {
	err := mergeEach(&c.Handle, "sketch", others, func(o *CountMin) error {
		if o.l.Rows != c.l.Rows || o.l.Mask != c.l.Mask {
			return fmt.Errorf("%w: %s has %d x %d counters, this sketch %d x %d", ErrIncompatible, o.name(), o.l.Rows, o.l.Mask+1, c.l.Rows, c.l.Mask+1)
		}
		if o.l.Seed != c.l.Seed {
			return fmt.Errorf("%w: %s hashes with another seed than this sketch", ErrIncompatible, o.name())
		}
		if err := o.checkCounters(); errors.Is(err, ErrDamaged) {
			return fmt.Errorf("%w: %s: its counters hold what no add can leave (check it), so they are not merged", ErrDamaged, o.name())
		}
		return nil
	}, func(o *CountMin) error {
		beginMerge(&c.l, &o.l)
		mergeCells(&c.l, &o.l)
		endMerge(&c.l)
		return nil
	})
	if err != nil {
		return err
	}
	if c.top != nil {
		if err := c.mergeCandidates(others); err != nil {
			// The counters are merged; the table is as it was.
			return c.m.errorf("merge", fmt.Errorf("the counters are merged, but not the candidate table: %w", err))
		}
	}
	return c.after("merge")
}

// mergeCells adds src's counters (its lanes summed) and add-count
// stripes into dst's, which has the same shape, saturating: into the
// lane dst's handle writes.
func mergeCells(dst, src *cells.CountMin) {
	n := uintptr(dst.Rows) * uintptr(dst.Mask+1)
	into := dst.WriteGrid()
	for i := uintptr(0); i < n; i++ {
		if v := src.Load(i * 8); v != 0 {
			cells.AddCell((*uint64)(unsafe.Add(into, i*8)), min(v, cells.MaxCount))
		}
	}
	for i := uintptr(0); i < cells.StripeCount; i++ {
		if v := atomic.LoadUint64((*uint64)(unsafe.Add(src.Stripes, i*cells.StripeBytes))); v != 0 {
			cells.AddCell((*uint64)(unsafe.Add(dst.Stripes, i*cells.StripeBytes)), min(v, cells.MaxCount))
		}
	}
}

// The candidate table of a Count-Min sketch (candidates.go): how adds feed
// it and how Top lists it.

// offer hands an add whose estimate passed the table's floor to the table.
func (c *CountMin) offer(lo, hi uint64, key string, est uint64) {
	if c.open.Load() {
		c.top.offer(c, lo, hi, key, est, 0)
	}
}

// offerBatch offers a batch's keys whose estimates passed the floor.
func (c *CountMin) offerBatch(keys [][]byte, est []uint64) {
	for i, e := range est {
		if c.top.passes(e, 1) {
			lo, hi := cells.Hash(keys[i], c.l.Seed)
			c.offer(lo, hi, unsafe.String(unsafe.SliceData(keys[i]), len(keys[i])), e)
		}
	}
}

func (c *CountMin) recount(lo, hi uint64) uint64 { return c.l.EstimateHashed(lo, hi) }

func (c *CountMin) noiseFloor() uint64 {
	return satAdd(c.l.AddCount(), storedFleetTotal(&c.l)) / (c.l.Mask + 1)
}

// Top lists the loudest keys of the sketch's candidate table (a sketch
// created with Candidates), loudest first: at most n of them (every key
// listed when n <= 0), and at most Candidates. Each comes with its
// estimate now, read from the counters (never below its true count), and
// that estimate less ErrorBound (its low end). Keys whose estimate is no
// more than the total over the width, the mean of a row's counters, are
// left out: below that a count is not told apart from collisions.
//
// The table is fed by every add in every process: an add whose estimate
// passes the table's floor (its quietest key's stored estimate once it is
// full) offers its key, and only a key taken in takes the file's write
// lock; the rest is a load and a compare. A key loud enough to be among
// the K loudest is taken in once its estimate passes the floor, so its
// name is listed whenever its count is; keys that share their two
// buckets of 8 ways with 15 louder keys are not. Top takes no lock and
// costs a walk of the table and an estimate per key. It returns
// ErrInvalidArgument on a sketch without a table, ErrClosed after Close.
//
// A key kept whole is listed only if it hashes to its slot's hash with
// the file's seed, so its label names the counters of its estimate; a
// key longer than CandidateKeyBytes is listed as a prefix whose label no
// reader can check (see HeavyHitter.Key).
func (c *CountMin) Top(n int) ([]HeavyHitter, error) {
	if !c.open.Load() {
		return nil, c.closedErr("top")
	}
	if c.top == nil {
		return nil, c.m.errorf("top", errNoCandidates)
	}
	hs := c.top.top(c, n, c.ErrorBound())
	if !c.open.Load() {
		return nil, c.closedErr("top")
	}
	return hs, nil
}

var errNoCandidates = fmt.Errorf("%w: the sketch keeps no candidate table (create it with Candidates)", ErrInvalidArgument)

// mergeCandidates fills c's table with the loudest of its keys and the
// others' keys, counted in the merged sketch. It fails with the lock's
// ErrTimeout, leaving the table as it was.
func (c *CountMin) mergeCandidates(others []*CountMin) error {
	cands := c.top.collect()
	for _, o := range others {
		if o.top != nil {
			cands = append(cands, o.top.collect()...)
		}
	}
	return c.top.rebuild(c, cands)
}

// Snapshot copies the sketch, while any process keeps adding to it, into
// a new sketch at a place, and returns it frozen and read-only, with this
// sketch's shape and seed, so that it merges (Merge) with the snapshots
// and frozen files of other hosts. Every estimate of the copy is at least
// what the adds that returned, in any process, before Snapshot was called
// counted for its key; an add running during the copy may be in some of
// its rows and not others (Check of the copy then reports ErrTornAdd,
// which is no damage), and a Reset running during it can make the copy
// low (the copy starts again when one ran; after several, the copy keeps
// the odd reset generation, so that its Check says a Reset raced it).
//
// A snapshot is always a new structure: a Path that does not exist yet
// (an error wrapping fs.ErrExist otherwise; the file appears at the path
// complete and sealed), a Memfd or Memory. Other places are
// ErrInvalidArgument: an Inherited descriptor holds a structure already,
// and sealing a structure of an arena would seal the whole arena (take
// the arena's snapshot instead). WithMode applies to a path; the copy
// has this sketch's seed. The copy reads the whole region once, a word at
// a time, and takes no lock. A fleet part (Fleet) is copied with the own
// counters, so that the copy answers as this sketch did.
func (c *CountMin) Snapshot(at Place, opts ...Option) (*CountMin, error) {
	if !c.open.Load() {
		return nil, c.closedErr("snapshot")
	}
	m, err := createSnapshot(c.name(), at, entrySpec(c.m.ent, c.l.Seed, c.copyRegion), opts)
	return finishSnapshot(&c.Handle, m, err, newCountMin)
}

// copyRegion copies the sketch's region into dst, the new one's. The add
// count's stripes come first in the region, so the copy's add count is no
// more than any of its rows holds. A Reset that ran during the copy (its
// generation moved) makes the copy start again.
func (c *CountMin) copyRegion(dst []byte) error {
	base := c.l.Stripes
	for try := 1; ; try++ {
		gen := c.l.Resets()
		before := c.l.AddCount()
		copyWords(dst, base)
		stampCopy(&c.l, dst, before) // the weight, merges and adds that moved meanwhile
		if c.top != nil {
			// The table again, keeping only its ways that stayed whole.
			c.top.copyTo(dst, countMinGridsBytes(c.l.Rows, int(c.l.Mask+1), c.l.Fleet != nil))
		}
		if after := c.l.Resets(); after == gen {
			return nil
		} else if try == snapshotTries {
			// Still racing: the copy says a Reset ran through it.
			atomic.StoreUint64(wordAt(dst, cells.ResetGenOff), after|1)
			return nil
		}
		clear(dst)
	}
}

// The fleet part (CountMinConfig.Fleet): what a fleet agent reads and
// writes. A host pushes its own counters (ExportCounts) and stores the sum
// of the other hosts' into its fleet part (SetFleetCounts); every answer
// counts a cell as own + fleet. Merging the others' counts into the own
// counters instead cannot be made crash-safe: after a kill between adding
// a delta and recording it, nothing tells the host's counts from the
// fleet's, and the next push would send the fleet's back as the host's.

// ExportCounts returns the sketch's own counters, rows x width uint64
// little-endian, row-major: what this host counted, without the fleet
// part, each summed over the lanes. Each counter is read once,
// atomically, while adds go on, so a counter is never torn, and an add
// running during the export may be in some rows of it and not others. A
// closed handle is ErrClosed.
func (c *CountMin) ExportCounts() ([]byte, error) {
	if !c.open.Load() {
		return nil, c.closedErr("export")
	}
	out := exportCounts(&c.l)
	return out, c.after("export")
}

// SetFleetCounts stores counts, rows x width uint64 little-endian,
// row-major (ExportCounts' encoding: the sum of the other hosts'
// counters), into the sketch's fleet part, with an atomic store of each
// absolute value: every estimate then counts each cell as its own counter
// plus the fleet part's (saturating at 2^63), so that it is never below
// the fleet's count of a key plus this host's. Storing absolute values
// makes the call idempotent: a repeated call changes nothing, and one cut
// short (a kill, a Close) or racing another is replaced whole by the
// next. An estimate made during the store may see some cells old and
// others new.
//
// The counts may be followed by 8 more bytes, little-endian: the other
// hosts' add total (the sum of their Total). FleetTotal, and so the error
// bounds, then take the greater of it and the largest row sum. A fleet
// with conservative update needs it: raised rows hold less than was
// added, so their sums alone would make the bounds read low. The fleet
// agent sends it for every Count-Min sketch.
//
// A sketch without a fleet part, or counts of another length, is
// ErrIncompatible; a read-only, frozen or closed handle stores nothing
// (ErrReadOnly, ErrFrozen, ErrClosed).
func (c *CountMin) SetFleetCounts(counts []byte) error {
	if err := c.refuse("set fleet counts"); err != nil {
		return err
	}
	var adds uint64
	if n := uint64(c.l.Rows) * (c.l.Mask + 1) * 8; uint64(len(counts)) == n+8 {
		counts, adds = counts[:n], binary.LittleEndian.Uint64(counts[n:])
	}
	if err := storeFleetAdds(&c.l, counts, adds); err != nil {
		return c.m.errorf("set fleet counts", err)
	}
	return c.after("set fleet counts")
}

// exportCounts is exportGrid of l's counters, each summed over the lanes.
func exportCounts(l *cells.CountMin) []byte {
	if l.Lanes <= 1 {
		return exportGrid(l.Cells, l.Rows, l.Mask+1)
	}
	n := uintptr(l.Rows) * uintptr(l.Mask+1)
	out := make([]byte, n*8)
	for i := uintptr(0); i < n; i++ {
		binary.LittleEndian.PutUint64(out[i*8:], l.Load(i*8))
	}
	return out
}

// exportGrid reads a grid of rows x width counters, once each and
// atomically, into rows x width uint64 little-endian.
func exportGrid(grid unsafe.Pointer, rows int, width uint64) []byte {
	n := uintptr(rows) * uintptr(width)
	out := make([]byte, n*8)
	for i := uintptr(0); i < n; i++ {
		binary.LittleEndian.PutUint64(out[i*8:], atomic.LoadUint64((*uint64)(unsafe.Add(grid, i*8))))
	}
	return out
}

// storeFleet stores counts into l's fleet grid, with an atomic store a
// counter, then their total (the largest row sum, saturating at
// maxCount) in the fleet total word, for error bounds.
func storeFleet(l *cells.CountMin, counts []byte) error {
	return storeFleetAdds(l, counts, 0)
}

// storeFleetAdds is storeFleet with the others' add total, which the
// fleet total is at least.
func storeFleetAdds(l *cells.CountMin, counts []byte, adds uint64) error {
	if l.Fleet == nil {
		return errNoFleetPart
	}
	width := uintptr(l.Mask + 1)
	n := uintptr(l.Rows) * width
	if uint64(len(counts)) != uint64(n)*8 {
		return fmt.Errorf("%w: %d bytes of counts for %d x %d counters (%d bytes)", ErrIncompatible, len(counts), l.Rows, width, n*8)
	}
	total, row := adds, uint64(0)
	for i := uintptr(0); i < n; i++ {
		v := binary.LittleEndian.Uint64(counts[i*8:])
		atomic.StoreUint64((*uint64)(unsafe.Add(l.Fleet, i*8)), v)
		row = satAdd(row, min(v, cells.MaxCount))
		if (i+1)%width == 0 {
			total, row = max(total, row), 0
		}
	}
	atomic.StoreUint64(stripeWord(l, fleetTotalOff), min(total, cells.MaxCount))
	return nil
}

// storedFleetTotal is the fleet total word: the fleet part's total as
// last stored, 0 without a fleet part.
func storedFleetTotal(l *cells.CountMin) uint64 {
	if l.Fleet == nil {
		return 0
	}
	return atomic.LoadUint64(stripeWord(l, fleetTotalOff))
}

// Lanes of a Count-Min sketch (CountMinConfig.Lanes; docs/DESIGN.md,
// "Lanes"): which grid a handle's adds write. Every plain add is atomic,
// so a lane shared by handles past the lanes still counts right: lanes
// only keep writers off each other's cache lines. Conservative update's
// raises need one writer a lane (below).

// laneOwnerOff is where, in stripe j's cache line, the owner of lane j
// is recorded: the tag of the handle that claimed it (its token id and
// GEN bits, window_linux.go) plus one; 0 is free.
const laneOwnerOff = 48

func laneOwner(l *cells.CountMin, j int) *uint64 {
	return stripeWord(l, uintptr(j)*cells.StripeBytes+laneOwnerOff)
}

// laneSlot is a lane a handle holds, with the flag a goroutine of the
// handle sets while its blind batch adds to it, so that two goroutines
// pick two lanes. Padded to a cache line: the flags are written once a
// batch by every goroutine of the handle.
type laneSlot struct {
	busy atomic.Uint32
	lane int
	tag  uint64 // the owner word it claimed; 0: a lane shared
	_    [64 - 24]byte
}

// handleLanes are a handle's lanes: the one claimed at open, which
// single adds and merges write, and those its goroutines claimed since,
// when their blind batches met.
type handleLanes struct {
	lk    *fileLock
	owned int                         // the lanes handles claim: 0 to owned-1
	mu    sync.Mutex                  // held to claim a lane
	slots atomic.Pointer[[]*laneSlot] // grows under mu
	// closed is set by release: a goroutine that takes a slot after it
	// gives the slot back and adds where a handle without a lane does.
	closed atomic.Bool
	// noClaim: the handle claims no lane, at open or later (WithoutLane).
	noClaim bool
	// retry counts blind batches that found every slot busy: a lane is
	// looked for once in a while, not at every one, since a look asks the
	// tokens about every owner.
	retry atomic.Uint32
}

// newHandleLanes claims the handle's first lane among the owned lanes,
// unless claim is false (WithoutLane: then it never claims one), and
// points l's adds at it. With conservative update l's adds go to the
// shared lane, grid owned, instead: only a goroutine holding an owned
// lane's slot writes that lane (raising it), so every other add (a
// merge, a handle without a lane) must go elsewhere.
func newHandleLanes(l *cells.CountMin, lk *fileLock, owned int, conservative, claim bool) *handleLanes {
	h := &handleLanes{lk: lk, owned: owned, noClaim: !claim}
	var s *laneSlot
	if claim {
		s = claimLane(l, lk, owned)
	}
	switch {
	case s != nil:
	case conservative:
		s = &laneSlot{lane: owned} // the shared lane
	default:
		// Every lane has a live owner: share one, spread by token id.
		s = &laneSlot{lane: lockStripe(lk) % owned}
	}
	s.busy.Store(0)
	h.slots.Store(&[]*laneSlot{s})
	l.Lane = laneGrid(l, s.lane)
	if conservative {
		l.Lane = laneGrid(l, owned)
	}
	return h
}

func laneGrid(l *cells.CountMin, j int) unsafe.Pointer {
	return unsafe.Add(l.Cells, uintptr(j)*l.LaneBytes)
}

// claimLane claims a free lane, else one whose owner is dead (its counts
// stay: they are valid adds), and returns it busy; nil when every lane
// has a live owner.
func claimLane(l *cells.CountMin, lk *fileLock, owned int) *laneSlot {
	tag := uint64(tokenID(lk)) + 1
	for pass := range 2 {
		for j := range owned {
			w := laneOwner(l, j)
			v := atomic.LoadUint64(w)
			free := v == 0
			if pass == 1 {
				// A lane under this handle's own tag is owned by a live
				// handle sharing its token (another structure handle of
				// the same arena, or the same one again): the token's
				// liveness test cannot see its own holder (its OFD lock
				// never conflicts with itself), so it must not be asked.
				free = v != 0 && v != tag && !tokenAlive(lk, int(v-1))
			}
			if free && atomic.CompareAndSwapUint64(w, v, tag) {
				s := &laneSlot{lane: j, tag: tag}
				s.busy.Store(1)
				return s
			}
		}
	}
	return nil
}

// first is the lane claimed at open (a zero slot for a handle without
// lanes).
func (h *handleLanes) first() *laneSlot {
	if h == nil {
		return &laneSlot{}
	}
	return (*h.slots.Load())[0]
}

// take returns a lane no other goroutine of the handle adds to now,
// claiming one more from the file when every one it holds is busy and a
// lane is free (every 64th time such a batch comes), or nil: then the
// caller adds to the first lane beside the goroutine there.
func (h *handleLanes) take(l *cells.CountMin) *laneSlot {
	for _, s := range *h.slots.Load() {
		if s.busy.CompareAndSwap(0, 1) {
			return h.checkOpen(s)
		}
	}
	if h.retry.Add(1)%64 != 1 || !h.mu.TryLock() {
		return nil
	}
	defer h.mu.Unlock()
	if h.closed.Load() || h.noClaim {
		return nil
	}
	s := claimLane(l, h.lk, h.owned)
	if s != nil {
		grown := append(append([]*laneSlot(nil), *h.slots.Load()...), s)
		h.slots.Store(&grown)
	}
	return s
}

// takeSoon is take for a blind batch, asked again a few times with the
// processor yielded in between when every lane of the handle is busy: with
// more goroutines than cores a holder may be waiting for a processor, and
// letting it finish frees its lane, where adding beside the holder of the
// first lane would move that lane's lines between the cores. Bounded, so
// that a holder descheduled for long cannot hold up the batch.
func (h *handleLanes) takeSoon(l *cells.CountMin) *laneSlot {
	s := h.take(l)
	for try := 0; s == nil && try < 4 && !h.closed.Load(); try++ {
		runtime.Gosched()
		s = h.take(l)
	}
	return s
}

// checkOpen returns s, taken, unless release has begun: then s is given
// back and nil returned, since release may free its lane for another
// writer. Taking the flag before this look pairs with release's setting
// closed before it takes every flag: either release waits for this
// goroutine to give s back, or this goroutine sees closed.
func (h *handleLanes) checkOpen(s *laneSlot) *laneSlot {
	if h.closed.Load() {
		s.busy.Store(0)
		return nil
	}
	return s
}

// put gives back a slot take returned (nil: none).
func (s *laneSlot) put() {
	if s != nil {
		s.busy.Store(0)
	}
}

// release frees every lane the handle claimed, for the next handles,
// once no goroutine of the handle adds to it: a lane with conservative
// update must never have two writers, and the next owner may be in
// another process. Slots stay taken for good: later adds go where a
// handle without a lane adds. A second release (two Closes at once, both
// past the handle's open check) returns at once: the first took every
// slot for good, so waiting for them would never end.
func (h *handleLanes) release(l *cells.CountMin) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed.Swap(true) {
		return
	}
	for _, s := range *h.slots.Load() {
		for !s.busy.CompareAndSwap(0, 1) {
			runtime.Gosched() // a goroutine is adding: a batch at most
		}
		if s.tag != 0 {
			atomic.CompareAndSwapUint64(laneOwner(l, s.lane), s.tag, 0)
		}
	}
}

// addBlind is AddBatch without estimates on a sketch of lanes: the keys
// go to a lane no other goroutine of the handle adds to at the moment, so
// that goroutines of one handle scale as handles do.
func (c *CountMin) addBlind(keys [][]byte) {
	s := c.lanes.takeSoon(&c.l)
	if s == nil {
		c.batchCore(len(keys)).AddBatch(&c.l, keys, 1, nil)
		return
	}
	l := c.l
	l.Lane = laneGrid(&c.l, s.lane)
	c.batchCore(len(keys)).AddBatch(&l, keys, 1, nil)
	s.put()
}

// Conservative update (CountMinConfig.ConservativeUpdate; docs/DESIGN.md,
// "Conservative update"). A raise loads the key's counters and stores the
// raised ones: an add another writer made between them would be lost and
// an estimate could be low. So a lane is raised only by the goroutine
// holding its slot, in the one handle that owns it (the owner word, as for
// every sketch of lanes); everything else (adds without an owned lane
// free, merges) goes to the shared lane, l.Lane, by atomic adds.

// addConservative counts n for the key hashing to (lo, hi), then the add
// count.
func (c *CountMin) addConservative(lo, hi, n uint64) {
	s := c.lanes.take(&c.l)
	c.raise(s, lo, hi, n)
	s.put()
	c.l.CountAdds(n)
}

// raise adds n for the key in s's lane, conservatively, when the handle
// owns it; else in the shared lane.
func (c *CountMin) raise(s *laneSlot, lo, hi, n uint64) {
	if s != nil && s.tag != 0 {
		c.l.RaiseLane(laneGrid(&c.l, s.lane), lo, hi, n)
		return
	}
	c.l.AddLane(lo, hi, n)
}

// addBatchConservative is AddBatch with conservative update: one slot for
// the batch, and the add count a chunk, after the chunk's counters, as
// the cores move it. est, when not nil, receives each key's estimate.
func (c *CountMin) addBatchConservative(keys [][]byte, est []uint64) {
	s := c.lanes.take(&c.l)
	defer s.put()
	if est == nil {
		if s != nil && s.tag != 0 {
			c.raiseCore(len(keys)).RaiseBatch(&c.l, laneGrid(&c.l, s.lane), keys, 1)
		} else {
			c.batchCore(len(keys)).AddBatch(&c.l, keys, 1, nil) // blind, into the shared lane
		}
		return
	}
	for base := 0; base < len(keys); base += cells.BatchChunk {
		chunk := keys[base:min(base+cells.BatchChunk, len(keys))]
		for i, k := range chunk {
			lo, hi := cells.Hash(k, c.l.Seed)
			c.raise(s, lo, hi, 1)
			if est != nil {
				est[base+i] = c.l.EstimateHashed(lo, hi)
			}
		}
		c.l.CountAdds(uint64(len(chunk)))
	}
}
