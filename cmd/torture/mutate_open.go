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

var openers = []hostileOpener{
	{"countmin", func(p string, o ...sketch.Option) (any, error) {
		return sketch.OpenCountMin(sketch.Path(p), sketch.CountMinConfig{}, o...)
	}},
	{"bloom", func(p string, o ...sketch.Option) (any, error) {
		return sketch.OpenBloom(sketch.Path(p), sketch.BloomConfig{}, o...)
	}},
	{"countingbloom", func(p string, o ...sketch.Option) (any, error) {
		return sketch.OpenCountingBloom(sketch.Path(p), sketch.CountingBloomConfig{}, o...)
	}},
	{"countminwindow", func(p string, o ...sketch.Option) (any, error) {
		return sketch.OpenCountMinWindow(sketch.Path(p), sketch.CountMinWindowConfig{Window: sketch.Window{}, CountMin: sketch.CountMinConfig{}}, o...)
	}},
	{"bloomwindow", func(p string, o ...sketch.Option) (any, error) {
		return sketch.OpenBloomWindow(sketch.Path(p), sketch.BloomWindowConfig{Window: sketch.Window{}, Bloom: sketch.BloomConfig{}}, o...)
	}},
	{"arena", func(p string, o ...sketch.Option) (any, error) { return sketch.OpenArena(sketch.Path(p), 0, o...) }},
}

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
		p.use("ro "+o.name, false, func() (any, error) { return o.open(path, sketch.ReadOnly(), sketch.WithWaitTimeout(openWait)) })
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
	switch h := h.(type) {
	case *sketch.CountMin:
		steps = p.countMinSteps(h, rw)
	case *sketch.Bloom:
		steps = p.bloomSteps(h, rw)
	case *sketch.CountingBloom:
		steps = p.countingBloomSteps(h, rw)
	case *sketch.CountMinWindow:
		steps = p.countMinWindowSteps(h, rw)
	case *sketch.BloomWindow:
		steps = p.bloomWindowSteps(h, rw)
	case *sketch.Arena:
		steps = p.arenaSteps(where, h, rw)
	default:
		panic(fmt.Sprintf("torture: no steps for %T", h))
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

func (p *probe) countMinSteps(c *sketch.CountMin, rw bool) []namedStep {
	est := make([]uint64, len(p.keys))
	s := []namedStep{
		{"Estimate", func() { c.Estimate(p.keys[0]); c.EstimateString("x") }},
		{"EstimateBatch", func() { p.call(c.EstimateBatch(p.keys, est)) }},
		{"Stats", func() {
			c.Stats()
			_ = c.StatsVar().String()
			c.Total()
			c.ErrorBound()
			c.Config()
			c.Check()
		}},
		{"String", func() { _ = c.String(); c.Seed(); c.Frozen(); c.ReadOnly(); c.Path() }},
		{"Check", func() { p.call(c.Check()) }},
	}
	if rw {
		s = append(s,
			namedStep{"Add", func() { _, err := c.Add(p.keys[1]); p.call(err) }},
			namedStep{"AddN", func() { _, err := c.AddN(p.keys[2], 1<<40); p.call(err) }},
			namedStep{"AddBatch", func() { p.call(c.AddBatch(p.keys, est)) }},
			namedStep{"Check after adds", func() { p.call(c.Check()) }},
			namedStep{"Freeze", func() { p.call(c.Freeze()) }},
		)
	}
	return append(s, namedStep{"Close", func() { p.call(c.Close()) }})
}

func (p *probe) bloomSteps(b *sketch.Bloom, rw bool) []namedStep {
	out := make([]bool, len(p.keys))
	s := []namedStep{
		{"Check", func() { b.Contains(p.keys[0]); b.ContainsString("x") }},
		{"ContainsBatch", func() { b.ContainsBatch(p.keys, out) }},
		{"Stats", func() {
			b.Stats()
			_ = b.StatsVar().String()
			b.Bits()
			b.Hashes()
			b.Config()
			b.Check()
		}},
		{"String", func() { _ = b.String(); b.Seed(); b.Frozen(); b.ReadOnly() }},
	}
	if rw {
		s = append(s,
			namedStep{"Add", func() { _, err := b.Add(p.keys[1]); p.call(err) }},
			namedStep{"AddBatch", func() { p.call(b.AddBatch(p.keys, out)) }},
			namedStep{"Freeze", func() { p.call(b.Freeze()) }},
		)
	}
	return append(s, namedStep{"Close", func() { p.call(b.Close()) }})
}

func (p *probe) countingBloomSteps(b *sketch.CountingBloom, rw bool) []namedStep {
	s := []namedStep{
		{"Contains", func() { b.Contains(p.keys[0]); b.ContainsString("x"); b.Estimate(p.keys[1]) }},
		{"Stats", func() {
			b.Stats()
			_ = b.StatsVar().String()
			_ = b.Stats().Count
			b.Config()
			b.Check()
			b.Counters()
			b.Hashes()
		}},
		{"String", func() { _ = b.String(); b.Seed(); b.Frozen(); b.ReadOnly() }},
	}
	if rw {
		s = append(s,
			namedStep{"Add", func() { _, err := b.Add(p.keys[1]); p.call(err) }},
			namedStep{"AddBatch", func() { p.call(b.AddBatch(p.keys, nil)) }},
			namedStep{"Remove", func() { _, err := b.Remove(p.keys[1]); p.call(err) }},
			namedStep{"Remove absent", func() { _, err := b.RemoveString("never added"); p.call(err) }},
			namedStep{"Freeze", func() { p.call(b.Freeze()) }},
		)
	}
	return append(s, namedStep{"Close", func() { p.call(b.Close()) }})
}

func (p *probe) countMinWindowSteps(w *sketch.CountMinWindow, rw bool) []namedStep {
	est := make([]uint64, len(p.keys))
	s := []namedStep{
		{"Estimate", func() { w.Estimate(p.keys[0]); w.EstimateString("x") }},
		{"EstimateBatch", func() { p.call(w.EstimateBatch(p.keys, est)) }},
		{"Window", func() {
			_ = w.Config().Window.String()
			w.Current()
			w.Config()
			w.Total()
			w.ErrorBound()
			w.Check()
		}},
		{"Stats", func() { w.Stats(); _ = w.StatsVar().String() }},
		{"String", func() { _ = w.String(); w.Seed(); w.Frozen(); w.ReadOnly() }},
	}
	if rw {
		s = append(s,
			namedStep{"Add", func() { _, err := w.Add(p.keys[1]); p.call(err) }},
			namedStep{"AddN", func() { _, err := w.AddN(p.keys[2], 1<<40); p.call(err) }},
			namedStep{"AddBatch", func() { p.call(w.AddBatch(p.keys, est)) }},
			namedStep{"Rotate", func() { p.call(w.Rotate()) }},
			namedStep{"Add after Rotate", func() { _, err := w.Add(p.keys[3]); p.call(err); w.Estimate(p.keys[3]) }},
			namedStep{"Freeze", func() { p.call(w.Freeze()) }},
		)
	}
	return append(s, namedStep{"Close", func() { p.call(w.Close()) }})
}

func (p *probe) bloomWindowSteps(w *sketch.BloomWindow, rw bool) []namedStep {
	out := make([]bool, len(p.keys))
	s := []namedStep{
		{"Check", func() { w.Contains(p.keys[0]); w.ContainsString("x") }},
		{"ContainsBatch", func() { w.ContainsBatch(p.keys, out) }},
		{"Window", func() {
			_ = w.Config().Window.String()
			w.Current()
			w.Bits()
			w.Hashes()
			w.Config()
			w.Check()
		}},
		{"Stats", func() { w.Stats(); _ = w.StatsVar().String() }},
		{"String", func() { _ = w.String(); w.Seed(); w.Frozen(); w.ReadOnly() }},
	}
	if rw {
		s = append(s,
			namedStep{"Add", func() { _, err := w.Add(p.keys[1]); p.call(err) }},
			namedStep{"AddBatch", func() { p.call(w.AddBatch(p.keys, out)) }},
			namedStep{"Rotate", func() { p.call(w.Rotate()) }},
			namedStep{"Add after Rotate", func() { _, err := w.Add(p.keys[3]); p.call(err); w.Contains(p.keys[3]) }},
			namedStep{"Freeze", func() { p.call(w.Freeze()) }},
		)
	}
	return append(s, namedStep{"Close", func() { p.call(w.Close()) }})
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
				wrong := arenaKinds[(arenaKindIndex(e.Kind)+1+i)%len(arenaKinds)]
				if wrong.kind != e.Kind {
					h, err := wrong.get(a, e.Name)
					p.call(err)
					if err == nil {
						p.exercise(where+" "+e.Name+" as "+string(wrong.kind), h, rw)
					}
				}
				if k := arenaKindIndex(e.Kind); k >= 0 {
					h, err := arenaKinds[k].get(a, e.Name)
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

// arenaKinds are an arena's accessors with the zero config, which attach
// to the stored shape.
var arenaKinds = []struct {
	kind sketch.Kind
	get  func(a *sketch.Arena, name string) (any, error)
}{
	{sketch.KindCountMin, func(a *sketch.Arena, n string) (any, error) {
		return sketch.OpenCountMin(a.Place(n), sketch.CountMinConfig{})
	}},
	{sketch.KindBloom, func(a *sketch.Arena, n string) (any, error) {
		return sketch.OpenBloom(a.Place(n), sketch.BloomConfig{})
	}},
	{sketch.KindCountingBloom, func(a *sketch.Arena, n string) (any, error) {
		return sketch.OpenCountingBloom(a.Place(n), sketch.CountingBloomConfig{})
	}},
	{sketch.KindCountMinWindow, func(a *sketch.Arena, n string) (any, error) {
		return sketch.OpenCountMinWindow(a.Place(n), sketch.CountMinWindowConfig{Window: sketch.Window{}, CountMin: sketch.CountMinConfig{}})
	}},
	{sketch.KindBloomWindow, func(a *sketch.Arena, n string) (any, error) {
		return sketch.OpenBloomWindow(a.Place(n), sketch.BloomWindowConfig{Window: sketch.Window{}, Bloom: sketch.BloomConfig{}})
	}},
}

// arenaKindIndex is the index of k in arenaKinds, or -1 for a kind this
// build does not know.
func arenaKindIndex(k sketch.Kind) int {
	for i, ak := range arenaKinds {
		if ak.kind == k {
			return i
		}
	}
	return -1
}
