package sketch

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/shmsketch/sketch/internal/cells"
)

// DistinctConfig sizes a distinct count by the relative standard error
// wanted, or by its precision p (2^p registers of one byte). The zero
// config creates the default, precision 14 (16384 registers, 16 KiB, a
// relative standard error of 1.04/128, about 0.81%), and attaches to any
// distinct count; an explicit one must match the file.
type DistinctConfig struct {
	// Error is the relative standard error wanted, in (0, 1): the
	// precision is the smallest p with 1.04/sqrt(2^p) <= Error, at most
	// 18 (0.2%). Give Error or Precision, not both.
	Error float64 `json:"error,omitempty"`
	// Precision is p, 4 to 18: 2^p registers.
	Precision int `json:"precision"`
	// Redis chooses Redis's HyperLogLog hash (MurmurHash64A with Redis's
	// fixed seed, precision 14), so that the registers are those PFADD
	// sets for the same keys and an export (ExportRedis) merges in Redis
	// with keys added there. That hash is public: whoever can send keys
	// can craft ones that all land in one register with a large rank and
	// inflate the count, which the default seeded hash prevents.
	Redis bool `json:"redis"`
	// PostgreSQL chooses the hash of PostgreSQL's hll extension
	// (postgresql-hll): hll_hash_bytea(key) with seed 0, the first 64-bit
	// half of MurmurHash3_x64_128 of the key's bytes, so that an export
	// (ExportPostgreSQL) is the hll value hll_add_agg builds from the same
	// keys and unions in PostgreSQL with keys hashed there. The extension
	// holds at most 2^17 registers: Precision 4 to 17. It excludes Redis
	// (ErrInvalidConfig if both), and its hash is public, with Redis's
	// caveat.
	PostgreSQL bool `json:"postgresql"`
	// Seed is the hash seed of the default profile; zero means random at
	// create and any on attach, as for CountMinConfig. The Redis and
	// PostgreSQL profiles ignore it.
	Seed uint64 `json:"seed"`
}

// distinctDefaultP is the precision of the zero config.
const distinctDefaultP = 14

// distinctStdError is the relative standard error of 2^p registers.
func distinctStdError(p uint) float64 { return 1.04 / math.Sqrt(float64(uint64(1)<<p)) }

// precision resolves the config to p; explicit reports whether the caller
// asked for anything, which an existing file must then match.
func (cfg DistinctConfig) precision() (p uint, explicit bool, err error) {
	switch {
	case cfg.Error != 0 && cfg.Precision != 0:
		return 0, false, fmt.Errorf("%w: give either Error or Precision, not both", ErrInvalidConfig)
	case cfg.Precision != 0:
		if cfg.Precision < cells.DistinctMinP || cfg.Precision > cells.DistinctMaxP {
			return 0, false, fmt.Errorf("%w: precision %d is not in [%d, %d]", ErrInvalidConfig, cfg.Precision, cells.DistinctMinP, cells.DistinctMaxP)
		}
		p = uint(cfg.Precision)
	case cfg.Error != 0:
		if !(cfg.Error > 0 && cfg.Error < 1) {
			return 0, false, fmt.Errorf("%w: error %v is not in (0, 1)", ErrInvalidConfig, cfg.Error)
		}
		for p = cells.DistinctMinP; distinctStdError(p) > cfg.Error; p++ {
			if p == cells.DistinctMaxP {
				return 0, false, fmt.Errorf("%w: error %v needs more than 2^%d registers (%.2g%% at most)", ErrInvalidConfig, cfg.Error, cells.DistinctMaxP, 100*distinctStdError(cells.DistinctMaxP))
			}
		}
	default:
		p = distinctDefaultP
	}
	if cfg.Redis && cfg.PostgreSQL {
		return 0, false, fmt.Errorf("%w: give Redis or PostgreSQL, not both", ErrInvalidConfig)
	}
	if cfg.Redis && p != cells.RedisHLLP {
		return 0, false, fmt.Errorf("%w: the Redis profile has Redis's 2^%d registers, not 2^%d", ErrInvalidConfig, cells.RedisHLLP, p)
	}
	if cfg.PostgreSQL && p > cells.PostgreSQLMaxP {
		return 0, false, fmt.Errorf("%w: PostgreSQL's hll holds at most 2^%d registers, not 2^%d", ErrInvalidConfig, cells.PostgreSQLMaxP, p)
	}
	return p, cfg.Error != 0 || cfg.Precision != 0 || cfg.Redis || cfg.PostgreSQL, nil
}

// profile is the profile word cfg stores.
func (cfg DistinctConfig) profile() uint64 {
	switch {
	case cfg.Redis:
		return cells.ProfileRedis
	case cfg.PostgreSQL:
		return cells.ProfilePostgreSQL
	}
	return cells.ProfileSeeded
}

// distinctBytes is the region of 2^p registers: the head line, then the
// registers.
func distinctBytes(p uint) uint64 { return cells.DistinctHeadBytes + uint64(1)<<p }

// Bytes returns the size of the file (or memory) a distinct count of this
// config needs, header included, as CountMinConfig.Bytes does.
func (cfg DistinctConfig) Bytes() (uint64, error) {
	sp, err := cfg.spec()
	if err != nil {
		return 0, err
	}
	return sp.fileSize(), nil
}

func (cfg DistinctConfig) spec() (spec, error) {
	p, explicit, err := cfg.precision()
	if err != nil {
		return spec{}, err
	}
	profile := cfg.profile()
	sp := spec{
		kind:   kindDistinct,
		size:   distinctBytes(p),
		params: [8]uint64{uint64(p), profile},
		seed:   cfg.Seed,
	}
	sp.match = func(e entry) error {
		if explicit && (e.params[0] != uint64(p) || e.params[1] != profile) {
			return fmt.Errorf("%w: asked for 2^%d registers%s, the file has 2^%d%s", ErrIncompatible, p, profileName(profile), e.params[0], profileName(e.params[1]))
		}
		return nil
	}
	return sp, nil
}

// profileName says which hash a profile word means, for messages.
func profileName(profile uint64) string {
	switch profile {
	case cells.ProfileRedis:
		return " with Redis's hash"
	case cells.ProfilePostgreSQL:
		return " with PostgreSQL's hll hash"
	}
	return " with the seeded hash"
}

func distinctEntryConfig(e entry) any {
	return DistinctConfig{Precision: int(e.params[0]), Redis: e.params[1] == cells.ProfileRedis,
		PostgreSQL: e.params[1] == cells.ProfilePostgreSQL}
}

func distinctEntryParams(e entry) map[string]float64 {
	return map[string]float64{
		"precision":  float64(e.params[0]),
		"registers":  float64(uint64(1) << min(e.params[0], 63)),
		"redis":      b2f(e.params[1] == cells.ProfileRedis),
		"postgresql": b2f(e.params[1] == cells.ProfilePostgreSQL),
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// validateDistinctParams checks a stored precision and profile.
func validateDistinctParams(p, profile uint64) error {
	switch {
	case p < cells.DistinctMinP || p > cells.DistinctMaxP:
		return fmt.Errorf("distinct count precision %d", p)
	case profile > cells.ProfilePostgreSQL:
		return fmt.Errorf("distinct count profile %d", profile)
	case profile == cells.ProfileRedis && p != cells.RedisHLLP:
		return fmt.Errorf("distinct count in the Redis profile with precision %d", p)
	case profile == cells.ProfilePostgreSQL && p > cells.PostgreSQLMaxP:
		return fmt.Errorf("distinct count in the PostgreSQL profile with precision %d", p)
	}
	return nil
}

func validateDistinctEntry(e entry) error {
	p, profile := e.params[0], e.params[1]
	if err := validateDistinctParams(p, profile); err != nil {
		return err
	}
	if e.size != distinctBytes(uint(p)) {
		return fmt.Errorf("distinct count region of %d bytes, precision %d needs %d", e.size, p, distinctBytes(uint(p)))
	}
	return nil
}

// Distinct counts distinct keys in a shared mapping: a HyperLogLog
// (Flajolet, Fusy, Gandouet and Meunier, 2007) of 2^p one-byte registers,
// estimated with Ertl's improved estimator ("New cardinality estimation
// algorithms for HyperLogLog sketches", 2017), which is unbiased from
// zero keys up without the original's range corrections. Count is within
// StdError (1.04/sqrt(2^p)) of the true number of distinct keys added
// about two times in three, and within twice that 95% of the time; it
// holds no keys, so a billion keys cost what a thousand do.
//
// Every add is lock-free: a key raises at most one register, with a CAS on
// the word that holds it, and registers only rise, so adds in any number
// of processes commute, a repeated add changes nothing, and a process
// killed at any instant leaves nothing to repair. Merge takes the
// register-wise maximum: the count of the union.
type Distinct struct {
	Handle
	l    cells.Distinct
	core cells.DistinctCore // serves batches
	// cache is the last estimate this handle computed, with the change
	// count it was computed at.
	cache atomic.Pointer[distinctCached]
}

type distinctCached struct {
	changes  uint64
	estimate float64
}

// DistinctStats describes a distinct count at one moment.
type DistinctStats struct {
	Precision int  `json:"precision"` // p: 2^p registers
	Registers int  `json:"registers"`
	Redis     bool `json:"redis"` // hashed as Redis's HyperLogLog does
	// PostgreSQL is set when keys hash as PostgreSQL's hll extension's
	// hll_hash_bytea does.
	PostgreSQL bool `json:"postgresql"`
	// Estimate is the estimated number of distinct keys (Count, before
	// rounding).
	Estimate float64 `json:"estimate"`
	// StdError is the relative standard error, 1.04/sqrt(Registers).
	StdError float64 `json:"std_error"`
	// Zero is how many registers are still zero: most of them while the
	// count is well under Registers.
	Zero uint64 `json:"zero"`
	// RegisterChanges counts the adds and merges that raised a register
	// (and the Resets): it moves less and less often as the count grows.
	// It is not an add count, which a distinct count does not keep (no
	// Adds): an add that raises no register leaves no trace, and counting
	// every add would cost each one an atomic add on a line every process
	// shares.
	RegisterChanges uint64 `json:"register_changes"`
	FileStats
}

// OpenDistinct opens the distinct count at a place (see Place), creating
// it with cfg where there is none, as OpenCountMin does. An explicit
// config must match the stored precision and profile (ErrIncompatible);
// the zero config attaches to any, and creates precision 14.
func OpenDistinct(at Place, cfg DistinctConfig, opts ...Option) (*Distinct, error) {
	return openAs(at, cfg.spec, cfg.spec, opts, newDistinct)
}

// newDistinct builds the handle for the count at m.ent. It takes no lock:
// every register changes by an atomic maximum.
func newDistinct(m *mapping) (*Distinct, error) {
	base := m.entryBase()
	d := &Distinct{
		l: cells.Distinct{
			Changes: (*uint64)(base),
			Regs:    unsafe.Add(base, cells.DistinctHeadBytes),
			Seed:    m.lay.seed,
			P:       uint(m.ent.params[0]),
			Profile: m.ent.params[1],
		},
		core: buildCores.Distinct,
	}
	d.init(m, d)
	d.open.Store(true)
	return d, nil
}

// Add adds key: afterwards Count counts it, in every process. Adding a
// key again changes nothing. On error (closed, read-only, frozen) it adds
// nothing.
func (d *Distinct) Add(key []byte) error {
	if err := d.mayWrite("add"); err != nil {
		return err
	}
	if d.l.AddHashed(d.l.Hash(key)) {
		d.l.Changed(1)
	}
	return d.after("add")
}

// AddString is Add for a string key, without converting it to a []byte.
func (d *Distinct) AddString(key string) error {
	if err := d.mayWrite("add"); err != nil {
		return err
	}
	if d.l.AddHashed(d.l.HashString(key)) {
		d.l.Changed(1)
	}
	return d.after("add")
}

// AddBatch adds every key, as Add does each, in the C core on the cgo
// build from distinctMinBatch keys on (one crossing for many keys).
func (d *Distinct) AddBatch(keys [][]byte) error {
	if err := d.mayWrite("add"); err != nil {
		return err
	}
	core := d.core
	if len(keys) < cells.DistinctMinBatch {
		core = cells.DistinctGo{}
	}
	d.l.Changed(core.AddBatch(&d.l, keys))
	return d.after("add")
}

// Count returns the estimated number of distinct keys added, rounded. It
// walks the registers (2^p bytes: about 12 µs at precision 14, measured
// by make bench-report on a 2-core AMD EPYC) only when
// a register rose since this handle last walked them, which a change
// count in the file tells, and otherwise costs two loads; as the count
// grows, adds raise registers ever more rarely. A writer killed between
// raising a register and counting the change leaves that one register out
// of cached estimates until the next change anywhere (a new handle walks
// afresh). A closed handle returns 0.
func (d *Distinct) Count() uint64 {
	return uint64(math.Round(d.estimate()))
}

// estimate is Count before rounding; 0 on a closed handle.
func (d *Distinct) estimate() float64 {
	if !d.open.Load() {
		return 0
	}
	changes := atomic.LoadUint64(d.l.Changes)
	if c := d.cache.Load(); c != nil && c.changes == changes {
		return c.estimate
	}
	var h [66]uint64
	d.l.Histogram(&h)
	est := cells.DistinctEstimate(&h, d.l.P)
	if !d.open.Load() {
		return 0 // what was read may be the placeholder
	}
	d.cache.Store(&distinctCached{changes, est})
	return est
}

// StdError returns the relative standard error of Count, 1.04/sqrt(2^p):
// the true count is within Count·(1 ± StdError) about two times in three,
// and within twice that 95% of the time.
func (d *Distinct) StdError() float64 { return distinctStdError(d.l.P) }

// Reset forgets every key, in every process. It is not atomic: adds at
// the same moment may survive it in part, each key whole or not at all
// (a key is one register).
func (d *Distinct) Reset() error {
	if err := d.refuse("reset"); err != nil {
		return err
	}
	d.l.Reset()
	return d.after("reset")
}

// Merge raises each register of d to the largest of the others', so that
// afterwards d counts every key any of them counts (the union; keys in
// several count once). The others must have d's precision and profile and,
// in the default profile, d's seed (ErrIncompatible otherwise: checked for
// all before anything changes); they may be read-only views or frozen
// files, while d may be neither. One with a register past the largest
// rank (damage: Check reports ErrDamaged) is refused with ErrDamaged,
// naming it, before anything changes: the register would stay in d for
// good. Each word changes with a CAS, so every process may go on adding
// meanwhile.
func (d *Distinct) Merge(others ...*Distinct) error {
	return mergeEach(&d.Handle, "distinct count", others, func(o *Distinct) error {
		if o.l.P != d.l.P || o.l.Profile != d.l.Profile {
			return fmt.Errorf("%w: %s has 2^%d registers%s, this count 2^%d%s", ErrIncompatible,
				o.name(), o.l.P, profileName(o.m.ent.params[1]), d.l.P, profileName(d.m.ent.params[1]))
		}
		if d.l.Profile == cells.ProfileSeeded && o.l.Seed != d.l.Seed {
			return fmt.Errorf("%w: %s hashes with another seed", ErrIncompatible, o.name())
		}
		if j, v, bad := o.l.Damaged(); bad {
			return fmt.Errorf("%s: %w; not merged", o.name(), registerDamage(o.l.Damage(j, v)))
		}
		return nil
	}, func(o *Distinct) error {
		if o.l.Regs == d.l.Regs {
			return nil // itself: nothing to add
		}
		n, err := d.l.Merge(&o.l)
		d.l.Changed(n)
		if err != nil {
			return fmt.Errorf("%s changed during the merge: %w; its registers before that one were merged, none past the largest rank", o.name(), registerDamage(err))
		}
		return nil
	})
}

// Stats reports the count, its error and the registers' use. Zero walks
// the registers.
func (d *Distinct) Stats() DistinctStats {
	s := DistinctStats{
		Precision:  int(d.l.P),
		Registers:  1 << d.l.P,
		Redis:      d.l.Profile == cells.ProfileRedis,
		PostgreSQL: d.l.Profile == cells.ProfilePostgreSQL,
		StdError:   distinctStdError(d.l.P),
		FileStats:  FileStats{ReadOnly: d.ReadOnly()},
	}
	if d.m == nil || !d.open.Load() {
		s.FileStats.Closed = true
		return s
	}
	s.Bytes = d.m.ownBytes()
	s.RegisterChanges = atomic.LoadUint64(d.l.Changes)
	var h [66]uint64
	d.l.Histogram(&h)
	s.Zero = h[0]
	s.Estimate = d.estimate()
	s.Frozen = atomic.LoadUint32(d.sealed) != 0
	if !d.open.Load() {
		return DistinctStats{Precision: s.Precision, Registers: s.Registers, Redis: s.Redis, PostgreSQL: s.PostgreSQL, StdError: s.StdError,
			FileStats: FileStats{ReadOnly: d.ReadOnly(), Closed: true}}
	}
	return s
}

// Close releases the descriptor and the file's pages; safe twice and
// while other goroutines use the handle, as CountMin.Close is.
func (d *Distinct) Close() error {
	if d == nil {
		return nil
	}
	return d.close()
}

func (d *Distinct) describe() (string, string) {
	return "Distinct", fmt.Sprintf("2^%d registers%s", d.l.P, profileName(d.m.ent.params[1]))
}

func (d *Distinct) statsOf() any { return d.Stats() }

// check is the distinct count's part of Check: no register may exceed
// q+1 = 65-p, the largest rank a hash gives (a run of q zeros), so a
// larger one is damage (ErrDamaged, which wraps ErrCorrupt); a register
// never lowers, so nothing else is checked.
func (d *Distinct) check() error {
	if j, v, bad := d.l.Damaged(); bad {
		return d.m.errorf("check", registerDamage(d.l.Damage(j, v)))
	}
	if !d.open.Load() {
		return d.closedErr("check")
	}
	return nil
}

// Config returns the config stored in the file: the Precision and the
// profile (Redis or PostgreSQL), without the seed (a secret: see Seed). Opening the same
// place with it attaches; creating another structure with it (and the
// same seed) makes one that merges with this one. A zero handle returns
// the zero config.
func (d *Distinct) Config() DistinctConfig {
	if d.m == nil {
		return DistinctConfig{}
	}
	return distinctEntryConfig(d.m.ent).(DistinctConfig)
}

// Redis's dense HyperLogLog, the string PFADD, PFMERGE and PFCOUNT work
// on (Redis's hyperloglog.c): a 16-byte header, "HYLL", the encoding byte
// (0: dense), three zero bytes and the cached cardinality, 8 bytes
// little-endian whose top bit set means "stale, recount"; then 16384
// registers of 6 bits, register j at bit 6j of the array, least
// significant bit first.
const (
	redisHLLHeader  = 16
	redisHLLBits    = 6
	redisDenseBytes = redisHLLHeader + (1<<cells.RedisHLLP*redisHLLBits+7)/8
)

// ExportRedis returns the distinct count as Redis's dense HyperLogLog: the
// bytes that SET stores under a key, after which PFCOUNT counts it and
// PFMERGE merges it with other HyperLogLogs, in Redis, Redis Cluster and
// Valkey. It needs Redis's 16384 registers (precision 14; ErrIncompatible
// otherwise). The cached cardinality is marked stale, so Redis counts
// the registers itself.
//
// Only the Redis profile (DistinctConfig.Redis) places keys as PFADD does:
// its export merges with keys added in Redis. An export of the default
// profile counts right in Redis and merges with exports of counts of the
// same seed, but a key added both here and with PFADD would count twice.
//
// It works on a live count (reading each register once, while adds may
// go on) and on a read-only or frozen one. A closed handle is ErrClosed.
// A count with a register past the largest rank (damage: Check reports
// ErrDamaged) is refused with ErrDamaged: Redis would take it as a rank
// some key gave, and PFMERGE would keep it in every key it merges into.
func (d *Distinct) ExportRedis() ([]byte, error) {
	if !d.open.Load() {
		return nil, d.closedErr("export")
	}
	if d.l.P != cells.RedisHLLP {
		return nil, d.m.errorf("export", fmt.Errorf("%w: Redis's HyperLogLog has 2^%d registers, this count 2^%d", ErrIncompatible, cells.RedisHLLP, d.l.P))
	}
	return d.export(redisDense)
}

// export copies the registers, checks the copy and encodes it with enc.
func (d *Distinct) export(enc func(*cells.Distinct) []byte) ([]byte, error) {
	out, err := exportRegisters(&d.l, enc)
	if err != nil {
		return nil, d.m.errorf("export", err)
	}
	if !d.open.Load() {
		return nil, d.closedErr("export")
	}
	return out, nil
}

// exportRegisters copies l's registers, checks the copy and encodes it
// with enc.
func exportRegisters(l *cells.Distinct, enc func(*cells.Distinct) []byte) ([]byte, error) {
	// The registers are copied first and the copy checked and encoded:
	// checked in the file, a register another writer damaged between the
	// check and the encoding would reach Redis or PostgreSQL.
	u := make([]uint64, l.M()/8)
	for i := range u {
		u[i] = atomic.LoadUint64(l.Word(uint64(i)))
	}
	own := cells.Distinct{Regs: unsafe.Pointer(&u[0]), P: l.P}
	if j, v, bad := own.Damaged(); bad {
		// Redis or PostgreSQL would take the register, clamped to the
		// largest rank or not, as a rank some key gave, and a merge or
		// union would keep it in every value it goes into, the fleet's
		// for good.
		return nil, registerDamage(l.Damage(j, v))
	}
	return enc(&own), nil
}

// MergeRedis merges a Redis HyperLogLog into the count, as PFMERGE does:
// each register rises to the HyperLogLog's where that is larger. b is
// what GET returns for a key that PFADD, PFMERGE or a SET of ExportRedis
// made, dense or sparse. Afterwards Count counts every key of b, and, on
// the hosts of a fleet that share one seed, every key exported to it: a
// fleet's count is the PFMERGE of every host's ExportRedis, merged back
// into each host's file (the fleet module does both).
//
// Merging is idempotent: merging b again changes nothing. It needs
// Redis's 16384 registers (precision 14; ErrIncompatible otherwise). The
// profiles' caveat is ExportRedis's: keys added with PFADD count right
// only in a count of the Redis profile. Bytes that are not a Redis
// HyperLogLog, or whose registers hold ranks no key gives (more than 51),
// are ErrInvalidArgument, and nothing is merged.
func (d *Distinct) MergeRedis(b []byte) error {
	if err := d.mayWrite("merge"); err != nil {
		return err
	}
	if err := mergeRedisInto(&d.l, b); err != nil {
		return d.m.errorf("merge", err)
	}
	return d.after("merge")
}

// mergeRedisInto is MergeRedis into l's registers.
func mergeRedisInto(l *cells.Distinct, b []byte) error {
	if l.P != cells.RedisHLLP {
		return fmt.Errorf("%w: Redis's HyperLogLog has 2^%d registers, this count 2^%d", ErrIncompatible, cells.RedisHLLP, l.P)
	}
	regs, err := redisRegisters(b, byte(l.Q()+1))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	var raised uint64
	for j, v := range regs {
		if v != 0 && l.Raise(uint64(j), uint64(v)) {
			raised++
		}
	}
	l.Changed(raised)
	return nil
}

// redisRegisters decodes a Redis HyperLogLog, dense or sparse (Redis's
// hyperloglog.c), into its 16384 ranks, refusing any past top.
func redisRegisters(b []byte, top byte) ([]byte, error) {
	if len(b) < redisHLLHeader || string(b[:4]) != "HYLL" {
		return nil, fmt.Errorf("%d bytes that are not a Redis HyperLogLog (no HYLL header)", len(b))
	}
	regs := make([]byte, 1<<cells.RedisHLLP)
	body := b[redisHLLHeader:]
	switch b[4] {
	case 0: // dense: 6 bits a register, least significant first
		if len(body) != redisDenseBytes-redisHLLHeader {
			return nil, fmt.Errorf("a dense Redis HyperLogLog of %d bytes, not %d", len(b), redisDenseBytes)
		}
		for j := range regs {
			bit := j * redisHLLBits
			v := uint(body[bit/8]) >> (bit % 8)
			if bit%8 > 8-redisHLLBits {
				v |= uint(body[bit/8+1]) << (8 - bit%8)
			}
			regs[j] = byte(v & (1<<redisHLLBits - 1))
		}
	case 1: // sparse: runs of zeros (ZERO, XZERO) and of one value (VAL)
		j := 0
		for i := 0; i < len(body); i++ {
			op := body[i]
			run, val := int(op&0x3f)+1, byte(0)
			switch {
			case op&0xc0 == 0x40: // XZERO: 14 bits of run
				if i+1 == len(body) {
					return nil, fmt.Errorf("a sparse Redis HyperLogLog cut inside an opcode")
				}
				i++
				run = int(op&0x3f)<<8 | int(body[i]) + 1
			case op&0x80 != 0: // VAL: value 1-32, run 1-4
				run, val = int(op&3)+1, op>>2&0x1f+1
			}
			if run > len(regs)-j {
				return nil, fmt.Errorf("a sparse Redis HyperLogLog of more than %d registers", len(regs))
			}
			for k := j; k < j+run; k++ {
				regs[k] = val
			}
			j += run
		}
		if j != len(regs) {
			return nil, fmt.Errorf("a sparse Redis HyperLogLog of %d registers, not %d", j, len(regs))
		}
	default:
		return nil, fmt.Errorf("a Redis HyperLogLog of unknown encoding %d", b[4])
	}
	for j, v := range regs {
		if v > top {
			return nil, fmt.Errorf("register %d of the Redis HyperLogLog holds rank %d, more than any key gives (%d)", j, v, top)
		}
	}
	return regs, nil
}

// redisDense encodes l's registers as Redis's dense HyperLogLog.
func redisDense(l *cells.Distinct) []byte {
	out := make([]byte, redisDenseBytes)
	copy(out, "HYLL")
	binary.LittleEndian.PutUint64(out[8:], 1<<63) // stale: Redis counts
	regs := out[redisHLLHeader:]
	top := uint64(l.Q() + 1)
	for j := uint64(0); j < l.M(); j++ {
		v := min(l.Register(j), top) // past q+1 only in a damaged file
		bit := j * redisHLLBits
		regs[bit/8] |= byte(v << (bit % 8))
		if bit%8 > 8-redisHLLBits {
			regs[bit/8+1] |= byte(v >> (8 - bit%8))
		}
	}
	return out
}

// PostgreSQL's hll extension (postgresql-hll) stores an hll value as its
// storage specification v1 says (STORAGE.md of aggregateknowledge's
// hll-storage-spec; hll.c's multiset_pack): a byte of version (1, high
// nibble) and type (4: FULL, low nibble), a byte of regwidth-1 (top 3
// bits) and log2m (low 5 bits), a byte of the sparse-enabled bit (bit 6)
// and the explicit cutoff (low 6 bits, 0: explicit off), then the 2^log2m
// registers of regwidth bits each, register 0 first, packed big-endian,
// most significant bit first, the last byte padded with zero bits.
const (
	pgHLLHeader   = 3
	pgHLLFull     = 1<<4 | 4 // version 1, FULL
	pgHLLRegwidth = 5        // bits a register: values up to 31
	pgHLLMaxValue = 1<<pgHLLRegwidth - 1
)

// ExportPostgreSQL returns the distinct count as a value of PostgreSQL's
// hll type (the postgresql-hll extension): FULL, with regwidth 5, log2m
// the count's precision, explicit and sparse off, the bytes that
// hll_add_agg(hashval, log2m, 5, 0, 0) returns. Sent to PostgreSQL as a
// bytea cast to hll (or as the hex text '\x...'::hll), hll_cardinality
// counts it and hll_union_agg and hll_union unite it with hll values of
// the same log2m and regwidth. The extension holds at most 2^17
// registers (precision 17; ErrIncompatible past that).
//
// A register holds up to 31 in the extension, so ranks past 31 (a run of
// 31 zero bits or more above the index: about one key in 2^31) are
// written as 31, as the extension caps them. In the PostgreSQL profile
// (DistinctConfig.PostgreSQL) keys hash as hll_hash_bytea(key) does, and
// the export is byte for byte what hll_add_agg(hll_hash_bytea(key), p, 5,
// 0, 0) builds from the same keys, but for one case: a hash whose 64-p
// bits above the index are all zero (probability 2^-(64-p) a key) has
// rank 65-p here (31 in the export) and 0 in the extension, which counts
// no run at all. An
// export of the other profiles counts right (hll_cardinality) and unions
// with exports of counts of the same profile and seed, but not with keys
// hashed in SQL: a key added both here and there would count twice.
//
// The estimates differ: the extension estimates with linear counting
// below 2.5 keys a register and with the original HyperLogLog past that,
// this count with Ertl's estimator, so hll_cardinality and Count of the
// same registers agree within half a StdError or so, but for counts of
// about 1.5 to 4 keys a register, where the extension's estimate is
// biased high, by up to about 3 StdErrors. It works on a live, read-only
// or frozen count as ExportRedis does, and refuses a damaged one
// (ErrDamaged) as ExportRedis does. A closed handle is ErrClosed.
func (d *Distinct) ExportPostgreSQL() ([]byte, error) {
	if !d.open.Load() {
		return nil, d.closedErr("export")
	}
	if d.l.P > cells.PostgreSQLMaxP {
		return nil, d.m.errorf("export", fmt.Errorf("%w: PostgreSQL's hll holds at most 2^%d registers, this count 2^%d", ErrIncompatible, cells.PostgreSQLMaxP, d.l.P))
	}
	return d.export(postgresqlFull)
}

// postgresqlFull encodes l's registers as a FULL hll value of the
// PostgreSQL extension, regwidth 5.
func postgresqlFull(l *cells.Distinct) []byte {
	m := l.M()
	out := make([]byte, pgHLLHeader+(m*pgHLLRegwidth+7)/8)
	out[0] = pgHLLFull
	out[1] = byte((pgHLLRegwidth-1)<<5 | l.P)
	out[2] = 0 // sparse off, explicit cutoff 0: explicit off
	regs := out[pgHLLHeader:]
	for j := uint64(0); j < m; j++ {
		v := min(l.Register(j), pgHLLMaxValue)
		// Register j is bits 5j to 5j+4 of the stream, counted from the
		// most significant bit of its first byte: its bits, shifted to
		// end at bit 5j+5 of a 16-bit window starting at its byte.
		bit := j * pgHLLRegwidth
		w := v << (16 - pgHLLRegwidth - bit%8)
		regs[bit/8] |= byte(w >> 8)
		if bit%8 > 8-pgHLLRegwidth {
			regs[bit/8+1] |= byte(w)
		}
	}
	return out
}

// Snapshot copies the count, while any process keeps adding to it, into a
// new distinct count at a place, and returns it frozen and read-only, with
// this count's precision, profile and seed, so that it merges (Merge) with
// the snapshots and frozen files of other hosts. Every register of the
// copy is at least what the adds that returned, in any process, before
// Snapshot was called left in it (registers only rise), so the copy counts
// every key added before the call; a key added during the copy may be in
// it or not. A Reset running during the copy may leave part of what it
// cleared. The places, options and the lock-free copy are as
// CountMin.Snapshot's.
func (d *Distinct) Snapshot(at Place, opts ...Option) (*Distinct, error) {
	if !d.open.Load() {
		return nil, d.closedErr("snapshot")
	}
	m, err := createSnapshot(d.name(), at, entrySpec(d.m.ent, d.l.Seed, d.copyRegion), opts)
	return finishSnapshot(&d.Handle, m, err, newDistinct)
}

// copyRegion copies the count's region, its change count and registers,
// into dst.
func (d *Distinct) copyRegion(dst []byte) error {
	copyWords(dst, unsafe.Pointer(d.l.Changes))
	return nil
}

// registerDamage is the core's error for a register past the largest
// rank, as the package reports it: ErrDamaged.
func registerDamage(err error) error { return fmt.Errorf("%w: %w", ErrDamaged, err) }
