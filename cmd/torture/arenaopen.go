package main

import (
	"fmt"

	"github.com/shmsketch/sketch"
)

// An arenaStruct is one structure opened from an arena, of any kind, with
// the few calls the arena part makes: adds of several forms and the one
// question each kind promises never to answer low.
type arenaStruct struct {
	cm  *sketch.CountMin
	bf  *sketch.Bloom
	cbf *sketch.CountingBloom
	cmw *sketch.CountMinWindow
	bw  *sketch.BloomWindow
}

// open asks the arena for name with the spec: it creates the structure or
// attaches to it.
func (s structSpec) open(a *sketch.Arena, name string) (*arenaStruct, error) {
	o := &arenaStruct{}
	var err error
	cm := sketch.CountMinConfig{Rows: s.Rows, Width: s.Width}
	bf := sketch.BloomConfig{Capacity: s.Capacity, FPRate: s.FPRate}
	w := sketch.Window{Period: 0, Keep: s.Keep}
	switch s.Kind {
	case sketch.KindCountMin:
		o.cm, err = sketch.OpenCountMin(a.Place(name), cm)
	case sketch.KindBloom:
		o.bf, err = sketch.OpenBloom(a.Place(name), bf)
	case sketch.KindCountingBloom:
		o.cbf, err = sketch.OpenCountingBloom(a.Place(name), sketch.CountingBloomConfig{Capacity: s.Capacity, FPRate: s.FPRate})
	case sketch.KindCountMinWindow:
		o.cmw, err = sketch.OpenCountMinWindow(a.Place(name), sketch.CountMinWindowConfig{Window: w, CountMin: cm})
	case sketch.KindBloomWindow:
		o.bw, err = sketch.OpenBloomWindow(a.Place(name), sketch.BloomWindowConfig{Window: w, Bloom: bf})
	default:
		err = fmt.Errorf("unknown kind %q", s.Kind)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// counts reports whether the kind counts (Count-Min, Count-Min window): its
// record adds weights. The filters' records mark a key once.
func countsKind(k sketch.Kind) bool {
	return k == sketch.KindCountMin || k == sketch.KindCountMinWindow
}

// addN adds key n times (weight n for the counting kinds, one add for the
// filters).
func (o *arenaStruct) addN(key []byte, n uint64) error {
	var err error
	switch {
	case o.cm != nil:
		_, err = o.cm.AddN(key, n)
	case o.cmw != nil:
		_, err = o.cmw.AddN(key, n)
	case o.bf != nil:
		_, err = o.bf.Add(key)
	case o.cbf != nil:
		_, err = o.cbf.Add(key)
	case o.bw != nil:
		_, err = o.bw.Add(key)
	}
	return err
}

// addBatch adds every key once, in the kind's batch call.
func (o *arenaStruct) addBatch(keys [][]byte) error {
	var err error
	switch {
	case o.cm != nil:
		err = o.cm.AddBatch(keys, nil)
	case o.cmw != nil:
		err = o.cmw.AddBatch(keys, nil)
	case o.bf != nil:
		err = o.bf.AddBatch(keys, nil)
	case o.cbf != nil:
		err = o.cbf.AddBatch(keys, nil)
	case o.bw != nil:
		err = o.bw.AddBatch(keys, nil)
	}
	return err
}

// ask is the answer the kind promises never to give low: a Count-Min
// estimate, or 1 for a filter's "maybe present" and 0 for "absent".
func (o *arenaStruct) ask(key []byte) uint64 {
	hit := false
	switch {
	case o.cm != nil:
		return o.cm.Estimate(key)
	case o.cmw != nil:
		return o.cmw.Estimate(key)
	case o.bf != nil:
		hit = o.bf.Contains(key)
	case o.cbf != nil:
		hit = o.cbf.Contains(key)
	case o.bw != nil:
		hit = o.bw.Contains(key)
	}
	if hit {
		return 1
	}
	return 0
}

func (o *arenaStruct) close() {
	switch {
	case o.cm != nil:
		o.cm.Close()
	case o.cmw != nil:
		o.cmw.Close()
	case o.bf != nil:
		o.bf.Close()
	case o.cbf != nil:
		o.cbf.Close()
	case o.bw != nil:
		o.bw.Close()
	}
}

// keysPerName is how many keys the workers add to each structure;
// arenaControlKeys more per name are never added, for the negative control.
const (
	keysPerName      = 8
	arenaControlKeys = 4
)

// nameKeys are the keys of one name: the real ones, then the control ones.
func nameKeys(name string) [][]byte {
	keys := make([][]byte, 0, keysPerName+arenaControlKeys)
	for i := range keysPerName {
		keys = append(keys, fmt.Appendf(nil, "%s/k%d", name, i))
	}
	for i := range arenaControlKeys {
		keys = append(keys, fmt.Appendf(nil, "%s/never%d", name, i))
	}
	return keys
}
