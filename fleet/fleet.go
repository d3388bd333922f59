// Package fleet syncs the structures of a host's sketch files with the
// other hosts of a fleet through Redis, so that every process of every
// host reads fleet-wide answers through the ordinary API, at local cost.
//
// An Agent runs on each host. Each round (Sync; Run repeats it) it pushes
// every structure it was given into the fleet's Redis keys and merges the
// fleet's state back into the structure's file, in one atomic Redis call a
// structure:
//
//   - a distinct count (sketch.Distinct): its ExportRedis is PFMERGEd into
//     the fleet's HyperLogLog, which MergeRedis merges back: Count then
//     counts every key added on any host before that host's last push.
//   - a Bloom filter (sketch.Bloom): its ExportBits is ORed (BITOP OR) into
//     the fleet's bits, which MergeBits ORs back: Contains then finds every
//     key added on any host before that host's last push.
//   - a distinct window or a Bloom window: the same, period by period
//     (ExportPeriods, MergePeriod), one key a period that expires once the
//     period has left every window. Every period of the window is pulled,
//     also those this host added nothing to, so a quiet host catches the
//     others' keys too. The hosts' windows turn by the clock (a Period),
//     which the hosts must agree on to well within a period; a window
//     turned by Rotate only is not synced (ErrNotSynced), and Rotate must
//     not be called on a synced window.
//   - a Count-Min sketch or window created with a fleet part
//     (sketch.CountMinConfig.Fleet): each host pushes its own counters
//     whole (ExportCounts, a window's ExportPeriods) to a key of its own,
//     and the agent stores the sum of the other hosts' keys in the fleet
//     part (SetFleetCounts, SetFleetPeriod), which every estimate, Allow
//     and Top of every process adds: a key is refused once its fleet-wide
//     count reaches the limit, and allowed past it by at most what the
//     other hosts admitted since their last push that this host pulled.
//     Pushes and pulls are whole stores of absolute values, idempotent
//     after a kill. Top here lists the fleet's heavy hitters from every
//     host's candidates.
//   - a counting Bloom filter created with a fleet part
//     (sketch.CountingBloomConfig.Fleet), a ban list: the same, with a
//     byte a counter (ExportCounts, SumFleetCounts, SetFleetCounts), sent
//     sparse: its nonzero counters only, a few bytes a ban. Each
//     host's count is its adds less its removes, also of copies only
//     other hosts held, so a ban made on any host is found on every host,
//     and an unban made on any host takes it out on every host.
//   - an exact set (sketch.Set), an exact ban list: each host sends the
//     keys it added and removed since its last round (against its base,
//     the keys it held as of that round, kept in Redis) and applies the
//     other hosts' adds and removes since then (AddSet): a ban made on
//     any host is held on every host, and an unban made on any host, of
//     a key any host added, is lifted on every host.
//   - a rate limiter (sketch.GCRA): each host pushes its busy times
//     (ExportTimes) to a key of its own, expiring a few intervals after
//     the limiter's window, and merges every other host's into its grid
//     (MergeTimes, a maximum). A decision then counts every request the
//     deciding host pulled: the fleet allows a key at most one limiter's
//     Burst+1 plus its rate, plus what the other hosts allowed that this
//     host had not pulled yet; hosts deciding one at a time, with a round
//     of each between, decide exactly as one limiter (see AddGCRA).
//
// The merges are idempotent (a maximum, an OR), so a push repeated after a
// kill, a timeout or a Redis failover counts nothing twice, and a Redis that
// lost its data is refilled by the next round of every host. Merges only
// raise registers and times and set bits, so a round that fails (Redis down
// or slow, or cut short) never lowers an answer: each host then answers with
// its own adds and the fleet's as of its last good round, or part of this
// round's, never less, and its Stats say so (State "local").
//
// A Count-Min structure's or a counting Bloom filter's fleet part is instead
// stored whole each round, the sum of the other hosts' keys, so a round that
// succeeds lowers it when a host's key went lower (its Reset, a counting
// filter's Remove). A Redis that lost its data (a restart without
// persistence, a failover to an empty replica, a FLUSHALL) lowers none: the
// agent remembers the counts it last summed of each other host, and sums a
// host whose key is gone (and which the hosts set may no longer list) from
// memory until the host pushes again, when its new counts replace the
// remembered ones. Stats say how many hosts a good round summed from memory
// (StructureStats.Remembered, and the metric sketch_fleet_remembered_hosts).
//
// The memory lives in the agent's process, which bounds what it covers: an
// agent restarted while Redis has lost its data remembers nothing, and until
// the other hosts push again its host answers from what Redis holds (its own
// adds and those of the hosts that pushed since); a failover to a replica
// that missed the last pushes sums the older counts it holds until each host
// pushes again. A listed host whose key is gone and which the agent never
// summed fails the round, keeping the last sum. A host is forgotten only by
// Forget, by the agent's restart, or, in a window, with each period that
// leaves the window (Config.Host says how to retire one), so the memory is
// at most, for each structure, the other hosts summed since the agent
// started times the structure's counts (a Count-Min grid's 8 bytes a
// counter, a counting filter's as sent, a few bytes a ban), times Keep for
// a window: what a round reads from Redis anyway, kept between rounds.
//
// The guarantee, for a key added on host A and asked on host B: B finds it
// once a round of A that started after the add and then a round of B have
// both succeeded. Rounds every Interval bound that to about two intervals
// when Redis is reachable.
//
// Every host of a fleet must create its structures with one config and one
// seed (sketch.ArenaConfig.Seed, or the config's Seed): the fleet's keys
// record the kind, shape and a digest of the seed (never the seed), and a
// structure that does not match is refused (ErrMismatch) before anything
// of it is written. Redis is trusted as the files are: whoever may write the
// fleet's keys may add to every host's answers (a key found, a count
// raised), though never make one panic or read past a structure.
//
// The keys of one structure share a Redis Cluster hash tag, {fleet/name}
// (the names escaped), so the agent works on Redis Cluster too
// (TestSync_Cluster runs it on three masters). A structure's description
// key has no expiry: give Redis a maxmemory policy that never evicts such
// keys (noeviction, or a volatile-* one).
// Each round sends every structure and reads the fleet's back (a
// window: each period), so a Bloom filter costs its size each way a round;
// filters past Redis's 512 MB string limit are not synced. A Count-Min
// structure, a counting Bloom filter and a rate limiter read every other
// host's own values instead, sent sparse (nonzero counters, busy times
// the host decided), which grow with the fleet's traffic: TestScale
// measured about 90 hosts a Redis core at a 1 s interval for a gateway's
// five structures at their default shapes (docs/FLEET.md has the figures
// and the guarantees).
package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
)

// Errors of the agent, for errors.Is.
var (
	// ErrMismatch: the fleet's keys hold a structure of another kind,
	// shape or seed than this host's. Nothing was written to them.
	ErrMismatch = errors.New("fleet: the fleet's structure differs from this host's")
	// ErrNotSynced: a structure of a kind the agent does not sync (yet).
	ErrNotSynced = errors.New("fleet: kind not synced")
	// ErrInvalidConfig: a Config or a name the agent cannot use.
	ErrInvalidConfig = errors.New("fleet: invalid config")
	// ErrClosed: the agent was closed.
	ErrClosed = errors.New("fleet: agent closed")
)

// Config is an agent's configuration.
type Config struct {
	// Redis is the client of the fleet's Redis: a *redis.Client, a
	// *redis.ClusterClient or a *redis.Ring, made by the caller, who
	// closes it after the agent. Make it with ContextTimeoutEnabled set:
	// go-redis otherwise waits out its own read and write timeouts (3
	// seconds, and more on retries) and not the agent's Timeout, so that
	// a slow Redis holds each round, Close and Run's end that long. A call
	// still ends at the earlier of the two: for a Timeout past 3 seconds,
	// raise ReadTimeout and WriteTimeout to it too.
	Redis redis.UniversalClient
	// Fleet names the fleet: the prefix of every key. Hosts with one
	// Fleet and one Redis sync with each other.
	Fleet string
	// Host names this host, unique in the fleet and the same across the
	// agent's restarts. Two agents with one name overwrite each other's
	// key of a Count-Min structure and take it for their own, so neither
	// counts the other's adds; an agent restarted under another name
	// over the same files pushes the same counters under a second key
	// while the first stays (a Count-Min sketch's keys never expire), so
	// the fleet counts them twice until the old name is retired.
	//
	// The agents remember the counts they last summed of each other
	// host, so that a Redis that lost its data lowers no answer, and
	// they cannot tell a retired host from one whose keys Redis lost.
	// To retire a host of a Count-Min sketch or a counting Bloom filter
	// (or an old name): stop its agent, delete its key and its member of
	// the hosts set ({fleet/name}:host:OLD, {fleet/name}:hosts), then call
	// Forget(OLD) on every other agent, or restart them (sketch-fleet:
	// restart it). Until then they keep counting the retired host's last
	// counts. In a Count-Min window nothing more is needed: a period's
	// keys expire, and its memory is dropped, once it leaves the window.
	Host string
	// Interval is the time between Run's rounds; 0 means one second.
	Interval time.Duration
	// Timeout bounds the Redis calls of each structure in a round; 0
	// means Interval.
	Timeout time.Duration
}

// Agent syncs structures with the fleet. Its methods may be called from
// several goroutines; rounds never overlap.
type Agent struct {
	cfg Config

	round   sync.Mutex // held by a round
	mu      sync.Mutex // guards what follows
	members []*member
	names   map[string]bool
	closers []func() error // what the agent opened (AddFile)
	arenas  []*followedArena
	rounds  uint64
	last    time.Time
	closed  bool

	stamp uint64 // the last push's stamp (pushStamped), guarded by round

	// rotateAlike lets windows turned by Rotate be synced: the tests turn
	// every host's window alike, Rotate for Rotate, within a period the
	// clock never ends.
	rotateAlike bool
}

// member is one synced structure and how a round moves it: the state of
// a plain structure, or of each period of a window, pushed and pulled
// through one state key each.
type member struct {
	name, kind     string
	meta           string // what the fleet's keys must hold: kind, shape, seed digest
	op             string // the merge in Redis: "pfmerge" or "or"
	stateBytes     int    // a state's size: exactly, for bits; at most, for a HyperLogLog
	plain          *plainState
	window         *windowState
	additive       *additiveState
	additiveWindow *additiveWindowState
	gcra           *gcraState
	top            *topState      // a candidate table shared with the fleet
	set            *setState      // an exact set, moved by its base and journal
	remembered     int            // hosts the last round summed from memory; guarded by Agent.round
	refused        int            // keys the last round could not add (a full exact set); guarded by Agent.round
	stats          StructureStats // guarded by Agent.mu
}

// plainState moves a structure without periods.
type plainState struct {
	export func() ([]byte, error)
	merge  func([]byte) error
}

// windowState moves each period of a window (one state key a period,
// which expires once the period has left every host's window).
type windowState struct {
	period    time.Duration
	keep      uint64
	current   func() uint64
	rotations func() uint64 // the Rotate calls so far (WindowStats.Rotations)
	export    func() ([]sketch.WindowPeriod, error)
	merge     func(p uint64, data []byte) (bool, error)
}

// New returns an agent for the fleet. It does not talk to Redis until the
// first round.
func New(cfg Config) (*Agent, error) {
	if cfg.Redis == nil {
		return nil, fmt.Errorf("%w: no Redis client", ErrInvalidConfig)
	}
	if err := validName("fleet", cfg.Fleet); err != nil {
		return nil, err
	}
	if err := validName("host", cfg.Host); err != nil {
		return nil, err
	}
	if cfg.Interval < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: a negative interval or timeout", ErrInvalidConfig)
	}
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = cfg.Interval
	}
	return &Agent{cfg: cfg, names: map[string]bool{}}, nil
}

// validName accepts 1 to 200 bytes of printable UTF-8: names go into keys
// and messages.
func validName(what, s string) error {
	if s == "" || len(s) > 200 || !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("%w: %s name %q: want 1 to 200 bytes of printable UTF-8", ErrInvalidConfig, what, s)
	}
	return nil
}

// AddDistinct syncs the distinct count d under name. The fleet's count
// has d's precision and profile and, in the default profile, its seed.
// It needs precision 14 (Redis's HyperLogLog).
func (a *Agent) AddDistinct(name string, d *sketch.Distinct) error {
	if err := syncable("distinct count", name, d); err != nil {
		return err
	}
	cfg := d.Config()
	if cfg.Precision != 14 {
		return fmt.Errorf("%w: distinct count %q of precision %d: Redis's HyperLogLog has precision 14", ErrNotSynced, name, cfg.Precision)
	}
	return a.add(&member{
		name: name, kind: string(sketch.KindDistinct), op: "pfmerge", stateBytes: maxHLLBytes,
		meta:  "distinct " + distinctMeta(cfg, d.Seed()),
		plain: &plainState{export: d.ExportRedis, merge: d.MergeRedis},
	})
}

// AddBloom syncs the Bloom filter b under name. Every host's filter must
// have b's capacity, rate and seed.
func (a *Agent) AddBloom(name string, b *sketch.Bloom) error {
	if err := syncable("Bloom filter", name, b); err != nil {
		return err
	}
	if err := bitsFit("Bloom filter", name, b.Bits()); err != nil {
		return err
	}
	return a.add(&member{
		name: name, kind: string(sketch.KindBloom), op: "or", stateBytes: int(b.Bits() / 8),
		meta:  "bloom " + bloomMeta(b.Config(), b.Bits(), b.Hashes(), b.Seed()),
		plain: &plainState{export: b.ExportBits, merge: b.MergeBits},
	})
}

// AddDistinctWindow syncs the distinct window w under name, period by
// period: Count then counts every host's keys of the periods it covers.
// The window must turn by the clock (a Period; Rotate turns one host's
// periods only, and must not be called on a synced window), and the
// hosts' clocks agree to well within a period; its counts need precision
// 14.
func (a *Agent) AddDistinctWindow(name string, w *sketch.DistinctWindow) error {
	if err := syncable("distinct window", name, w); err != nil {
		return err
	}
	cfg := w.Config()
	rotations := func() uint64 { return w.Stats().Rotations }
	if err := a.syncedWindow("distinct window", name, cfg.Window, rotations()); err != nil {
		return err
	}
	if cfg.Distinct.Precision != 14 {
		return fmt.Errorf("%w: distinct window %q of precision %d: Redis's HyperLogLog has precision 14", ErrNotSynced, name, cfg.Distinct.Precision)
	}
	return a.add(&member{
		name: name, kind: string(sketch.KindDistinctWindow), op: "pfmerge", stateBytes: maxHLLBytes,
		meta:   "distinctwindow " + windowMeta(cfg.Window) + " " + distinctMeta(cfg.Distinct, w.Seed()),
		window: windowOf(cfg.Window, w.Current, rotations, w.ExportPeriods, w.MergePeriod),
	})
}

// AddBloomWindow syncs the Bloom window w under name, period by period:
// Contains then finds every host's keys of the periods it covers (a
// replay caught on any host). The window must turn by the clock, as
// AddDistinctWindow's.
func (a *Agent) AddBloomWindow(name string, w *sketch.BloomWindow) error {
	if err := syncable("Bloom window", name, w); err != nil {
		return err
	}
	if err := bitsFit("Bloom window", name, w.Bits()); err != nil {
		return err
	}
	cfg := w.Config()
	rotations := func() uint64 { return w.Stats().Rotations }
	if err := a.syncedWindow("Bloom window", name, cfg.Window, rotations()); err != nil {
		return err
	}
	return a.add(&member{
		name: name, kind: string(sketch.KindBloomWindow), op: "or", stateBytes: int(w.Bits() / 8),
		meta:   "bloomwindow " + windowMeta(cfg.Window) + " " + bloomMeta(cfg.Bloom, w.Bits(), w.Hashes(), w.Seed()),
		window: windowOf(cfg.Window, w.Current, rotations, w.ExportPeriods, w.MergePeriod),
	})
}

// distinctMeta names a count's precision and hash: the profiles with a
// public hash (Redis's, PostgreSQL's) by name, the seeded one by its
// seed's digest.
func distinctMeta(cfg sketch.DistinctConfig, seed uint64) string {
	switch {
	case cfg.Redis:
		return fmt.Sprintf("precision=%d seed=redis", cfg.Precision)
	case cfg.PostgreSQL:
		return fmt.Sprintf("precision=%d seed=postgresql", cfg.Precision)
	}
	return fmt.Sprintf("precision=%d seed=%s", cfg.Precision, seedDigest(seed))
}

func bloomMeta(cfg sketch.BloomConfig, bits uint64, hashes int, seed uint64) string {
	return fmt.Sprintf("bits=%d hashes=%d capacity=%d fprate=%g seed=%s", bits, hashes, cfg.Capacity, cfg.FPRate, seedDigest(seed))
}

func windowMeta(w sketch.Window) string {
	return fmt.Sprintf("period=%s keep=%d", w.Period, w.Keep)
}

// syncedWindow refuses a window whose periods are not the fleet's: one
// turned by Rotate only numbers its periods by this host's turns, and one
// that turns by the clock but was also turned by Rotate numbers them that
// many periods ahead of the clock's, the fleet's.
func (a *Agent) syncedWindow(what, name string, w sketch.Window, rotations uint64) error {
	if w.Period <= 0 {
		return fmt.Errorf("%w: %s %q turns by Rotate only, so its periods are this host's own", ErrNotSynced, what, name)
	}
	if rotations != 0 && !a.rotateAlike {
		return fmt.Errorf("%w: %s %q was turned by Rotate %d times, so its periods are ahead of the clock's", ErrNotSynced, what, name, rotations)
	}
	return nil
}

func windowOf(w sketch.Window, current, rotations func() uint64, export func() ([]sketch.WindowPeriod, error), merge func(uint64, []byte) (bool, error)) *windowState {
	return &windowState{period: w.Period, keep: uint64(w.Keep), current: current, rotations: rotations, export: export, merge: merge}
}

// syncable refuses a handle that cannot take the fleet's state back: a
// read-only one, or one of a frozen file.
func syncable(kind, name string, h interface {
	ReadOnly() bool
	Frozen() bool
}) error {
	if h.ReadOnly() || h.Frozen() {
		return fmt.Errorf("%w: %s %q is read-only or frozen: the fleet's state cannot be merged into it", ErrNotSynced, kind, name)
	}
	return nil
}

// maxStateBytes is Redis's largest string (proto-max-bulk-len).
const maxStateBytes = 512 << 20

// bitsFit refuses bits Redis cannot hold in one string.
func bitsFit(kind, name string, bits uint64) error {
	if bits/8 > maxStateBytes {
		return fmt.Errorf("%w: %s %q has %d bytes of bits, more than a Redis string holds (512 MiB)", ErrNotSynced, kind, name, bits/8)
	}
	return nil
}

func (a *Agent) add(m *member) error {
	if err := validName("structure", m.name); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ErrClosed
	}
	if a.names[m.name] {
		return fmt.Errorf("%w: structure %q added twice", ErrInvalidConfig, m.name)
	}
	a.names[m.name] = true
	m.stats = StructureStats{Name: m.name, Kind: m.kind, State: StateIdle}
	a.members = append(a.members, m)
	return nil
}

// seedDigest names a seed in the fleet's keys without telling it: the
// first 8 bytes of SHA-256 of a fixed prefix and the seed, in hex. Knowing
// the digest helps find the seed no more than guessing it does.
func seedDigest(seed uint64) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	sum := sha256.Sum256(append([]byte("sketch fleet seed\x00"), b[:]...))
	return fmt.Sprintf("%x", sum[:8])
}

// The states of a structure (and of the agent: the worst of its
// structures').
const (
	// StateIdle: no round has run yet.
	StateIdle = "idle"
	// StateSynced: the last round pushed and pulled.
	StateSynced = "synced"
	// StateLocal: the last round failed (Redis unreachable, slow, or
	// refusing): the structure answers with this host's adds and the
	// fleet's as of its last good round, and the next round retries.
	StateLocal = "local"
	// StateRefused: the fleet holds another kind, shape or seed
	// (ErrMismatch); rounds keep trying, in case the fleet's keys change.
	StateRefused = "refused"
)

// StructureStats is what the agent knows of one structure's syncing.
type StructureStats struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	State string `json:"state"`
	// LastSync is when the last good round ended (zero before one).
	LastSync time.Time `json:"last_sync"`
	// Syncs and Failures count the rounds that pushed and pulled, and
	// those that did not.
	Syncs    uint64 `json:"syncs"`
	Failures uint64 `json:"failures"`
	// LastError is the last failed round's error, "" after a good one.
	LastError string `json:"last_error,omitempty"`
	// Remembered counts the other hosts whose counts the last good
	// round summed from the agent's memory, their keys being gone from
	// Redis (it lost its data, or the host was retired and not yet
	// forgotten: see Config.Host): the fleet part holds their last
	// pushed counts, not a lower sum, until they push again. It is 0
	// when Redis held every host's counts, and for kinds that do not
	// combine by addition.
	Remembered int `json:"remembered,omitempty"`
	// Refused counts the keys of the fleet's exact set that this host's
	// set could not hold in the last round that got so far: it held its
	// capacity (sketch.ErrFull, which fails the round). None is evicted
	// for them, and they stay in the fleet: the next rounds retry them.
	// It is 0 for the other kinds.
	Refused int `json:"refused,omitempty"`
}

// Stats is the agent's state.
type Stats struct {
	Fleet string `json:"fleet"`
	Host  string `json:"host"`
	// State is the worst of the structures' states (refused, local,
	// idle, synced), synced when there are none and a round ran.
	State string `json:"state"`
	// Rounds counts the rounds run; LastRound is when the last one ended.
	Rounds     uint64           `json:"rounds"`
	LastRound  time.Time        `json:"last_round"`
	Structures []StructureStats `json:"structures"`
}

// Stats returns the agent's state.
func (a *Agent) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Stats{Fleet: a.cfg.Fleet, Host: a.cfg.Host, Rounds: a.rounds, LastRound: a.last, State: StateSynced}
	if a.rounds == 0 {
		s.State = StateIdle
	}
	rank := map[string]int{StateSynced: 0, StateIdle: 1, StateLocal: 2, StateRefused: 3}
	for _, m := range a.members {
		s.Structures = append(s.Structures, m.stats)
		if rank[m.stats.State] > rank[s.State] {
			s.State = m.stats.State
		}
	}
	return s
}

// pushPull is a round's call for one state key, atomic in Redis. It
// first checks, writing nothing when one fails: the fleet's description
// (KEYS[1]) against this host's (ARGV[1]); the fleet's state (KEYS[2]): a
// string, of ARGV[5] bytes for bits ("or"), or a HyperLogLog of at most
// ARGV[5] bytes that PFCOUNT takes ("pfmerge"). With ARGV[2] given it then
// merges it (this host's export, through the scratch key KEYS[3]) into the
// state with ARGV[3]'s merge, and with ARGV[4] > 0 makes the state expire
// that many milliseconds later. It returns the fleet's state (false when
// there is none).
var pushPull = redis.NewScript(`
local meta = redis.call('GET', KEYS[1])
if meta and meta ~= ARGV[1] then
	return {'mismatch', meta}
end
local t = redis.call('TYPE', KEYS[2]).ok
if t ~= 'none' then
	if t ~= 'string' then
		return {'foreign', 'a Redis ' .. t .. ' in the state key'}
	end
	local n = redis.call('STRLEN', KEYS[2])
	if ARGV[3] == 'or' and n ~= tonumber(ARGV[5]) then
		return {'foreign', 'bits of ' .. n .. ' bytes'}
	end
	if ARGV[3] == 'pfmerge' then
		if n > tonumber(ARGV[5]) then
			return {'foreign', 'a state of ' .. n .. ' bytes'}
		end
		local c = redis.pcall('PFCOUNT', KEYS[2])
		if type(c) == 'table' and c.err then
			return {'foreign', 'a state that is not a HyperLogLog'}
		end
	end
end
if ARGV[2] ~= '' then
	if not meta then
		redis.call('SET', KEYS[1], ARGV[1])
	end
	redis.call('SET', KEYS[3], ARGV[2])
	local r
	if ARGV[3] == 'pfmerge' then
		r = redis.pcall('PFMERGE', KEYS[2], KEYS[3])
	else
		r = redis.pcall('BITOP', 'OR', KEYS[2], KEYS[2], KEYS[3])
	end
	redis.call('DEL', KEYS[3])
	if type(r) == 'table' and r.err then
		if not meta then
			redis.call('DEL', KEYS[1])
		end
		return {'foreign', r.err}
	end
	if tonumber(ARGV[4]) > 0 then
		redis.call('PEXPIRE', KEYS[2], ARGV[4])
	end
end
return {'ok', redis.call('GET', KEYS[2])}
`)

// maxHLLBytes is the largest Redis HyperLogLog of 2^14 registers: the
// dense encoding's 16-byte header and 12288 bytes of registers.
const maxHLLBytes = 16 + 12288

// keys are a structure's keys for a state key's suffix: its description,
// the fleet's state, and this host's scratch key, under one hash tag. The
// names are escaped (keyName), so that the tag is {fleet/name} whole and
// no two structures, fleets or hosts share a key.
func (a *Agent) keys(m *member, suffix string) []string {
	tag := a.tag(m)
	return []string{tag + ":meta", tag + ":" + suffix, tag + ":push:" + keyName(a.cfg.Host)}
}

// tag is the hash tag of m's keys: {fleet/name}, the names escaped.
func (a *Agent) tag(m *member) string {
	return "{" + keyName(a.cfg.Fleet) + "/" + keyName(m.name) + "}"
}

// keyName escapes a name for a key: the braces that delimit a Redis
// Cluster hash tag, the slash between fleet and structure, the colon
// before a suffix, and the percent sign of the escapes themselves.
var keyName = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D", "/", "%2F", ":", "%3A").Replace

// Sync runs one round: every structure is pushed to the fleet and the
// fleet's state merged back into it. It returns the errors of the
// structures whose round failed, joined (nil when all succeeded); each
// structure's state is in Stats.
func (a *Agent) Sync(ctx context.Context) error {
	a.round.Lock()
	defer a.round.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	arenas := append([]*followedArena(nil), a.arenas...)
	a.mu.Unlock()
	var errs []error
	for _, f := range arenas {
		if _, err := a.rescan(f); err != nil {
			errs = append(errs, err)
		}
	}
	a.mu.Lock()
	members := append([]*member(nil), a.members...)
	a.mu.Unlock()

	for _, m := range members {
		err := a.syncWithin(ctx, m)
		a.mu.Lock()
		st := &m.stats
		switch {
		case err == nil:
			st.State, st.LastSync, st.LastError = StateSynced, time.Now(), ""
			st.Remembered = m.remembered
			st.Syncs++
		case errors.Is(err, ErrMismatch):
			st.State, st.LastError = StateRefused, err.Error()
			st.Failures++
		default:
			st.State, st.LastError = StateLocal, err.Error()
			st.Failures++
		}
		st.Refused = m.refused
		a.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	a.mu.Lock()
	a.rounds++
	a.last = time.Now()
	a.mu.Unlock()
	return errors.Join(errs...)
}

// syncWithin is syncOne bounded by the Timeout: each structure has its
// own, so that many structures (or a window's many periods) do not eat
// the time of those after them.
func (a *Agent) syncWithin(ctx context.Context, m *member) error {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	return a.syncOne(ctx, m)
}

// syncOne pushes and pulls one structure.
func (a *Agent) syncOne(ctx context.Context, m *member) error {
	switch {
	case m.window != nil:
		return a.syncWindow(ctx, m)
	case m.gcra != nil:
		return a.syncGCRA(ctx, m)
	case m.set != nil:
		return a.syncSet(ctx, m)
	case m.additive != nil, m.additiveWindow != nil:
		sync := a.syncAdditive
		if m.additiveWindow != nil {
			sync = a.syncAdditiveWindow
		}
		if err := sync(ctx, m); err != nil || m.top == nil {
			return err
		}
		return a.syncTop(ctx, m)
	}
	exp, err := m.plain.export()
	if err != nil {
		return fmt.Errorf("fleet: %s %q: %w", m.kind, m.name, err)
	}
	state, err := a.pushPull(ctx, m, m.op, exp, 0)
	if err != nil {
		return err
	}
	if err := m.plain.merge(state); err != nil {
		return fmt.Errorf("fleet: %s %q: merging the fleet's state: %w", m.kind, m.name, err)
	}
	return nil
}

// syncWindow pushes each period the window holds and pulls every period
// of the window: also those this host added nothing to, whose slots the
// merge claims, so that a quiet host finds the others' keys too. A
// period's key expires Keep+1 periods after its last push: by then it
// has left every window.
func (a *Agent) syncWindow(ctx context.Context, m *member) error {
	return a.eachPeriod(m, m.window, func(p uint64, exp []byte, ttl int64) error {
		state, err := a.pushPull(ctx, m, fmt.Sprintf("%s:%d", m.op, p), exp, ttl)
		if err != nil || state == nil { // nil: no host has pushed the period
			return err
		}
		if _, err := m.window.merge(p, state); err != nil {
			return fmt.Errorf("fleet: %s %q: merging the fleet's period %d: %w", m.kind, m.name, p, err)
		}
		return nil
	})
}

// eachPeriod calls sync for each period of w's window, newest first, with
// this host's export of it (nil when its slot does not hold it) and the
// life of the period's keys. Every period is synced, also past one that
// fails (a mismatch of one period's key says the fleet's keys were
// tampered with); their errors are joined. A window turned by Rotate is
// refused first.
func (a *Agent) eachPeriod(m *member, w *windowState, sync func(p uint64, exp []byte, ttl int64) error) error {
	if r := w.rotations(); r != 0 && !a.rotateAlike {
		return fmt.Errorf("fleet: %s %q: %w: the window was turned by Rotate %d times, so its periods are ahead of the fleet's", m.kind, m.name, ErrMismatch, r)
	}
	exps, err := w.export()
	if err != nil {
		return fmt.Errorf("fleet: %s %q: %w", m.kind, m.name, err)
	}
	held := map[uint64][]byte{}
	for _, e := range exps {
		held[e.Period] = e.Data
	}
	cur := w.current()
	ttl := periodKeyLife(w.period, w.keep).Milliseconds()
	var errs []error
	for i := range min(w.keep, cur+1) {
		p := cur - i
		if err := sync(p, held[p], ttl); err != nil {
			errs = append(errs, fmt.Errorf("period %d: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// maxKeyLife bounds a period's key's life: a key that expires while its
// period is still in a window (a period longer than this) is pushed again
// by every host's next round, from their slots.
const maxKeyLife = 366 * 24 * time.Hour

// periodKeyLife is how long a period's key lives after a push: Keep+1
// periods, by when the period has left every window, at most maxKeyLife.
func periodKeyLife(period time.Duration, keep uint64) time.Duration {
	if period >= maxKeyLife/time.Duration(keep+1) {
		return maxKeyLife
	}
	return period * time.Duration(keep+1)
}

// pushPull runs the script for one state key of m (suffix), pushing exp
// when it is not nil, and returns the fleet's state (nil when no host
// has pushed it).
func (a *Agent) pushPull(ctx context.Context, m *member, suffix string, exp []byte, ttlMillis int64) ([]byte, error) {
	res, err := pushPull.Run(ctx, a.cfg.Redis, a.keys(m, suffix), m.meta, exp, m.op, ttlMillis, m.stateBytes).Slice()
	body, err := scriptReply(m, res, err)
	if err != nil {
		return nil, err
	}
	state, ok := body.(string)
	if !ok {
		return nil, nil // no host has pushed it
	}
	return []byte(state), nil
}

// scriptReply reads a script's {status, body} reply: the body when the
// status is "ok"; ErrMismatch when it is "mismatch" (the body is the
// fleet's description) or "foreign" (the body says what the script found
// in Redis instead of the structure's keys).
func scriptReply(m *member, res []any, err error) (any, error) {
	if err != nil {
		return nil, fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
	}
	if len(res) != 2 {
		return nil, fmt.Errorf("fleet: %s %q: redis: a reply of %d values, not 2", m.kind, m.name, len(res))
	}
	switch status, _ := res[0].(string); status {
	case "ok":
		return res[1], nil
	case "mismatch":
		body, _ := res[1].(string)
		return nil, fmt.Errorf("fleet: %s %q: %w: the fleet's is %q, this host's %q", m.kind, m.name, ErrMismatch, body, m.meta)
	case "foreign":
		body, _ := res[1].(string)
		return nil, fmt.Errorf("fleet: %s %q: %w: found in Redis: %s", m.kind, m.name, ErrMismatch, body)
	default:
		return nil, fmt.Errorf("fleet: %s %q: redis: a reply %q not understood", m.kind, m.name, status)
	}
}

// Run runs a round every Interval, the first at once, until ctx is done,
// and returns ctx's error. A failed round is in Stats, and the next one
// retries.
func (a *Agent) Run(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		if err := a.Sync(ctx); errors.Is(err, ErrClosed) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Close stops the agent: rounds after it return ErrClosed. It closes the
// structures the agent opened itself (AddArena, AddFile), not those given
// to it, and waits for a round under way. It is safe to call twice.
func (a *Agent) Close() error {
	a.round.Lock()
	defer a.round.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	var errs []error
	for _, c := range a.closers {
		errs = append(errs, c())
	}
	a.closers = nil
	for _, f := range a.arenas {
		errs = append(errs, f.close())
	}
	a.arenas = nil
	return errors.Join(errs...)
}
