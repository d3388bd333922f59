package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shmsketch/sketch"
)

// hostileResult is what an opener child reports for one file, one JSON line
// each, written once the file is done: the supervisor takes the first file
// without a line for the one that hung or crashed the child.
type hostileResult struct {
	File     int            `json:"file"`                // index in the list the child read
	Opens    int            `json:"opens"`               // open calls made
	Opened   int            `json:"opened"`              // of them, those that returned a handle
	Errs     map[string]int `json:"errs,omitempty"`      // failed opens by sentinel
	Calls    int            `json:"calls"`               // calls on what opened, and Inspect
	CallErrs map[string]int `json:"call_errs,omitempty"` // their errors by sentinel
	Panics   []string       `json:"panics,omitempty"`    // recovered: where, and the value
	Odd      string         `json:"odd,omitempty"`       // the first open error that wraps no sentinel
	Micros   int64          `json:"us"`
}

// openWait bounds an open's wait for a file that looks half-created: a
// mutated file is never finished by anyone.
const openWait = 100 * time.Millisecond

// A hostileOpener is one of the library's open functions with the zero config,
// which attaches to whatever shape the file holds: the right kind opens, the
// others must refuse.
type hostileOpener struct {
	name string
	open func(path string, opts ...sketch.Option) (any, error)
}

// openers are every kind's open, by the name Inspect gives the kind, and
// the arena's.
var openers = func() []hostileOpener {
	var o []hostileOpener
	for _, k := range structKinds {
		o = append(o, hostileOpener{string(k.kind), func(p string, opts ...sketch.Option) (any, error) {
			return k.open(sketch.Path(p), nil, opts...)
		}})
	}
	return append(o, hostileOpener{"arena", func(p string, opts ...sketch.Option) (any, error) {
		return sketch.OpenArena(sketch.Path(p), sketch.ArenaConfig{}, opts...)
	}})
}()

// runHostile is the opener child: it reads file paths from stdin, one a
// line, and opens each every way (every open function, read-only on the
// file itself and read-write on a copy in scratch), uses whatever opens,
// and writes a hostileResult line per file.
func runHostile(in io.Reader, out io.Writer, scratch string) error {
	var paths []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		paths = append(paths, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	keys := specimenKeys(16)
	for i, path := range paths {
		began := time.Now()
		r := hostileResult{File: i, Errs: map[string]int{}, CallErrs: map[string]int{}}
		if err := openEveryWay(path, filepath.Join(scratch, fmt.Sprintf("rw-%d", i)), keys, &r); err != nil {
			return err
		}
		r.Micros = time.Since(began).Microseconds()
		if err := enc.Encode(&r); err != nil {
			return err
		}
	}
	return nil
}

func openEveryWay(path, rwPath string, keys [][]byte, r *hostileResult) error {
	p := &probe{r: r, keys: keys}
	p.step("inspect", func() {
		fi, err := sketch.Inspect(path)
		p.call(err)
		_ = fi.String()
	})
	for _, o := range openers {
		p.use("ro "+o.name, false, func() (any, error) { return o.open(path, sketch.WithReadOnly(), sketch.WithWaitTimeout(openWait)) })
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	defer os.Remove(rwPath)
	dirty := true
	for _, o := range openers {
		if dirty { // a read-write open that succeeded may have written the copy
			if err := os.WriteFile(rwPath, data, 0o600); err != nil {
				return err
			}
		}
		dirty = p.use("rw "+o.name, true, func() (any, error) { return o.open(rwPath, sketch.WithWaitTimeout(openWait)) })
	}
	return nil
}

// A probe makes the calls on one file and counts them; a panic is
// recovered, named after the step it happened in, and ends that handle's
// steps.
type probe struct {
	r    *hostileResult
	keys [][]byte
}

func (p *probe) call(err error) {
	p.r.Calls++
	if err != nil {
		p.r.CallErrs[sentinelName(err)]++
	}
}

// step runs f and reports whether it returned without a panic.
func (p *probe) step(where string, f func()) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			p.r.Panics = append(p.r.Panics, fmt.Sprintf("%s: %v", where, v))
			ok = false
		}
	}()
	f()
	return true
}

// use opens with open, uses the handle and closes it, and reports whether
// the open succeeded.
func (p *probe) use(where string, rw bool, open func() (any, error)) bool {
	var h any
	var err error
	p.r.Opens++
	if !p.step(where+": open", func() { h, err = open() }) {
		return true // it may have written before it panicked
	}
	if err != nil {
		name := sentinelName(err)
		p.r.Errs[name]++
		if name == unclassified && p.r.Odd == "" {
			p.r.Odd = err.Error()
		}
		return false
	}
	p.r.Opened++
	p.exercise(where, h, rw)
	return true
}

// exercise calls every read method of h, and for a read-write handle some
// adds and a Freeze at the end, then closes it.
func (p *probe) exercise(where string, h any, rw bool) {
	var steps []namedStep
	if a, ok := h.(*sketch.Arena); ok {
		steps = p.arenaSteps(where, a, rw)
	} else {
		steps = p.structSteps(h, rw)
	}
	for _, s := range steps {
		if !p.step(where+": "+s.name, s.f) {
			// The handle may be in any state: close it, carefully.
			if c, ok := h.(io.Closer); ok {
				p.step(where+": Close after a panic", func() { c.Close() })
			}
			return
		}
	}
}

type namedStep struct {
	name string
	f    func()
}

// probeSteps are the calls the opener child makes on a structure, over the
// kinds, in this order: each row binds its call to a structure whose kind
// has it, and is nil for the others; write rows only on a read-write
// handle. Close comes last (structSteps).
var probeSteps = []struct {
	name  string
	write bool
	bind  func(p *probe, h any) func()
}{
	{"Estimate", false, probing(func(p *probe, c counter) { c.Estimate(p.keys[0]); c.EstimateString("x") })},
	{"EstimateBatch", false, probing(func(p *probe, c counter) { p.call(c.EstimateBatch(p.keys, make([]uint64, len(p.keys)))) })},
	{"Total", false, probing(func(p *probe, c counter) { c.Total(); c.ErrorBound() })},
	{"Contains", false, probing(func(p *probe, f filter) { f.Contains(p.keys[0]); f.ContainsString("x") })},
	{"ContainsBatch", false, probing(func(p *probe, f filter) { p.call(f.ContainsBatch(p.keys, make([]bool, len(p.keys)))) })},
	{"Count", false, probing(func(p *probe, b *sketch.CountingBloom) { b.Estimate(p.keys[1]); b.EstimateString("x"); b.Counters() })},
	{"Bits", false, probing(func(p *probe, f interface{ Bits() uint64 }) { f.Bits() })},
	{"Hashes", false, probing(func(p *probe, f interface{ Hashes() int }) { f.Hashes() })},
	{"Window", false, probing(func(p *probe, w windowed) { w.Current() })},
	{"Values", false, probing(func(p *probe, c *sketch.Counters) { c.Values(); c.Names(); c.Value("c0"); c.Stats() })},
	// The config is of the kind's type: printing it calls the String
	// methods in it (a window's Window).
	{"Config", false, func(p *probe, h any) func() {
		k := kindOfHandle(h)
		return func() { cfg, _ := k.config(h); _ = fmt.Sprint(cfg) }
	}},
	{"Stats", false, probing(func(p *probe, h handle) { _ = h.StatsVar().String() })}, // the kind's Stats, as JSON
	{"String", false, probing(func(p *probe, h handle) { _ = h.String(); h.Seed(); h.Frozen(); h.ReadOnly(); h.Path() })},
	{"Check", false, probing(func(p *probe, h handle) { p.call(h.Check()) })},
	{"Add", true, probing(func(p *probe, h handle) { p.call(addsOf(h).add(p.keys[1])) })},
	{"AddN", true, probing(func(p *probe, c counter) { _, err := c.AddN(p.keys[2], 1<<40); p.call(err) })},
	{"AddBatch", true, probing(func(p *probe, c counter) { p.call(c.AddBatch(p.keys, make([]uint64, len(p.keys)))) })},
	{"AddBatch", true, probing(func(p *probe, f filter) { p.call(f.AddBatch(p.keys, make([]bool, len(p.keys)))) })},
	{"AddBatch without answers", true, probing(func(p *probe, h handle) { p.call(addsOf(h).addBatch(p.keys)) })},
	{"Remove", true, probing(func(p *probe, b *sketch.CountingBloom) { _, err := b.Remove(p.keys[1]); p.call(err) })},
	{"Remove absent", true, probing(func(p *probe, b *sketch.CountingBloom) { _, err := b.RemoveString("never added"); p.call(err) })},
	{"Allow", true, probing(func(p *probe, g *sketch.GCRA) {
		_, err := g.Allow(p.keys[2], 1)
		p.call(err)
		g.AllowString("x", 0)
	})},
	{"AllowBatchAt", true, probing(func(p *probe, g *sketch.GCRA) {
		p.call(g.AllowBatchAt(p.keys, 1, time.Now(), make([]sketch.RateDecision, len(p.keys))))
	})},
	{"Counter.Add", true, probing(func(p *probe, c *sketch.Counters) {
		if names := c.Names(); len(names) > 0 {
			k, err := c.Counter(names[len(names)-1])
			if err == nil {
				p.call(k.Add(3))
				k.Value()
			}
		}
		p.call(c.Add("no such counter", 1))
	})},
	{"Set.Keys", false, probing(func(p *probe, s exactSet) { s.Keys(); s.Len(); s.ContainsString("x") })},
	{"Set.Remove", true, probing(func(p *probe, s exactSet) {
		_, err := s.Remove(p.keys[1])
		p.call(err)
		_, err = s.Add(p.keys[1])
		p.call(err)
	})},
	{"Check after adds", true, probing(func(p *probe, h handle) { p.call(h.Check()) })},
	{"Rotate", true, probing(func(p *probe, w windowed) { p.call(w.Rotate()) })},
	{"Add after Rotate", true, probing(func(p *probe, w windowed) { p.call(addsOf(w).add(p.keys[3])); ask(w, p.keys[3]) })},
	{"Freeze", true, probing(func(p *probe, h handle) { p.call(h.Freeze()) })},
}

// probing binds f to p and h when h is a T, and is nil when it is not.
func probing[T any](f func(p *probe, h T)) func(p *probe, h any) func() {
	return func(p *probe, h any) func() {
		t, ok := h.(T)
		if !ok {
			return nil
		}
		return func() { f(p, t) }
	}
}

// structSteps are the rows of probeSteps that h's kind has, then Close.
func (p *probe) structSteps(h any, rw bool) []namedStep {
	if kindOfHandle(h) == nil {
		panic(fmt.Sprintf("torture: no steps for %T", h))
	}
	var s []namedStep
	for _, row := range probeSteps {
		if row.write && !rw {
			continue
		}
		if f := row.bind(p, h); f != nil {
			s = append(s, namedStep{row.name, f})
		}
	}
	return append(s, namedStep{"Close", func() { p.call(h.(handle).Close()) }})
}

// arenaSteps lists and describes the arena, opens each structure in it by
// its kind (and by one other kind, which must refuse) and uses it; a
// read-write arena also gets a new structure before it is frozen.
func (p *probe) arenaSteps(where string, a *sketch.Arena, rw bool) []namedStep {
	s := []namedStep{
		{"List", func() { a.List() }},
		{"Stats", func() {
			a.Stats()
			a.Stats()
			_ = a.String()
			a.Seed()
			a.Frozen()
			a.ReadOnly()
		}},
		{"structures", func() {
			for i, e := range a.List() {
				wrong := structKinds[(structKindIndex(e.Kind)+1+i)%len(structKinds)]
				if wrong.kind != e.Kind {
					h, err := wrong.open(a.Place(e.Name), nil)
					p.call(err)
					if err == nil {
						p.exercise(where+" "+e.Name+" as "+string(wrong.kind), h, rw)
					}
				}
				if k := structKindOf(e.Kind); k != nil {
					h, err := k.open(a.Place(e.Name), nil)
					p.call(err)
					if err == nil {
						p.exercise(where+" "+e.Name, h, rw)
					}
				}
			}
		}},
	}
	if rw {
		s = append(s,
			namedStep{"new structure", func() {
				c, err := sketch.OpenCountMin(a.Place("hostile-new"), sketch.CountMinConfig{Rows: 2, Width: 64})
				p.call(err)
				if err == nil {
					p.exercise(where+" hostile-new", c, rw)
				}
			}},
			namedStep{"Freeze", func() { p.call(a.Freeze()) }},
		)
	}
	return append(s, namedStep{"Close", func() { p.call(a.Close()) }})
}
