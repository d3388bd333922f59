package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"github.com/shmsketch/sketch"
)

// Exact counters in the harness. In the generic parts (faults, mutate,
// metrics, arena, byte order) a counters structure is a Count-Min sketch
// of one row that never collides by more than the keys it holds: a key
// adds to the counter its CRC-32 picks among the structure's names, so
// the counter's value is never below what was added with the key. In the
// storm, workers add to named counters and log each add before and after
// it; the supervisor holds every counter to the logs.

// countersNamesN are the names of a generic counters structure of n
// counters: "c0" to "c<n-1>", so that a shape is its count.
func countersNamesN(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	return names
}

// countersFor is a generic counters structure of about size bytes: a
// counter a cache line, 1 to CountersMaxNames of them.
func countersFor(size uint64) sketch.CountersConfig {
	return sketch.CountersConfig{Names: countersNamesN(int(min(max(size/64, 1), sketch.CountersMaxNames)))}
}

// countersMost is the largest generic counters structure.
func countersMost() uint64 {
	b, _ := countersFor(1 << 30).Bytes()
	return b
}

// namesOf caches each handle's names, which the generic adds ask for at
// every add (Names copies them).
var namesOf sync.Map // *sketch.Counters to []string

// counterFor is the name of the counter key adds to in c.
func counterFor(c *sketch.Counters, key []byte) string {
	v, ok := namesOf.Load(c)
	if !ok {
		v, _ = namesOf.LoadOrStore(c, c.Names())
	}
	names := v.([]string)
	if len(names) == 0 {
		return "" // a closed handle's: the add fails as closed
	}
	return names[crc32.ChecksumIEEE(key)%uint32(len(names))]
}

// countersAdds are the generic adds on c: each key adds 1 to its counter.
func countersAdds(c *sketch.Counters) adds {
	return adds{
		add:       func(key []byte) error { return c.Add(counterFor(c, key), 1) },
		addString: func(key string) error { return c.Add(counterFor(c, []byte(key)), 1) },
		addBatch: func(keys [][]byte) error {
			for _, k := range keys {
				if err := c.Add(counterFor(c, k), 1); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// counterAnswer is the value of key's counter, never below what was
// added with key; a read that fails answers the largest value, which is
// never low.
func counterAnswer(c *sketch.Counters, key []byte) uint64 {
	v, err := c.Value(counterFor(c, key))
	if err != nil {
		return ^uint64(0)
	}
	return v
}

// answerCounterWeights is the counters' faultAnswers: it adds n to the
// key's counter and answers presence, a counter above zero. The faults
// want exact answers, and keys that share a counter add up in it: the
// counters' exact sums are the storm's and the arena phases' to check.
func answerCounterWeights(f *faultHandle, h any) {
	c := h.(*sketch.Counters)
	f.add = func(k []byte, n uint64) error { return c.Add(counterFor(c, k), n) }
	f.answer = func(k []byte) uint64 { return min(counterAnswer(c, k), 1) }
	f.presence = true
}

var (
	boCounters = countersFor(64 * 64)

	countersShape = arenaShape{
		config: func(s structSpec) any { return sketch.CountersConfig{Names: countersNamesN(s.Width)} },
		read: func(cfg any) (structSpec, sketch.Window, bool) {
			c, ok := cfg.(sketch.CountersConfig)
			return structSpec{Width: len(c.Names)}, sketch.Window{}, ok
		},
		bytes: func(s structSpec) (uint64, error) {
			return sketch.CountersConfig{Names: countersNamesN(s.Width)}.Bytes()
		},
	}
)

// The storm's counters: a few names, one with a space and a comma.
var (
	stormCounterNames = []string{"200", "301", "404", "429", "500", "503", "GET /", "POST /api,v2"}
	stormCounters     = sketch.CountersConfig{Names: stormCounterNames}
)

// A counterEntry is one line of a worker's counters log: an intent,
// written before an add, or its done, written once the add returned; 16
// bytes little-endian: a magic byte, the phase, the counter's index, the
// add's n, and its sequence number in the worker's life.
type counterEntry struct {
	done    bool
	counter uint16
	n       uint32
	seq     uint64 // within one life of a worker: a restart begins again at 0
}

const (
	counterEntryBytes = 16
	counterMagic      = 0xc7
)

func counterLogPath(dir string, slot int) string {
	return filepath.Join(dir, fmt.Sprintf("counters.%02d.log", slot))
}

// A counterLog is a worker's log of its adds to the counters, appended
// with one write an entry: the intent before the add, the done after it.
// A kill leaves at most one intent without its done, the add in flight,
// which may or may not have landed; a write the kill cut off never
// happened.
type counterLog struct {
	f   *os.File
	seq uint64
	buf [counterEntryBytes]byte
}

func openCounterLog(dir string, slot int) (*counterLog, error) {
	f, err := os.OpenFile(counterLogPath(dir, slot), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &counterLog{f: f}, nil
}

func (l *counterLog) write(e counterEntry) error {
	l.buf = [counterEntryBytes]byte{0: counterMagic}
	if e.done {
		l.buf[1] = 1
	}
	binary.LittleEndian.PutUint16(l.buf[2:], e.counter)
	binary.LittleEndian.PutUint32(l.buf[4:], e.n)
	binary.LittleEndian.PutUint64(l.buf[8:], e.seq)
	_, err := l.f.Write(l.buf[:])
	return err
}

// add logs the intent, makes the add, and logs it done.
func (l *counterLog) add(counter int, n uint32, add func() error) error {
	l.seq++
	e := counterEntry{counter: uint16(counter), n: n, seq: l.seq}
	if err := l.write(e); err != nil {
		return err
	}
	if err := add(); err != nil {
		return err
	}
	e.done = true
	return l.write(e)
}

// count is op 16 and 17: an add of 1 to 1000 to a random counter, by
// name (Counters.Add) or through its Counter, resolved once at the
// worker's start; both logged.
func (w *stormWorker) count(op int) error {
	i, n := w.rng.IntN(len(stormCounterNames)), uint32(1+w.rng.IntN(1000))
	return w.clog.add(i, n, func() error {
		if op == 16 {
			if err := w.s.ctr.Add(stormCounterNames[i], uint64(n)); err != nil {
				return fmt.Errorf("counters add: %w", err)
			}
			return nil
		}
		if err := w.ctrs[i].Add(uint64(n)); err != nil {
			return fmt.Errorf("counter add: %w", err)
		}
		return nil
	})
}

// resolveCounters resolves every storm counter of c once.
func resolveCounters(c *sketch.Counters) ([]sketch.Counter, error) {
	out := make([]sketch.Counter, len(stormCounterNames))
	for i, name := range stormCounterNames {
		k, err := c.Counter(name)
		if err != nil {
			return nil, err
		}
		out[i] = k
	}
	return out, nil
}

// counterTally is what the logs say of one counter: the adds done, and
// those in flight when a worker was killed.
type counterTally struct {
	done     uint64
	inFlight []uint64
}

// readCounterLogs tallies every worker's log; a torn last entry is
// dropped. An entry that is not where the log's order puts it (a done
// without its intent, a bad magic byte) is an error.
func readCounterLogs(dir string, workers int) ([]counterTally, int, error) {
	t := make([]counterTally, len(stormCounterNames))
	entries := 0
	for slot := range workers {
		b, err := os.ReadFile(counterLogPath(dir, slot))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		var open *counterEntry // the intent not yet done
		for ; len(b) >= counterEntryBytes; b = b[counterEntryBytes:] {
			e := counterEntry{done: b[1] == 1, counter: binary.LittleEndian.Uint16(b[2:]), n: binary.LittleEndian.Uint32(b[4:]), seq: binary.LittleEndian.Uint64(b[8:])}
			if b[0] != counterMagic || int(e.counter) >= len(t) {
				return nil, 0, fmt.Errorf("%s: a bad entry at byte %d", counterLogPath(dir, slot), entries*counterEntryBytes)
			}
			entries++
			switch {
			case e.done && (open == nil || open.seq != e.seq || open.counter != e.counter || open.n != e.n):
				return nil, 0, fmt.Errorf("%s: a done (seq %d) without its intent", counterLogPath(dir, slot), e.seq)
			case e.done:
				t[e.counter].done += uint64(e.n)
				open = nil
			default:
				if open != nil { // killed between the intent and the done
					t[open.counter].inFlight = append(t[open.counter].inFlight, uint64(open.n))
				}
				open = &e
			}
		}
		if open != nil {
			t[open.counter].inFlight = append(t[open.counter].inFlight, uint64(open.n))
		}
	}
	return t, entries, nil
}

// judgeCounter reports whether value is what the tally allows: the adds
// done, plus some of those in flight, each whole or not at all (a
// subset sum).
func judgeCounter(value uint64, t counterTally) bool {
	if value < t.done {
		return false
	}
	extra, most := value-t.done, uint64(0)
	for _, n := range t.inFlight {
		most += n
	}
	if extra > most {
		return false
	}
	can := make([]bool, most+1) // sums some of the adds in flight make
	can[0] = true
	for _, n := range t.inFlight {
		for s := most; s >= n; s-- {
			can[s] = can[s] || can[s-n]
		}
	}
	return can[extra]
}

// A countersResult is the storm's counters part, as the supervisor saw
// it once the workers stopped.
type countersResult struct {
	values     []sketch.NamedValue
	tallies    []counterTally
	entries    int
	violations int
	first      string
	caught     int // the negative control's counters the check refused
	checkErr   error
	readError  error
}

// checkCounters holds every storm counter to the workers' logs, judges
// the negative control (each counter one past the most the logs allow,
// which the check must refuse), and calls Check.
func checkCounters(dir string, c *sketch.Counters, workers int) countersResult {
	var r countersResult
	r.values = c.Values()
	r.checkErr = c.Check()
	r.tallies, r.entries, r.readError = readCounterLogs(dir, workers)
	if r.readError != nil {
		return r
	}
	for i, v := range r.values {
		t := r.tallies[i]
		if !judgeCounter(v.Value, t) {
			r.violations++
			if r.first == "" {
				r.first = fmt.Sprintf("%q is %d; adds done %d, %d in flight", v.Name, v.Value, t.done, len(t.inFlight))
			}
		}
		most := t.done + 1
		for _, n := range t.inFlight {
			most += n
		}
		if !judgeCounter(most, t) {
			r.caught++
		}
	}
	return r
}

// countersRows are the counters' rows of the storm: every counter
// against the logs, with the negative control, and Check after the
// storm.
func countersRows(r countersResult) []row {
	bad, notes := r.violations, ""
	if r.readError != nil {
		bad++
		notes = "; reading the logs: " + r.readError.Error()
	}
	if r.readError == nil && r.caught != len(r.values) {
		bad++
		notes += fmt.Sprintf("; the negative control (one past the most) was caught in %d of %d counters", r.caught, len(r.values))
	}
	var done, total, most uint64
	inFlight := 0
	for _, t := range r.tallies {
		done += t.done
		inFlight += len(t.inFlight)
		for _, n := range t.inFlight {
			most += n
		}
	}
	for _, v := range r.values {
		total += v.Value
	}
	checkBad, checkNote := 0, "nil"
	if r.checkErr != nil {
		checkBad, checkNote = 1, r.checkErr.Error()
	}
	return []row{{
		test: fmt.Sprintf("counters (%d names, Add and Counter.Add, both backends): each counter = its logged adds done + some of those in flight, each whole",
			len(stormCounterNames)),
		runs:       fmt.Sprintf("%d log entries", r.entries),
		violations: bad,
		figure: fmt.Sprintf("total %d, adds done %d (%d in flight at kills, adding up to %d); control caught %d of %d%s%s",
			total, done, inFlight, most, r.caught, len(r.values), notes, note(r.first)),
	}, {
		test:       "counters Check after the storm",
		runs:       "1 check",
		violations: checkBad,
		figure:     "Check: " + checkNote,
	}}
}
