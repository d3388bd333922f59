package sketch

import (
	"fmt"
	"unsafe"
)

// The candidate table of a Count-Min sketch (candidates.go): how adds feed
// it and how Top lists it.

// offer hands an add whose estimate passed the table's floor to the table.
func (c *CountMin) offer(lo, hi uint64, key string, est uint64) {
	if c.open.Load() {
		c.top.offer(c, lo, hi, key, est, 0)
	}
}

// offerBatch offers a batch's keys whose estimates passed the floor.
func (c *CountMin) offerBatch(keys [][]byte, est []uint64) {
	for i, e := range est {
		if c.top.passes(e, 1) {
			lo, hi := hashKey(keys[i], c.l.seed)
			c.offer(lo, hi, unsafe.String(unsafe.SliceData(keys[i]), len(keys[i])), e)
		}
	}
}

func (c *CountMin) recount(lo, hi uint64) uint64 { return c.l.estimateHashed(lo, hi) }

func (c *CountMin) noiseFloor() uint64 { return c.l.addCount() / (c.l.mask + 1) }

// Top lists the loudest keys of the sketch's candidate table (a sketch
// created with Candidates), loudest first: at most n of them (every key
// listed when n <= 0), and at most Candidates. Each comes with its
// estimate now, read from the counters (never below its true count), and
// that estimate less ErrorBound (its low end). Keys whose estimate is no
// more than the total over the width, the mean of a row's counters, are
// left out: below that a count is not told apart from collisions.
//
// The table is fed by every add in every process: an add whose estimate
// passes the table's floor (its quietest key's stored estimate once it is
// full) offers its key, and only a key taken in takes the file's write
// lock; the rest is a load and a compare. A key loud enough to be among
// the K loudest is taken in once its estimate passes the floor, so its
// name is listed whenever its count is; keys that share their two
// buckets of 8 ways with 15 louder keys are not. Top takes no lock and
// costs a walk of the table and an estimate per key. It returns
// ErrInvalidArgument on a sketch without a table, ErrClosed after Close.
//
// A key kept whole is listed only if it hashes to its slot's hash with
// the file's seed, so its label names the counters of its estimate; a
// key longer than CandidateKeyBytes is listed as a prefix whose label no
// reader can check (see HeavyHitter.Key).
func (c *CountMin) Top(n int) ([]HeavyHitter, error) {
	if !c.open.Load() {
		return nil, c.closedErr("top")
	}
	if c.top == nil {
		return nil, c.m.errorf("top", errNoCandidates)
	}
	hs := c.top.top(c, n, c.ErrorBound())
	if !c.open.Load() {
		return nil, c.closedErr("top")
	}
	return hs, nil
}

var errNoCandidates = fmt.Errorf("%w: the sketch keeps no candidate table (create it with Candidates)", ErrInvalidArgument)

// mergeCandidates fills c's table with the loudest of its keys and the
// others' keys, counted in the merged sketch. It fails with the lock's
// ErrTimeout, leaving the table as it was.
func (c *CountMin) mergeCandidates(others []*CountMin) error {
	cands := c.top.collect()
	for _, o := range others {
		if o.top != nil {
			cands = append(cands, o.top.collect()...)
		}
	}
	return c.top.rebuild(c, cands)
}
