package sketch

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"unsafe"
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
	ErrorRate float64
	// Confidence is 1-δ. Default 0.99.
	Confidence float64
	// Rows and Width give the shape directly instead; Width is rounded up
	// to a power of two. Sizing by ErrorRate is almost always better.
	Rows, Width int
	// Seed is the hash seed. Zero means a random seed at create, so that
	// nobody who cannot read the file can craft colliding keys; on attach,
	// zero accepts the stored seed.
	Seed uint64
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
// A CountMin must not be used after Close, and Close must not run while
// other calls on the same handle are in progress.
type CountMin struct {
	m    *mapping
	l    cmsLayout
	core cmsCore // serves batches and whole-array walks
}

// cmsCore is one implementation of the Count-Min operations; goCore and
// (with cgo) cCore must agree bit for bit.
type cmsCore interface {
	name() string
	add(l *cmsLayout, key []byte, n uint64) uint64
	estimate(l *cmsLayout, key []byte) uint64
	addBatch(l *cmsLayout, keys [][]byte, n uint64, est []uint64)
	estimateBatch(l *cmsLayout, keys [][]byte, est []uint64)
	rowSums(l *cmsLayout, sums []uint64) (saturated bool)
	adds(l *cmsLayout) uint64
	reset(l *cmsLayout)
}

// CountMinStats describes a Count-Min sketch at one moment.
type CountMinStats struct {
	// Rows and Width are the shape: hash functions, counters per row.
	Rows, Width int
	// Bytes is the size of the whole mapping (header and counters).
	Bytes uint64
	// Total is everything counted since the last reset (the largest row
	// sum, so an add interrupted by a crash can only raise it).
	Total uint64
	// Adds is the number of add calls (a batch counts once per key). It is
	// bumped after the counters, so an add cut short by a crash may be
	// missing from it while present in some rows.
	Adds uint64
	// ErrorBound is the absolute error bound at the current total,
	// ceil(e/Width · Total): an estimate is at most that much too high,
	// with probability Confidence.
	ErrorBound uint64
	// ErrorRate is the effective ε, e/Width, which is at least as good as
	// the rate the sketch was sized for.
	ErrorRate float64
	// Confidence is the effective 1-δ, 1 - e^-Rows.
	Confidence float64
	// Seed is the file's hash seed.
	Seed uint64
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

func nextPow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// shape resolves a config to the grid it asks for. explicit reports whether
// the caller asked for anything, in which case an existing file must match.
func (cfg CountMinConfig) shape() (rows, width int, explicit bool, err error) {
	if cfg.Rows != 0 || cfg.Width != 0 {
		if cfg.ErrorRate != 0 || cfg.Confidence != 0 {
			return 0, 0, false, fmt.Errorf("%w: give either ErrorRate/Confidence or Rows/Width, not both", ErrInvalidConfig)
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
	return stripesBytes + uint64(rows)*uint64(width)*8
}

func (cfg CountMinConfig) spec() (spec, error) {
	rows, width, explicit, err := cfg.shape()
	if err != nil {
		return spec{}, err
	}
	sp := spec{
		kind:   kindCountMin,
		size:   countMinBytes(rows, width),
		params: [8]uint64{uint64(rows), uint64(width)},
		seed:   cfg.Seed,
	}
	sp.match = func(e entry) error {
		if explicit && (e.params[0] != uint64(rows) || e.params[1] != uint64(width)) {
			return fmt.Errorf("%w: asked for %d x %d counters, the file has %d x %d", ErrIncompatible, rows, width, e.params[0], e.params[1])
		}
		return nil
	}
	return sp, nil
}

func validateCountMinEntry(e entry) error {
	rows, width := e.params[0], e.params[1]
	switch {
	case rows < 1 || rows > maxRows:
		return fmt.Errorf("count-min rows %d", rows)
	case width < 1 || width > maxWidth || width&(width-1) != 0:
		return fmt.Errorf("count-min width %d", width)
	case e.size != countMinBytes(int(rows), int(width)):
		return fmt.Errorf("count-min region of %d bytes, %d x %d needs %d", e.size, rows, width, countMinBytes(int(rows), int(width)))
	}
	for _, p := range e.params[2:] {
		if p != 0 {
			return fmt.Errorf("unknown count-min parameters")
		}
	}
	return nil
}

// OpenCountMin opens the Count-Min sketch in the file at path, creating it
// if it does not exist. Every process calls it with the same path and
// config; the first creates the file and the rest attach, also when several
// race on a path that does not exist yet.
//
// A new file is created with O_EXCL|O_NOFOLLOW, mode 0600 unless WithMode
// says otherwise, its blocks reserved (a full filesystem fails here with
// ErrNoSpace) and its magic published last. A symlink at path is refused
// (ErrSymlink). An empty file owned by the caller, or an all-zero one of
// exactly the size the config needs (left by a creator killed before it
// wrote the header), is initialised; a partly written header is
// ErrInterruptedCreate. An existing sketch is validated (ErrCorrupt and the
// sentinels that wrap it) and must match an explicit config
// (ErrIncompatible).
func OpenCountMin(path string, cfg CountMinConfig, opts ...Option) (*CountMin, error) {
	sp, err := cfg.spec()
	if err != nil {
		return nil, fmt.Errorf("sketch: open %s: %w", path, err)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("sketch: open %s: %w", path, err)
	}
	m, err := openPath(path, sp, o)
	if err != nil {
		return nil, err
	}
	return newCountMin(m), nil
}

// NewCountMinMemfd creates a Count-Min sketch in a new memfd, an anonymous
// file that lives as long as a descriptor or mapping of it does. Hand it to
// a child process with File and exec.Cmd.ExtraFiles; the child attaches
// with AttachCountMin. The memfd's size is sealed, so no holder can shrink
// it under the others. name shows in /proc and in errors only.
func NewCountMinMemfd(name string, cfg CountMinConfig) (*CountMin, error) {
	sp, err := cfg.spec()
	if err != nil {
		return nil, fmt.Errorf("sketch: create memfd:%s: %w", name, err)
	}
	m, err := createMemfd(name, sp)
	if err != nil {
		return nil, err
	}
	return newCountMin(m), nil
}

// AttachCountMin attaches to the Count-Min sketch behind a descriptor this
// process inherited or received, such as fd 3 in a child started with
// exec.Cmd.ExtraFiles. The descriptor must be open for reading and writing
// (ErrInvalidArgument otherwise); it is duplicated, so it stays the
// caller's to close. The file is validated as OpenCountMin does.
func AttachCountMin(fd uintptr, cfg CountMinConfig) (*CountMin, error) {
	sp, err := cfg.spec()
	if err != nil {
		return nil, fmt.Errorf("sketch: attach fd %d: %w", fd, err)
	}
	m, err := attachInherited(fd, sp)
	if err != nil {
		return nil, err
	}
	return newCountMin(m), nil
}

func newCountMin(m *mapping) *CountMin {
	region := m.entryBytes()
	rows, width := int(m.ent.params[0]), m.ent.params[1]
	base := unsafe.Pointer(&region[0])
	return &CountMin{
		m: m,
		l: cmsLayout{
			stripes:  base,
			cells:    unsafe.Add(base, stripesBytes),
			seed:     m.lay.seed,
			mask:     width - 1,
			rows:     rows,
			rowBytes: uintptr(width * 8),
			prefetch: uint64(rows)*width*8 > l2Bytes(),
		},
		core: defaultCore,
	}
}

// Add counts key once and returns the sketch's new estimate for it: the
// smallest of its counters after this add, so never below the true count.
// It returns ErrClosed after Close.
func (c *CountMin) Add(key []byte) (uint64, error) {
	if c.l.cells == nil {
		return 0, c.closedErr("add")
	}
	lo, hi := hashKey(key, c.l.seed)
	return c.l.addHashed(lo, hi, 1), nil
}

// AddN counts key n times and returns the new estimate. Counters saturate
// at 2^63 rather than wrap. AddN with n == 0 counts nothing and returns the
// current estimate.
func (c *CountMin) AddN(key []byte, n uint64) (uint64, error) {
	if c.l.cells == nil {
		return 0, c.closedErr("add")
	}
	lo, hi := hashKey(key, c.l.seed)
	if n == 0 {
		return c.l.estimateHashed(lo, hi), nil
	}
	return c.l.addHashed(lo, hi, n), nil
}

// AddString is Add for a string key, without converting it to a []byte.
func (c *CountMin) AddString(key string) (uint64, error) {
	if c.l.cells == nil {
		return 0, c.closedErr("add")
	}
	lo, hi := hashString(key, c.l.seed)
	return c.l.addHashed(lo, hi, 1), nil
}

// AddBatch counts each key once. When estimates is not nil it must have
// len(keys) elements and receives each key's estimate right after its add.
// On a sketch larger than the CPU's L2 cache a batch hashes and fetches
// keys ahead of their adds (in the C core on the cgo build), so the cache
// misses of several keys overlap and a key costs well under a single Add.
// The add count moves once per 256 keys.
func (c *CountMin) AddBatch(keys [][]byte, estimates []uint64) error {
	if c.l.cells == nil {
		return c.closedErr("add")
	}
	if estimates != nil && len(estimates) != len(keys) {
		return c.m.errorf("add", fmt.Errorf("%w: %d estimates for %d keys", ErrInvalidArgument, len(estimates), len(keys)))
	}
	c.batchCore(len(keys)).addBatch(&c.l, keys, 1, estimates)
	return nil
}

// EstimateBatch stores each key's estimate in estimates, which must have
// len(keys) elements. Like AddBatch it fetches ahead on large sketches.
func (c *CountMin) EstimateBatch(keys [][]byte, estimates []uint64) error {
	if c.l.cells == nil {
		return c.closedErr("estimate")
	}
	if len(estimates) != len(keys) {
		return c.m.errorf("estimate", fmt.Errorf("%w: %d estimates for %d keys", ErrInvalidArgument, len(estimates), len(keys)))
	}
	c.batchCore(len(keys)).estimateBatch(&c.l, keys, estimates)
	return nil
}

// batchCore picks the core for a batch of n keys. The C core serves
// batches over grids larger than L2, where fetching keys ahead pays; over
// a grid in L2, and for batches too small to pay for a cgo crossing, the
// Go core is as fast or faster (measured: bench_test.go).
func (c *CountMin) batchCore(n int) cmsCore {
	if n < minCoreBatch || !c.l.prefetch {
		return goCore{}
	}
	return c.core
}

// minCoreBatch is the smallest batch handed to the default core. A cgo
// crossing costs about two single-key adds.
const minCoreBatch = 4

// Estimate returns the sketch's estimate of how often key was counted: the
// smallest of its counters. It is never below the true count, and exceeds
// it by more than Stats().ErrorBound with probability at most
// 1-Confidence. It returns 0 after Close.
func (c *CountMin) Estimate(key []byte) uint64 {
	if c.l.cells == nil {
		return 0
	}
	lo, hi := hashKey(key, c.l.seed)
	return c.l.estimateHashed(lo, hi)
}

// EstimateString is Estimate for a string key.
func (c *CountMin) EstimateString(key string) uint64 {
	if c.l.cells == nil {
		return 0
	}
	lo, hi := hashString(key, c.l.seed)
	return c.l.estimateHashed(lo, hi)
}

// Reset forgets everything, in every process. It is not atomic: it clears
// the counters one by one, so an estimate made at the same moment may see
// the sketch half cleared and answer low for a key being forgotten. To
// forget at the turn of a window without that, rotate two sketches: add to
// one, estimate the sum of both, and reset the older one at the turn.
func (c *CountMin) Reset() error {
	if c.l.cells == nil {
		return c.closedErr("reset")
	}
	// Go's clear outruns the C core's memset here (measured:
	// BenchmarkCountMinReset), so both builds reset in Go.
	goCore{}.reset(&c.l)
	return nil
}

// Rows returns the number of rows (hash functions).
func (c *CountMin) Rows() int { return c.l.rows }

// Width returns the number of counters in a row, a power of two.
func (c *CountMin) Width() int { return int(c.l.mask + 1) }

// Stats reports the shape, the total and the error bound at that total.
// It walks the whole grid, so it belongs on a status page, not in a loop.
func (c *CountMin) Stats() CountMinStats {
	s := CountMinStats{
		Rows:       c.l.rows,
		Width:      int(c.l.mask + 1),
		Bytes:      c.m.lay.fileSize,
		Seed:       c.l.seed,
		ErrorRate:  math.E / float64(c.l.mask+1),
		Confidence: 1 - math.Exp(-float64(c.l.rows)),
	}
	if c.l.cells == nil {
		return s
	}
	sums := make([]uint64, c.l.rows)
	c.core.rowSums(&c.l, sums)
	for _, v := range sums {
		s.Total = max(s.Total, v)
	}
	s.Adds = c.core.adds(&c.l)
	s.ErrorBound = errorBound(s.Total, s.Width)
	return s
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

// Check verifies the file: the header and directory again, and that every
// row sums to the same total, as it must since every add puts its count in
// exactly one counter of each row. An add interrupted by a killed process
// leaves rows that disagree by that add, which Check reports as
// ErrInconsistent; nothing else needs repair, and estimates stay upper
// bounds for every other key. Check is exact only while no add is running
// (a concurrent add lands in some rows before others), and row sums are
// not compared once a counter has saturated.
func (c *CountMin) Check() error {
	if c.l.cells == nil {
		return c.closedErr("check")
	}
	lay, err := decodeHeader(c.m.data)
	if err != nil {
		return c.m.errorf("check", err)
	}
	if lay.seed != c.l.seed || len(lay.entries) == 0 || lay.entries[0] != c.m.ent {
		return c.m.errorf("check", fmt.Errorf("%w: the header changed under the mapping", ErrCorrupt))
	}
	sums := make([]uint64, c.l.rows)
	if c.core.rowSums(&c.l, sums) {
		return nil
	}
	for i, v := range sums {
		if v != sums[0] {
			lo, hi := min(v, sums[0]), max(v, sums[0])
			return c.m.errorf("check", fmt.Errorf("%w: row %d sums to %d, row 0 to %d (a difference of %d: an add interrupted part way)", ErrInconsistent, i, v, sums[0], hi-lo))
		}
	}
	return nil
}

// Path returns the file's path, or "" for a memfd or inherited descriptor.
func (c *CountMin) Path() string { return c.m.path }

// File returns a duplicate of the sketch's descriptor, for a child process
// (exec.Cmd.ExtraFiles) that attaches with AttachCountMin. The caller owns
// it and closes it.
func (c *CountMin) File() (*os.File, error) { return c.m.file() }

// Sync flushes the mapping to the file and reports a write error, such as
// a full disk on a filesystem that allocates at writeback.
func (c *CountMin) Sync() error { return c.m.sync() }

// Unlink removes the sketch's file from Path. The sketch stays usable
// through this handle and every other mapping; new opens of the path create
// a new one. A file already gone is not an error, a file that has since
// been replaced by another at the path is left alone, and a sketch without
// a path does nothing.
func (c *CountMin) Unlink() error { return c.m.unlink() }

// Close unmaps the sketch and closes its descriptor. It is safe to call
// twice; the sketch must not be used afterwards (calls return ErrClosed).
func (c *CountMin) Close() error {
	if c == nil || c.m == nil {
		return nil
	}
	c.l.cells, c.l.stripes = nil, nil
	return c.m.close()
}

func (c *CountMin) closedErr(op string) error {
	return c.m.errorf(op, ErrClosed)
}
