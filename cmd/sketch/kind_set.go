package main

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/shmsketch/sketch"
)

// setKind is the exact set's row of cliKinds: --capacity keys of at most
// --key-bytes bytes.
var setKind = cliKindOf(sketch.KindSet, []string{"capacity", "key-bytes"},
	sketch.OpenSet, newExactSet, createFlags.setConfig,
	func(f createFlags) error {
		if f.capacity == 0 {
			return usageError("an exact set needs --capacity, the most keys it holds at once")
		}
		return nil
	})

// setWindowKind is the exact set window's row of cliKinds.
var setWindowKind = cliKindOf(sketch.KindSetWindow, []string{"capacity", "key-bytes", "period", "keep"},
	sketch.OpenSetWindow, newExactSetWindow,
	func(f createFlags) sketch.SetWindowConfig {
		return sketch.SetWindowConfig{Window: f.window, Set: f.setConfig()}
	},
	func(f createFlags) error {
		if f.capacity == 0 || f.window.Keep == 0 {
			return usageError("an exact set window needs --capacity and --keep (and --period, or it turns only on sketch rotate)")
		}
		return nil
	})

// exactSetOps is what a set and a set window do alike: the library's
// add-if-absent, remove, lookup and listing.
type exactSetOps interface {
	Add(key []byte) (added bool, err error)
	Remove(key []byte) (removed bool, err error)
	Contains(key []byte) bool
	Keys() ([][]byte, error)
}

// keySet is how the exact kinds add, answer, take out and list: each
// answer is exact.
type keySet struct{ ops exactSetOps }

// add adds each key the set does not hold; a weight changes nothing, as
// a set holds a key once. A full set stops the batch (sketch.ErrFull).
func (s keySet) add(keys [][]byte, weights []uint64) error {
	for _, k := range keys {
		if _, err := s.ops.Add(k); err != nil {
			return err
		}
	}
	return nil
}

// addKey's answer says whether the key was new: of any number of
// processes adding one key at once, exactly one is told new.
func (s keySet) addKey(key []byte, n uint64) (answer, error) {
	added, err := s.ops.Add(key)
	if err != nil {
		return nil, err
	}
	return setAnswer{jsonKey: keyOf(string(key)), Present: true, New: &added}, nil
}

func (s keySet) query(keys [][]byte) []answer {
	out := make([]answer, len(keys))
	for i, k := range keys {
		out[i] = setAnswer{jsonKey: keyOf(string(k)), Present: s.ops.Contains(k)}
	}
	return out
}

// addOnce adds key unless the set holds it, and reports whether it did.
func (s keySet) addOnce(key []byte) (bool, error) { return s.ops.Add(key) }

// remove takes key out and reports whether the set held it.
func (s keySet) remove(key []byte) (bool, error) { return s.ops.Remove(key) }

// keys are the keys held (a window's: those of the periods it covers),
// in byte order.
func (s keySet) keys() ([][]byte, error) {
	ks, err := s.ops.Keys()
	sort.Slice(ks, func(i, j int) bool { return bytes.Compare(ks[i], ks[j]) < 0 })
	return ks, err
}

// setAnswer is whether an exact set holds a key: exact both ways. Add's
// answer says too whether the add was the key's first.
type setAnswer struct {
	jsonKey
	Present bool `json:"present"`
	// New is add's: the set did not hold the key before this add.
	New *bool `json:"new,omitempty"`
}

func (a setAnswer) text() string {
	switch {
	case a.New != nil && *a.New:
		return "new"
	case a.New != nil, a.Present:
		return "present"
	}
	return "absent"
}

func (a setAnswer) weight() uint64 {
	if a.Present {
		return 1
	}
	return 0
}

// exactSet is an exact set to the commands.
type exactSet struct {
	*sketch.Set
	keySet
}

func newExactSet(s *sketch.Set) structure { return &exactSet{s, keySet{s}} }

func (s *exactSet) kind() string { return string(sketch.KindSet) }

func (s *exactSet) describe() string {
	cfg := s.Config()
	return fmt.Sprintf("set of up to %s of up to %d bytes", plural(cfg.Capacity, "key", "keys"), cfg.KeyBytes)
}

// setRows are the rows a set and a set window share.
func setRows(capacity uint64, keyBytes int, slots, tombstones, run, adds, removes uint64) [][2]string {
	return [][2]string{
		{"capacity", fmt.Sprintf("%s (an add of a new key past it is refused: nothing is evicted)", plural(capacity, "key", "keys"))},
		{"key bytes", fmt.Sprintf("%d (a longer key is refused)", keyBytes)},
		{"slots", fmt.Sprint(slots)},
		{"tombstones", fmt.Sprintf("%d (removed keys' slots, reused by adds)", tombstones)},
		{"longest run", fmt.Sprintf("%d (slots a lookup reads at most)", run)},
		{"adds", fmt.Sprintf("%d (new keys since made)", adds)},
		{"removes", fmt.Sprint(removes)},
	}
}

func (s *exactSet) stats() ([][2]string, any) {
	st := s.Stats()
	rows := [][2]string{
		{"kind", "exact set (each key held once, answers exact both ways)"},
		{"keys", fmt.Sprint(st.Live)},
		{"fill", percent(st.Fill) + " of capacity"},
	}
	rows = append(rows, setRows(st.Capacity, st.KeyBytes, st.Slots, st.Tombstones, st.LongestRun, st.Adds, st.Removes)...)
	rows = append(rows, [2]string{"bytes", fmt.Sprint(st.Bytes)}, [2]string{"frozen", yesNo(st.Frozen)})
	return rows, st
}

func (s *exactSet) summary() string {
	st := s.Stats()
	return fmt.Sprintf("%s of %d, fill %s", plural(st.Live, "key", "keys"), st.Capacity, percent(st.Fill))
}

// sample's total is the keys held, which drops as keys are removed.
func (s *exactSet) sample() sample {
	st := s.Stats()
	return sample{Total: st.Live, Fill: &st.Fill, Frozen: st.Frozen, what: "keys"}
}

func (s *exactSet) merge(src structure) error {
	o, ok := src.(*exactSet)
	if !ok {
		return fmt.Errorf("cannot merge a %s into a set", src.describe())
	}
	return s.Merge(o.Set)
}

// exactSetWindow is an exact set window to the commands: its keys leave
// with their period.
type exactSetWindow struct {
	*sketch.SetWindow
	keySet
	window
}

func newExactSetWindow(w *sketch.SetWindow) structure {
	return &exactSetWindow{w, keySet{w}, window{"set window"}}
}

func (s *exactSetWindow) kind() string { return string(sketch.KindSetWindow) }

func (s *exactSetWindow) describe() string {
	cfg := s.Config()
	return fmt.Sprintf("set window of up to %s of up to %d bytes, %s", plural(cfg.Set.Capacity, "key", "keys"), cfg.Set.KeyBytes, windowText(cfg.Window))
}

func (s *exactSetWindow) state() (sketch.SetWindowStats, windowState) {
	st := s.Stats()
	return st, windowState{sketch.Window{Period: st.Period, Keep: st.Keep}, st.Oldest, st.Current, st.Rotations, st.Turns, st.Adds, "adds since made", st.Bytes, st.Frozen}
}

func (s *exactSetWindow) stats() ([][2]string, any) {
	st, ws := s.state()
	shape := setRows(st.Capacity, st.KeyBytes, st.Slots, st.Tombstones, st.LongestRun, st.Adds, st.Removes)
	figures := [][2]string{
		{"keys", fmt.Sprintf("%d (of the periods covered)", st.Live)},
		{"held", fmt.Sprintf("%d (expired ones too, until an add that finds the set full sweeps them out)", st.Held)},
		{"fill", percent(st.Fill) + " of capacity (held)"},
	}
	return s.rows(ws, shape, figures, nil), st
}

func (s *exactSetWindow) summary() string {
	st, ws := s.state()
	return ws.summary(fmt.Sprintf("%s of %d, fill %s", plural(st.Live, "key", "keys"), st.Capacity, percent(st.Fill)))
}

// sample's total is the keys of the periods covered; its rate is of the
// adds since made, which only grow.
func (s *exactSetWindow) sample() sample {
	st := s.Stats()
	return windowSample(sample{Total: st.Live, Adds: &st.Adds, Fill: &st.Fill, Frozen: st.Frozen, what: "keys"}, st.Oldest, st.Current, periodClock{st.Period, st.Rotations})
}
