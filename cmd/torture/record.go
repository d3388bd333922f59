package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"
)

// A record is one worker's tally of the calls that returned, kept in a small
// file of its own mapped MAP_SHARED: a raise is a store into the page cache,
// so a SIGKILL right after it loses nothing, and the worker restarted in the
// same slot goes on raising the same tally. Only one process raises a record
// at a time (the supervisor reaps a worker before restarting its slot);
// checkers read it with atomic loads while it grows.
type record struct {
	mem   []byte
	words []uint64
}

// The fields of a record, after a word counting the calls that returned: the
// plain ones one word per key, the window ones windowRing words per key (see
// window.go).
const (
	fieldCountMin       = iota // the weight of every returned add of the key
	fieldBloom                 // 1 once a Bloom add of the key returned
	fieldCountingBloom         // the counting Bloom adds of the key that returned
	fieldDistinct              // 1 once a distinct count's add of the key returned
	fieldCountMinWindow        // per period: the weight of the adds that landed in it
	fieldBloomWindow           // per period: whether an add landed in it
	fieldCountMinClock         // as fieldCountMinWindow, for the clock's window
	fieldBloomClock            // as fieldBloomWindow, for the clock's window
	fields

	plainFields = fieldCountMinWindow // the fields of one word per key
)

// The layout of a record: a word counting the calls that returned, a word
// naming the key whose counting Bloom remove is in flight (remove.go), one
// per plain field counting its merges, the plain fields, the window fields,
// and the count of returned counting Bloom removes per key.
const (
	wordCalls    = 0
	wordRemoving = 1
	wordMerges   = 2 // merges that returned, one word per plain field (merge.go)
	headWords    = wordMerges + plainFields
	windowStart  = headWords + plainFields*allKeys
	removedStart = windowStart + (fields-plainFields)*allKeys*windowRing
	recordWords  = removedStart + allKeys
)

// openWords maps n words of the file at path shared, creating it zeroed if it
// does not exist.
func openWords(path string, n int) ([]byte, []uint64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	size := n * 8
	if err := f.Truncate(int64(size)); err != nil {
		return nil, nil, fmt.Errorf("size %s: %w", path, err)
	}
	mem, err := mapShared(f, size)
	if err != nil {
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	return mem, unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), n), nil
}

// openRecord maps the record at path, creating it zeroed.
func openRecord(path string) (*record, error) {
	mem, words, err := openWords(path, recordWords)
	if err != nil {
		return nil, err
	}
	return &record{mem: mem, words: words}, nil
}

func (r *record) close() error { return unmap(r.mem) }

func (r *record) index(field, key int) int { return headWords + field*allKeys + key }

// windex is the word of a window field for the key's period p.
func (r *record) windex(field, key int, p uint64) int {
	return windowStart + ((field-plainFields)*allKeys+key)*windowRing + int(p%windowRing)
}

// raise adds n to the key's field. Call it only after the call it records
// returned.
func (r *record) raise(field, key int, n uint64) {
	atomic.AddUint64(&r.words[r.index(field, key)], n)
}

// mark records that an add of the key returned; a key already marked is left
// alone, so a filter key costs one store the first time only.
func (r *record) mark(field, key int) {
	w := &r.words[r.index(field, key)]
	if atomic.LoadUint64(w) == 0 {
		atomic.StoreUint64(w, 1)
	}
}

// returned counts one call that returned.
func (r *record) returned() { atomic.AddUint64(&r.words[wordCalls], 1) }

func (r *record) load(field, key int) uint64 {
	return atomic.LoadUint64(&r.words[r.index(field, key)])
}

func (r *record) calls() uint64 { return atomic.LoadUint64(&r.words[wordCalls]) }

// A tally is what all records say returned, per plain field and key.
type tally [plainFields][allKeys]uint64

// sumRecords reads every record once into t: Count-Min weights and counting
// Bloom adds add up, a Bloom or distinct count's key counts as added when
// any record marked it.
func sumRecords(recs []*record, t *tally) {
	*t = tally{}
	for _, r := range recs {
		for k := 0; k < allKeys; k++ {
			t[fieldCountMin][k] += r.load(fieldCountMin, k)
			t[fieldBloom][k] |= r.load(fieldBloom, k)
			t[fieldCountingBloom][k] += r.load(fieldCountingBloom, k)
			t[fieldDistinct][k] |= r.load(fieldDistinct, k)
		}
	}
}
