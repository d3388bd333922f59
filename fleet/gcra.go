package fleet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
)

// A rate limiter combines by maximum, as a distinct count does: merging
// another host's times raises cells, so merging the same times again, or
// times this host already had, changes nothing. It needs no fleet part:
// each host pushes its busy times (ExportTimes) to a key of its own and
// merges every other host's (MergeTimes) into its own grid, which then
// holds the fleet's times as of the last pull. A host's key expires once
// its times can no longer matter, so a host that stops pushing is
// forgotten.
//
// A host pushes its own times only: a cell that still holds the time it
// merged from another host at its last round is left out of its export,
// since that host sends it itself, for as long as the time can matter
// (its key outlives its times). Re-sending them would be harmless, the
// merge being idempotent, but would make every host's key carry every
// other host's busy cells, N-1 hosts' worth each, read by N-1 hosts.

// gcraState moves a rate limiter.
type gcraState struct {
	export func() ([]byte, error)
	merge  func([]byte) error
	life   time.Duration // of the host's key: the window and a few rounds
	// merged holds, by cell, the latest time the last round merged from
	// the other hosts' keys, and sent the times this host's last push
	// held; guarded by Agent.round.
	merged, sent map[uint64]uint64
}

// gcraTimesHead is the size of an export's header (sketch.GCRA's
// ExportTimes): a magic, then rows, width, interval, window and the
// export's time, 8 bytes each; each busy cell follows as a uvarint of
// its index less the previous one's and a uvarint of its time less the
// export's.
const gcraTimesHead = 8 + 5*8

// timesCells calls f with each cell and time of an export, stopping at
// the first malformed one (which MergeTimes refuses whole anyway).
func timesCells(exp []byte, f func(cell, t uint64)) {
	if len(exp) < gcraTimesHead {
		return
	}
	base := binary.LittleEndian.Uint64(exp[gcraTimesHead-8:])
	var cell uint64
	for b := exp[gcraTimesHead:]; len(b) > 0; {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return
		}
		v, m := binary.Uvarint(b[n:])
		if m <= 0 {
			return
		}
		b = b[n+m:]
		cell += d
		f(cell, base+v)
	}
}

// ownTimes is the export exp less the cells that hold what the last
// round merged from other hosts (merged), and the times it keeps, for
// the next round's sent. A time this host's last push held (sent) stays,
// though another host holds it too: after a restart, or a Redis that
// lost its data, a host pushes a merged time as its own, and if each
// host then left out what it got from the other, the two would take
// turns leaving it out of both keys. Once a time is in a key, its sender
// keeps it there until it changes or passes.
func ownTimes(exp []byte, merged, sent map[uint64]uint64) ([]byte, map[uint64]uint64) {
	kept := map[uint64]uint64{}
	if len(exp) < gcraTimesHead {
		return exp, kept
	}
	base := binary.LittleEndian.Uint64(exp[gcraTimesHead-8:])
	out := append(make([]byte, 0, len(exp)), exp[:gcraTimesHead]...)
	var last uint64
	timesCells(exp, func(cell, t uint64) {
		if m, ok := merged[cell]; ok && m == t && sent[cell] != t {
			return // the other host sends it
		}
		out = binary.AppendUvarint(out, cell-last)
		out = binary.AppendUvarint(out, t-base)
		kept[cell], last = t, cell
	})
	return out, kept
}

// gcraKeyRounds is how many of the agent's intervals a host's times key
// outlives the limiter's window by: a host that misses a round or two
// (Redis slow, a restart) is not forgotten meanwhile.
const gcraKeyRounds = 3

// AddGCRA syncs the rate limiter g under name: every host then refuses a
// key that the fleet's requests, as far as this host has pulled them,
// have made busy, and tells the same RetryAfter. Every host's limiter
// must have g's rate (as written: 10/s is not 600/m), burst, shape and
// seed, or the round is refused (ErrMismatch).
//
// Each round pushes the times this host decided (ExportTimes, less the
// cells that still hold what it merged) to a key of its own and merges
// every other host's (MergeTimes: each cell raised to the later time,
// idempotent). A decision on host B thus counts B's own earlier
// decisions and those it pulled: each one another host made before a
// push that B has pulled since (and what that host had pulled, which B
// pulls from the same keys while their times matter). The guarantee: any
// run of a key's allowed requests, each counted on the host where the
// next one was decided, is within one limiter's bound, Burst+1 plus one a
// Rate interval (in cost);
// so the fleet allows a key at most that plus what the other hosts
// allowed that the deciding host had not pulled (since the last of their
// pushes it pulled). With one host deciding at a time, and between hosts
// a round of the host that decided and then one of the next, every
// decision counts every earlier one and the fleet decides exactly as one
// limiter fed every request, Remaining, RetryAfter and ResetAfter
// included. Hosts deciding at once may each allow a key's whole burst
// within a round; after it the key's time is the latest host's, not their
// sum: that excess is not paid back.
//
// Times are the hosts' Unix clocks: a host whose clock is ahead lets a
// key through sooner by that much, one behind keeps it busier (by at
// most the window: MergeTimes caps what it takes). A host's key expires
// gcraKeyRounds intervals after the window from its last push, once its
// times are past; a host that stops pushing is then forgotten (its
// member of the hosts' set removed), and a gone key fails no round.
// Redis down, slow or emptied lowers nothing: each host keeps deciding on
// its grid, its own decisions and the fleet's as of its last good round.
// A round sends about 6 bytes a busy cell this host decided (a key
// busies one cell a row) and reads as much of every other host. A host's
// times leave the fleet with its own export: after its Reset, or a new
// file, hosts that merged them keep them, and hosts that had not pulled
// them never see them.
func (a *Agent) AddGCRA(name string, g *sketch.GCRA) error {
	if err := syncable("rate limiter", name, g); err != nil {
		return err
	}
	cfg := g.Config()
	if err := timesFit(name, cfg.Rows, cfg.Width); err != nil {
		return err
	}
	window := cfg.Rate.Interval() * time.Duration(cfg.Burst+1)
	life := maxKeyLife
	if window < maxKeyLife-gcraKeyRounds*a.cfg.Interval {
		life = window + gcraKeyRounds*a.cfg.Interval
	}
	return a.add(&member{
		name: name, kind: string(sketch.KindGCRA), op: "max",
		meta: "gcra " + gcraMeta(cfg, g.Seed()),
		gcra: &gcraState{export: g.ExportTimes, merge: g.MergeTimes, life: life},
	})
}

// gcraMeta names a limiter's rate, burst, shape and seed: the file's own
// check (OpenGCRA) takes the rate as written, 10/s apart from 600/m.
func gcraMeta(cfg sketch.GCRAConfig, seed uint64) string {
	return fmt.Sprintf("rate=%s burst=%d rows=%d width=%d seed=%s", cfg.Rate, cfg.Burst, cfg.Rows, cfg.Width, seedDigest(seed))
}

// timesFit refuses a grid whose busy times might not fit in one Redis
// string: an export takes at most two uvarints a cell.
func timesFit(name string, rows, width int) error {
	if uint64(rows)*uint64(width) > (maxStateBytes-64)/(2*binary.MaxVarintLen64) {
		return fmt.Errorf("%w: rate limiter %q has %d x %d times, whose export may be more than a Redis string holds (512 MiB)", ErrNotSynced, name, rows, width)
	}
	return nil
}

// forgetHost removes a host from the hosts' set (KEYS[1]) and its push
// stamp from the stamps hash (KEYS[3]) when its times key (KEYS[2]) is
// gone (expired: the host stopped pushing), atomically, so that a host
// that pushed again meanwhile stays. Its last push is older than the
// key's life, so no late push of it is left to refuse. It returns the
// key's type.
var forgetHost = redis.NewScript(`
local t = redis.call('TYPE', KEYS[2]).ok
if t == 'none' then
	redis.call('SREM', KEYS[1], ARGV[1])
	if redis.call('TYPE', KEYS[3]).ok == 'hash' then
		redis.call('HDEL', KEYS[3], ARGV[1])
	end
end
return t
`)

// syncGCRA pushes this host's busy times and merges every other host's.
// A host whose key is gone is forgotten; one whose key cannot be merged
// fails the round (ErrMismatch), after the others are merged: merging
// only raises times, so what was merged stays right.
func (a *Agent) syncGCRA(ctx context.Context, m *member) error {
	exp, err := m.gcra.export()
	if err != nil {
		return fmt.Errorf("fleet: %s %q: %w", m.kind, m.name, err)
	}
	// What is pushed counts as sent before the call returns: a push
	// whose reply is lost may still have landed.
	exp, m.gcra.sent = ownTimes(exp, m.gcra.merged, m.gcra.sent)
	tag := a.tag(m)
	hostKey := func(h string) string { return tag + ":times:" + keyName(h) }
	set := tag + ":hosts"
	keys := []string{tag + ":meta", set, hostKey(a.cfg.Host), tag + ":stamps"}
	body, err := a.pushStamped(ctx, m, keys, exp, m.gcra.life.Milliseconds())
	if err != nil {
		return err
	}
	members, _ := body.([]any)
	var others []string
	for _, h := range members {
		if s, ok := h.(string); ok && s != a.cfg.Host {
			others = append(others, s)
		}
	}
	if len(others) == 0 {
		m.gcra.merged = nil
		return nil
	}
	slices.Sort(others)
	okeys := make([]string, len(others))
	for i, h := range others {
		okeys[i] = hostKey(h)
	}
	vals, err := a.cfg.Redis.MGet(ctx, okeys...).Result()
	if err != nil {
		return fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
	}
	var errs []error
	merged := map[uint64]uint64{}
	for i, v := range vals {
		if err := a.mergeHostTimes(ctx, m, set, others[i], okeys[i], v); err != nil {
			errs = append(errs, err)
			continue
		}
		s, _ := v.(string)
		timesCells([]byte(s), func(cell, t uint64) { merged[cell] = max(merged[cell], t) })
	}
	m.gcra.merged = merged
	return errors.Join(errs...)
}

// mergeHostTimes merges one host's times, as MGET gave them (v, nil for a
// key gone or not a string), into m's limiter.
func (a *Agent) mergeHostTimes(ctx context.Context, m *member, set, host, key string, v any) error {
	if v == nil {
		t, err := forgetHost.Run(ctx, a.cfg.Redis, []string{set, key, a.tag(m) + ":stamps"}, host).Text()
		switch {
		case err != nil:
			return fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
		case t != "none" && t != "string": // a string: pushed since the MGET
			return fmt.Errorf("fleet: %s %q: %w: %s holds a Redis %s, not times", m.kind, m.name, ErrMismatch, key, t)
		}
		return nil
	}
	s, _ := v.(string)
	err := m.gcra.merge([]byte(s))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sketch.ErrIncompatible), errors.Is(err, sketch.ErrInvalidArgument):
		return fmt.Errorf("fleet: %s %q: %w: %s holds times that cannot be merged: %v", m.kind, m.name, ErrMismatch, key, err)
	}
	return fmt.Errorf("fleet: %s %q: merging %s: %w", m.kind, m.name, key, err)
}
