package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/shmsketch/sketch"
)

// The rate limiter in the generic parts (faults, mutate, metrics, arena,
// byte order) is a presence filter: an add is a decision of cost 1 now at
// one request a day with no burst, so a key allowed once stays busy for a
// day, and a peek (cost 0) refused is "maybe present". A key never
// decided is idle unless it shares every row with a busy one.
var presenceRate = sketch.Rate{Count: 1, Per: 24 * time.Hour}

// gcraFor is a presence limiter of 4 rows and about size bytes.
func gcraFor(size uint64) sketch.GCRAConfig {
	w := 64
	for uint64(w)*4*8 < size {
		w *= 2
	}
	return sketch.GCRAConfig{Rate: presenceRate, Rows: 4, Width: w}
}

var (
	boGCRA = sketch.GCRAConfig{Rate: presenceRate, Rows: 4, Width: 1 << 10}

	gcraShape = arenaShape{
		config: func(s structSpec) any { return sketch.GCRAConfig{Rate: presenceRate, Rows: s.Rows, Width: s.Width} },
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.GCRAConfig)
			return structSpec{Rows: c.Rows, Width: c.Width}, sketch.Window{}, ok
		},
		bytes: func(s structSpec) (uint64, error) {
			return sketch.GCRAConfig{Rate: presenceRate, Rows: s.Rows, Width: s.Width}.Bytes()
		},
	}
)

// busy is a rate limiter's "maybe present": a peek (cost 0, which
// read-only handles and frozen files answer too) refused. A peek that
// fails answers 1, which is never low.
func busy(g limiter, key []byte) uint64 {
	d, err := g.Allow(key, 0)
	if err != nil || !d.Allowed {
		return 1
	}
	return 0
}

// The storm's limiter: gcraKeys keys, each allowed gcraRate with a burst
// of gcraBurst, which the workers ask far faster than that, so nearly
// every decision is on the bound. The grid is wide for them.
var (
	stormGCRA = sketch.GCRAConfig{Rate: sketch.Rate{Count: 200, Per: time.Second}, Burst: 4, Keys: 1024}
	gcraKeys  = func() [][]byte {
		keys := make([][]byte, 8)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "rate-%d", i)
		}
		return keys
	}()
)

// A gcraEntry is one allowed decision in a worker's log: the time it was
// decided at, the key's index and its cost, 16 bytes little-endian.
type gcraEntry struct {
	at   int64
	key  uint32
	cost uint32
}

const gcraEntryBytes = 16

func gcraLogPath(dir string, slot int) string {
	return filepath.Join(dir, fmt.Sprintf("gcra.%02d.log", slot))
}

// A gcraLog is a worker's log of allowed decisions, appended with one
// write a decision once it returned: a write the kill cut off never
// happened (the check then sees fewer decisions, never more).
type gcraLog struct {
	f   *os.File
	buf [gcraEntryBytes]byte
}

func openGCRALog(dir string, slot int) (*gcraLog, error) {
	f, err := os.OpenFile(gcraLogPath(dir, slot), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &gcraLog{f: f}, nil
}

func (l *gcraLog) allowed(e gcraEntry) error {
	binary.LittleEndian.PutUint64(l.buf[0:], uint64(e.at))
	binary.LittleEndian.PutUint32(l.buf[8:], e.key)
	binary.LittleEndian.PutUint32(l.buf[12:], e.cost)
	_, err := l.f.Write(l.buf[:])
	return err
}

// limit is op 14 and 15: one decision at the worker's clock now, of cost
// 1 or 2 (AllowAt), or a batch of 4 to 16 of the keys, repeats allowed, at
// one time now (AllowBatchAt, in the C core on the cgo build); each
// allowed decision is logged.
func (w *stormWorker) limit(op int) error {
	g := w.s.gl
	if op == 14 {
		k, cost := w.rng.IntN(len(gcraKeys)), 1+w.rng.Uint64N(2)
		at := time.Now()
		d, err := g.AllowAt(gcraKeys[k], cost, at)
		if err != nil {
			return fmt.Errorf("rate limiter allow: %w", err)
		}
		if d.Allowed {
			return w.glog.allowed(gcraEntry{at.UnixNano(), uint32(k), uint32(cost)})
		}
		return nil
	}
	w.batch, w.idx = w.batch[:0], w.idx[:0]
	for n := 4 + w.rng.IntN(13); n > 0; n-- {
		k := w.rng.IntN(len(gcraKeys))
		w.batch, w.idx = append(w.batch, gcraKeys[k]), append(w.idx, k)
	}
	at := time.Now()
	if err := g.AllowBatchAt(w.batch, 1, at, w.answers[:len(w.batch)]); err != nil {
		return fmt.Errorf("rate limiter batch: %w", err)
	}
	for i, d := range w.answers[:len(w.batch)] {
		if d.Allowed {
			if err := w.glog.allowed(gcraEntry{at.UnixNano(), uint32(w.idx[i]), 1}); err != nil {
				return err
			}
		}
	}
	return nil
}

// readGCRALogs reads every worker's log; a torn last entry is dropped.
func readGCRALogs(dir string, workers int) ([]gcraEntry, error) {
	var all []gcraEntry
	for slot := range workers {
		b, err := os.ReadFile(gcraLogPath(dir, slot))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for ; len(b) >= gcraEntryBytes; b = b[gcraEntryBytes:] {
			all = append(all, gcraEntry{int64(binary.LittleEndian.Uint64(b)), binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])})
		}
	}
	return all, nil
}

// A gcraVerdict is the span check of one set of logs.
type gcraVerdict struct {
	decisions  int    // allowed decisions logged
	cost       uint64 // their cost
	keys       int    // keys with a decision
	violations int    // decisions that end a span allowed past the bound
	worst      int64  // the largest excess over the bound, in nanoseconds of cost (interval a unit)
	first      string
}

// judgeGCRA holds every key's logged decisions to the limiter's promise:
// over any span [a, b] of logged times, the cost allowed is at most
// (b-a)/interval + burst+1, that is cost·interval <= b-a + (burst+1)·interval.
// Sorted by time with prefix sums P, the worst span ending at j is
// P[j]·iv - t[j] + max over i <= j of (t[i] - P[i-1]·iv), in one pass.
func judgeGCRA(entries []gcraEntry, interval time.Duration, burst uint64) gcraVerdict {
	iv, window := int64(interval), int64(burst+1)*int64(interval)
	byKey := map[uint32][]gcraEntry{}
	for _, e := range entries {
		byKey[e.key] = append(byKey[e.key], e)
	}
	v := gcraVerdict{decisions: len(entries), keys: len(byKey)}
	for key, es := range byKey {
		slices.SortFunc(es, func(x, y gcraEntry) int { return cmpInt64(x.at, y.at) })
		var before int64 // P[i-1]·iv
		best := int64(-1 << 62)
		for _, e := range es {
			best = max(best, e.at-before)
			before += int64(e.cost) * iv
			v.cost += uint64(e.cost)
			if excess := before - e.at + best - window; excess > 0 {
				v.violations++
				if excess > v.worst {
					v.worst = excess
					v.first = fmt.Sprintf("key %d: %.1f past the bound over a span ending at %d", key, float64(excess)/float64(iv), e.at)
				}
			}
		}
	}
	return v
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// gcraControl is the negative control: burst+2 decisions of cost 1 at one
// instant, for a key nobody decides, which the check must find.
func gcraControl(burst uint64) []gcraEntry {
	at := time.Now().UnixNano()
	out := make([]gcraEntry, burst+2)
	for i := range out {
		out[i] = gcraEntry{at: at, key: uint32(len(gcraKeys)), cost: 1}
	}
	return out
}

// A gcraResult is the storm's rate limiter part, as the supervisor saw it.
type gcraResult struct {
	v         gcraVerdict
	stats     sketch.GCRAStats
	checkErr  error
	readError error
}

// checkGCRA judges the workers' logs and calls Check on the limiter, once
// the workers are stopped.
func checkGCRA(dir string, g *sketch.GCRA, workers int) gcraResult {
	cfg := g.Config()
	var r gcraResult
	entries, err := readGCRALogs(dir, workers)
	if err != nil {
		r.readError = err
	}
	r.v = judgeGCRA(entries, cfg.Rate.Interval(), cfg.Burst)
	r.checkErr = g.Check()
	r.stats = g.Stats()
	return r
}

// gcraRows are the rate limiter's rows of the storm: its promise over the
// logs, with the negative control judged by the same check, and Check
// after the storm.
func gcraRows(r gcraResult) []row {
	bad := r.v.violations
	var notes string
	control := judgeGCRA(gcraControl(stormGCRA.Burst), stormGCRA.Rate.Interval(), stormGCRA.Burst)
	if control.violations == 0 {
		bad++
		notes = "; the negative control (burst+2 at one instant) was not caught"
	}
	if r.readError != nil {
		bad++
		notes += "; reading the logs: " + r.readError.Error()
	}
	checkBad, checkNote := 0, "nil"
	if r.checkErr != nil {
		checkBad, checkNote = 1, r.checkErr.Error()
	}
	return []row{{
		test: fmt.Sprintf("rate limiter (%v burst %d, %d keys, both backends): over any span [a, b] of logged times, cost allowed <= (b-a)/interval + burst+1",
			stormGCRA.Rate, stormGCRA.Burst, len(gcraKeys)),
		runs:       fmt.Sprintf("%d decisions", r.stats.Allowed+r.stats.Refused),
		violations: bad,
		figure: fmt.Sprintf("%d allowed logged (cost %d) over %d keys; %d allowed, %d refused counted; control caught %d%s%s",
			r.v.decisions, r.v.cost, r.v.keys, r.stats.Allowed, r.stats.Refused, control.violations, notes, note(r.v.first)),
	}, {
		test:       "rate limiter Check after the storm",
		runs:       "1 check",
		violations: checkBad,
		figure:     fmt.Sprintf("Check: %s; %d busy cells", checkNote, r.stats.Busy),
	}}
}
