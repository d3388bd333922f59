package main

import (
	"fmt"
	"sync/atomic"
)

// Counting Bloom removes in the storm. A worker removes only keys its own
// record says it added more often than it removed, so every remove cancels
// an add of its own and the filter must still hold the key for the adds
// nobody cancelled. A remove killed in flight may or may not have happened:
// the worker names the key in its record's removing word before the call
// and clears it after recording the remove, a worker restarted in the slot
// counts a named key as removed, and a checker counts a named key as
// removed too. Counting a remove that did not happen only lowers what must
// be present, so neither can make a false violation.

// startRemoving is called by a worker as it starts: a remove its
// predecessor was killed in is counted as done.
func (r *record) startRemoving() {
	if k := atomic.LoadUint64(&r.words[wordRemoving]); k != 0 {
		r.raiseRemoved(int(k-1), 1)
		atomic.StoreUint64(&r.words[wordRemoving], 0)
	}
}

// raiseRemoved counts n removes of the key.
func (r *record) raiseRemoved(key int, n uint64) {
	atomic.AddUint64(&r.words[removedStart+key], n)
}

// removable reports whether this record's adds of the key outnumber its
// removes.
func (r *record) removable(key int) bool {
	return r.load(fieldCountingBloom, key) > atomic.LoadUint64(&r.words[removedStart+key])
}

// removeOwn removes the key from the counting Bloom filter if this worker
// added it more often than it removed it, recording the remove around the
// call. The filter must report the key removed: the worker's own adds that
// no remove cancelled are still in it.
func removeOwn(s *stormFiles, rec *record, key int) error {
	if !rec.removable(key) {
		return nil
	}
	atomic.StoreUint64(&rec.words[wordRemoving], uint64(key)+1)
	removed, err := s.cbf.Remove(keyTable[key])
	if err != nil {
		return fmt.Errorf("counting bloom remove: %w", err)
	}
	if !removed {
		return fmt.Errorf("counting bloom Remove(%q) = false, after %d adds of it returned here and %d removes",
			keyTable[key], rec.load(fieldCountingBloom, key), atomic.LoadUint64(&rec.words[removedStart+key]))
	}
	rec.raiseRemoved(key, 1)
	atomic.StoreUint64(&rec.words[wordRemoving], 0)
	return nil
}

// removals reads, after a question, how many removes of each key may have
// happened by then: those recorded, and those named in flight. The in-flight
// words are read first, so a remove that ends between the two reads is
// counted at least once.
func removals(recs []*record, out []uint64) {
	clear(out)
	for _, r := range recs {
		if k := atomic.LoadUint64(&r.words[wordRemoving]); k != 0 && int(k-1) < allKeys {
			out[k-1]++
		}
	}
	for _, r := range recs {
		for k := range out {
			out[k] += atomic.LoadUint64(&r.words[removedStart+k])
		}
	}
}

// removes is how many counting Bloom removes the record counts, over every key.
func (r *record) removes() uint64 {
	var n uint64
	for k := 0; k < allKeys; k++ {
		n += atomic.LoadUint64(&r.words[removedStart+k])
	}
	return n
}
