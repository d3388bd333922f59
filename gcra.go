package sketch

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// Rate is a request rate: Count requests per Per, as nginx's limit_req
// writes it (10r/s is Rate{10, time.Second}).
type Rate struct {
	Count uint64        `json:"count"`
	Per   time.Duration `json:"per"`
}

// ParseRate reads a rate as nginx writes one, "10r/s" or "30r/m", or
// without the r ("10/s", "1/m"), with h for an hour, or with any Go
// duration after the slash ("100/10s", "5/1m30s"). The count is a whole
// number of at least 1.
func ParseRate(s string) (Rate, error) {
	count, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("%w: rate %q: want count/unit, as 10/s or 30r/m", ErrInvalidArgument, s)
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(count, "r"), 10, 64)
	if err != nil || n == 0 {
		return Rate{}, fmt.Errorf("%w: rate %q: the count %q is not a whole number of at least 1", ErrInvalidArgument, s, count)
	}
	var d time.Duration
	switch per {
	case "s":
		d = time.Second
	case "m":
		d = time.Minute
	case "h":
		d = time.Hour
	default:
		if d, err = time.ParseDuration(per); err != nil || d <= 0 {
			return Rate{}, fmt.Errorf("%w: rate %q: %q is not s, m, h or a positive duration", ErrInvalidArgument, s, per)
		}
	}
	r := Rate{Count: n, Per: d}
	if _, err := r.interval(); err != nil {
		return Rate{}, fmt.Errorf("%w: rate %q: %w", ErrInvalidArgument, s, err)
	}
	return r, nil
}

// String writes the rate as ParseRate reads it: "10/s", "1/m", "1/h", or
// with a duration ("100/10s").
func (r Rate) String() string {
	switch r.Per {
	case time.Second:
		return fmt.Sprintf("%d/s", r.Count)
	case time.Minute:
		return fmt.Sprintf("%d/m", r.Count)
	case time.Hour:
		return fmt.Sprintf("%d/h", r.Count)
	}
	return fmt.Sprintf("%d/%v", r.Count, r.Per)
}

// Interval is the emission interval, the time one request moves a key's
// theoretical arrival time: Per/Count rounded up to a whole nanosecond
// (a rate whose interval is not one is kept a little stricter, by less
// than a nanosecond a request). It is 0 for a rate that is not valid.
func (r Rate) Interval() time.Duration {
	iv, err := r.interval()
	if err != nil {
		return 0
	}
	return time.Duration(iv)
}

// interval is Interval in nanoseconds, or why the rate is not valid.
func (r Rate) interval() (uint64, error) {
	switch {
	case r.Count == 0 || r.Per <= 0:
		return 0, fmt.Errorf("a rate needs a count and a period of at least 1 (got %d per %v)", r.Count, r.Per)
	case uint64(r.Per) < r.Count:
		return 0, fmt.Errorf("%d per %v is more than one request a nanosecond", r.Count, r.Per)
	}
	return (uint64(r.Per) + r.Count - 1) / r.Count, nil
}

// GCRAConfig configures a rate limiter: a Rate and a Burst, and a grid
// sized for how many keys may be busy at once. The zero config attaches
// to any limiter; creating one needs a Rate.
type GCRAConfig struct {
	// Rate is how fast a key's requests are allowed in the long run.
	Rate Rate `json:"rate"`
	// Burst is how many requests past the rate a key may make at once:
	// a key that was idle is allowed Burst+1 at once, as nginx's
	// limit_req with burst=Burst nodelay allows.
	Burst uint64 `json:"burst"`
	// Keys sizes the grid for that many keys busy at once (with a time
	// in the future): Width is the next power of two of 8·Keys, Rows 4,
	// so that a key shares every row with a busy key, and looks busier
	// than it is, about 2 times in 10,000. Default 4096 (1 MiB).
	Keys int `json:"keys,omitempty"`
	// Rows and Width give the grid's shape instead of Keys: Rows 1 to
	// 16, Width rounded up to a power of two.
	Rows  int `json:"rows,omitempty"`
	Width int `json:"width,omitempty"`
	// Seed is the hash seed, as CountMinConfig's: zero means random at
	// create and any on attach.
	Seed uint64 `json:"seed"`
}

// gcraDefaultKeys is Keys of the zero config, and gcraKeyCells the
// width a key is given.
const (
	gcraDefaultKeys = 4096
	gcraKeyCells    = 8
	gcraDefaultRows = 4
)

// shape resolves the grid; explicit reports whether the caller asked for
// one, which an existing limiter must then have.
func (cfg GCRAConfig) shape() (rows, width int, explicit bool, err error) {
	switch {
	case cfg.Keys != 0 && (cfg.Rows != 0 || cfg.Width != 0):
		return 0, 0, false, fmt.Errorf("%w: give either Keys or Rows and Width, not both", ErrInvalidConfig)
	case cfg.Rows != 0 || cfg.Width != 0:
		if cfg.Rows < 1 || cfg.Rows > cells.GCRAMaxRows {
			return 0, 0, false, fmt.Errorf("%w: rows %d is not in [1, %d]", ErrInvalidConfig, cfg.Rows, cells.GCRAMaxRows)
		}
		if cfg.Width < 1 || cfg.Width > maxWidth {
			return 0, 0, false, fmt.Errorf("%w: width %d is not in [1, %d]", ErrInvalidConfig, cfg.Width, maxWidth)
		}
		return cfg.Rows, nextPow2(cfg.Width), true, nil
	case cfg.Keys < 0 || cfg.Keys > maxWidth/gcraKeyCells:
		return 0, 0, false, fmt.Errorf("%w: keys %d is not in [1, %d]", ErrInvalidConfig, cfg.Keys, maxWidth/gcraKeyCells)
	case cfg.Keys != 0:
		return gcraDefaultRows, nextPow2(cfg.Keys * gcraKeyCells), true, nil
	}
	return gcraDefaultRows, gcraDefaultKeys * gcraKeyCells, false, nil
}

// limits checks the rate and burst: (Burst+1)·interval must stay under
// 2^62 ns (146 years), so that no sum of times overflows.
func (cfg GCRAConfig) limits() (interval, window uint64, err error) {
	if interval, err = cfg.Rate.interval(); err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if cfg.Burst >= gcraMaxWindow/interval {
		return 0, 0, fmt.Errorf("%w: a burst of %d at %v makes a window of more than 2^62 ns", ErrInvalidConfig, cfg.Burst, cfg.Rate)
	}
	return interval, (cfg.Burst + 1) * interval, nil
}

// gcraMaxWindow bounds (burst+1)·interval.
const gcraMaxWindow = 1 << 62

func gcraBytes(rows, width int) uint64 {
	return cells.StripesBytes + uint64(rows)*uint64(width)*8
}

// Bytes returns the size of the file a limiter of this config needs,
// header included, as CountMinConfig.Bytes does.
func (cfg GCRAConfig) Bytes() (uint64, error) {
	sp, err := cfg.createSpec()
	if err != nil {
		return 0, err
	}
	return sp.fileSize(), nil
}

// createSpec is the spec of places that always create (a memfd,
// memory): it needs a Rate.
func (cfg GCRAConfig) createSpec() (spec, error) {
	if cfg.Rate == (Rate{}) {
		return spec{}, fmt.Errorf("%w: a rate limiter needs a Rate to be created (as 10/s: ParseRate)", ErrInvalidConfig)
	}
	return cfg.spec()
}

// spec is the limiter's spec. A config without a Rate only attaches
// (size 0 tells the create path it cannot create), to any rate and
// burst, and to any shape unless it gives one.
func (cfg GCRAConfig) spec() (spec, error) {
	rows, width, explicit, err := cfg.shape()
	if err != nil {
		return spec{}, err
	}
	matchShape := func(e entry) error {
		if explicit && (e.params[0] != uint64(rows) || e.params[1] != uint64(width)) {
			return fmt.Errorf("%w: asked for %d x %d times, the file has %d x %d", ErrIncompatible, rows, width, e.params[0], e.params[1])
		}
		return nil
	}
	if cfg.Rate == (Rate{}) {
		if cfg.Burst != 0 {
			return spec{}, fmt.Errorf("%w: a Burst needs a Rate (as 10/s: ParseRate)", ErrInvalidConfig)
		}
		return spec{kind: kindGCRA, seed: cfg.Seed, match: matchShape}, nil
	}
	if _, _, err := cfg.limits(); err != nil {
		return spec{}, err
	}
	size := gcraBytes(rows, width)
	if size > maxFileSize-pageSize*4 {
		return spec{}, fmt.Errorf("%w: %d x %d times need %d bytes, more than a sketch file may have (%d)", ErrInvalidConfig, rows, width, size, uint64(maxFileSize))
	}
	params := [8]uint64{uint64(rows), uint64(width), uint64(cfg.Rate.Per), cfg.Rate.Count, cfg.Burst}
	sp := spec{kind: kindGCRA, size: size, params: params, seed: cfg.Seed}
	sp.match = func(e entry) error {
		if err := matchShape(e); err != nil {
			return err
		}
		if e.params[2] != params[2] || e.params[3] != params[3] || e.params[4] != params[4] {
			return fmt.Errorf("%w: asked for %v with burst %d, the file has %v with burst %d", ErrIncompatible,
				cfg.Rate, cfg.Burst, Rate{e.params[3], time.Duration(e.params[2])}, e.params[4])
		}
		return nil
	}
	return sp, nil
}

func gcraEntryConfig(e entry) any {
	return GCRAConfig{Rate: Rate{Count: e.params[3], Per: time.Duration(e.params[2])}, Burst: e.params[4],
		Rows: int(e.params[0]), Width: int(e.params[1])}
}

func gcraEntryParams(e entry) map[string]float64 {
	return map[string]float64{
		"rows": float64(e.params[0]), "width": float64(e.params[1]),
		"rate_count": float64(e.params[3]), "rate_per_seconds": time.Duration(e.params[2]).Seconds(),
		"burst": float64(e.params[4]),
	}
}

func validateGCRAEntry(e entry) error {
	rows, width := e.params[0], e.params[1]
	switch {
	case rows < 1 || rows > cells.GCRAMaxRows:
		return fmt.Errorf("rate limiter with %d rows", rows)
	case width < 1 || width > maxWidth || width&(width-1) != 0:
		return fmt.Errorf("rate limiter width %d", width)
	case e.params[2] > math.MaxInt64:
		return fmt.Errorf("rate limiter period of %d ns", e.params[2])
	}
	cfg := GCRAConfig{Rate: Rate{Count: e.params[3], Per: time.Duration(e.params[2])}, Burst: e.params[4]}
	if _, _, err := cfg.limits(); err != nil {
		return fmt.Errorf("rate limiter rate: %w", err)
	}
	if e.size != gcraBytes(int(rows), int(width)) {
		return fmt.Errorf("rate limiter region of %d bytes, %d x %d times need %d", e.size, rows, width, gcraBytes(int(rows), int(width)))
	}
	return nil
}

// GCRA is a rate limiter with a burst, for many keys in fixed memory,
// shared by every process that maps it: the generic cell rate algorithm
// of ATM networks, which nginx's limit_req and Redis's GCRA apply to
// requests. Each key has a theoretical arrival time (TAT); a request of
// cost n at time now is allowed when max(TAT, now) + n·interval is at
// most now + (Burst+1)·interval, and then becomes the key's TAT; a
// refused request changes nothing. So a key is allowed at most
// Burst+1 + elapsed/interval requests over any span of time, and an idle
// key Burst+1 at once.
//
// The TATs live in a grid of Rows x Width times, as a Count-Min sketch
// keeps counts: a key's TAT is the least of its cells, and a cell is the
// largest TAT of the keys that share it. A collision can only make a key
// look busier, so a key is never allowed more than the algorithm allows
// it alone (never low); with Keys busy keys at once, a key shares every
// row with one about 2 times in 10,000.
//
// A decision is lock-free: it reads the key's cells, and an allowed one
// raises those below its new TAT with a compare-and-swap from the value
// it read, deciding again when one moved. Any two allowed decisions of a
// key, in any processes, are thus ordered, the later one deciding on the
// earlier's TAT: racing processes cannot exceed the bound above. A
// process killed in a decision leaves some cells raised: that key looks
// busier until its time passes, nothing else, and nothing to repair.
//
// Times are the Unix clock's nanoseconds, which every process of a host
// shares (AllowAt takes them from the caller). A clock set back makes
// keys look busier for as long; one set forward lets them through
// sooner, as elapsed time would.
type GCRA struct {
	Handle
	l    cells.GCRA
	core cells.GCRACore // serves batches
	// recip is ⌊(2^64−1)/Interval⌋, so that a decision's Remaining is a
	// multiply, not a division (6 of a decision's 63 ns: BenchmarkGCRAAllow).
	recip uint64
}

// RateDecision is a rate limiter's answer for one request.
type RateDecision struct {
	// Allowed reports whether the request was allowed (and counted).
	Allowed bool `json:"allowed"`
	// Remaining is how many more requests of cost 1 the key may make at
	// once after this one.
	Remaining uint64 `json:"remaining"`
	// RetryAfter is, for a refused request, how long until the same
	// request would be allowed; 0 when allowed.
	RetryAfter time.Duration `json:"retry_after"`
	// ResetAfter is how long until the key's whole burst is back: its
	// TAT less now.
	ResetAfter time.Duration `json:"reset_after"`
}

// GCRAStats describes a rate limiter at one moment.
type GCRAStats struct {
	Rate  Rate   `json:"rate"`
	Burst uint64 `json:"burst"`
	Rows  int    `json:"rows"`
	Width int    `json:"width"`
	// Allowed and Refused count the decisions since create or Reset (a
	// decision of cost 0 is not counted); Cost sums what the allowed ones
	// cost.
	Allowed uint64 `json:"allowed"`
	Refused uint64 `json:"refused"`
	Cost    uint64 `json:"cost"`
	// Busy is how many cells hold a time in the future: keys that would
	// not be allowed their whole burst now. BusyRate is Busy over the
	// cells: past about 1 - 0.5^(1/Rows), keys start to look busier
	// than they are often.
	Busy     uint64  `json:"busy"`
	BusyRate float64 `json:"busy_rate"`
	FileStats
}

// OpenGCRA opens the rate limiter at a place (see Place), creating it
// with cfg where there is none, as OpenCountMin does. Creating needs a
// Rate; an existing limiter must have cfg's rate and burst (and its
// shape, when cfg gives one), else ErrIncompatible; the zero config
// attaches to any.
func OpenGCRA(at Place, cfg GCRAConfig, opts ...Option) (*GCRA, error) {
	return openAs(at, cfg.spec, cfg.createSpec, opts, newGCRA)
}

// newGCRA builds the handle for the limiter at m.ent. It takes no lock:
// every cell changes by a compare-and-swap.
func newGCRA(m *mapping) (*GCRA, error) {
	base := m.entryBase()
	e := m.ent
	cfg := GCRAConfig{Rate: Rate{Count: e.params[3], Per: time.Duration(e.params[2])}, Burst: e.params[4]}
	interval, window, err := cfg.limits()
	if err != nil {
		return nil, err // validateGCRAEntry checked it
	}
	g := &GCRA{
		l: cells.GCRA{
			Stripes:  base,
			Cells:    unsafe.Add(base, cells.StripesBytes),
			Seed:     m.lay.seed,
			Salt:     rand.Uint64(),
			Mask:     e.params[1] - 1,
			Rows:     int(e.params[0]),
			RowBytes: uintptr(e.params[1]) * 8,
			Interval: interval,
			Window:   window,
		},
		core:  buildCores.GCRA,
		recip: math.MaxUint64 / interval,
	}
	g.init(m, g)
	g.open.Store(true)
	return g, nil
}

// Allow decides a request of cost for key now: allowed (and counted)
// when the key's TAT leaves room for it, refused (counting nothing)
// otherwise. A cost of 0 peeks: it counts nothing, answers as a request
// of cost 1 would be answered, and works on read-only handles and frozen
// files too. A cost above Burst+1 can never be allowed and is
// ErrInvalidArgument. On error (closed, read-only, frozen) it decides
// nothing.
func (g *GCRA) Allow(key []byte, cost uint64) (RateDecision, error) {
	return g.allow(key, cost, unixClock.now())
}

// AllowString is Allow for a string key, without copying it.
func (g *GCRA) AllowString(key string, cost uint64) (RateDecision, error) {
	return g.allow(unsafe.Slice(unsafe.StringData(key), len(key)), cost, unixClock.now())
}

// AllowAt is Allow at the time at instead of now: for replaying a trace
// with its own times, or deciding at the time a request arrived. Times
// before 1970 are ErrInvalidArgument. Deciding at a time earlier than
// other decisions of the key only makes it look busier (its TAT is not
// lowered).
func (g *GCRA) AllowAt(key []byte, cost uint64, at time.Time) (RateDecision, error) {
	now := at.UnixNano()
	if now < 0 {
		return RateDecision{}, g.m.errorf("allow", fmt.Errorf("%w: time %v is before 1970", ErrInvalidArgument, at))
	}
	return g.allow(key, cost, now)
}

func (g *GCRA) allow(key []byte, cost uint64, now int64) (RateDecision, error) {
	if err := g.mayDecide(cost); err != nil {
		return RateDecision{}, err
	}
	lo, hi := cells.Hash(key, g.l.Seed)
	return g.allowHashed(lo, hi, cost, now)
}

// allowHashed is allow once the key is hashed, after mayDecide.
func (g *GCRA) allowHashed(lo, hi, cost uint64, now int64) (RateDecision, error) {
	if cost == 0 {
		return g.decision(false, g.l.TAT(lo, hi), uint64(now), 1, true), g.after("allow")
	}
	allowed, tat := g.l.Decide(lo, hi, uint64(now), cost)
	if allowed {
		g.l.Count(1, 0, cost)
	} else {
		g.l.Count(0, 1, 0)
	}
	return g.decision(allowed, tat, uint64(now), cost, false), g.after("allow")
}

// mayDecide refuses a decision on a handle that cannot write (a peek
// only on a closed one), or of a cost past the burst.
func (g *GCRA) mayDecide(cost uint64) error {
	if cost == 0 {
		if !g.open.Load() {
			return g.closedErr("allow")
		}
		return nil
	}
	if err := g.mayWrite("allow"); err != nil {
		return err
	}
	if cost > g.l.Window/g.l.Interval {
		return g.m.errorf("allow", fmt.Errorf("%w: a cost of %d is more than the burst allows at once (%d), and would never be allowed",
			ErrInvalidArgument, cost, g.l.Window/g.l.Interval))
	}
	return nil
}

// decision is the answer for a request of cost at now, given whether it
// was allowed and the key's TAT after it (the TAT it was refused on). A
// peek decides as a request of cost would be decided.
func (g *GCRA) decision(allowed bool, tat, now, cost uint64, peek bool) RateDecision {
	base := max(tat, now)
	if peek {
		allowed = base+cost*g.l.Interval-now <= g.l.Window
	}
	d := RateDecision{Allowed: allowed, ResetAfter: time.Duration(base - now)}
	if used := base - now; used <= g.l.Window {
		d.Remaining = divRecip(g.l.Window-used, g.l.Interval, g.recip)
	}
	if !allowed {
		d.RetryAfter = time.Duration(base + cost*g.l.Interval - now - g.l.Window)
	}
	return d
}

// AllowBatch decides a request of cost for each key at one time, now,
// as Allow does each in order, into out (of at least len(keys)): in the
// C core on the cgo build from a few keys on (one crossing for many
// keys). A cost of 0 peeks at each.
func (g *GCRA) AllowBatch(keys [][]byte, cost uint64, out []RateDecision) error {
	return g.allowBatch(keys, cost, unixClock.now(), out)
}

// AllowBatchAt is AllowBatch at the time at instead of now, as AllowAt
// is Allow.
func (g *GCRA) AllowBatchAt(keys [][]byte, cost uint64, at time.Time, out []RateDecision) error {
	now := at.UnixNano()
	if now < 0 {
		return g.m.errorf("allow", fmt.Errorf("%w: time %v is before 1970", ErrInvalidArgument, at))
	}
	return g.allowBatch(keys, cost, now, out)
}

func (g *GCRA) allowBatch(keys [][]byte, cost uint64, at int64, out []RateDecision) error {
	if len(out) < len(keys) {
		return g.m.errorf("allow", fmt.Errorf("%w: %d answers for %d keys", ErrInvalidArgument, len(out), len(keys)))
	}
	if err := g.mayDecide(cost); err != nil {
		return err
	}
	now := uint64(at)
	core := g.core
	if len(keys) < cells.GCRAMinBatch || cost == 0 {
		core = cells.GCRAGo{}
	}
	var allowed [cells.BatchChunk]bool
	var tats [cells.BatchChunk]uint64
	for base := 0; base < len(keys); base += cells.BatchChunk {
		chunk := keys[base:min(base+cells.BatchChunk, len(keys))]
		if cost == 0 {
			for i, k := range chunk {
				lo, hi := cells.Hash(k, g.l.Seed)
				out[base+i] = g.decision(false, g.l.TAT(lo, hi), now, 1, true)
			}
			continue
		}
		n := core.DecideBatch(&g.l, chunk, now, cost, allowed[:len(chunk)], tats[:len(chunk)])
		g.l.Count(n, uint64(len(chunk))-n, n*cost)
		for i := range chunk {
			out[base+i] = g.decision(allowed[i], tats[i], now, cost, false)
		}
	}
	return g.after("allow")
}

// Reset forgets every key's time and the decision counts, in every
// process: every key has its whole burst again. It is not atomic:
// decisions at the same moment may survive it in part.
func (g *GCRA) Reset() error {
	if err := g.refuse("reset"); err != nil {
		return err
	}
	g.l.Reset()
	return g.after("reset")
}

// Merge raises each of g's times to the largest of the others', so that
// afterwards every key is at least as busy in g as in any of them: the
// limiters of several hosts, merged, refuse what any of them would. The
// others must have g's shape, rate, burst and seed (ErrIncompatible,
// checked for all before anything changes); they may be read-only views
// or frozen files, while g may be neither. Decision counts are not
// merged. Each cell changes with a CAS, so every process may go on
// deciding meanwhile.
func (g *GCRA) Merge(others ...*GCRA) error {
	return mergeEach(&g.Handle, "rate limiter", others, func(o *GCRA) error {
		if o.l.Rows != g.l.Rows || o.l.Mask != g.l.Mask || o.l.Interval != g.l.Interval || o.l.Window != g.l.Window {
			return fmt.Errorf("%w: %s is %s, this limiter %s", ErrIncompatible, o.name(), o.shape(), g.shape())
		}
		if o.l.Seed != g.l.Seed {
			return fmt.Errorf("%w: %s hashes with another seed", ErrIncompatible, o.name())
		}
		return nil
	}, func(o *GCRA) error {
		if o.l.Cells != g.l.Cells {
			g.l.Merge(&o.l)
		}
		return nil
	})
}

// shape describes the limiter for messages and String.
func (g *GCRA) shape() string {
	c := g.Config()
	return fmt.Sprintf("%v burst %d, %d x %d", c.Rate, c.Burst, g.l.Rows, g.l.Mask+1)
}

// Stats reports the limiter's rate, shape, decision counts and how busy
// its grid is; Busy walks the grid.
func (g *GCRA) Stats() GCRAStats {
	c := g.Config()
	s := GCRAStats{Rate: c.Rate, Burst: c.Burst, Rows: g.l.Rows, Width: int(g.l.Mask + 1),
		FileStats: FileStats{ReadOnly: g.ReadOnly()}}
	if g.m == nil || !g.open.Load() {
		s.FileStats.Closed = true
		return s
	}
	s.Bytes = g.m.ownBytes()
	s.Allowed, s.Refused, s.Cost = g.l.Counts()
	s.Busy, _ = g.l.Busy(uint64(time.Now().UnixNano()))
	s.BusyRate = float64(s.Busy) / float64(uint64(g.l.Rows)*(g.l.Mask+1))
	s.Frozen = atomic.LoadUint32(g.sealed) != 0
	if !g.open.Load() {
		return GCRAStats{Rate: s.Rate, Burst: s.Burst, Rows: s.Rows, Width: s.Width,
			FileStats: FileStats{ReadOnly: g.ReadOnly(), Closed: true}}
	}
	return s
}

// Close releases the descriptor and the file's pages; safe twice and
// while other goroutines use the handle, as CountMin.Close is.
func (g *GCRA) Close() error {
	if g == nil {
		return nil
	}
	return g.close()
}

func (g *GCRA) describe() (string, string) { return "GCRA", g.shape() }

func (g *GCRA) statsOf() any { return g.Stats() }

// gcraDamage is where a time becomes impossible: later than any time
// UnixNano can give plus the largest window.
const gcraDamage = math.MaxInt64 + gcraMaxWindow

// check is the limiter's part of Check: no time may be later than any
// decision could have left (a clock at UnixNano's end plus the largest
// window), which is damage (ErrDamaged); times only rise, so nothing
// else is checked.
func (g *GCRA) check() error {
	if _, latest := g.l.Busy(0); latest > gcraDamage {
		return g.m.errorf("check", fmt.Errorf("%w: a rate limiter cell holds time %d, later than any decision leaves", ErrDamaged, latest))
	}
	if !g.open.Load() {
		return g.closedErr("check")
	}
	return nil
}

// Config returns the config stored in the file: the Rate, Burst, Rows
// and Width, without the seed (a secret: see Seed). A zero handle
// returns the zero config.
func (g *GCRA) Config() GCRAConfig {
	if g.m == nil {
		return GCRAConfig{}
	}
	return gcraEntryConfig(g.m.ent).(GCRAConfig)
}

// Snapshot copies the limiter, times and counts, into a new structure at
// another place, without a lock, as CountMin.Snapshot does: every time a
// decision that returned before the call left is in the copy.
func (g *GCRA) Snapshot(at Place, opts ...Option) (*GCRA, error) {
	if !g.open.Load() {
		return nil, g.closedErr("snapshot")
	}
	m, err := createSnapshot(g.name(), at, entrySpec(g.m.ent, g.l.Seed, g.copyRegion), opts)
	return finishSnapshot(&g.Handle, m, err, newGCRA)
}

// copyRegion copies the limiter's region, its counts and times, into dst.
func (g *GCRA) copyRegion(dst []byte) error {
	copyWords(dst, g.l.Stripes)
	return nil
}

// unixClock is the clock the limiters decide by: the Unix clock, which
// every process of a host shares, read in one clock read where
// time.Now takes two (on a virtual machine's clock each costs as much as
// a decision). It keeps the Unix time of one monotonic instant and adds
// the monotonic time since, and takes the Unix time again a second after
// it last did, so that a clock set meanwhile is seen within a second (as
// if it had been set up to a second later).
var unixClock wallClock

type wallClock struct {
	mu    sync.Mutex
	base  atomic.Pointer[clockBase]
	stale atomic.Bool // set by a timer a second after base was taken
}

// clockBase is a time.Now reading: its monotonic instant and Unix time.
type clockBase struct {
	at   time.Time
	unix int64
}

// wallResync is how long a base serves.
const wallResync = time.Second

// now is the Unix time in nanoseconds.
func (c *wallClock) now() int64 {
	b := c.base.Load()
	if b == nil || c.stale.Load() {
		b = c.resync()
	}
	return b.unix + int64(time.Since(b.at))
}

func (c *wallClock) resync() *clockBase {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.base.Load(); b != nil && !c.stale.Load() {
		return b
	}
	t := time.Now()
	b := &clockBase{at: t, unix: t.UnixNano()}
	c.base.Store(b)
	c.stale.Store(false)
	time.AfterFunc(wallResync, func() { c.stale.Store(true) })
	return b
}

// divRecip is x/d given recip = ⌊(2^64−1)/d⌋: the high word of x·recip is
// x/d or one less (x·recip/2^64 falls short of x/d by less than
// x/2^64 < 1), which one comparison settles.
func divRecip(x, d, recip uint64) uint64 {
	q, _ := bits.Mul64(x, recip)
	if x-q*d >= d {
		q++
	}
	return q
}

// A rate limiter's busy times, as one host exports them for the others:
// only the cells whose time is still ahead matter (a cell at or before
// now lets every key through as if it were never written), and those are
// few next to the grid, so the export lists them, not the grid.
//
// Layout: the magic "SKGCRAT1"; the limiter's rows, width, interval and
// window (ns) and the export's time (Unix ns), each a little-endian
// uint64; then for each busy cell, in order, the uvarint of its index
// less the previous one's (the first: its index) and the uvarint of its
// time less the export's.

const gcraTimesMagic = "SKGCRAT1"

// gcraTimesHead is the export's size before its cells.
const gcraTimesHead = 8 + 5*8

// ExportTimes returns the limiter's busy cells, those whose time is after
// now, for another limiter of the same shape, rate, burst and seed to
// merge (MergeTimes): a host's decisions as the others need them. Its
// size is 6 to 7 bytes a busy cell (measured by the fleet module's
// BenchmarkSync_GCRA); a grid where no key is busy exports 48 bytes. Read without a lock while every process decides: each cell as
// it was at some moment of the export.
func (g *GCRA) ExportTimes() ([]byte, error) {
	if !g.open.Load() {
		return nil, g.closedErr("export")
	}
	now := uint64(unixClock.now())
	b := make([]byte, gcraTimesHead, gcraTimesHead+1024)
	copy(b, gcraTimesMagic)
	for i, v := range []uint64{uint64(g.l.Rows), g.l.Mask + 1, g.l.Interval, g.l.Window, now} {
		binary.LittleEndian.PutUint64(b[8+8*i:], v)
	}
	n := uintptr(g.l.Rows) * g.l.RowBytes / 8
	var last uint64
	for i := uintptr(0); i < n; i++ {
		v := atomic.LoadUint64((*uint64)(unsafe.Add(g.l.Cells, i*8)))
		if v <= now {
			continue
		}
		b = binary.AppendUvarint(b, uint64(i)-last)
		b = binary.AppendUvarint(b, v-now)
		last = uint64(i)
	}
	if !g.open.Load() {
		return nil, g.closedErr("export") // what was read may be the placeholder
	}
	return b, nil
}

// MergeTimes raises each cell of the limiter to the time an export of
// another limiter gives it (ExportTimes), where that is later: afterwards
// every key is at least as busy as it was there. The export must come
// from a limiter of the same shape, rate and burst (ErrIncompatible) and
// be whole (ErrInvalidArgument, before anything changes); the seed
// cannot be checked from it, and must be the same for the cells to mean
// the same keys. A time further ahead of now than the window, which no
// decision leaves (a host whose clock runs ahead), is taken as now plus
// the window. Each cell changes with a CAS, so every process may go on
// deciding meanwhile.
func (g *GCRA) MergeTimes(b []byte) error {
	if err := g.refuse("merge"); err != nil {
		return err
	}
	base, err := g.timesHeader(b)
	if err != nil {
		return g.m.errorf("merge", err)
	}
	idx, tat, err := g.timesCells(b[gcraTimesHead:], base)
	if err != nil {
		return g.m.errorf("merge", err)
	}
	limit := uint64(unixClock.now()) + g.l.Window
	for k, i := range idx {
		c := (*uint64)(unsafe.Add(g.l.Cells, uintptr(i)*8))
		v := min(tat[k], limit)
		for old := atomic.LoadUint64(c); old < v && !atomic.CompareAndSwapUint64(c, old, v); old = atomic.LoadUint64(c) {
		}
	}
	return g.after("merge")
}

// timesHeader checks an export's header against the limiter and returns
// the export's time.
func (g *GCRA) timesHeader(b []byte) (uint64, error) {
	if len(b) < gcraTimesHead || string(b[:8]) != gcraTimesMagic {
		return 0, fmt.Errorf("%w: not a rate limiter's times (%d bytes)", ErrInvalidArgument, len(b))
	}
	var h [5]uint64
	for i := range h {
		h[i] = binary.LittleEndian.Uint64(b[8+8*i:])
	}
	if h[0] != uint64(g.l.Rows) || h[1] != g.l.Mask+1 || h[2] != g.l.Interval || h[3] != g.l.Window {
		return 0, fmt.Errorf("%w: times of a %d x %d limiter at %v a request, window %v; this one is %s", ErrIncompatible,
			h[0], h[1], time.Duration(h[2]), time.Duration(h[3]), g.shape())
	}
	if h[4] > gcraDamage {
		return 0, fmt.Errorf("%w: times exported at %d, past any clock", ErrInvalidArgument, h[4])
	}
	return h[4], nil
}

// timesCells decodes the cells of an export whose time is base: each
// cell's index (below the grid's size, increasing) and time.
func (g *GCRA) timesCells(b []byte, base uint64) (idx, tat []uint64, err error) {
	cells := uint64(g.l.Rows) * (g.l.Mask + 1)
	var at uint64
	for first := true; len(b) > 0; first = false {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, nil, fmt.Errorf("%w: a cell's index is cut short", ErrInvalidArgument)
		}
		b = b[n:]
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, nil, fmt.Errorf("%w: a cell's time is cut short", ErrInvalidArgument)
		}
		b = b[n:]
		if (!first && d == 0) || d >= cells-at {
			return nil, nil, fmt.Errorf("%w: cell index %d after %d, in a grid of %d", ErrInvalidArgument, d, at, cells)
		}
		at += d
		// MergeTimes takes no time past its now plus the window; this
		// bound only keeps the sum from overflowing.
		idx, tat = append(idx, at), append(tat, base+min(v, gcraMaxWindow))
	}
	return idx, tat, nil
}
