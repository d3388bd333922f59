package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/shmsketch/sketch"
)

// A checkerResult is what one checker reports at its end, as one JSON line.
// Low counts real keys answered below their records (must be 0); Caught
// counts control keys answered below theirs (must be > 0, or a zero above
// would mean nothing). Keys are indexed by field.
type checkerResult struct {
	Backend string `json:"backend"`
	Passes  int    `json:"passes"`
	// Asked is the key questions asked per field, over all passes.
	Asked  [fields]int `json:"asked"`
	Low    [fields]int `json:"low"`
	Caught [fields]int `json:"caught"`
	// CaughtFinal is Caught in the last pass alone, out of controlKeys.
	CaughtFinal [fields]int `json:"caught_final"`
	// Uncovered counts window answers asked while the period turned Keep
	// times or more, so that no period was certainly covered: judged
	// against nothing.
	Uncovered [fields]int `json:"uncovered"`
	// Backed counts window answers for real keys with an add recorded in
	// a period they certainly cover: the answers that could have been
	// wrong.
	Backed [fields]int `json:"backed"`
	// The Count-Min Check calls: clean, torn (ErrTornAdd: an add cut short
	// or still running), or anything else, which is a violation.
	CheckClean  int `json:"check_clean"`
	CheckTorn   int `json:"check_torn"`
	CheckOther  int `json:"check_other"`
	InspectErrs int `json:"inspect_errs"`
	// FirstProblem describes the first violation among real keys or checks.
	FirstProblem string `json:"first_problem,omitempty"`
}

var fieldNames = [fields]string{"Count-Min", "Bloom", "counting Bloom", "distinct count", "Count-Min window", "Bloom window", "Count-Min clock window", "Bloom clock window"}

// runChecker reads every record and then asks the structures, pass after
// pass, until its standard input closes; then it makes one final pass (the
// supervisor has stopped every worker by then) and prints its result.
func runChecker(dir string, slots int) error {
	recs := make([]*record, 0, slots+1)
	for slot := -1; slot < slots; slot++ {
		r, err := openRecord(recordPath(dir, slot))
		if err != nil {
			return err
		}
		recs = append(recs, r)
	}
	s, err := openStorm(dir, sketch.WithoutCreate())
	if err != nil {
		return err
	}
	var stop atomic.Bool
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	c := &checker{res: checkerResult{Backend: sketch.Backend}, dir: dir, recs: recs, s: s}
	for !stop.Load() {
		c.pass()
	}
	c.pass()
	return json.NewEncoder(os.Stdout).Encode(c.res)
}

type checker struct {
	res     checkerResult
	dir     string
	recs    []*record
	s       *stormFiles
	t       tally
	ws      windowSnap
	lo      []uint64 // the periods each window answer covers
	hi      []uint64
	est     []uint64
	hit     []bool
	removed []uint64         // counting Bloom removes that may have happened
	hll     *sketch.Distinct // the distinct count's copy (distinct)
}

// pass reads the records first, then asks: what returned before the read
// must be in every answer after it. Passes alternate between single calls
// and batches, so both paths of this backend answer.
func (c *checker) pass() {
	sumRecords(c.recs, &c.t)
	batch := c.res.Passes%2 == 1
	if c.est == nil {
		c.est = make([]uint64, allKeys)
		c.hit = make([]bool, allKeys)
		c.removed = make([]uint64, allKeys)
	}
	var caught [fields]int

	if batch {
		c.s.cms.EstimateBatch(keyTable, c.est)
	} else {
		for k := range keyTable {
			c.est[k] = c.s.cms.Estimate(keyTable[k])
		}
	}
	for k, e := range c.est {
		c.judge(fieldCountMin, k, e < c.t[fieldCountMin][k], &caught, func() string {
			return fmt.Sprintf("Estimate(%q) = %d, want >= %d", keyTable[k], e, c.t[fieldCountMin][k])
		})
	}

	if batch {
		c.s.bf.ContainsBatch(keyTable, c.hit)
	} else {
		for k := range keyTable {
			c.hit[k] = c.s.bf.Contains(keyTable[k])
		}
	}
	for k, h := range c.hit {
		c.judge(fieldBloom, k, c.t[fieldBloom][k] != 0 && !h, &caught, func() string {
			return fmt.Sprintf("Bloom Check(%q) = false after its add returned", keyTable[k])
		})
	}

	for k := range keyTable {
		c.hit[k] = c.s.cbf.Contains(keyTable[k])
	}
	removals(c.recs, c.removed) // after the question: every remove that may have come before it
	for k, h := range c.hit {
		adds, removes := c.t[fieldCountingBloom][k], c.removed[k]
		c.judge(fieldCountingBloom, k, adds > removes && !h, &caught, func() string {
			return fmt.Sprintf("CountingBloom Contains(%q) = false after %d adds returned and at most %d removes", keyTable[k], adds, removes)
		})
	}

	c.distinct(&caught)
	c.windows(batch, &caught)

	c.checkCountMin()
	for _, name := range stormFileNames() {
		if _, err := sketch.Inspect(stormPath(c.dir, name)); err != nil {
			c.res.InspectErrs++
			c.problem(fmt.Sprintf("Inspect: %v", err))
		}
	}
	c.res.CaughtFinal = caught
	c.res.Passes++
}

// checkCountMin counts the Count-Min sketch's Check (torn adds only) and
// checks its candidate table: it lists only keys whole, at estimates that
// are their own, so asked again afterwards, never lower.
func (c *checker) checkCountMin() {
	switch err := c.s.cms.Check(); {
	case err == nil:
		c.res.CheckClean++
	case errors.Is(err, sketch.ErrTornAdd):
		c.res.CheckTorn++
	default:
		c.res.CheckOther++
		c.problem(fmt.Sprintf("Count-Min Check: %v", err))
	}
	hs, err := c.s.cms.Top(0)
	if err != nil {
		c.res.CheckOther++
		c.problem(fmt.Sprintf("Count-Min Top: %v", err))
		return
	}
	for _, h := range hs {
		if est := c.s.cms.EstimateString(h.Key); h.Length == len(h.Key) && est < h.Estimate {
			c.res.CheckOther++
			c.problem(fmt.Sprintf("Count-Min Top listed %q (length %d) at %d, its estimate is %d", h.Key, h.Length, h.Estimate, est))
		}
	}
}

// distinct checks that the distinct count holds every key whose add
// returned: a copy of its registers (taken after the records were read)
// must not rise when those keys are added to it. The real keys go in one
// batch, and one by one only when the batch raised a register, to name
// them; each control key is added alone, and one that raises a register
// is caught.
func (c *checker) distinct(caught *[fields]int) {
	if c.hll == nil {
		cfg := stormDistinct
		cfg.Seed = c.s.hll.Seed()
		d, err := sketch.OpenDistinct(sketch.Memory(), cfg)
		if err != nil {
			c.problem(fmt.Sprintf("distinct copy: %v", err))
			return
		}
		c.hll = d
	}
	fill := func() bool {
		if err := c.hll.Reset(); err != nil {
			c.problem(fmt.Sprintf("distinct copy reset: %v", err))
			return false
		}
		if err := c.hll.Merge(c.s.hll); err != nil {
			c.problem(fmt.Sprintf("distinct copy merge: %v", err))
			return false
		}
		return true
	}
	if !fill() {
		return
	}
	var real [][]byte
	var realIdx []int
	for k := range keyTable {
		if c.t[fieldDistinct][k] != 0 && !isControl(k) {
			real = append(real, keyTable[k])
			realIdx = append(realIdx, k)
		}
	}
	before := c.hll.Stats().RegisterChanges
	c.hll.AddBatch(real)
	if c.hll.Stats().RegisterChanges == before {
		c.res.Asked[fieldDistinct] += len(real)
	} else if fill() {
		for _, k := range realIdx {
			c.judge(fieldDistinct, k, c.raises(k), caught, func() string {
				return fmt.Sprintf("distinct count: the add of %q returned, and its register is below its rank", keyTable[k])
			})
		}
	}
	for k := range keyTable {
		if c.t[fieldDistinct][k] != 0 && isControl(k) {
			c.judge(fieldDistinct, k, c.raises(k), caught, func() string { return "" })
		}
	}
}

// raises adds key k to the distinct copy and reports whether a register
// rose.
func (c *checker) raises(k int) bool {
	before := c.hll.Stats().RegisterChanges
	c.hll.Add(keyTable[k])
	return c.hll.Stats().RegisterChanges != before
}

// windows asks the windows, Rotate's and the clock's, after reading the
// window words of every record. Each answer is judged against the adds
// that landed in the periods it certainly covers: those of every window
// between the period read before the question and the one read after it
// (the clock windows' Current keeps this true: window.go).
func (c *checker) windows(batch bool, caught *[fields]int) {
	c.ws.read(c.recs)
	if c.lo == nil {
		c.lo, c.hi = make([]uint64, allKeys), make([]uint64, allKeys)
	}
	for _, wp := range c.s.windowPairs() {
		c.countMinWindow(wp.cm, wp.cmField, batch, caught)
		c.bloomWindow(wp.bw, wp.bwField, batch, caught)
	}
}

func (c *checker) countMinWindow(w *sketch.CountMinWindow, field int, batch bool, caught *[fields]int) {
	lo, hi := c.lo, c.hi
	if !c.askWindow(w.Current, batch, func() bool {
		if err := w.EstimateBatch(keyTable, c.est); err != nil {
			c.problem(fmt.Sprintf("%v EstimateBatch: %v", w, err))
			return false
		}
		return true
	}, func(k int) { c.est[k] = w.Estimate(keyTable[k]) }) {
		return
	}
	c.countUncovered(field, lo, hi)
	for k, e := range c.est {
		want := c.ws.landed(field, k, lo[k], hi[k])
		c.countBacked(field, k, want != 0)
		c.judge(field, k, e < want, caught, func() string {
			return fmt.Sprintf("%s Estimate(%q) = %d, want >= %d (periods %d-%d)", fieldNames[field], keyTable[k], e, want, lo[k], hi[k])
		})
	}
}

func (c *checker) bloomWindow(w *sketch.BloomWindow, field int, batch bool, caught *[fields]int) {
	lo, hi := c.lo, c.hi
	c.askWindow(w.Current, batch, func() bool {
		w.ContainsBatch(keyTable, c.hit)
		return true
	}, func(k int) { c.hit[k] = w.Contains(keyTable[k]) })
	c.countUncovered(field, lo, hi)
	for k, h := range c.hit {
		added := c.ws.landed(field, k, lo[k], hi[k]) != 0
		c.countBacked(field, k, added)
		c.judge(field, k, added && !h, caught, func() string {
			return fmt.Sprintf("%s Check(%q) = false after its add landed in periods %d-%d", fieldNames[field], keyTable[k], lo[k], hi[k])
		})
	}
}

// askWindow asks a window about every key, in one batch or key by key,
// and sets c.lo and c.hi to the periods each answer certainly covers,
// from the window's period read before and after the question. A batch
// that failed (askBatch false) leaves them unset, and the caller is not
// to judge.
func (c *checker) askWindow(current func() uint64, batch bool, askBatch func() bool, askOne func(k int)) bool {
	if batch {
		c0 := current()
		if !askBatch() {
			return false
		}
		l, h := covered(c0, current())
		for k := range c.lo {
			c.lo[k], c.hi[k] = l, h
		}
		return true
	}
	for k := range keyTable {
		c0 := current()
		askOne(k)
		c.lo[k], c.hi[k] = covered(c0, current())
	}
	return true
}

func (c *checker) countUncovered(field int, lo, hi []uint64) {
	for k := range lo {
		if lo[k] > hi[k] {
			c.res.Uncovered[field]++
		}
	}
}

func (c *checker) countBacked(field, k int, added bool) {
	if added && !isControl(k) {
		c.res.Backed[field]++
	}
}

// judge counts one answer: a bad answer for a control key is the control
// caught, for a real key a violation.
func (c *checker) judge(field, k int, bad bool, caught *[fields]int, describe func() string) {
	c.res.Asked[field]++
	if !bad {
		return
	}
	if isControl(k) {
		c.res.Caught[field]++
		caught[field]++
		return
	}
	c.res.Low[field]++
	c.problem(describe())
}

func (c *checker) problem(s string) {
	if c.res.FirstProblem == "" {
		c.res.FirstProblem = s
		fmt.Fprintf(os.Stderr, "torture: checker (%s): %s\n", sketch.Backend, s)
	}
}
