package main

import (
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A remove in flight when its worker was killed counts as done: for the
// checker at once, and for the worker restarted in the slot.
func TestRemovals_InFlightCountsAsDone(t *testing.T) {
	dir := t.TempDir()
	r, err := openRecord(filepath.Join(dir, "record"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.raise(fieldCountingBloom, 7, 3)
	r.raiseRemoved(7, 1)
	atomic.StoreUint64(&r.words[wordRemoving], 7+1) // killed inside the second remove

	out := make([]uint64, allKeys)
	out[9] = 5 // left from an earlier pass: removals starts over
	removals([]*record{r}, out)
	if out[7] != 2 || out[9] != 0 {
		t.Errorf("removals: key 7 = %d, key 9 = %d; want 2 and 0", out[7], out[9])
	}
	if !r.removable(7) {
		t.Errorf("removable(7) = false with 3 adds and 1 remove recorded")
	}

	again, err := openRecord(filepath.Join(dir, "record"))
	if err != nil {
		t.Fatal(err)
	}
	defer again.close()
	again.startRemoving()
	removals([]*record{again}, out)
	if out[7] != 2 {
		t.Errorf("after a restart, removals of key 7 = %d, want 2", out[7])
	}
	if w := atomic.LoadUint64(&again.words[wordRemoving]); w != 0 {
		t.Errorf("removing word = %d after a restart, want 0", w)
	}
	again.raiseRemoved(7, 1)
	if again.removable(7) {
		t.Errorf("removable(7) = true with 3 adds and 3 removes recorded")
	}
	if got := again.removes(); got != 3 {
		t.Errorf("removes() = %d, want 3", got)
	}
}
