package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/shmsketch/sketch"
)

// A faultHandle is one open structure of any kind behind one shape, so that
// a fault adds to, asks and refuses every kind the same way. answer is what
// the structure says of a key: its count (Count-Min kinds, counting Bloom),
// or 1 and 0 for present and absent (Bloom kinds).
type faultHandle struct {
	path     string
	add      func(key []byte, n uint64) error
	answer   func(key []byte) uint64
	presence bool         // answers 1 for present: the reference is min(n, 1)
	check    func() error // Count-Min's Check; nil for the other kinds
	freeze   func() error
	mutators []namedCall // every call that changes the structure or its file
	close    func() error
}

type namedCall struct {
	name string
	call func() error
}

// A faultKind opens a structure of one kind: it creates one of about size
// bytes at path (a shape derived from size, so the same size attaches to
// it again), or attaches to the one there.
type faultKind struct {
	name string
	open func(path string, size uint64, opts ...sketch.Option) (*faultHandle, error)
}

var faultKinds = []faultKind{
	{"cm", openFaultCountMin},
	{"bloom", openFaultBloom},
	{"cbf", openFaultCountingBloom},
	{"cmw", openFaultCountMinWindow},
	{"bw", openFaultBloomWindow},
	{"arena", openFaultArena},
}

func faultKindNamed(name string) faultKind {
	for _, k := range faultKinds {
		if k.name == name {
			return k
		}
	}
	panic("torture: no fault kind " + name)
}

// faultWindow is the windows' shape: turned by Rotate only, so that every
// add lands in the period the reference expects.
var faultWindow = sketch.Window{Period: 0, Keep: 3}

// countMinFor is a Count-Min shape of 4 rows and about size bytes.
func countMinFor(size uint64) sketch.CountMinConfig {
	w := 64
	for uint64(w)*4*8 < size {
		w *= 2
	}
	return sketch.CountMinConfig{Rows: 4, Width: w}
}

// capacityFor is the least capacity whose Bytes reach size.
func capacityFor(size uint64, bytes func(capacity uint64) (uint64, error)) uint64 {
	lo, hi := uint64(1), uint64(1)
	for b, err := bytes(hi); err == nil && b < size; b, err = bytes(hi) {
		lo, hi = hi, hi*2
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if b, err := bytes(mid); err == nil && b >= size {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi
}

func bloomFor(size uint64) sketch.BloomConfig {
	return sketch.BloomConfig{FPRate: 0.01, Capacity: capacityFor(size, func(c uint64) (uint64, error) {
		return sketch.BloomConfig{Capacity: c, FPRate: 0.01}.Bytes()
	})}
}

func countingBloomFor(size uint64) sketch.CountingBloomConfig {
	return sketch.CountingBloomConfig{FPRate: 0.01, Capacity: capacityFor(size, func(c uint64) (uint64, error) {
		return sketch.CountingBloomConfig{Capacity: c, FPRate: 0.01}.Bytes()
	})}
}

// slots is how many structures a window of faultWindow holds.
const slots = 4

func openFaultCountMin(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
	c, err := sketch.OpenCountMin(sketch.Path(path), countMinFor(size), opts...)
	if err != nil {
		return nil, err
	}
	return countMinHandle(path, c), nil
}

func countMinHandle(path string, c *sketch.CountMin) *faultHandle {
	return &faultHandle{
		path:   path,
		add:    func(k []byte, n uint64) error { _, err := c.AddN(k, n); return err },
		answer: c.Estimate,
		check:  c.Check,
		freeze: c.Freeze,
		mutators: []namedCall{
			{"Add", func() error { _, err := c.Add([]byte("x")); return err }},
			{"AddN", func() error { _, err := c.AddN([]byte("x"), 3); return err }},
			{"AddString", func() error { _, err := c.AddString("x"); return err }},
			{"AddBatch", func() error { return c.AddBatch([][]byte{[]byte("x"), []byte("y")}, nil) }},
			{"Reset", c.Reset},
			{"Merge", func() error { return c.Merge(c) }},
			{"Freeze", c.Freeze},
			{"Unlink", c.Unlink},
		},
		close: c.Close,
	}
}

func openFaultBloom(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
	b, err := sketch.OpenBloom(sketch.Path(path), bloomFor(size), opts...)
	if err != nil {
		return nil, err
	}
	return &faultHandle{
		path: path,
		add:  func(k []byte, _ uint64) error { _, err := b.Add(k); return err },
		answer: func(k []byte) uint64 {
			if b.Contains(k) {
				return 1
			}
			return 0
		},
		presence: true,
		freeze:   b.Freeze,
		mutators: []namedCall{
			{"Add", func() error { _, err := b.Add([]byte("x")); return err }},
			{"AddString", func() error { _, err := b.AddString("x"); return err }},
			{"AddBatch", func() error { return b.AddBatch([][]byte{[]byte("x"), []byte("y")}, nil) }},
			{"Reset", b.Reset},
			{"Merge", func() error { return b.Merge(b) }},
			{"Freeze", b.Freeze},
			{"Unlink", b.Unlink},
		},
		close: b.Close,
	}, nil
}

func openFaultCountingBloom(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
	b, err := sketch.OpenCountingBloom(sketch.Path(path), countingBloomFor(size), opts...)
	if err != nil {
		return nil, err
	}
	return &faultHandle{
		path: path,
		add: func(k []byte, n uint64) error {
			for ; n > 0; n-- {
				if _, err := b.Add(k); err != nil {
					return err
				}
			}
			return nil
		},
		answer: func(k []byte) uint64 { return uint64(b.Estimate(k)) },
		freeze: b.Freeze,
		mutators: []namedCall{
			{"Add", func() error { _, err := b.Add([]byte("x")); return err }},
			{"AddString", func() error { _, err := b.AddString("x"); return err }},
			{"AddBatch", func() error { return b.AddBatch([][]byte{[]byte("x"), []byte("y")}, nil) }},
			{"Remove", func() error { _, err := b.Remove([]byte("x")); return err }},
			{"RemoveString", func() error { _, err := b.RemoveString("x"); return err }},
			{"Clear", b.Reset},
			{"Merge", func() error { return b.Merge(b) }},
			{"Freeze", b.Freeze},
			{"Unlink", b.Unlink},
		},
		close: b.Close,
	}, nil
}

func openFaultCountMinWindow(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
	w, err := sketch.OpenCountMinWindow(sketch.Path(path), sketch.CountMinWindowConfig{Window: faultWindow, CountMin: countMinFor(size / slots)}, opts...)
	if err != nil {
		return nil, err
	}
	return &faultHandle{
		path:   path,
		add:    func(k []byte, n uint64) error { _, err := w.AddN(k, n); return err },
		answer: w.Estimate,
		freeze: w.Freeze,
		mutators: []namedCall{
			{"Add", func() error { _, err := w.Add([]byte("x")); return err }},
			{"AddN", func() error { _, err := w.AddN([]byte("x"), 3); return err }},
			{"AddString", func() error { _, err := w.AddString("x"); return err }},
			{"AddBatch", func() error { return w.AddBatch([][]byte{[]byte("x"), []byte("y")}, nil) }},
			{"Rotate", w.Rotate},
			{"Freeze", w.Freeze},
			{"Unlink", w.Unlink},
		},
		close: w.Close,
	}, nil
}

func openFaultBloomWindow(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
	w, err := sketch.OpenBloomWindow(sketch.Path(path), sketch.BloomWindowConfig{Window: faultWindow, Bloom: bloomFor(size / slots)}, opts...)
	if err != nil {
		return nil, err
	}
	return &faultHandle{
		path: path,
		add:  func(k []byte, _ uint64) error { _, err := w.Add(k); return err },
		answer: func(k []byte) uint64 {
			if w.Contains(k) {
				return 1
			}
			return 0
		},
		presence: true,
		freeze:   w.Freeze,
		mutators: []namedCall{
			{"Add", func() error { _, err := w.Add([]byte("x")); return err }},
			{"AddString", func() error { _, err := w.AddString("x"); return err }},
			{"AddBatch", func() error { return w.AddBatch([][]byte{[]byte("x"), []byte("y")}, nil) }},
			{"Rotate", w.Rotate},
			{"Freeze", w.Freeze},
			{"Unlink", w.Unlink},
		},
		close: w.Close,
	}, nil
}

// arenaCountMin is the shape of the new structures an arena's mutators ask for.
var arenaCountMin = sketch.CountMinConfig{Rows: 2, Width: 256}

// openFaultArena opens an arena of size bytes and the Count-Min sketch
// named "cm" in it, of half the arena: the handle counts there, and its
// mutators are the sketch's and the arena's (creating a structure of each
// kind, Freeze, Unlink).
func openFaultArena(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
	a, err := sketch.OpenArena(sketch.Path(path), int64(size), opts...)
	if err != nil {
		return nil, err
	}
	c, err := sketch.OpenCountMin(a.Place("cm"), countMinFor(size/2))
	if err != nil {
		a.Close()
		return nil, err
	}
	h := countMinHandle(path, c)
	h.freeze = a.Freeze
	h.mutators = append(h.mutators,
		namedCall{"arena CountMin (new)", func() error { _, err := sketch.OpenCountMin(a.Place("new-cm"), arenaCountMin); return err }},
		namedCall{"arena Bloom (new)", func() error { _, err := sketch.OpenBloom(a.Place("new-bloom"), bloomFor(4096)); return err }},
		namedCall{"arena CountingBloom (new)", func() error {
			_, err := sketch.OpenCountingBloom(a.Place("new-cbf"), countingBloomFor(4096))
			return err
		}},
		namedCall{"arena CountMinWindow (new)", func() error {
			_, err := sketch.OpenCountMinWindow(a.Place("new-cmw"), sketch.CountMinWindowConfig{Window: faultWindow, CountMin: arenaCountMin})
			return err
		}},
		namedCall{"arena BloomWindow (new)", func() error {
			_, err := sketch.OpenBloomWindow(a.Place("new-bw"), sketch.BloomWindowConfig{Window: faultWindow, Bloom: bloomFor(4096)})
			return err
		}},
		namedCall{"arena Freeze", a.Freeze},
		namedCall{"arena Unlink", a.Unlink},
	)
	h.close = func() error {
		err := c.Close()
		if aerr := a.Close(); err == nil {
			err = aerr
		}
		return err
	}
	return h, nil
}

// A reference is the adds a fault made to one structure, per key.
type reference map[string]uint64

// faultKey is the i-th key of a fault's adds, and faultWeight its adds: a
// child that did not make them computes the same.
func faultKey(prefix string, i int) []byte { return fmt.Appendf(nil, "%s-%d", prefix, i) }
func faultWeight(i int) uint64             { return uint64(i%3 + 1) }

// addKeys adds keys prefix-0 .. prefix-(n-1), each faultWeight times, and
// records them in t.
func addKeys(h *faultHandle, t reference, prefix string, n int) error {
	for i := 0; i < n; i++ {
		k := faultKey(prefix, i)
		if err := h.add(k, faultWeight(i)); err != nil {
			return err
		}
		t[string(k)] += faultWeight(i)
	}
	return nil
}

// verify asks h about every key of t and reports each answer that is not
// exactly the reference's (a Count-Min sketch of 4 rows is exact for n keys
// unless one collides in every row, about n*(n/width)^4: the faults keep
// it below 1e-3 with at most 150 keys per 4096 counters a row), and Check's complaint where the kind has one. It returns
// the answers checked.
func verify(r *faultReport, h *faultHandle, t reference) int {
	for k, n := range t {
		want := n
		if h.presence {
			want = min(n, 1)
		}
		if got := h.answer([]byte(k)); got != want {
			r.problem("%s: answer(%q) = %d, want %d", filepath.Base(h.path), k, got, want)
		}
	}
	if h.check != nil {
		if err := h.check(); err != nil {
			r.problem("%s: Check: %v", filepath.Base(h.path), err)
		}
	}
	r.Checked += len(t)
	return len(t)
}

// namesFile reports whether err names the file at path, as every error of
// the library must.
func namesFile(err error, path string) bool {
	return err != nil && strings.Contains(err.Error(), filepath.Base(path))
}

// errPanic marks a call that panicked.
var errPanic = errors.New("panic")

// guarded runs call and turns a panic into an error wrapping errPanic, so
// that one panicking call is a broken promise of the report, not the end
// of the child.
func guarded(call func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return call()
}
