package fleet

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
)

// A Count-Min sketch or window with a candidate table (Candidates) also
// shares its heavy hitters: each round pushes the host's Top, and Top
// here lists the fleet's, from every host's candidates.

// topState is what a member with a candidate table gives for the fleet's
// Top: its own Top and its estimate of a key (this host's counts and the
// fleet part: the fleet's as of the last pull, never low).
type topState struct {
	top      func(n int) ([]sketch.HeavyHitter, error)
	estimate func(key string) uint64
	bound    func() uint64 // the error bound of this host's estimates, fleet part included
	life     int64         // milliseconds a push lives (a window's), 0: for good
}

// pushTop stores a host's candidates (ARGV[1]) under its key (KEYS[1]),
// and the host (ARGV[2]) in the set of hosts that pushed (KEYS[2]), both
// expiring ARGV[3] milliseconds later when it is > 0, when the host's
// stamp in the candidates' push stamps (KEYS[3]) is earlier than this
// push's (ARGV[4]), as pushCounts does for counts; it returns {'ok'}, or
// {'stale', stamp}, writing nothing. A set or stamps key of another type
// is left alone and refused.
var pushTop = redis.NewScript(staleStamp + `
local t = redis.call('TYPE', KEYS[2]).ok
if t ~= 'none' and t ~= 'set' then
	return redis.error_reply('a Redis ' .. t .. ' in the candidate hosts key')
end
t = redis.call('TYPE', KEYS[3]).ok
if t ~= 'none' and t ~= 'hash' then
	return redis.error_reply('a Redis ' .. t .. ' in the candidates push stamps key')
end
local last = stale(KEYS[3], ARGV[2], ARGV[4])
if last then
	return {'stale', last}
end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[2], ARGV[4])
if tonumber(ARGV[3]) > 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[3])
	redis.call('PEXPIRE', KEYS[2], ARGV[3])
	redis.call('PEXPIRE', KEYS[3], ARGV[3])
end
return {'ok'}
`)

func (a *Agent) topKeys(m *member) (hostsKey string, hostKey func(string) string) {
	tag := a.tag(m)
	return tag + ":tophosts", func(h string) string { return tag + ":top:" + keyName(h) }
}

// syncTop pushes this host's candidates, after the counts' round,
// stamped as counts are (pushStamped), so that a late push cannot put a
// host's older candidates back over newer ones.
func (a *Agent) syncTop(ctx context.Context, m *member) error {
	hh, err := m.top.top(0)
	if err != nil {
		return fmt.Errorf("fleet: %s %q: %w", m.kind, m.name, err)
	}
	hostsKey, hostKey := a.topKeys(m)
	stamps := a.tag(m) + ":topstamps"
	res, err := pushTop.Run(ctx, a.cfg.Redis, []string{hostKey(a.cfg.Host), hostsKey, stamps}, encodeTop(hh), a.cfg.Host, m.top.life, a.nextStamp()).Slice()
	if err != nil {
		return fmt.Errorf("fleet: %s %q: redis: pushing the candidates: %w", m.kind, m.name, err)
	}
	if len(res) == 2 && res[0] == "stale" {
		return a.refusedAsStale(m, stamps, res[1])
	}
	return nil
}

// Top lists the fleet's loudest keys of the structure name (a Count-Min
// sketch or window with a candidate table and a fleet part), loudest
// first, at most n (all when n <= 0): the candidates every host pushed at
// its last round and this host's own, each with this host's estimate now,
// which counts this host's adds and the rest of the fleet's as of the
// last pull, so never below a key's fleet-wide count then, and its Low:
// that estimate less this host's ErrorBound, which counts the fleet's
// total. A key kept only as a prefix (HeavyHitter.Length > len(Key))
// cannot be estimated again from its label: it keeps the largest
// estimate a host gave it, and that host's Low.
func (a *Agent) Top(ctx context.Context, name string, n int) ([]sketch.HeavyHitter, error) {
	a.mu.Lock()
	var m *member
	for _, x := range a.members {
		if x.name == name {
			m = x
		}
	}
	closed := a.closed
	a.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case m == nil:
		return nil, fmt.Errorf("%w: no structure %q is synced", ErrInvalidConfig, name)
	case m.top == nil:
		return nil, fmt.Errorf("%w: %s %q has no candidate table shared with the fleet", ErrNotSynced, m.kind, name)
	}
	own, err := m.top.top(0)
	if err != nil {
		return nil, fmt.Errorf("fleet: %s %q: %w", m.kind, m.name, err)
	}
	hostsKey, hostKey := a.topKeys(m)
	hosts, err := a.cfg.Redis.SMembers(ctx, hostsKey).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
	}
	var keys []string
	for _, h := range hosts {
		if h != a.cfg.Host {
			keys = append(keys, hostKey(h))
		}
	}
	all := own
	if len(keys) > 0 {
		vals, err := a.cfg.Redis.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
		}
		for i, v := range vals {
			s, ok := v.(string)
			if !ok {
				continue // expired, or gone since the set was read
			}
			hh, err := decodeTop([]byte(s))
			if err != nil {
				return nil, fmt.Errorf("fleet: %s %q: %w: %s: %v", m.kind, m.name, ErrMismatch, keys[i], err)
			}
			all = append(all, hh...)
		}
	}
	return fleetTop(all, m.top.estimate, m.top.bound(), n), nil
}

// fleetTop merges the hosts' candidates: one entry a key, whole keys
// estimated again with estimate, their Low that less bound (this host's
// error bound, which counts the fleet's total), prefixes at their
// largest estimate.
func fleetTop(all []sketch.HeavyHitter, estimate func(string) uint64, bound uint64, n int) []sketch.HeavyHitter {
	type id struct {
		key    string
		length int
	}
	byKey := map[id]sketch.HeavyHitter{}
	for _, h := range all {
		k := id{h.Key, h.Length}
		if h.Length == len(h.Key) {
			h.Estimate = estimate(h.Key)
			h.Low = h.Estimate - min(bound, h.Estimate)
		}
		if old, ok := byKey[k]; !ok || h.Estimate > old.Estimate {
			byKey[k] = h
		}
	}
	out := make([]sketch.HeavyHitter, 0, len(byKey))
	for _, h := range byKey {
		out = append(out, h)
	}
	slices.SortFunc(out, func(x, y sketch.HeavyHitter) int {
		if c := cmp.Compare(y.Estimate, x.Estimate); c != 0 {
			return c
		}
		return cmp.Compare(x.Key, y.Key)
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// encodeTop writes candidates as uvarints and bytes: a key's length,
// the key, the whole key's length, the estimate.
func encodeTop(hh []sketch.HeavyHitter) []byte {
	var b []byte
	for _, h := range hh {
		b = binary.AppendUvarint(b, uint64(len(h.Key)))
		b = append(b, h.Key...)
		b = binary.AppendUvarint(b, uint64(h.Length))
		b = binary.AppendUvarint(b, h.Estimate)
	}
	return b
}

// maxTopKey bounds a decoded key: candidate keys are short (a table keeps
// at most a few hundred bytes of each).
const maxTopKey = 1 << 16

// maxTopCandidates bounds the candidates of one host: a table lists at
// most 2^14 (the largest Candidates a sketch takes), so more is not a
// host's push, and a key of a few bytes an entry would otherwise decode
// into many times its size.
const maxTopCandidates = 1 << 14

// decodeTop reads what encodeTop wrote, refusing anything else.
func decodeTop(b []byte) ([]sketch.HeavyHitter, error) {
	var out []sketch.HeavyHitter
	for len(b) > 0 {
		if len(out) == maxTopCandidates {
			return nil, errors.New("more candidates than a table holds")
		}
		n, w := binary.Uvarint(b)
		if w <= 0 || n > maxTopKey || n > uint64(len(b)-w) {
			return nil, errors.New("candidates cut or not candidates")
		}
		b = b[w:]
		key := string(b[:n])
		b = b[n:]
		length, w := binary.Uvarint(b)
		if w <= 0 || length < n || length > 1<<31-1 { // an int on every build
			return nil, errors.New("candidates cut or not candidates")
		}
		b = b[w:]
		est, w := binary.Uvarint(b)
		if w <= 0 {
			return nil, errors.New("candidates cut or not candidates")
		}
		b = b[w:]
		out = append(out, sketch.HeavyHitter{Key: key, Length: int(length), Estimate: est})
	}
	return out, nil
}
