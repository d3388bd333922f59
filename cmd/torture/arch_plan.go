package main

import "fmt"

// The shared-file run of the arch part: every process walks a plan of
// steps fixed by who it is, so that the adds of its first n steps are known
// without a record per key. A round goes through every structure in turn
// (archOps), and through each in chunks of archChunk keys: the process's
// own keys first, then the keys every process adds. The record holds only
// the number of steps that returned.
const (
	archOwnKeys    = 192 // keys of one process only
	archSharedKeys = 64  // keys every process adds
	archPlanKeys   = archOwnKeys + archSharedKeys
	archChunk      = 16
	archChunks     = (archPlanKeys + archChunk - 1) / archChunk
)

// The operations of a round, one structure each; a step is one chunk of one
// of them.
const (
	opCountMinBatch  = iota // CountMin.AddBatch: +1 each
	opCountMinSingle        // CountMin.AddN, key by key: +archWeight(u) each
	opBloomBatch            // Bloom.AddBatch
	opCountingBloom         // CountingBloom.AddBatch: +1 each
	opCountMinWindow        // CountMinWindow.AddBatch: +1 each
	opBloomWindow           // BloomWindow.AddBatch
	archOps

	archStepsPerRound = archOps * archChunks
)

// archKey is the bytes of plan key u of process who: its own below
// archOwnKeys, a shared one above.
func archKey(who, u int) []byte {
	if u < archOwnKeys {
		return fmt.Appendf(nil, "arch-own-%d-%03d", who, u)
	}
	return fmt.Appendf(nil, "arch-shared-%03d", u-archOwnKeys)
}

// archWeight is the weight opCountMinSingle adds to plan key u.
func archWeight(u int) uint64 { return 1 + uint64(u%5) }

// archStep is what step s of a plan does: an operation and the plan keys
// [lo, hi) of its chunk.
func archStep(s uint64) (op, lo, hi int) {
	i := int(s % archStepsPerRound)
	op, chunk := i/archChunks, i%archChunks
	lo = chunk * archChunk
	return op, lo, min(lo+archChunk, archPlanKeys)
}

// archCounts is what some steps of one plan add, per plan key: the
// Count-Min and Count-Min window weight, the counting Bloom adds, and
// whether a Bloom and a Bloom window add happened.
type archCounts struct {
	countMin, window, countingBloom [archPlanKeys]uint64
	bloom, bloomWindow              [archPlanKeys]bool
}

// addStep adds step s's adds to c.
func (c *archCounts) addStep(s uint64) {
	op, lo, hi := archStep(s)
	for u := lo; u < hi; u++ {
		switch op {
		case opCountMinBatch:
			c.countMin[u]++
		case opCountMinSingle:
			c.countMin[u] += archWeight(u)
		case opBloomBatch:
			c.bloom[u] = true
		case opCountingBloom:
			c.countingBloom[u]++
		case opCountMinWindow:
			c.window[u]++
		case opBloomWindow:
			c.bloomWindow[u] = true
		}
	}
}

// archStepsCounts is what the first n steps of a plan add: whole rounds at
// once, then the steps of the last round one by one.
func archStepsCounts(n uint64) archCounts {
	var c archCounts
	rounds := n / archStepsPerRound
	if rounds > 0 {
		for u := 0; u < archPlanKeys; u++ {
			c.countMin[u] = rounds * (1 + archWeight(u))
			c.countingBloom[u] = rounds
			c.window[u] = rounds
			c.bloom[u], c.bloomWindow[u] = true, true
		}
	}
	for s := rounds * archStepsPerRound; s < n; s++ {
		c.addStep(s)
	}
	return c
}

// archProcess is one process's part of a shared run: its identity, the
// steps its record says returned, and the steps that were in flight when
// one of its instances was killed.
type archProcess struct {
	Who      int
	Steps    uint64
	InFlight []uint64
}

// archKeyCounts are the counts of one key, over every process.
type archKeyCounts struct {
	countMin, window, countingBloom uint64
	bloom, bloomWindow              bool
}

// archExpect sums the processes' plans per key: low from the steps that
// returned, high adding the steps that were in flight at a kill.
func archExpect(procs []archProcess) (low, high map[string]archKeyCounts) {
	low, high = map[string]archKeyCounts{}, map[string]archKeyCounts{}
	add := func(m map[string]archKeyCounts, who int, c *archCounts) {
		for u := 0; u < archPlanKeys; u++ {
			k := string(archKey(who, u))
			e := m[k]
			e.countMin += c.countMin[u]
			e.window += c.window[u]
			e.countingBloom += c.countingBloom[u]
			e.bloom = e.bloom || c.bloom[u]
			e.bloomWindow = e.bloomWindow || c.bloomWindow[u]
			m[k] = e
		}
	}
	for _, p := range procs {
		c := archStepsCounts(p.Steps)
		add(low, p.Who, &c)
		add(high, p.Who, &c)
		for _, s := range p.InFlight {
			var f archCounts
			f.addStep(s)
			add(high, p.Who, &f)
		}
	}
	return low, high
}
