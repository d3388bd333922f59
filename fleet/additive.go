package fleet

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
)

// Kinds that combine by addition keep the rest of the fleet's counts in a
// fleet part of their own file (CountMinConfig.Fleet), apart from this
// host's counters. Each host pushes its own counters whole (absolute
// values) to a key of its own, and sets its fleet part to the sum of the
// other hosts' keys: every push and pull is idempotent, and one that a
// kill or a timeout cut short is replaced whole by the next.
//
// The agent remembers the counts it last summed of each other host (of
// each period, for a window), so that a Redis that lost its data never
// lowers a fleet part: a host it summed before whose key is gone is
// summed from memory until the host pushes again (seenCounts).

// additiveState moves a structure that combines by addition.
type additiveState struct {
	export func() ([]byte, error)
	set    func([]byte) error
	// sum adds the other hosts' exports (each of the export's length);
	// nil means uint64Sum, for uint64 counters.
	sum func(hosts ...[]byte) ([]byte, error)
	// encode makes the value pushed of an export, and decode the export
	// of a value read back (refusing one this host cannot sum); nil
	// pushes the export as it is, and takes back a value of its length.
	encode func(exp []byte) []byte
	decode func(val []byte) ([]byte, error)
	seen   seenCounts // guarded by Agent.round
}

// counts is how a round reads the other hosts' values: decode turns one
// read from Redis (or remembered) into an export, refusing one this host
// cannot sum, and sum adds the exports.
type counts struct {
	decode func(val []byte) ([]byte, error)
	sum    func(exports ...[]byte) ([]byte, error)
}

// sized is the decode of an export pushed as it is: a value of n bytes.
func sized(n int) func([]byte) ([]byte, error) {
	return func(val []byte) ([]byte, error) {
		if len(val) != n {
			return nil, fmt.Errorf("holds %d bytes, not the %d of this host's counts", len(val), n)
		}
		return val, nil
	}
}

// additiveWindowState moves each period of a window that combines by
// addition.
type additiveWindowState struct {
	window    *windowState
	setPeriod func(p uint64, counts []byte) (bool, error)
	seen      map[uint64]seenCounts // by period; guarded by Agent.round
}

// seenCounts are the counts a structure's rounds last summed of each
// other host (of one period, for a window), by host name, as read from
// Redis (raw values, which the member's decode turns into the exports its
// sum adds: a counting Bloom filter's stay sparse). A round sums
// every host Redis holds now and, for each host remembered here whose
// key is gone (Redis lost its data, or a neighbour deleted the key), its
// remembered counts; a host's counts read again replace its remembered
// ones. A host is forgotten only by Agent.Forget, by the agent's end, or,
// for a window, with its period once the period leaves the window. So
// the memory is at most the other hosts summed since the agent started
// (less those forgotten) times the structure's export size, times the
// window's Keep periods for a window: what a round reads from Redis
// anyway, kept between rounds.
type seenCounts map[string][]byte

// AddCountMin syncs the Count-Min sketch c under name: every estimate of
// every host then counts every host's adds as of their last push. It
// needs a fleet part (CountMinConfig.Fleet), where the agent writes the
// rest of the fleet's counts, and one shape and seed on every host.
func (a *Agent) AddCountMin(name string, c *sketch.CountMin) error {
	if err := syncable("Count-Min sketch", name, c); err != nil {
		return err
	}
	cfg := c.Config()
	if !cfg.Fleet {
		return fmt.Errorf("%w: Count-Min sketch %q has no fleet part (create it with CountMinConfig.Fleet)", ErrNotSynced, name)
	}
	if err := countsFit("Count-Min sketch", name, cfg.Rows, cfg.Width); err != nil {
		return err
	}
	m := &member{
		name: name, kind: string(sketch.KindCountMin), op: "sum", stateBytes: cfg.Rows*cfg.Width*8 + 8,
		meta: "countmin " + countMinMeta(cfg, c.Seed()) + " adds=1 enc=sparse",
		additive: &additiveState{
			export: func() ([]byte, error) { return exportWithAdds(c) }, set: c.SetFleetCounts, seen: seenCounts{},
			encode: encodeGrid,
			decode: func(val []byte) ([]byte, error) { return decodeGrid(val, cfg.Rows*cfg.Width+1) },
		},
	}
	if cfg.Candidates > 0 {
		m.top = &topState{top: c.Top, estimate: c.EstimateString, bound: c.ErrorBound}
	}
	return a.add(m)
}

// AddCountMinWindow syncs the Count-Min window w under name, period by
// period: every estimate, and every Allow, of every host then counts
// every host's adds of the periods covered, as of their last push. It
// needs a fleet part (its CountMin config's Fleet) and a clock, as
// AddBloomWindow's windows do.
func (a *Agent) AddCountMinWindow(name string, w *sketch.CountMinWindow) error {
	if err := syncable("Count-Min window", name, w); err != nil {
		return err
	}
	cfg := w.Config()
	rotations := func() uint64 { return w.Stats().Rotations }
	if err := a.syncedWindow("Count-Min window", name, cfg.Window, rotations()); err != nil {
		return err
	}
	if !cfg.CountMin.Fleet {
		return fmt.Errorf("%w: Count-Min window %q has no fleet part (create it with its CountMin config's Fleet)", ErrNotSynced, name)
	}
	if err := countsFit("Count-Min window", name, cfg.CountMin.Rows, cfg.CountMin.Width); err != nil {
		return err
	}
	m := &member{
		name: name, kind: string(sketch.KindCountMinWindow), op: "sum", stateBytes: cfg.CountMin.Rows * cfg.CountMin.Width * 8,
		meta: "countminwindow " + windowMeta(cfg.Window) + " " + countMinMeta(cfg.CountMin, w.Seed()) + " enc=sparse",
		additiveWindow: &additiveWindowState{
			window:    windowOf(cfg.Window, w.Current, rotations, w.ExportPeriods, nil),
			setPeriod: w.SetFleetPeriod,
			seen:      map[uint64]seenCounts{},
		},
	}
	if cfg.CountMin.Candidates > 0 {
		m.top = &topState{top: w.Top, estimate: w.EstimateString, bound: w.ErrorBound, life: periodKeyLife(cfg.Window.Period, uint64(cfg.Window.Keep)).Milliseconds()}
	}
	return a.add(m)
}

// AddCountingBloom syncs the counting Bloom filter b under name: every
// host then finds every item added on any host, and an item removed on
// any host (a copy it held or another host did) is removed on every
// host, as of their last push. It needs a fleet part
// (CountingBloomConfig.Fleet), where the agent writes the rest of the
// fleet's counts, and one geometry and seed on every host. Each host
// pushes its count of each counter (ExportCounts, a byte each), sparse
// (its nonzero counters only: about 2 bytes each, a few counters a ban),
// to a key of its own, and stores the others' sum (SumFleetCounts) in
// its fleet part: a ban (Add) on host A is found on host B once a round of A that
// started after it and then a round of B have succeeded, and an unban
// (Remove) on B reaches A the same way.
func (a *Agent) AddCountingBloom(name string, b *sketch.CountingBloom) error {
	if err := syncable("counting Bloom filter", name, b); err != nil {
		return err
	}
	cfg := b.Config()
	if !cfg.Fleet {
		return fmt.Errorf("%w: counting Bloom filter %q has no fleet part (create it with CountingBloomConfig.Fleet)", ErrNotSynced, name)
	}
	if b.Counters() >= maxStateBytes { // a value is at most a byte over the counters
		return fmt.Errorf("%w: counting Bloom filter %q has %d counters, whose value may be more than a Redis string holds (512 MiB)", ErrNotSynced, name, b.Counters())
	}
	return a.add(&member{
		name: name, kind: string(sketch.KindCountingBloom), op: "sum", stateBytes: int(b.Counters()),
		// enc=sparse: agents that push the export bare refuse these
		// keys, and these agents theirs, rather than mis-sum them.
		meta: fmt.Sprintf("countingbloom counters=%d hashes=%d seed=%s enc=sparse", b.Counters(), b.Hashes(), seedDigest(b.Seed())),
		additive: &additiveState{
			export: b.ExportCounts, set: b.SetFleetCounts, sum: b.SumFleetCounts, seen: seenCounts{},
			encode: encodeCounts,
			decode: func(val []byte) ([]byte, error) { return decodeCounts(val, int(b.Counters())) },
		},
	})
}

// exportWithAdds is c's counters followed by its add total, read after
// them (an add between is then in the total, never missing from it): the
// others' totals summed tell a host's error bounds what the fleet added,
// which conservative update's raised rows fall short of (SetFleetCounts).
func exportWithAdds(c *sketch.CountMin) ([]byte, error) {
	exp, err := c.ExportCounts()
	if err != nil {
		return nil, err
	}
	adds := c.Total()
	if adds == sketch.ClosedEstimate {
		return nil, fmt.Errorf("%w: closed during the export", sketch.ErrClosed)
	}
	return binary.LittleEndian.AppendUint64(exp, adds), nil
}

func countMinMeta(cfg sketch.CountMinConfig, seed uint64) string {
	return fmt.Sprintf("rows=%d width=%d seed=%s", cfg.Rows, cfg.Width, seedDigest(seed))
}

// countsFit refuses a grid Redis cannot hold in one string.
func countsFit(kind, name string, rows, width int) error {
	if uint64(rows)*uint64(width)*8 > maxStateBytes {
		return fmt.Errorf("%w: %s %q has %d x %d counters, more than a Redis string holds (512 MiB)", ErrNotSynced, kind, name, rows, width)
	}
	return nil
}

// pushCounts is the push of one host's counts (or a rate limiter's busy
// times), atomic in Redis: check the description (KEYS[1], ARGV[1]), that
// the hosts' set (KEYS[2]) is a set and the push stamps (KEYS[4]) a hash,
// and that the host's stamp there is earlier than this push's (ARGV[5]),
// writing nothing otherwise; store the counts (ARGV[2]) under the host's
// key (KEYS[3]), the host (ARGV[3]) in the set and the stamp in the hash,
// all expiring ARGV[4] milliseconds later when it is > 0; return the
// set's hosts. A stamp as late or later (staleStamp) is answered
// {'stale', stamp}: a push sent again after it landed is refused too,
// harmlessly.
var pushCounts = redis.NewScript(staleStamp + `
local meta = redis.call('GET', KEYS[1])
if meta and meta ~= ARGV[1] then
	return {'mismatch', meta}
end
local t = redis.call('TYPE', KEYS[2]).ok
if t ~= 'none' and t ~= 'set' then
	return {'foreign', 'a Redis ' .. t .. ' in the hosts key'}
end
t = redis.call('TYPE', KEYS[4]).ok
if t ~= 'none' and t ~= 'hash' then
	return {'foreign', 'a Redis ' .. t .. ' in the push stamps key'}
end
local last = stale(KEYS[4], ARGV[3], ARGV[5])
if last then
	return {'stale', last}
end
if not meta then
	redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('SET', KEYS[3], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
redis.call('HSET', KEYS[4], ARGV[3], ARGV[5])
if tonumber(ARGV[4]) > 0 then
	redis.call('PEXPIRE', KEYS[3], ARGV[4])
	redis.call('PEXPIRE', KEYS[2], ARGV[4])
	redis.call('PEXPIRE', KEYS[4], ARGV[4])
end
return {'ok', redis.call('SMEMBERS', KEYS[2])}
`)

// staleStamp defines the scripts' stale(key, host, stamp): the stamp of
// host in the stamps hash key when it is as late as stamp or later, else
// nil. A stored stamp that is not up to 16 decimal digits, or is more
// than a day past Redis's clock, is no stamp: a neighbour who plants one
// cannot stop a host's pushes, nor send its stamps past 2^53, where Lua
// numbers no longer tell them apart.
const staleStamp = `
local function stale(key, host, stamp)
	local last = redis.call('HGET', key, host)
	if not last or #last > 16 or not string.find(last, '^%d+$') then
		return nil
	end
	local now = redis.call('TIME')
	local n = tonumber(last)
	if n >= tonumber(stamp) and n <= now[1] * 1000000 + now[2] + 86400000000 then
		return last
	end
	return nil
end
`

// nextStamp returns a push's stamp: the clock's microseconds, or one past
// the last stamp when that is later. The caller holds the round lock.
func (a *Agent) nextStamp() uint64 {
	a.stamp = max(a.stamp+1, uint64(time.Now().UnixMicro()))
	return a.stamp
}

// stampLeap is how far past a later stamp Redis holds this agent's next
// stamp goes: past the pushes an agent of this host (say one killed with
// a push on the wire, whose stamps ran ahead of its clock) can have
// stamped after that one, a push a structure and a period a round.
const stampLeap = 1 << 16

// pushStamped runs pushCounts for this host's value val under keys (the
// description, the hosts' set, the host's key, the push stamps) and
// returns the script's reply body. Each push carries a stamp later than
// every earlier one of this agent (microseconds of the clock, or one more
// than the last), so that a push that lands late (sent by a round that
// timed out, or by an agent killed with it on the wire, after a newer
// one) cannot put older counts back over newer: Redis refuses it. A push
// refused because Redis holds a stamp as late (this host's clock went
// back, or another agent pushes under its name) fails the round, and the
// next round's push goes past it: sent again now, its counts, read
// before the other push's, could be the older.
func (a *Agent) pushStamped(ctx context.Context, m *member, keys []string, val []byte, ttlMillis int64) (any, error) {
	res, err := pushCounts.Run(ctx, a.cfg.Redis, keys, m.meta, val, a.cfg.Host, ttlMillis, a.nextStamp()).Slice()
	if err == nil && len(res) == 2 && res[0] == "stale" {
		return nil, a.refusedAsStale(m, keys[3], res[1])
	}
	return scriptReply(m, res, err)
}

// refusedAsStale is the error of a push Redis refused because the stamps
// key holds a stamp of this host (last, as the script replied it) as late
// as the push's; it moves the agent's stamps well past it.
func (a *Agent) refusedAsStale(m *member, stampsKey string, last any) error {
	s, _ := last.(string)
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("fleet: %s %q: %w: %s holds %q for this host, which is no push stamp", m.kind, m.name, ErrMismatch, stampsKey, s)
	}
	pushed := a.stamp
	a.stamp = max(a.stamp, n+stampLeap)
	return fmt.Errorf("fleet: %s %q: Redis holds a push of this host stamped %d, as late as this round's (%d): its clock went back, or another agent pushes under its name; the next round pushes past it", m.kind, m.name, n, pushed)
}

// syncCounts pushes this host's value (val: its counts, as encoded)
// under suffix (a period's, or "" for a plain structure) and returns the
// other hosts' exports, decoded and summed by c: those Redis holds, and
// those of seen whose key is gone. It returns the hosts summed from seen,
// and remembers in seen the values it summed.
func (a *Agent) syncCounts(ctx context.Context, m *member, suffix string, val []byte, ttlMillis int64, c counts, seen seenCounts) ([]byte, []string, error) {
	tag := a.tag(m)
	hostKey := func(h string) string { return tag + ":host" + suffix + ":" + keyName(h) }
	keys := []string{tag + ":meta", tag + ":hosts" + suffix, hostKey(a.cfg.Host), tag + ":stamps" + suffix}
	body, err := a.pushStamped(ctx, m, keys, val, ttlMillis)
	if err != nil {
		return nil, nil, err
	}
	others := a.othersToSum(body, seen)
	if len(others) == 0 {
		total, err := c.sum()
		return total, nil, err
	}
	hostKeys := make([]string, len(others))
	for i, h := range others {
		hostKeys[i] = hostKey(h)
	}
	vals, err := a.cfg.Redis.MGet(ctx, hostKeys...).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
	}
	raw := make([][]byte, len(vals))
	exports := make([][]byte, len(vals))
	var fromMemory []string
	for i, v := range vals {
		if v == nil {
			// A host's key gone (deleted, evicted, of another type,
			// which MGET also answers nil for, or Redis lost its data):
			// its remembered counts stand in until it pushes again.
			// A listed host this agent never summed (a name a neighbour
			// listed, or a key gone before this agent first read it)
			// fails the round, and the fleet part keeps its last sum
			// rather than a lower one.
			old, ok := seen[others[i]]
			if !ok {
				return nil, nil, fmt.Errorf("fleet: %s %q: %q is listed but holds no counts, and this agent remembers none: keeping the last sum until it pushes again", m.kind, m.name, hostKeys[i])
			}
			raw[i] = old
			fromMemory = append(fromMemory, others[i])
		} else {
			s, _ := v.(string) // MGET answers strings and nils
			raw[i] = []byte(s)
		}
		// A host's counts that cannot be summed fail the round: the
		// fleet part keeps the last good sum rather than a lower one.
		if exports[i], err = c.decode(raw[i]); err != nil {
			return nil, nil, fmt.Errorf("fleet: %s %q: %w: %q %v", m.kind, m.name, ErrMismatch, hostKeys[i], err)
		}
	}
	total, err := c.sum(exports...)
	if err != nil {
		return nil, nil, err
	}
	for i, h := range others {
		seen[h] = raw[i]
	}
	return total, fromMemory, nil
}

// othersToSum are the hosts a round sums, sorted: those of the hosts set
// (the push's reply) and those remembered, less this host.
func (a *Agent) othersToSum(listed any, seen seenCounts) []string {
	hosts, _ := listed.([]any)
	others := make([]string, 0, len(hosts)+len(seen))
	for _, h := range hosts {
		if s, ok := h.(string); ok && s != a.cfg.Host {
			others = append(others, s)
		}
	}
	for h := range seen {
		if h != a.cfg.Host {
			others = append(others, h)
		}
	}
	slices.Sort(others)
	return slices.Compact(others)
}

// uint64Sum returns the sum of hosts' uint64 little-endian counters, n
// bytes each, saturating.
func uint64Sum(n int) func(hosts ...[]byte) ([]byte, error) {
	return func(hosts ...[]byte) ([]byte, error) {
		sum := make([]byte, n)
		for _, h := range hosts {
			addCounts(sum, h)
		}
		return sum, nil
	}
}

// addCounts adds src's little-endian counters to dst's, saturating.
func addCounts(dst, src []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		a, b := binary.LittleEndian.Uint64(dst[i:]), binary.LittleEndian.Uint64(src[i:])
		s := a + b
		if s < a {
			s = ^uint64(0)
		}
		binary.LittleEndian.PutUint64(dst[i:], s)
	}
}

// syncAdditive pushes and pulls a plain structure that combines by
// addition.
func (a *Agent) syncAdditive(ctx context.Context, m *member) error {
	exp, err := m.additive.export()
	if err != nil {
		return fmt.Errorf("fleet: %s %q: %w", m.kind, m.name, err)
	}
	st := m.additive
	c := counts{decode: st.decode, sum: st.sum}
	if c.sum == nil {
		c.sum = uint64Sum(len(exp))
	}
	val := exp
	if st.encode != nil {
		val = st.encode(exp)
	} else {
		c.decode = sized(len(exp))
	}
	sum, fromMemory, err := a.syncCounts(ctx, m, "", val, 0, c, st.seen)
	if err != nil {
		return err
	}
	if err := m.additive.set(sum); err != nil {
		return fmt.Errorf("fleet: %s %q: setting the fleet's counts: %w", m.kind, m.name, err)
	}
	m.remembered = len(fromMemory)
	return nil
}

// syncAdditiveWindow does it period by period, every period of the window
// pulled, as syncWindow does, and then forgets the periods that left the
// window.
func (a *Agent) syncAdditiveWindow(ctx context.Context, m *member) error {
	zero := make([]byte, m.stateBytes)
	aw := m.additiveWindow
	fromMemory := map[string]bool{}
	err := a.eachPeriod(m, aw.window, func(p uint64, exp []byte, ttl int64) error {
		if exp == nil {
			exp = zero // nothing added here in p: this host's counts are zero
		}
		seen := aw.seen[p]
		if seen == nil {
			seen = seenCounts{}
			aw.seen[p] = seen
		}
		if len(exp) != m.stateBytes {
			return fmt.Errorf("fleet: %s %q: period %d exported %d bytes, not %d", m.kind, m.name, p, len(exp), m.stateBytes)
		}
		words := len(exp) / 8
		decode := func(val []byte) ([]byte, error) { return decodeGrid(val, words) }
		sum, hosts, err := a.syncCounts(ctx, m, ":"+strconv.FormatUint(p, 10), encodeGrid(exp), ttl, counts{decode: decode, sum: uint64Sum(len(exp))}, seen)
		if err != nil {
			return err
		}
		if _, err := aw.setPeriod(p, sum); err != nil {
			return fmt.Errorf("fleet: %s %q: setting the fleet's period %d: %w", m.kind, m.name, p, err)
		}
		for _, h := range hosts {
			fromMemory[h] = true
		}
		return nil
	})
	cur := aw.window.current()
	for p := range aw.seen {
		if p+aw.window.keep <= cur {
			delete(aw.seen, p) // left every host's window: no round sums it again
		}
	}
	m.remembered = len(fromMemory)
	return err
}

// Forget drops what the agent remembers of host's counts in every
// structure that combines by addition, so that its next rounds sum only
// what Redis holds of host. Call it on every agent of the fleet once a
// host is retired and its keys deleted (see Config.Host): until then the
// agents keep summing the retired host's last counts, as they would
// after a Redis that lost its data. A host whose key is still in Redis
// is summed, and remembered, again at the next round. Forget waits for a
// round under way.
func (a *Agent) Forget(host string) {
	a.round.Lock()
	defer a.round.Unlock()
	a.mu.Lock()
	members := append([]*member(nil), a.members...)
	a.mu.Unlock()
	for _, m := range members {
		if m.additive != nil {
			delete(m.additive.seen, host)
		}
		if m.additiveWindow != nil {
			for _, seen := range m.additiveWindow.seen {
				delete(seen, host)
			}
		}
	}
}
