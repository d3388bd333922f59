package fleet

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
)

// Kinds that combine by addition keep the rest of the fleet's counts in a
// fleet part of their own file (CountMinConfig.Fleet), apart from this
// host's counters. Each host pushes its own counters whole (absolute
// values) to a key of its own, and sets its fleet part to the sum of the
// other hosts' keys: every push and pull is idempotent, and one that a
// kill or a timeout cut short is replaced whole by the next.

// additiveState moves a structure that combines by addition.
type additiveState struct {
	export func() ([]byte, error)
	set    func([]byte) error
	// sum adds the other hosts' exports (each of the export's length);
	// nil means sumCounts, for uint64 counters.
	sum func(hosts ...[]byte) ([]byte, error)
}

// additiveWindowState moves each period of a window that combines by
// addition.
type additiveWindowState struct {
	window    *windowState
	setPeriod func(p uint64, counts []byte) (bool, error)
}

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
		name: name, kind: string(sketch.KindCountMin), op: "sum", stateBytes: cfg.Rows * cfg.Width * 8,
		meta:     "countmin " + countMinMeta(cfg, c.Seed()),
		additive: &additiveState{export: c.ExportCounts, set: c.SetFleetCounts},
	}
	if cfg.Candidates > 0 {
		m.top = &topState{top: c.Top, estimate: c.EstimateString}
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
		meta: "countminwindow " + windowMeta(cfg.Window) + " " + countMinMeta(cfg.CountMin, w.Seed()),
		additiveWindow: &additiveWindowState{
			window:    windowOf(cfg.Window, w.Current, rotations, w.ExportPeriods, nil),
			setPeriod: w.SetFleetPeriod,
		},
	}
	if cfg.CountMin.Candidates > 0 {
		m.top = &topState{top: w.Top, estimate: w.EstimateString, life: periodKeyLife(cfg.Window.Period, uint64(cfg.Window.Keep)).Milliseconds()}
	}
	return a.add(m)
}

// AddCountingBloom syncs the counting Bloom filter b under name: every
// host then finds every item added on any host, and an item removed on
// any host (a copy it held or another host did) is removed on every
// host, as of their last push. It needs a fleet part
// (CountingBloomConfig.Fleet), where the agent writes the rest of the
// fleet's counts, and one geometry and seed on every host. Each host
// pushes its count of each counter, a byte each (ExportCounts), to a key
// of its own, and stores the others' sum (SumFleetCounts) in its fleet
// part: a ban (Add) on host A is found on host B once a round of A that
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
	if b.Counters() > maxStateBytes {
		return fmt.Errorf("%w: counting Bloom filter %q has %d counters, more than a Redis string holds (512 MiB)", ErrNotSynced, name, b.Counters())
	}
	return a.add(&member{
		name: name, kind: string(sketch.KindCountingBloom), op: "sum", stateBytes: int(b.Counters()),
		meta:     fmt.Sprintf("countingbloom counters=%d hashes=%d seed=%s", b.Counters(), b.Hashes(), seedDigest(b.Seed())),
		additive: &additiveState{export: b.ExportCounts, set: b.SetFleetCounts, sum: b.SumFleetCounts},
	})
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
// times), atomic in Redis: check the description (KEYS[1], ARGV[1]) and
// that the hosts' set (KEYS[2]) is a set, writing nothing otherwise;
// store the counts (ARGV[2]) under the host's key (KEYS[3]) and the host
// (ARGV[3]) in the set, both expiring ARGV[4] milliseconds later when it
// is > 0; return the set's hosts.
var pushCounts = redis.NewScript(`
local meta = redis.call('GET', KEYS[1])
if meta and meta ~= ARGV[1] then
	return {'mismatch', meta}
end
local t = redis.call('TYPE', KEYS[2]).ok
if t ~= 'none' and t ~= 'set' then
	return {'mismatch', 'a Redis ' .. t .. ' in the hosts key'}
end
if not meta then
	redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('SET', KEYS[3], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
if tonumber(ARGV[4]) > 0 then
	redis.call('PEXPIRE', KEYS[3], ARGV[4])
	redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return {'ok', redis.call('SMEMBERS', KEYS[2])}
`)

// syncCounts pushes this host's counts (exp) under suffix (a period's, or
// "" for a plain structure) and returns the other hosts', summed by sum.
func (a *Agent) syncCounts(ctx context.Context, m *member, suffix string, exp []byte, ttlMillis int64, sum func(...[]byte) ([]byte, error)) ([]byte, error) {
	tag := a.tag(m)
	hostKey := func(h string) string { return tag + ":host" + suffix + ":" + keyName(h) }
	keys := []string{tag + ":meta", tag + ":hosts" + suffix, hostKey(a.cfg.Host)}
	res, err := pushCounts.Run(ctx, a.cfg.Redis, keys, m.meta, exp, a.cfg.Host, ttlMillis).Slice()
	body, err := scriptReply(m, res, err)
	if err != nil {
		return nil, err
	}
	hosts, _ := body.([]any)
	var others []string
	for _, h := range hosts {
		if s, ok := h.(string); ok && s != a.cfg.Host {
			others = append(others, hostKey(s))
		}
	}
	slices.Sort(others)
	if len(others) == 0 {
		return sum()
	}
	vals, err := a.cfg.Redis.MGet(ctx, others...).Result()
	if err != nil {
		return nil, fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
	}
	hostCounts := make([][]byte, len(vals))
	for i, v := range vals {
		if v == nil {
			// A listed host's key gone (deleted, evicted, or of another
			// type, which MGET also answers nil for): a period's key
			// outlives its period in every window, so only a neighbour
			// or an emptied Redis does this. The round fails, and the
			// fleet part keeps its last sum rather than a lower one.
			return nil, fmt.Errorf("fleet: %s %q: %s is listed but holds no counts: keeping the last sum until it pushes again", m.kind, m.name, others[i])
		}
		s, ok := v.(string)
		if !ok || len(s) != len(exp) {
			// A host's counts that cannot be summed fail the round: the
			// fleet part keeps the last good sum rather than a lower one.
			return nil, fmt.Errorf("fleet: %s %q: %w: %s holds %d bytes, not the %d of this host's counts", m.kind, m.name, ErrMismatch, others[i], len(s), len(exp))
		}
		hostCounts[i] = []byte(s)
	}
	return sum(hostCounts...)
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
	add := m.additive.sum
	if add == nil {
		add = uint64Sum(len(exp))
	}
	sum, err := a.syncCounts(ctx, m, "", exp, 0, add)
	if err != nil {
		return err
	}
	if err := m.additive.set(sum); err != nil {
		return fmt.Errorf("fleet: %s %q: setting the fleet's counts: %w", m.kind, m.name, err)
	}
	return nil
}

// syncAdditiveWindow does it period by period, every period of the window
// pulled, as syncWindow does.
func (a *Agent) syncAdditiveWindow(ctx context.Context, m *member) error {
	zero := make([]byte, m.stateBytes)
	return a.eachPeriod(m, m.additiveWindow.window, func(p uint64, exp []byte, ttl int64) error {
		if exp == nil {
			exp = zero // nothing added here in p: this host's counts are zero
		}
		sum, err := a.syncCounts(ctx, m, ":"+strconv.FormatUint(p, 10), exp, ttl, uint64Sum(len(exp)))
		if err != nil {
			return err
		}
		if _, err := m.additiveWindow.setPeriod(p, sum); err != nil {
			return fmt.Errorf("fleet: %s %q: setting the fleet's period %d: %w", m.kind, m.name, p, err)
		}
		return nil
	})
}
