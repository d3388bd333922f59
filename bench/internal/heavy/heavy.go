// Package heavy measures how well a structure that lists a stream's
// loudest keys finds them, against exact counts: one pass of a stream
// feeds every structure at once and an exact count per key number, and
// each structure's list is then scored for its top n. The benchmarks of
// this module and its report both run it.
package heavy

import (
	"cmp"
	"slices"
	"sync"

	boom "github.com/tylertreat/BoomFilters"

	"github.com/shmsketch/sketch"
)

// Lister counts keys and lists the loudest it holds.
type Lister interface {
	Add(key []byte)
	// List returns the keys it holds, loudest first.
	List() ([]string, error)
}

// Subject is a structure scored for its top N.
type Subject struct {
	Lister Lister
	N      int
}

// Score is a structure's accuracy for its top n.
type Score struct {
	// Recall is the share of the true top n that the structure lists at
	// all (among its K).
	Recall float64
	// Precision is the share of its first n listed keys that are in the
	// true top n.
	Precision float64
	// LockShare is the share of adds that took the file's write lock (a
	// sketch's admissions over adds); 0 for structures without one.
	LockShare float64
}

// SpaceKeys returns key number i of a space of n keys at index i, written
// by appendKey into one buffer. Each key's bytes are made once and never
// change, because BoomFilters' TopK keeps the slices it is given.
func SpaceKeys(n int, appendKey func(dst []byte, i uint64) []byte) [][]byte {
	var buf []byte
	ends := make([]int, n)
	for i := range ends {
		buf = appendKey(buf, uint64(i))
		ends[i] = len(buf)
	}
	keys := make([][]byte, n)
	start := 0
	for i, end := range ends {
		keys[i] = buf[start:end:end]
		start = end
	}
	return keys
}

// Measure adds keys[next()] to every subject, adds times, then scores
// each subject's list against the exact counts. The true top n is the n
// loudest key numbers, ties to the lower number. The key numbers are
// drawn once and each subject takes them in its own goroutine (they
// share nothing), so that a pass of 10M adds takes seconds, not tens.
func Measure(keys [][]byte, next func() uint64, adds int, subjects []Subject) ([]Score, error) {
	numbers := make([]uint32, adds)
	counts := make([]uint32, len(keys))
	for j := range numbers {
		i := next()
		numbers[j] = uint32(i)
		counts[i]++
	}
	var wg sync.WaitGroup
	for _, s := range subjects {
		wg.Go(func() {
			for _, i := range numbers {
				s.Lister.Add(keys[i])
			}
		})
	}
	wg.Wait()
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	scores := make([]Score, len(subjects))
	for j, s := range subjects {
		listed, err := s.Lister.List()
		if err != nil {
			return nil, err
		}
		truth := make(map[string]bool, s.N)
		for _, i := range order[:min(s.N, len(order))] {
			truth[string(keys[i])] = true
		}
		scores[j] = Score{
			Recall:    shareIn(truth, listed, len(truth)),
			Precision: shareIn(truth, listed[:min(s.N, len(listed))], s.N),
		}
		if a, ok := s.Lister.(admitter); ok {
			scores[j].LockShare = float64(a.Admissions()) / float64(adds)
		}
	}
	return scores, nil
}

// shareIn is the number of keys that are in truth, over of.
func shareIn(truth map[string]bool, keys []string, of int) float64 {
	hit := 0
	for _, k := range keys {
		if truth[k] {
			hit++
		}
	}
	return float64(hit) / float64(of)
}

// admitter is a structure that counts the adds that took its lock.
type admitter interface{ Admissions() uint64 }

// Sketch lists a sketch.CountMin's candidate table.
func Sketch(c *sketch.CountMin) Lister { return sketchLister{c} }

type sketchLister struct{ c *sketch.CountMin }

func (s sketchLister) Add(key []byte) { s.c.Add(key) }

func (s sketchLister) List() ([]string, error) {
	hs, err := s.c.Top(0)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(hs))
	for i, h := range hs {
		keys[i] = h.Key
	}
	return keys, nil
}

func (s sketchLister) Admissions() uint64 { return s.c.Stats().Candidates.Admissions }

// Boom lists BoomFilters' TopK heap.
func Boom(t *boom.TopK) Lister { return boomLister{t} }

type boomLister struct{ t *boom.TopK }

func (b boomLister) Add(key []byte) { b.t.Add(key) }

// List reverses Elements, which come quietest first.
func (b boomLister) List() ([]string, error) {
	es := b.t.Elements()
	keys := make([]string, len(es))
	for i, e := range es {
		keys[len(es)-1-i] = string(e.Data)
	}
	return keys, nil
}
