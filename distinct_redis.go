package sketch

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Redis's dense HyperLogLog, the string PFADD, PFMERGE and PFCOUNT work
// on (Redis's hyperloglog.c): a 16-byte header, "HYLL", the encoding byte
// (0: dense), three zero bytes and the cached cardinality, 8 bytes
// little-endian whose top bit set means "stale, recount"; then 16384
// registers of 6 bits, register j at bit 6j of the array, least
// significant bit first.
const (
	redisHLLHeader  = 16
	redisHLLBits    = 6
	redisDenseBytes = redisHLLHeader + (1<<redisHLLP*redisHLLBits+7)/8
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
	if d.l.p != redisHLLP {
		return nil, d.m.errorf("export", fmt.Errorf("%w: Redis's HyperLogLog has 2^%d registers, this count 2^%d", ErrIncompatible, redisHLLP, d.l.p))
	}
	// The registers are copied first and the copy checked and encoded:
	// checked in the file, a register another writer damaged between the
	// check and the encoding would reach Redis.
	u := make([]uint64, d.l.m()/8)
	for i := range u {
		u[i] = atomic.LoadUint64(d.l.word(uint64(i)))
	}
	own := distinctLayout{regs: unsafe.Pointer(&u[0]), p: d.l.p}
	if j, v, bad := own.damaged(); bad {
		// Redis would take the register, clamped to the largest rank or
		// not, as a rank some key gave, and PFMERGE would keep it in
		// every key it merges into, the fleet's for good.
		return nil, d.m.errorf("export", d.l.damage(j, v))
	}
	out := redisDense(&own)
	if !d.open.Load() {
		return nil, d.closedErr("export")
	}
	return out, nil
}

// redisDense encodes l's registers as Redis's dense HyperLogLog.
func redisDense(l *distinctLayout) []byte {
	out := make([]byte, redisDenseBytes)
	copy(out, "HYLL")
	binary.LittleEndian.PutUint64(out[8:], 1<<63) // stale: Redis counts
	regs := out[redisHLLHeader:]
	top := uint64(l.q() + 1)
	for j := uint64(0); j < l.m(); j++ {
		v := min(l.register(j), top) // past q+1 only in a damaged file
		bit := j * redisHLLBits
		regs[bit/8] |= byte(v << (bit % 8))
		if bit%8 > 8-redisHLLBits {
			regs[bit/8+1] |= byte(v >> (8 - bit%8))
		}
	}
	return out
}

// ExportRedis returns the union of the periods the window covers as
// Redis's dense HyperLogLog, as Distinct.ExportRedis does for one count:
// PFCOUNT of it is Count, and PFMERGE merges it with other hosts'
// exports. It needs Redis's 16384 registers (precision 14;
// ErrIncompatible otherwise). When the window turns during the export,
// it starts again at the new period, as SnapshotCovered does. A covered
// slot with a damaged register is refused (ErrDamaged), as
// Distinct.ExportRedis refuses one.
func (w *DistinctWindow) ExportRedis() ([]byte, error) {
	out, _, err := w.ExportRedisCovered()
	return out, err
}

// ExportRedisCovered is ExportRedis, and says which periods the export
// covers.
func (w *DistinctWindow) ExportRedisCovered() ([]byte, Periods, error) {
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("export")
	}
	if p := w.slots[0].p; p != redisHLLP {
		return nil, Periods{}, w.m.errorf("export", fmt.Errorf("%w: Redis's HyperLogLog has 2^%d registers, this window 2^%d", ErrIncompatible, redisHLLP, p))
	}
	u := w.union.Get().([]uint64)
	defer w.union.Put(u)
	clear(u)
	var bad error
	per, err := w.foldCovered(func(s uint64) {
		if bad == nil {
			bad = w.slotDamage(s)
		}
		w.raiseTo(u, s)
	}, func() {
		clear(u)
		bad = nil
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, Periods{}, w.m.errorf("export", err)
	}
	own := distinctLayout{regs: unsafe.Pointer(&u[0]), p: w.slots[0].p}
	if j, v, bad := own.damaged(); bad {
		// A slot damaged after its check, during the fold: the union is
		// this process's own, checked again before it leaves.
		return nil, Periods{}, w.m.errorf("export", own.damage(j, v))
	}
	out := redisDense(&own)
	if !w.open.Load() {
		return nil, Periods{}, w.closedErr("export")
	}
	return out, per, nil
}
