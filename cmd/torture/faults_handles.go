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
	check    func() error // the structure's Check (every kind's Handle has one)
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
	// most is the largest file the kind makes, 0 when any size can be
	// asked for: a distinct count has at most 2^18 registers.
	most uint64
}

// faultKinds are every kind of structKinds in a file of its own, named by
// its short name, and an arena.
var faultKinds = append(standaloneFaultKinds(), faultKind{name: "arena", open: openFaultArena})

func standaloneFaultKinds() []faultKind {
	var ks []faultKind
	for _, k := range structKinds {
		ks = append(ks, faultKind{name: k.short, most: k.faultMost, open: func(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
			h, err := k.open(sketch.Path(path), k.faultConfig(size), opts...)
			if err != nil {
				return nil, err
			}
			return newFaultHandle(path, h), nil
		}})
	}
	return ks
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

// distinctFor is a distinct count of about size bytes, within its
// precisions.
func distinctFor(size uint64) sketch.DistinctConfig {
	p := 4
	for p < 18 && 1<<(p+1) <= size {
		p++
	}
	return sketch.DistinctConfig{Precision: p}
}

// distinctMost is the largest file of n distinct counts of 2^18
// registers, the most a distinct count has.
func distinctMost(n uint64) uint64 {
	b, _ := sketch.DistinctConfig{Precision: 18}.Bytes()
	return b * n
}

// newFaultHandle is h, a structure of any kind at path, behind the one
// shape: how it adds and answers is its row's faultAnswers.
func newFaultHandle(path string, h any) *faultHandle {
	hd := h.(handle)
	f := &faultHandle{path: path, check: hd.Check, freeze: hd.Freeze, mutators: mutators(h), close: hd.Close}
	kindOfHandle(h).faultAnswers(f, h)
	return f
}

// answerWeights is a Count-Min kind's faultAnswers: it adds n and answers
// its estimate.
func answerWeights(f *faultHandle, h any) {
	c := h.(counter)
	f.add = func(k []byte, n uint64) error { _, err := c.AddN(k, n); return err }
	f.answer = c.Estimate
}

// answerCountedAdds is the counting Bloom filter's faultAnswers: it adds n
// times and answers its count.
func answerCountedAdds(f *faultHandle, h any) {
	b := h.(*sketch.CountingBloom)
	f.add = func(k []byte, n uint64) error {
		for ; n > 0; n-- {
			if _, err := b.Add(k); err != nil {
				return err
			}
		}
		return nil
	}
	f.answer = func(k []byte) uint64 { return uint64(b.Estimate(k)) }
}

// answerPresence is the faultAnswers of a kind that answers presence (the
// Bloom kinds, and a distinct count's "holds an add"): it adds once.
func answerPresence(f *faultHandle, h any) {
	f.add = func(k []byte, _ uint64) error { return addsOf(h).add(k) }
	f.answer = func(k []byte) uint64 { return ask(h, k) }
	f.presence = true
}

// mutatorTable is every call that changes a structure or its file, over
// the kinds, in the order a fault makes them: each row binds its call to
// a structure whose kind has it, and is nil for the others.
var mutatorTable = []struct {
	name string
	bind func(h any) func() error
}{
	{"Add", on(func(h handle) error { return addsOf(h).add([]byte("x")) })},
	{"AddN", on(func(c counter) error { _, err := c.AddN([]byte("x"), 3); return err })},
	{"AddString", on(func(h handle) error { return addsOf(h).addString("x") })},
	{"AddBatch", on(func(h handle) error { return addsOf(h).addBatch([][]byte{[]byte("x"), []byte("y")}) })},
	{"Remove", on(func(b *sketch.CountingBloom) error { _, err := b.Remove([]byte("x")); return err })},
	{"RemoveString", on(func(b *sketch.CountingBloom) error { _, err := b.RemoveString("x"); return err })},
	{"Reset", on(func(r interface{ Reset() error }) error { return r.Reset() })},
	{"Merge", func(h any) func() error {
		if k := kindOfHandle(h); k != nil && k.merge != nil {
			return func() error { return k.merge(h) }
		}
		return nil
	}},
	{"Rotate", on(windowed.Rotate)},
	{"Freeze", on(handle.Freeze)},
	{"Unlink", on(handle.Unlink)},
}

// on binds call to h when h is a T, and is nil when it is not.
func on[T any](call func(T) error) func(h any) func() error {
	return func(h any) func() error {
		t, ok := h.(T)
		if !ok {
			return nil
		}
		return func() error { return call(t) }
	}
}

// mutators are the rows of mutatorTable that h's kind has.
func mutators(h any) []namedCall {
	var m []namedCall
	for _, row := range mutatorTable {
		if call := row.bind(h); call != nil {
			m = append(m, namedCall{row.name, call})
		}
	}
	return m
}

// openFaultArena opens an arena of size bytes and the Count-Min sketch
// named "cm" in it, of half the arena: the handle counts there, and its
// mutators are the sketch's and the arena's (creating a structure of each
// kind, Freeze, Unlink).
func openFaultArena(path string, size uint64, opts ...sketch.Option) (*faultHandle, error) {
	a, err := sketch.OpenArena(sketch.Path(path), sketch.ArenaConfig{Size: int64(size)}, opts...)
	if err != nil {
		return nil, err
	}
	c, err := sketch.OpenCountMin(a.Place("cm"), countMinFor(size/2))
	if err != nil {
		a.Close()
		return nil, err
	}
	h := newFaultHandle(path, c)
	h.freeze = a.Freeze
	for _, k := range structKinds {
		h.mutators = append(h.mutators, namedCall{fmt.Sprintf("arena %s (new)", k.kind), func() error {
			_, err := k.open(a.Place("new-"+k.short), k.faultConfig(4096))
			return err
		}})
	}
	h.mutators = append(h.mutators, namedCall{"arena Freeze", a.Freeze}, namedCall{"arena Unlink", a.Unlink})
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
// it below 1e-3 with at most 150 keys per 4096 counters a row), and
// Check's complaint. It returns the answers checked.
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
	if err := h.check(); err != nil {
		r.problem("%s: Check: %v", filepath.Base(h.path), err)
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
