package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shmsketch/sketch"
)

// The heavy-hitters part (topkill): workers of both builds add a skewed
// stream to a Count-Min sketch and a Count-Min window made with
// Candidates, while the supervisor kills them, and checkers of both builds
// hold Top to its two promises: no key listed below the adds of it that
// returned (for the window, over the periods the listing certainly
// covers), and every key loud enough listed. The records are the storm's
// (record.go): the sketch's adds in fieldCountMin, the window's in
// fieldCountMinWindow with the period they landed in (window.go). The
// window turns only on Rotate, which the supervisor calls, so every
// process numbers its periods alike.

// The loud keys and how they are added. The weighted ones follow the
// stream that once kept a key out of the table (an estimate past 64
// offered only when divisible by 8): a first weight that is odd, then
// only even weights (residues 2, 4, 6, and multiples of 8).
const (
	hhSingle      = 0 // Add or AddString
	hhEven        = 1 // first an odd weight, then 2, 4 or 6
	hhEights      = 2 // first an odd weight, then multiples of 8
	hhAnyWeight   = 3 // 1 to 9: every residue
	hhBatched     = 4 // repeated in batches of quiet keys
	hhLong        = 5 // 73 bytes, its 64-byte prefix cut inside an "é"; first odd, then 2 or 4
	hhLoudKeys    = 6
	hhGhost       = realKeys     // the control: recorded loud, never added
	hhControl     = realKeys + 1 // the control: added by the supervisor, recorded far above that
	hhControlHuge = 1 << 40      // the control's claim in the sketch
)

// hhFirstOdd are the loud keys whose first add is an odd weight made by
// the supervisor a quarter into the run; workers add them only after it
// (the phase word), and only with even weights.
var hhFirstOdd = []int{hhEven, hhEights, hhLong}

// hhKeyTable are the part's keys by index: loud, quiet, control.
var hhKeyTable = func() [][]byte {
	t := make([][]byte, allKeys)
	for i := range t {
		switch {
		case i == hhLong:
			t[i] = []byte("hh-loud-5-a" + strings.Repeat("é", 31))
		case i < hhLoudKeys:
			t[i] = fmt.Appendf(nil, "hh-loud-%d", i)
		case i == hhGhost:
			t[i] = []byte("hh-ghost")
		case i == hhControl:
			t[i] = []byte("hh-control")
		default:
			t[i] = fmt.Appendf(nil, "hh-quiet-%04d", i)
		}
	}
	return t
}()

// The part's shapes: narrow, so that the noise floor Top documents
// (total over width) is a real bar, and a table of 32 for 8 loud keys and
// the controls: no loud key has more than 7 louder (loudKeys).
var (
	hhCountMin = sketch.CountMinConfig{Rows: 4, Width: 1 << 14, Candidates: 32}
	hhWindow   = sketch.CountMinWindowConfig{Window: stormWindow, CountMin: hhCountMin}
)

// hhConfig is the shape of one run of the part.
type hhConfig struct {
	workers  int
	duration time.Duration
	gap      time.Duration
	rotate   time.Duration // the supervisor turns the window this often
	seed     uint64
}

func hhConfigFor(s setting) hhConfig {
	c := hhConfig{workers: s.storm.workers, duration: time.Minute, gap: s.storm.gap, seed: s.seed}
	if s.short {
		c.duration = 4 * time.Second
	}
	c.rotate = max(150*time.Millisecond, c.duration/40)
	return c
}

type hhFiles struct {
	cms *sketch.CountMin
	cmw *sketch.CountMinWindow
}

func openHH(dir string, opts ...sketch.Option) (*hhFiles, error) {
	c, err := sketch.OpenCountMin(sketch.Path(filepath.Join(dir, "hh.cms")), hhCountMin, opts...)
	if err != nil {
		return nil, err
	}
	w, err := sketch.OpenCountMinWindow(sketch.Path(filepath.Join(dir, "hh.cmw")), hhWindow, opts...)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &hhFiles{c, w}, nil
}

func (f *hhFiles) close() {
	f.cms.Close()
	f.cmw.Close()
}

func hhPhasePath(dir string) string { return filepath.Join(dir, "hh.phase") }

// hhTarget is one of the two structures as a worker adds to it: its calls,
// and how a call that returned is recorded (the window's with the period
// it landed in, when it is known).
type hhTarget struct {
	field   int
	add     func([]byte) error
	addStr  func(string) error
	addN    func([]byte, uint64) error
	batch   func([][]byte) error
	current func() uint64 // nil for the sketch
}

func (f *hhFiles) targets() [2]hhTarget {
	return [2]hhTarget{{
		field:  fieldCountMin,
		add:    func(k []byte) error { _, err := f.cms.Add(k); return err },
		addStr: func(k string) error { _, err := f.cms.AddString(k); return err },
		addN:   func(k []byte, n uint64) error { _, err := f.cms.AddN(k, n); return err },
		batch:  func(ks [][]byte) error { return f.cms.AddBatch(ks, nil) },
	}, {
		field:   fieldCountMinWindow,
		add:     func(k []byte) error { _, err := f.cmw.Add(k); return err },
		addStr:  func(k string) error { _, err := f.cmw.AddString(k); return err },
		addN:    func(k []byte, n uint64) error { _, err := f.cmw.AddN(k, n); return err },
		batch:   func(ks [][]byte) error { return f.cmw.AddBatch(ks, nil) },
		current: f.cmw.Current,
	}}
}

// do makes call and, once it returned, credits the keys of idx with their
// weights in rec.
func (t hhTarget) do(rec *record, call func() error, idx []int, weight uint64) error {
	credit := func(raise func(k int, n uint64)) {
		for _, k := range idx {
			raise(k, weight)
		}
	}
	if t.current == nil {
		if err := call(); err != nil {
			return err
		}
		credit(func(k int, n uint64) { rec.raise(t.field, k, n) })
		return nil
	}
	p, ok, err := landedIn(t.current, call)
	if err != nil {
		return err
	}
	if ok {
		credit(func(k int, n uint64) { rec.raiseWindow(t.field, k, p, n) })
	}
	return nil
}

func init() {
	roles["hhworker"] = func(args []string) error {
		fs := flag.NewFlagSet("hhworker", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		slot := fs.Int("slot", 0, "")
		seed := fs.Uint64("seed", 0, "")
		fs.Parse(args)
		return runHHWorker(*dir, *slot, *seed)
	}
	roles["hhchecker"] = func(args []string) error {
		fs := flag.NewFlagSet("hhchecker", flag.ExitOnError)
		dir := fs.String("dir", "", "")
		slots := fs.Int("slots", 0, "")
		fs.Parse(args)
		return runHHChecker(*dir, *slots)
	}
}

// runHHWorker adds the skewed stream until it is killed: half its calls
// go to the loud keys, each in its own way, half to the 4088 quiet ones
// (Add, AddN of 1 to 9, batches), each call to the sketch or the window.
func runHHWorker(dir string, slot int, seed uint64) error {
	rec, err := openRecord(recordPath(dir, slot))
	if err != nil {
		return err
	}
	_, phase, err := openWords(hhPhasePath(dir), 1)
	if err != nil {
		return err
	}
	f, err := openHH(dir, sketch.WithoutCreate())
	if err != nil {
		return err
	}
	ts := f.targets()
	rng := rand.New(rand.NewPCG(seed, uint64(slot)))
	a := &hhAdder{rec: rec, rng: rng, phase: phase, batch: make([][]byte, 0, 64), idx: make([]int, 0, 64), one: make([]int, 1)}
	for {
		t := ts[rng.IntN(2)]
		var err error
		if rng.IntN(2) == 0 {
			err = a.loud(t)
		} else {
			err = a.quiet(t)
		}
		if err != nil {
			return fmt.Errorf("heavy hitters add (field %d): %w", t.field, err)
		}
		rec.returned()
	}
}

// An hhAdder is a heavy-hitters worker's calls: each recorded once it
// returned.
type hhAdder struct {
	rec   *record
	rng   *rand.Rand
	phase []uint64 // phase[0] is 1 once the first odd adds were made
	batch [][]byte
	idx   []int
	one   []int
}

// quietKey is one of the quiet keys.
func (a *hhAdder) quietKey() int { return hhLoudKeys + a.rng.IntN(realKeys-hhLoudKeys) }

// loud adds a loud key in its own way; the keys whose odd adds the
// supervisor makes first are a single add until it did.
func (a *hhAdder) loud(t hhTarget) error {
	rng, rec, one := a.rng, a.rec, a.one
	k := rng.IntN(hhLoudKeys)
	if atomic.LoadUint64(&a.phase[0]) == 0 && (k == hhEven || k == hhEights || k == hhLong) {
		k = hhSingle
	}
	one[0] = k
	key := hhKeyTable[k]
	switch k {
	case hhSingle:
		if rng.IntN(2) == 0 {
			return t.do(rec, func() error { return t.add(key) }, one, 1)
		}
		return t.do(rec, func() error { return t.addStr(string(key)) }, one, 1)
	case hhEven:
		w := 2 * (1 + rng.Uint64N(3))
		return t.do(rec, func() error { return t.addN(key, w) }, one, w)
	case hhEights:
		w := 8 * (1 + rng.Uint64N(8))
		return t.do(rec, func() error { return t.addN(key, w) }, one, w)
	case hhAnyWeight:
		w := 1 + rng.Uint64N(9)
		return t.do(rec, func() error { return t.addN(key, w) }, one, w)
	case hhBatched:
		a.batch, a.idx = a.batch[:0], a.idx[:0]
		for n := 8 + rng.IntN(25); n > 0; n-- {
			q := a.quietKey()
			if n%6 == 0 {
				q = hhBatched
			}
			a.batch, a.idx = append(a.batch, hhKeyTable[q]), append(a.idx, q)
		}
		return t.do(rec, func() error { return t.batch(a.batch) }, a.idx, 1)
	case hhLong:
		w := 2 * (1 + rng.Uint64N(2))
		return t.do(rec, func() error { return t.addN(key, w) }, one, w)
	}
	return nil
}

// quiet adds quiet keys: Add, AddN of 1 to 9, or a batch.
func (a *hhAdder) quiet(t hhTarget) error {
	rng, rec, one := a.rng, a.rec, a.one
	k := a.quietKey()
	one[0] = k
	key := hhKeyTable[k]
	switch rng.IntN(3) {
	case 0:
		return t.do(rec, func() error { return t.add(key) }, one, 1)
	case 1:
		w := 1 + rng.Uint64N(9)
		return t.do(rec, func() error { return t.addN(key, w) }, one, w)
	default:
		a.batch, a.idx = a.batch[:0], a.idx[:0]
		for n := 8 + rng.IntN(57); n > 0; n-- {
			q := a.quietKey()
			a.batch, a.idx = append(a.batch, hhKeyTable[q]), append(a.idx, q)
		}
		return t.do(rec, func() error { return t.batch(a.batch) }, a.idx, 1)
	}
}

// hhResult is what the supervisor and the checkers saw.
type hhResult struct {
	cfg          hhConfig
	kills        int
	failures     int
	firstFailure string
	calls        uint64
	rotations    uint64
	elapsed      time.Duration
	checkers     []hhCheckerResult
}

// runTopKill runs the part: the records, the two structures, the workers
// killed and restarted, the first odd adds a quarter in, the window turned
// every cfg.rotate, the controls, and a checker of each build.
func runTopKill(s setting, cfg hhConfig) (hhResult, error) {
	res := hhResult{cfg: cfg}
	dir := s.dir
	first := cfg.workers // the supervisor's own adds: the first odd weights
	recs := make([]*record, 0, cfg.workers+2)
	defer func() {
		for _, r := range recs {
			r.close()
		}
	}()
	for slot := -1; slot <= first; slot++ {
		r, err := openRecord(recordPath(dir, slot))
		if err != nil {
			return res, err
		}
		recs = append(recs, r)
	}
	control, firstRec := recs[0], recs[len(recs)-1]
	phaseMem, phase, err := openWords(hhPhasePath(dir), 1)
	if err != nil {
		return res, err
	}
	defer unmap(phaseMem)
	f, err := openHH(dir)
	if err != nil {
		return res, err
	}
	defer f.close()
	control.raise(fieldCountMin, hhGhost, hhControlHuge)
	control.raise(fieldCountMin, hhControl, hhControlHuge)
	claimWindow(control, f)

	rng := rand.New(rand.NewPCG(cfg.seed, 29))
	workers, err := startPool(s.builds, cfg.workers, func(slot int) []string {
		return []string{"hhworker", "-dir", dir, "-slot", strconv.Itoa(slot), "-seed", strconv.FormatUint(rng.Uint64(), 10)}
	})
	if err != nil {
		return res, err
	}
	checkers, err := startCheckers(s.builds, "hhchecker", "-dir", dir, "-slots", strconv.Itoa(cfg.workers+1))
	if err != nil {
		workers.stop()
		return res, err
	}
	finished := false
	defer func() { // a run cut short by an error leaves no child behind
		if !finished {
			workers.stop()
		}
		for _, c := range checkers { // done already after their results
			c.stdin.Close()
			c.c.kill()
		}
	}()

	d := &hhDrive{cfg: cfg, f: f, ts: f.targets(), control: control, firstRec: firstRec, phase: phase, rng: rng}
	began := time.Now()
	if err := d.run(workers, &res, began); err != nil {
		return res, err
	}
	workers.stop()
	finished = true
	res.failures, res.firstFailure = workers.failures, workers.firstFailure
	res.elapsed = time.Since(began)
	res.rotations = f.cmw.Current()
	for _, r := range recs[1:] {
		res.calls += r.calls()
	}
	for _, c := range checkers {
		var cr hhCheckerResult
		if err := c.finish(&cr); err != nil {
			return res, err
		}
		res.checkers = append(res.checkers, cr)
	}
	return res, nil
}

// claimWindow raises the controls' window claims, in the window's
// current period.
func claimWindow(control *record, f *hhFiles) {
	p := f.cmw.Current()
	control.raiseWindow(fieldCountMinWindow, hhGhost, p, maxWeight)
	control.raiseWindow(fieldCountMinWindow, hhControl, p, maxWeight)
}

// An hhDrive is the supervisor's own side of the part while the workers
// run: the kills, its first odd adds, the control's adds and the turns.
type hhDrive struct {
	cfg               hhConfig
	f                 *hhFiles
	ts                [2]hhTarget
	control, firstRec *record
	phase             []uint64
	rng               *rand.Rand
}

// run kills and restarts a worker every few tens of milliseconds until
// cfg.duration after began, adding the first odd weights a quarter in,
// the control's adds each time, and turning the window every cfg.rotate.
func (d *hhDrive) run(workers *workerPool, res *hhResult, began time.Time) error {
	cfg, rng := d.cfg, d.rng
	turned := time.Now()
	firstDone := false
	for time.Since(began) < cfg.duration {
		time.Sleep(cfg.gap/2 + rand.N(cfg.gap))
		if err := workers.restartExited(); err != nil {
			return err
		}
		slot := rng.IntN(len(workers.workers))
		workers.kill(slot)
		res.kills++
		if err := workers.start(slot); err != nil {
			return err
		}
		if !firstDone && time.Since(began) > cfg.duration/4 {
			if err := d.addFirstOdd(); err != nil {
				return err
			}
			firstDone = true
		}
		w := 256 + rng.Uint64N(256)
		for _, t := range d.ts {
			if err := t.addN(hhKeyTable[hhControl], w); err != nil {
				return fmt.Errorf("control add: %w", err)
			}
		}
		if time.Since(turned) >= cfg.rotate {
			if err := d.f.cmw.Rotate(); err != nil {
				return fmt.Errorf("rotate: %w", err)
			}
			claimWindow(d.control, d.f)
			turned = time.Now()
		}
	}
	return nil
}

// addFirstOdd makes the first odd weights of the keys that get them,
// recorded in the supervisor's own record, then tells the workers they
// may add them too.
func (d *hhDrive) addFirstOdd() error {
	for _, k := range hhFirstOdd {
		w := 65 + 2*d.rng.Uint64N(32)
		for _, t := range d.ts {
			if err := t.do(d.firstRec, func() error { return t.addN(hhKeyTable[k], w) }, []int{k}, w); err != nil {
				return err
			}
		}
	}
	atomic.StoreUint64(&d.phase[0], 1)
	return nil
}

// A runningChecker is a checker child that checks until its standard
// input closes, then makes a final pass and prints one JSON result.
type runningChecker struct {
	c     *child
	stdin io.WriteCloser
	out   bytes.Buffer
}

// startCheckers starts a checker of each build with args.
func startCheckers(builds []build, args ...string) ([]*runningChecker, error) {
	var rs []*runningChecker
	for _, b := range builds {
		r := &runningChecker{}
		pr, pw := io.Pipe()
		r.stdin = pw
		c, err := startChild(b, pr, &r.out, args...)
		if err != nil {
			for _, r := range rs {
				r.stdin.Close()
				r.c.wait()
			}
			return nil, err
		}
		r.c = c
		rs = append(rs, r)
	}
	return rs, nil
}

// finish closes the checker's input, waits for its final pass and decodes
// its result into v.
func (r *runningChecker) finish(v any) error {
	r.stdin.Close()
	if err := r.c.wait(); err != nil {
		return fmt.Errorf("checker: %w", err)
	}
	if err := json.Unmarshal(r.out.Bytes(), v); err != nil {
		return fmt.Errorf("checker result %q: %w", r.out.String(), err)
	}
	return nil
}
