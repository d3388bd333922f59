//go:build linux

package sketch

// The Bloom window's part in the process tests of the windows
// (window_suite_test.go): its child adder, which checks that it finds its
// own keys, and the truth its keys give the parent, which the distinct
// window's adder (childDistinctWinKeys) gives too.

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/shmsketch/sketch/internal/cells"
)

// bwinProcCfg holds every key the children add in a period with room to
// spare.
var bwinProcCfg = BloomConfig{Capacity: 50_000, FPRate: 0.01, Seed: 0xb1b1}

func bwinProcKey(child string, i int) []byte { return []byte(fmt.Sprintf("c%s-%d", child, i)) }

var _ = role("bwinadd", childBloomWinAdd)

// childBloomWinAdd adds its own keys, c<child>-0, -1, …, until told to stop:
// mostly one by one, every 50th step a batch of 16. After each add it
// checks the key, and every 50 adds 20 random keys of its own: a key
// whose period is in the window the check covers must be found. Then it
// prints which period each run of keys went to, as "ref PERIOD FIRST
// LAST" lines. A batch is recorded under the period current before it,
// no later than the one it went to: a window that covers that one covers
// the batch's.
func childBloomWinAdd() error { return inChildWindow(bloomWindowKind, bloomWinAdd) }

// bloomWinAdd is childBloomWinAdd's work, as child me, on its window.
func bloomWinAdd(tw testWindow, me string) error {
	w := tw.(bloomWindow).BloomWindow
	r := rand.New(rand.NewPCG(uint64(envInt(envChild)), 1))
	var period []uint64 // key i went to period[i] (or later)
	mustFind := func(i int) error {
		lo, hi := cells.Hash(bwinProcKey(me, i), w.slots[0].Seed)
		found, p := w.lookup(lo, hi)
		if q := period[i]; !found && q >= w.ctl.first(p) && q <= p {
			return fmt.Errorf("%s: Check(%q) = false at period %d; it was added in period %d", Backend, bwinProcKey(me, i), p, q)
		}
		return nil
	}
	batch := make([][]byte, 16)
	stop := newWinStop()
	for step := 0; !stop.now(step); step++ {
		if step%50 == 49 {
			before := w.Current()
			for j := range batch {
				batch[j] = bwinProcKey(me, len(period))
				period = append(period, before)
			}
			if err := w.AddBatch(batch, nil); err != nil {
				return err
			}
			for i := len(period) - len(batch); i < len(period); i++ {
				if err := mustFind(i); err != nil {
					return err
				}
			}
			for range 20 {
				if err := mustFind(r.IntN(len(period))); err != nil {
					return err
				}
			}
			time.Sleep(time.Millisecond)
			continue
		}
		lo, hi := cells.Hash(bwinProcKey(me, len(period)), w.slots[0].Seed)
		_, addP, err := w.add(lo, hi)
		if err != nil {
			return err
		}
		period = append(period, addP)
		if err := mustFind(len(period) - 1); err != nil {
			return err
		}
	}
	printRefs(period)
	return nil
}

// printRefs prints which period each run of keys went to, key i to
// period[i], as "ref PERIOD FIRST LAST" lines.
func printRefs(period []uint64) {
	for i := 0; i < len(period); {
		j := i
		for j+1 < len(period) && period[j+1] == period[i] {
			j++
		}
		fmt.Printf("ref %d %d %d\n", period[i], i, j)
		i = j + 1
	}
}

// bwinRefs is what the children printed: per period, the keys added in
// it.
type bwinRefs map[uint64][]string

func readBwinRefs(t *testing.T, hs []*helper) (bwinRefs, int) {
	t.Helper()
	refs, n := bwinRefs{}, 0
	scanRefs(t, hs, func(c int, f []string) error {
		p, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return err
		}
		first, err := strconv.Atoi(f[1])
		if err != nil {
			return err
		}
		last, err := strconv.Atoi(f[2])
		if err != nil {
			return err
		}
		for i := first; i <= last; i++ {
			refs[p] = append(refs[p], string(bwinProcKey(strconv.Itoa(c), i)))
			n++
		}
		return nil
	})
	return refs, n
}

// checkRefsTruth checks that every key the children added in a period of
// the window tw covers now is found, and returns how many it checked.
func checkRefsTruth(t *testing.T, tw testWindow, refs bwinRefs) int {
	t.Helper()
	ctl := &tw.base().ctl
	checked := 0
	for q, keys := range refs {
		for _, k := range keys {
			found, p := tw.countAt([]byte(k))
			if q < ctl.first(p) || q > p {
				continue
			}
			checked++
			if found == 0 {
				t.Errorf("%s: %q not found at period %d; a child added it in period %d", tw.handle(), k, p, q)
			}
		}
	}
	return checked
}

// refsTruth checks that every key the children added in a period the
// window covers now is found (the Bloom window's Contains, the distinct
// window's register: countAt); when the window no longer turns, that
// these are all the keys of its periods, and some.
func refsTruth(t *testing.T, tw testWindow, hs []*helper, still bool) {
	t.Helper()
	refs, n := readBwinRefs(t, hs)
	checked := checkRefsTruth(t, tw, refs)
	t.Logf("%d keys added in %d periods, %d of them in the window at the end", n, len(refs), checked)
	if !still {
		return
	}
	ctl := &tw.base().ctl
	p := tw.Current()
	want := 0
	for q := ctl.first(p); q <= p; q++ {
		want += len(refs[q])
	}
	if checked != want || checked == 0 {
		t.Errorf("checked %d keys of periods %d..%d, want all %d (and some)", checked, ctl.first(p), p, want)
	}
}
