package main

import (
	"fmt"

	"github.com/shmsketch/sketch"
)

// An arenaStruct is one structure opened from an arena, of any kind, with
// the few calls the arena part makes: adds of several forms and the one
// question each kind promises never to answer low.
type arenaStruct struct{ h any }

// open asks the arena for name with the spec: it creates the structure or
// attaches to it.
func (s structSpec) open(a *sketch.Arena, name string) (*arenaStruct, error) {
	k := structKindOf(s.Kind)
	if k == nil {
		return nil, fmt.Errorf("unknown kind %q", s.Kind)
	}
	h, err := k.open(a.Place(name), s.config())
	if err != nil {
		return nil, err
	}
	return &arenaStruct{h}, nil
}

// countsKind reports whether the kind counts (its row's arena part says
// so): its record adds weights. The filters' records mark a key once.
func countsKind(k sketch.Kind) bool {
	a := arenaPart(k)
	return a != nil && a.counts
}

// addN adds key n times (weight n for the counting kinds, one add for the
// filters).
func (o *arenaStruct) addN(key []byte, n uint64) error {
	if c, ok := o.h.(counter); ok {
		_, err := c.AddN(key, n)
		return err
	}
	if c, ok := o.h.(*sketch.Counters); ok {
		return c.Add(counterFor(c, key), n)
	}
	return addsOf(o.h).add(key)
}

// addBatch adds every key once, in the kind's batch call.
func (o *arenaStruct) addBatch(keys [][]byte) error { return addsOf(o.h).addBatch(keys) }

// ask is the answer the kind promises never to give low.
func (o *arenaStruct) ask(key []byte) uint64 { return ask(o.h, key) }

func (o *arenaStruct) close() { o.h.(handle).Close() }

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
