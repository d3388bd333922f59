package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/shmsketch/sketch"
)

// An exact set's keys carry no origin and a remove leaves no trace in the
// table, so a host cannot tell from its set alone which keys it added or
// removed since it last synced. Each host therefore keeps in Redis its
// base: the keys it held, as far as the fleet knows, after its last
// round. A round sends the difference between the local set and the
// base (its adds and removes), applies them to the fleet's set, and gets
// back the difference between the fleet's set and what the host held
// (the other hosts' adds and removes), which it then applies locally.
//
// Redis keys of a structure, under its hash tag {fleet/name}:
//
//	:meta           the description (kind, capacity, key bytes)
//	:members        the fleet's set (a Redis set of the keys' bytes)
//	:version        counts the changes to :members, so that a round with
//	                nothing to send and nothing changed reads nothing
//	:base:HOST      the host's base (a Redis set; absent when empty)
//	:state:HOST     a hash telling that the base exists (also empty), the
//	                token of its last commit, the version it was taken
//	                at, the set's change count then, and whether a
//	                journal is pending
//	:add:HOST       the journal: keys the host is to add and remove
//	:rem:HOST       locally, written with the base by the push
//	:tmp:HOST       scratch, deleted within each script
//
// The push commits the new base (the fleet's set) and the journal in one
// atomic script, before the host applies anything. A round cut after it
// (a kill, a timeout, an error of the local set) leaves the journal,
// which the host's next round applies before it reads its set again, and
// then clears (settle). So no change of the fleet is taken for a change
// of the host, and none is lost, whatever point the round was cut at.

// setState moves an exact set.
type setState struct {
	keys     func() ([][]byte, error)
	changes  func() uint64 // the set's adds and removes since its create
	add      func([]byte) (bool, error)
	remove   func([]byte) (bool, error)
	keyBytes int

	// token and base are what this agent knows of the host's base in
	// Redis, as of its last commit; token "" means unknown: the next
	// push sends the whole set and Redis works out the difference.
	// Guarded by Agent.round.
	token string
	base  map[string]struct{}

	// applied records how far this agent got with the journal of token
	// when a round ended before its settle (an error, a timeout, a cut):
	// the journal is still pending in Redis, and applying a part again
	// would undo a local change made since (an unban of a ban the
	// journal added). The next round finishes it from there. A kill
	// loses this record, and the journal is applied whole again.
	applied journalProgress

	// cut, when set (tests), is called at each stage of a round
	// ("pushed", "removed", "applied"); an error ends the round there,
	// as a kill or a timeout would.
	cut func(stage string) error
}

// journalProgress is how much of a journal this agent applied.
type journalProgress struct {
	token          string // the journal's; "" when none is unsettled
	removed, added bool
	refused        [][]byte // the adds that did not fit, when added
}

// AddSet syncs the exact set s under name: a key added on any host is
// held on every host, and a key removed on any host (one it added or one
// another host did) is removed on every host, once a round of the host
// that changed it, begun after the change, and then a round of the other
// have succeeded: about two Intervals. Every host's set must have s's
// capacity and key bytes (ErrMismatch otherwise); the seeds may differ,
// keys are compared as bytes. Set windows are not synced: a window adds
// only into its current period, so a key pulled from another host would
// live longer than there.
//
// Each round sends the host's net change of each key since its last
// round; a host that did not change a key sends nothing for it. When two
// hosts change one key between their rounds, the later round wins. A
// round cut anywhere (a kill, a timeout, Redis or the file failing)
// loses nothing and sends nothing twice: the push stores the host's new
// base and the keys it is to add and remove (a journal) in one atomic
// call, and the next round applies the journal before it lists the set
// again. Keys a local writer changes during a round are left alone by the
// round's apply and sent by the next round; a key the writer changes
// twice while the fleet changes it once in a round ends as the fleet's
// change says. A key changed locally between a cut round and the next is
// kept too: the agent finishes the journal from where it stopped. Only a
// kill after the apply and before its settle returned loses that place:
// the restarted agent applies the journal again, and a key changed
// locally in between ends as the fleet's change says.
//
// Exact sets trust Redis further than the other kinds: whoever may write
// the fleet's keys can delete the fleet's set ({fleet/name}:members),
// which every host's next round reads as every key removed.
//
// A key that does not fit (the set holds Capacity keys) is refused and
// counted (StructureStats.Refused, an error wrapping sketch.ErrFull),
// never by evicting another; it stays in the fleet, is left out of the
// host's base so that it is never sent as a remove, and each round
// retries it.
//
// A Redis that lost its data (a restart without persistence, a failover
// to an empty replica, a FLUSHALL) has no base for any host: each host's
// next round pushes its whole set and removes nothing, and the fleet's
// set becomes the union of the hosts' sets. A remove made before the loss
// that a host had not pulled yet, or made since, of a key another host
// still holds, is undone: the key comes back on every host. A failover
// to a replica that missed writes makes each host send its changes since
// the base the replica holds, its own and those it applied, so the lost
// writes come back; a key changed more than once in them may come back as
// an earlier change.
//
// A set created again under its name (a new file, an arena entry created
// again) is told from the old one by its count of adds and removes since
// create, which the base records: a set with fewer is a new set, whose
// first round adds its keys and removes none. A new set that made more
// changes before its first round than the old one had is taken for the
// old one, and the keys it lacks are removed from the fleet; a set
// restored from an older copy is taken for a new one, and its keys come
// back. Reset removes every key on every host.
//
// Redis holds the fleet's set and a copy of it for each host: each Host
// must be unique (two agents under one name take each other's base for
// their own, and remove each other's keys), and a retired host's keys
// ({fleet/name}:base:HOST, :state:HOST, :add:HOST, :rem:HOST) are left for
// the operator to delete. A round walks the local set (Keys, Stats) and
// makes one call when nothing changed anywhere, a few bytes each way;
// otherwise one or two calls carrying the changed keys, whose work in
// Redis is linear in the fleet's set. A host's first round, and its first
// after the agent started or lost track of its base, sends the set whole.
func (a *Agent) AddSet(name string, s *sketch.Set) error {
	if err := syncable("exact set", name, s); err != nil {
		return err
	}
	cfg := s.Config()
	return a.add(&member{
		name: name, kind: string(sketch.KindSet), op: "set",
		// No seed: the fleet's keys are the keys' bytes, placed by no hash.
		meta: fmt.Sprintf("set capacity=%d keybytes=%d", cfg.Capacity, cfg.KeyBytes),
		set: &setState{
			keys: s.Keys, add: s.Add, remove: s.Remove, keyBytes: cfg.KeyBytes,
			changes: func() uint64 { st := s.Stats(); return st.Adds + st.Removes },
		},
	})
}

// eachArg is the scripts' helper: cmd on key with ARGV[from..to], a
// thousand at a time (Lua's unpack has a limit), returning the sum of the
// replies.
const eachArg = `
local function each(cmd, key, list, from, to)
	local n, i = 0, from
	while i <= to do
		local j = math.min(i + 999, to)
		n = n + redis.call(cmd, key, unpack(list, i, j))
		i = j + 1
	end
	return n
end
`

// pushSet is a round's push, atomic in Redis. KEYS: meta, members,
// version, base, state, add, rem, tmp (see above). ARGV: the description,
// the key bytes, the mode, the token the host's base must have, the new
// token, the set's changes (adds and removes since its create), the
// count n of keys that follow first, then n keys and the rest.
//
// Mode "diff": the n keys are the host's adds since its base and the rest
// its removes; the base must carry the token (else "stale"). Mode
// "whole": the n keys are the host's set whole; its adds and removes are
// worked out against the base, or, without one (the host's first round,
// or Redis lost it), every key is an add and none a remove. A base taken
// when the set had made more changes than it has now is another set's
// (the file was created again): it is taken for none, and its journal
// dropped, lest the new set's few keys remove the fleet's many.
//
// It checks, writing nothing when one fails: the description
// ("mismatch"), the keys' types, and that no member of the fleet's set
// the host would add is longer than the key bytes ("foreign"). A pending
// journal is returned as it is ("journal"), for the host to apply first. With nothing to
// send and the fleet's set as the base was taken, it returns
// "unchanged". Otherwise it applies the adds and removes to the fleet's
// set, stores it as the base with the token, and returns, and keeps as
// the journal, the keys the host is to add and remove ("ok").
var pushSet = redis.NewScript(eachArg + `
local meta = redis.call('GET', KEYS[1])
if meta and meta ~= ARGV[1] then
	return {'mismatch', meta}
end
local types = {'', 'set', 'string', 'set', 'hash', 'set', 'set', 'set'}
for i = 2, 8 do
	local t = redis.call('TYPE', KEYS[i]).ok
	if t ~= 'none' and t ~= types[i] then
		return {'foreign', 'a Redis ' .. t .. ' in ' .. KEYS[i]}
	end
end
local kb, mode, n = tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[7])
local st = redis.call('HMGET', KEYS[5], 'token', 'version', 'clean', 'journal', 'card', 'changes')
local has = st[1] ~= false
if mode == 'diff' and (not has or st[1] ~= ARGV[4] or st[4] == '1') then
	return {'stale', ''}
end
if has and tonumber(st[6] or '0') > tonumber(ARGV[6]) then
	has = false
end
if has and st[4] == '1' then
	return {'journal', {st[1], redis.call('SMEMBERS', KEYS[6]), redis.call('SMEMBERS', KEYS[7])}}
end
local ver = redis.call('GET', KEYS[3]) or '0'
if not tonumber(ver) then
	return {'foreign', 'a version that is not a number in ' .. KEYS[3]}
end
local card = tostring(redis.call('SCARD', KEYS[2]))
if mode == 'diff' and #ARGV == 7 and st[3] == '1' and st[2] == ver and st[5] == card then
	return {'unchanged', ''}
end

-- What the host holds: its base with its adds and without its removes,
-- or its set as sent whole.
redis.call('DEL', KEYS[8])
local adds, rems = {}, {}
if mode == 'diff' then
	redis.call('SUNIONSTORE', KEYS[8], KEYS[4])
	each('SADD', KEYS[8], ARGV, 8, 7 + n)
	each('SREM', KEYS[8], ARGV, 8 + n, #ARGV)
	for i = 8, 7 + n do adds[#adds + 1] = ARGV[i] end
	for i = 8 + n, #ARGV do rems[#rems + 1] = ARGV[i] end
else
	each('SADD', KEYS[8], ARGV, 8, 7 + n)
	if has then
		adds = redis.call('SDIFF', KEYS[8], KEYS[4])
		rems = redis.call('SDIFF', KEYS[4], KEYS[8])
	else
		-- No base: push the set whole, remove nothing.
		for i = 8, 7 + n do adds[#adds + 1] = ARGV[i] end
	end
end

-- The fleet's keys the host lacks, checked before anything is written.
local fresh = redis.call('SDIFF', KEYS[2], KEYS[8])
for _, k in ipairs(fresh) do
	if #k > kb then
		redis.call('DEL', KEYS[8])
		return {'foreign', 'a member of ' .. #k .. ' bytes in ' .. KEYS[2] .. ', more than the ' .. kb .. ' key bytes'}
	end
end

local changed = each('SADD', KEYS[2], adds, 1, #adds) + each('SREM', KEYS[2], rems, 1, #rems)
if changed > 0 then
	ver = tostring(redis.call('INCR', KEYS[3]))
end
if not meta then
	redis.call('SET', KEYS[1], ARGV[1])
end
local removed = {}
for _, k in ipairs(rems) do removed[k] = true end
local toAdd = {}
for _, k in ipairs(fresh) do
	if not removed[k] then toAdd[#toAdd + 1] = k end
end
local toRemove = redis.call('SDIFF', KEYS[8], KEYS[2])
redis.call('SUNIONSTORE', KEYS[4], KEYS[2])
redis.call('DEL', KEYS[8], KEYS[6], KEYS[7])
local journal = '0'
if #toAdd > 0 or #toRemove > 0 then
	journal = '1'
	each('SADD', KEYS[6], toAdd, 1, #toAdd)
	each('SADD', KEYS[7], toRemove, 1, #toRemove)
end
redis.call('HSET', KEYS[5], 'token', ARGV[5], 'version', ver, 'clean', '1', 'journal', journal,
	'card', tostring(redis.call('SCARD', KEYS[2])), 'changes', ARGV[6])
return {'ok', {toAdd, toRemove}}
`)

// settleSet clears the journal once the host applied it, atomically.
// KEYS: base, state, add, rem. ARGV: the token the base must have, the
// new token, the set's changes after the apply, then the keys the host
// could not add (full), which leave its base: it does not hold them, so
// its next rounds neither take them for its removes nor stop offering
// them.
var settleSet = redis.NewScript(eachArg + `
local t = redis.call('TYPE', KEYS[2]).ok
if t ~= 'hash' then
	return {'stale', ''}
end
local st = redis.call('HMGET', KEYS[2], 'token', 'journal')
if st[1] ~= ARGV[1] or st[2] ~= '1' then
	return {'stale', ''}
end
local clean = '1'
if #ARGV > 3 then
	clean = '0'
	each('SREM', KEYS[1], ARGV, 4, #ARGV)
end
redis.call('DEL', KEYS[3], KEYS[4])
redis.call('HSET', KEYS[2], 'token', ARGV[2], 'journal', '0', 'clean', clean, 'changes', ARGV[3])
return {'ok', ''}
`)

// setKeys are the keys of m's scripts (see above).
func (a *Agent) setKeys(m *member) []string {
	tag, host := a.tag(m), keyName(a.cfg.Host)
	return []string{
		tag + ":meta", tag + ":members", tag + ":version",
		tag + ":base:" + host, tag + ":state:" + host,
		tag + ":add:" + host, tag + ":rem:" + host, tag + ":tmp:" + host,
	}
}

// newToken names a commit of a host's base: random, so that a base that
// Redis lost and a host rebuilt, or a replica's older one, never carries
// the token this agent remembers.
func newToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// syncSet runs a set's round: push, apply, settle. A pending journal
// (of a round cut short) is applied and settled first, and the push
// then made again on the set as it is after it.
func (a *Agent) syncSet(ctx context.Context, m *member) error {
	st := m.set
	err := a.syncSetOnce(ctx, m)
	if err != nil && !errors.Is(err, sketch.ErrFull) {
		// The base may have moved in Redis without this agent knowing
		// where to: the next push sends the set whole.
		st.token, st.base = "", nil
	}
	return err
}

func (a *Agent) syncSetOnce(ctx context.Context, m *member) error {
	st := m.set
	keys := a.setKeys(m)
	var refused [][]byte
	// Three tries: a stale token costs one, a pending journal one.
	for range 3 {
		// The count first: the base then records no more changes than
		// the set it lists has made.
		changes := st.changes()
		local, err := st.keys()
		if err != nil {
			return fmt.Errorf("fleet: %s %q: listing the set: %w", m.kind, m.name, err)
		}
		mode, n, args := "whole", len(local), local
		if st.token != "" {
			mode = "diff"
			args = args[:0:0]
			held := make(map[string]struct{}, len(local))
			for _, k := range local {
				held[string(k)] = struct{}{}
				if _, ok := st.base[string(k)]; !ok {
					args = append(args, k)
				}
			}
			n = len(args)
			for k := range st.base {
				if _, ok := held[k]; !ok {
					args = append(args, []byte(k))
				}
			}
		}
		token := newToken()
		argv := make([]any, 0, 7+len(args))
		argv = append(argv, m.meta, st.keyBytes, mode, st.token, token, changes, n)
		for _, k := range args {
			argv = append(argv, k)
		}
		res, err := pushSet.Run(ctx, a.cfg.Redis, keys, argv...).Slice()
		status, body, err := setReply(m, res, err)
		if err != nil {
			return err
		}
		switch status {
		case "unchanged": // the base is the fleet's set: nothing refused
			m.refused = 0
			return nil
		case "stale":
			st.token, st.base = "", nil
			continue
		case "journal":
			// A round cut after its push: finish it, then push again.
			parts, _ := body.([]any)
			if len(parts) != 3 {
				return fmt.Errorf("fleet: %s %q: redis: a journal of %d parts, not 3", m.kind, m.name, len(parts))
			}
			old, _ := parts[0].(string)
			// Keys that do not fit stay in the fleet: the push after
			// this offers them again.
			if refused, err = a.applySet(ctx, m, parts[1], parts[2], old, nil); err != nil && !errors.Is(err, sketch.ErrFull) {
				return err
			}
			st.token, st.base = "", nil
			continue
		}
		parts, _ := body.([]any)
		if len(parts) != 2 {
			return fmt.Errorf("fleet: %s %q: redis: a reply of %d parts, not 2", m.kind, m.name, len(parts))
		}
		// The base is now the fleet's set: what the host held, with the
		// keys to add and without those to remove.
		base := make(map[string]struct{}, len(local))
		for _, k := range local {
			base[string(k)] = struct{}{}
		}
		st.token, st.base = token, base
		refused, err = a.applySet(ctx, m, parts[0], parts[1], token, base)
		return err
	}
	if len(refused) > 0 { // of a journal, and the push after it was stale
		return refusedErr(m, len(refused))
	}
	return fmt.Errorf("fleet: %s %q: the host's base in Redis changed during each of 3 tries (two agents under one host name?)", m.kind, m.name)
}

// applySet applies a journal (toAdd, toRemove: a script's arrays of keys)
// to the local set, removes first so that adds find room, and settles
// it: the base with token loses the keys that did not fit. It checks
// every key first, and applies nothing when one is longer than the set's
// keys. base, when not nil, is this agent's copy of the base, brought up
// to the journal.
func (a *Agent) applySet(ctx context.Context, m *member, toAdd, toRemove any, token string, base map[string]struct{}) ([][]byte, error) {
	st := m.set
	adds, err := setMembers(m, toAdd)
	if err != nil {
		return nil, err
	}
	removes, err := setMembers(m, toRemove)
	if err != nil {
		return nil, err
	}
	if base != nil {
		for _, k := range adds {
			base[string(k)] = struct{}{}
		}
		for _, k := range removes {
			delete(base, string(k))
		}
	}
	if base != nil && len(adds) == 0 && len(removes) == 0 {
		// The push wrote no journal: the host holds the fleet's every
		// key, and none is refused now.
		m.refused = 0
		return nil, nil
	}
	// A journal this agent began applying resumes where it stopped; any
	// other starts whole.
	p := st.applied
	if p.token != token {
		p = journalProgress{token: token}
	}
	st.applied = p
	if st.cut != nil {
		if err := st.cut("pushed"); err != nil {
			return nil, err
		}
	}
	if !p.removed {
		for _, k := range removes {
			if _, err := st.remove(k); err != nil {
				return nil, fmt.Errorf("fleet: %s %q: removing the fleet's removes: %w", m.kind, m.name, err)
			}
		}
		st.applied.removed = true
	}
	if st.cut != nil {
		if err := st.cut("removed"); err != nil {
			return nil, err
		}
	}
	refused := p.refused
	if !p.added {
		for _, k := range adds {
			_, err := st.add(k)
			switch {
			case errors.Is(err, sketch.ErrFull):
				refused = append(refused, k)
			case err != nil:
				return nil, fmt.Errorf("fleet: %s %q: adding the fleet's adds: %w", m.kind, m.name, err)
			}
		}
		st.applied.added, st.applied.refused = true, refused
	}
	m.refused = len(refused)
	if st.cut != nil {
		if err := st.cut("applied"); err != nil {
			return nil, err
		}
	}
	next := newToken()
	argv := make([]any, 0, 3+len(refused))
	argv = append(argv, token, next, st.changes())
	for _, k := range refused {
		argv = append(argv, k)
	}
	keys := a.setKeys(m)
	res, err := settleSet.Run(ctx, a.cfg.Redis, []string{keys[3], keys[4], keys[5], keys[6]}, argv...).Slice()
	status, _, err := setReply(m, res, err)
	if err != nil {
		return nil, err
	}
	if status != "ok" {
		st.applied = journalProgress{} // another journal now: this one is gone
		return nil, fmt.Errorf("fleet: %s %q: the host's base in Redis changed during the round (two agents under one host name?)", m.kind, m.name)
	}
	st.applied = journalProgress{}
	if base != nil {
		for _, k := range refused {
			delete(base, string(k))
		}
		st.token = next
	}
	if len(refused) > 0 {
		return refused, refusedErr(m, len(refused))
	}
	return nil, nil
}

func refusedErr(m *member, n int) error {
	return fmt.Errorf("fleet: %s %q: %w: %d keys of the fleet's set do not fit in this host's set, which holds its capacity (none was evicted; the next rounds retry them)", m.kind, m.name, sketch.ErrFull, n)
}

// setMembers reads a script's array of keys, refusing one longer than the
// set's keys (ErrMismatch).
func setMembers(m *member, v any) ([][]byte, error) {
	list, ok := v.([]any)
	if !ok && v != nil {
		return nil, fmt.Errorf("fleet: %s %q: redis: keys as a %T, not an array", m.kind, m.name, v)
	}
	keys := make([][]byte, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("fleet: %s %q: redis: a key as a %T, not a string", m.kind, m.name, e)
		}
		if len(s) > m.set.keyBytes {
			return nil, fmt.Errorf("fleet: %s %q: %w: a key of %d bytes in the fleet's set, more than the %d key bytes", m.kind, m.name, ErrMismatch, len(s), m.set.keyBytes)
		}
		keys[i] = []byte(s)
	}
	return keys, nil
}

// setReply reads a set script's {status, body} reply: "mismatch" and
// "foreign" are ErrMismatch, as scriptReply's; the other statuses are
// the caller's.
func setReply(m *member, res []any, err error) (string, any, error) {
	if err != nil {
		return "", nil, fmt.Errorf("fleet: %s %q: redis: %w", m.kind, m.name, err)
	}
	if len(res) != 2 {
		return "", nil, fmt.Errorf("fleet: %s %q: redis: a reply of %d values, not 2", m.kind, m.name, len(res))
	}
	switch status, _ := res[0].(string); status {
	case "mismatch", "foreign":
		_, err := scriptReply(m, res, nil)
		return "", nil, err
	case "ok", "unchanged", "stale", "journal":
		return status, res[1], nil
	default:
		return "", nil, fmt.Errorf("fleet: %s %q: redis: a reply %q not understood", m.kind, m.name, status)
	}
}
