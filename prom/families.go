package prom

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmsketch/sketch"
)

// family is one metric name, its help and its type.
type family struct {
	name, help string
	typ        prometheus.ValueType
	// extra are labels beside the structure's own (a heavy hitter's
	// rank and key).
	extra []string
}

// The families of a structure, labelled with its name and kind. Counters
// go back to zero when a structure is reset; rate() takes that for a
// restart.
var (
	fAdds = &family{"sketch_adds_total",
		"Adds that returned, in every process since the last reset (a Count-Min sketch's counts, n for AddN; a Bloom or counting Bloom filter's keys); a window's since it was made, periods that left it included.", prometheus.CounterValue, nil}
	fChanges = &family{"sketch_distinct_changes_total",
		"A distinct window's adds that raised a register, in every process since it was made: not its adds, which it does not count.", prometheus.CounterValue, nil}
	fAddsPresent = &family{"sketch_adds_present_total",
		"A Bloom filter's adds that found the key probably present already (every bit set): repeats, or false positives.", prometheus.CounterValue, nil}
	fCounted = &family{"sketch_counted",
		"Everything counted that estimates answer for: a Count-Min sketch's total since its reset, a window's over the periods it covers.", prometheus.GaugeValue, nil}
	fFleetCounted = &family{"sketch_fleet_counted",
		"A Count-Min sketch's fleet part (created with Fleet): the largest row sum of the rest of the fleet's counts, as the fleet's agent last stored them; estimates add it to this host's.", prometheus.GaugeValue, nil}
	fLanes = &family{"sketch_countmin_lanes",
		"A Count-Min sketch's or window's lanes (created with Lanes; a window keeps them in every slot): grids a writer each, which every read sums.", prometheus.GaugeValue, nil}
	fErrorBound = &family{"sketch_error_bound",
		"The absolute error bound at the counted total: an estimate is at most this much high, with the sketch's confidence.", prometheus.GaugeValue, nil}
	fFill = &family{"sketch_fill_ratio",
		"A filter's bits or counters set over all of them (a Bloom window's current period): near 0.5 at capacity for a Bloom filter; an exact set's keys held over its capacity (a set window's expired ones included), at 1 of which a new key is refused.", prometheus.GaugeValue, nil}
	fItems = &family{"sketch_estimated_items",
		"Distinct keys a filter holds, estimated from its fill (a Bloom window's current period).", prometheus.GaugeValue, nil}
	fFalsePositive = &family{"sketch_false_positive_ratio",
		"A Bloom window's modelled rate of finding a key never added, over the periods it covers.", prometheus.GaugeValue, nil}
	fCurrent = &family{"sketch_window_current_period",
		"The period a window's adds go to now.", prometheus.GaugeValue, nil}
	fOldest = &family{"sketch_window_oldest_period",
		"The oldest period a window's answers cover.", prometheus.GaugeValue, nil}
	fRotations = &family{"sketch_window_rotations_total",
		"Times a window's period turned, by Rotate or by the clock, in every process (a clock turn counted when a process first uses a later period).", prometheus.CounterValue, nil}
	fBytes = &family{"sketch_bytes",
		"Bytes of the structure's file, or of its region in an arena.", prometheus.GaugeValue, nil}
	fFrozen = &family{"sketch_frozen",
		"1 once the structure's file is sealed (Freeze), else 0.", prometheus.GaugeValue, nil}
	fDistinct = &family{"sketch_distinct_estimate",
		"A distinct count's estimate of the distinct keys added since its reset (a distinct window's: in the periods it covers). Per host: summed over hosts, a key two hosts saw counts twice; count a fleet with a union of registers (ExportRedis, then PFCOUNT).", prometheus.GaugeValue, nil}
	fDistinctError = &family{"sketch_distinct_relative_standard_error",
		"A distinct count's relative standard error, 1.04/sqrt(registers).", prometheus.GaugeValue, nil}
	fCandidatesHeld = &family{"sketch_candidates_held",
		"Keys a Count-Min sketch's or window's candidate table holds.", prometheus.GaugeValue, nil}
	fAdmissions = &family{"sketch_candidate_admissions_total",
		"Keys taken into a candidate table, each under the file's write lock, in every process.", prometheus.CounterValue, nil}
	// A counters structure's counters, one series a name: at most 1024
	// a structure, fixed when it is created.
	fCounter = &family{"sketch_counts_total",
		"A counters structure's counter, by its name: every add that returned, in every process, since the structure's reset; it wraps at 2^64.", prometheus.CounterValue, []string{"name"}}
	// An exact set's and set window's.
	fSetKeys = &family{"sketch_set_keys",
		"Keys an exact set holds (a set window's: of the periods it covers).", prometheus.GaugeValue, nil}
	fSetHeld = &family{"sketch_set_held_keys",
		"Keys a set window's table holds, expired ones included: they take room until an add that finds the set full sweeps them out.", prometheus.GaugeValue, nil}
	fSetCapacity = &family{"sketch_set_capacity",
		"The most keys an exact set holds at once: an add of a new key past it is refused, nothing is evicted.", prometheus.GaugeValue, nil}
	fSetTombstones = &family{"sketch_set_tombstones",
		"An exact set's slots of removed keys, reused by adds; past a quarter of the slots, the next remove compacts the table.", prometheus.GaugeValue, nil}
	fSetLongestRun = &family{"sketch_set_longest_run_slots",
		"An exact set's longest run of slots that are not empty: the most slots a lookup reads.", prometheus.GaugeValue, nil}
	fSetAdds = &family{"sketch_set_adds_total",
		"Adds of a key an exact set did not hold, in every process since it was made (a process killed in one may leave it uncounted).", prometheus.CounterValue, nil}
	fSetRemoves = &family{"sketch_set_removes_total",
		"Removes of a key an exact set held, in every process since it was made.", prometheus.CounterValue, nil}
	// The loudest keys of a candidate table: at most candidatesLoudest a
	// structure, so the label set stays bounded (keys come and go).
	fHeavy = &family{"sketch_heavy_hitter_estimate",
		"A loud key's estimate now (never below its count), by its rank in the candidate table, at most the 10 loudest.", prometheus.GaugeValue, []string{"rank", "key"}}
	fDecisions = &family{"sketch_rate_limit_decisions_total",
		"A rate limiter's decisions of a cost above 0, in every process since the last reset, by outcome: allowed (counted) or refused.", prometheus.CounterValue, []string{"outcome"}}
	fAllowedCost = &family{"sketch_rate_limit_allowed_cost_total",
		"What a rate limiter's allowed decisions cost, summed, in every process since the last reset (their count for requests of cost 1).", prometheus.CounterValue, nil}
	fBusyCells = &family{"sketch_rate_limit_busy_cells",
		"A rate limiter's cells that hold a time in the future: keys that would not be allowed their whole burst now.", prometheus.GaugeValue, nil}
	fBusyRatio = &family{"sketch_rate_limit_busy_ratio",
		"A rate limiter's busy cells over all of them: past about 1 - 0.5^(1/rows), keys often look busier than they are.", prometheus.GaugeValue, nil}
	fRateLimit = &family{"sketch_rate_limit_requests_per_second",
		"A rate limiter's rate: the requests of cost 1 a key is allowed a second in the long run.", prometheus.GaugeValue, nil}
	fBurst = &family{"sketch_rate_limit_burst",
		"A rate limiter's burst: a key that was idle is allowed burst+1 requests of cost 1 at once.", prometheus.GaugeValue, nil}
)

// structureFamilies are every family samples may return, for Describe.
var structureFamilies = []*family{fAdds, fChanges, fAddsPresent, fCounted, fFleetCounted, fLanes, fErrorBound, fFill, fItems, fFalsePositive, fCurrent, fOldest, fRotations, fBytes, fFrozen, fCandidatesHeld, fAdmissions, fHeavy, fDistinct, fDistinctError, fDecisions, fAllowedCost, fBusyCells, fBusyRatio, fRateLimit, fBurst, fCounter,
	fSetKeys, fSetHeld, fSetCapacity, fSetTombstones, fSetLongestRun, fSetAdds, fSetRemoves}

// The families of an arena and of its file's lock, without labels.
var (
	fArenaBytes = &family{"sketch_arena_bytes",
		"Bytes of the arena's file.", prometheus.GaugeValue, nil}
	fArenaUsed = &family{"sketch_arena_used_bytes",
		"Bytes of the arena's file in use: header, directory and structures.", prometheus.GaugeValue, nil}
	fArenaFree = &family{"sketch_arena_free_bytes",
		"Bytes of the arena's file left for new structures.", prometheus.GaugeValue, nil}
	fArenaStructures = &family{"sketch_arena_structures",
		"Structures in the arena.", prometheus.GaugeValue, nil}
	fArenaMax = &family{"sketch_arena_max_structures",
		"The most structures the arena's directory holds.", prometheus.GaugeValue, nil}
	fLockWriter = &family{"sketch_lock_writer",
		"1 while a writer holds the file's lock or waits for its readers, else 0.", prometheus.GaugeValue, nil}
	fLockWriterDead = &family{"sketch_lock_writer_dead",
		"1 while the lock is held by a writer whose handle is gone (the next contender recovers it within about 10 ms), else 0.", prometheus.GaugeValue, nil}
	fLockReaders = &family{"sketch_lock_readers",
		"Read locks held on the file, in every process.", prometheus.GaugeValue, nil}
	fLockDeadReaders = &family{"sketch_lock_dead_reader_slots",
		"Reader slots of the lock held by handles that are gone (the next writer clears them).", prometheus.GaugeValue, nil}
	fLockHandles = &family{"sketch_lock_handles",
		"Read-write handles on the file that hold a lock token, in every process.", prometheus.GaugeValue, nil}
)

var arenaFamilies = []*family{fArenaBytes, fArenaUsed, fArenaFree, fArenaStructures, fArenaMax, fLockWriter, fLockWriterDead, fLockReaders, fLockDeadReaders, fLockHandles}

// Stats is every kind's Stats type that the collectors export: a
// structure's Stats method is the function NewCollector takes.
type Stats interface {
	sketch.CountMinStats | sketch.BloomStats | sketch.CountingBloomStats | sketch.CountMinWindowStats | sketch.BloomWindowStats | sketch.DistinctStats | sketch.DistinctWindowStats | sketch.GCRAStats | sketch.CountersStats | sketch.SetStats | sketch.SetWindowStats
}

// sample is one value of a structure.
type sample struct {
	f  *family
	v  float64
	lv []string // the values of f.extra
	// hit is a loud key's, whose key label (the last of f.extra, not
	// in lv) the collector's options make.
	hit *sketch.HeavyHitter
}

// samplesOf returns the kind a Stats value describes and its samples, or
// false for a value that is no kind's Stats. A new kind is one case here
// and one type in Stats.
func samplesOf(stats any) (sketch.Kind, []sample, bool) {
	switch s := stats.(type) {
	case sketch.CountMinStats:
		out := append(append(fileSamples(s.FileStats),
			sample{f: fAdds, v: float64(s.Adds)},
			sample{f: fCounted, v: float64(s.Total)},
			sample{f: fErrorBound, v: float64(s.ErrorBound)}), candidateSamples(s.Candidates)...)
		if s.Fleet {
			out = append(out, sample{f: fFleetCounted, v: float64(s.FleetTotal)})
		}
		if s.Lanes > 1 {
			out = append(out, sample{f: fLanes, v: float64(s.Lanes)})
		}
		return sketch.KindCountMin, out, true
	case sketch.BloomStats:
		return sketch.KindBloom, append(fileSamples(s.FileStats),
			sample{f: fAdds, v: float64(s.Adds)},
			sample{f: fAddsPresent, v: float64(s.AddsPresent)},
			sample{f: fFill, v: s.Fill},
			sample{f: fItems, v: s.Estimated}), true
	case sketch.CountingBloomStats:
		return sketch.KindCountingBloom, append(fileSamples(s.FileStats),
			sample{f: fAdds, v: float64(s.Adds)},
			sample{f: fFill, v: s.Fill},
			sample{f: fItems, v: s.Estimated}), true
	case sketch.CountMinWindowStats:
		out := append(append(fileSamples(s.FileStats),
			sample{f: fAdds, v: float64(s.Adds)},
			sample{f: fCounted, v: float64(s.Total)},
			sample{f: fErrorBound, v: float64(s.ErrorBound)},
			sample{f: fCurrent, v: float64(s.Current)},
			sample{f: fOldest, v: float64(s.Oldest)},
			sample{f: fRotations, v: float64(s.Turns)}), candidateSamples(s.Candidates)...)
		if s.Lanes > 1 {
			out = append(out, sample{f: fLanes, v: float64(s.Lanes)})
		}
		return sketch.KindCountMinWindow, out, true
	case sketch.BloomWindowStats:
		out := append(fileSamples(s.FileStats),
			sample{f: fAdds, v: float64(s.Adds)},
			sample{f: fFalsePositive, v: s.FPRateNow},
			sample{f: fCurrent, v: float64(s.Current)},
			sample{f: fOldest, v: float64(s.Oldest)},
			sample{f: fRotations, v: float64(s.Turns)})
		// No slot holds the current period before its first add: it is
		// empty then.
		fill, items := 0.0, 0.0
		for _, slot := range s.Slots {
			if slot.State == "current" && slot.Period == s.Current {
				fill, items = slot.Fill, slot.Estimated
			}
		}
		return sketch.KindBloomWindow, append(out, sample{f: fFill, v: fill}, sample{f: fItems, v: items}), true
	case sketch.DistinctStats:
		return sketch.KindDistinct, append(fileSamples(s.FileStats),
			sample{f: fDistinct, v: s.Estimate},
			sample{f: fDistinctError, v: s.StdError}), true
	case sketch.DistinctWindowStats:
		return sketch.KindDistinctWindow, append(fileSamples(s.FileStats),
			sample{f: fChanges, v: float64(s.RegisterChanges)},
			sample{f: fDistinct, v: s.Estimate},
			sample{f: fDistinctError, v: s.StdError},
			sample{f: fCurrent, v: float64(s.Current)},
			sample{f: fOldest, v: float64(s.Oldest)},
			sample{f: fRotations, v: float64(s.Turns)}), true
	case sketch.GCRAStats:
		return sketch.KindGCRA, append(fileSamples(s.FileStats),
			sample{f: fDecisions, v: float64(s.Allowed), lv: []string{"allowed"}},
			sample{f: fDecisions, v: float64(s.Refused), lv: []string{"refused"}},
			sample{f: fAllowedCost, v: float64(s.Cost)},
			sample{f: fBusyCells, v: float64(s.Busy)},
			sample{f: fBusyRatio, v: s.BusyRate},
			sample{f: fRateLimit, v: perSecond(s.Rate)},
			sample{f: fBurst, v: float64(s.Burst)}), true
	case sketch.CountersStats:
		out := fileSamples(s.FileStats)
		for _, c := range s.Counters {
			out = append(out, sample{f: fCounter, v: float64(c.Value), lv: []string{labelValue(c.Name)}})
		}
		return sketch.KindCounters, out, true
	case sketch.SetStats:
		return sketch.KindSet, append(append(fileSamples(s.FileStats), sample{f: fSetKeys, v: float64(s.Live)}),
			setSamples(s.Capacity, s.Fill, s.Tombstones, s.LongestRun, s.Adds, s.Removes)...), true
	case sketch.SetWindowStats:
		out := append(fileSamples(s.FileStats),
			sample{f: fSetKeys, v: float64(s.Live)},
			sample{f: fSetHeld, v: float64(s.Held)},
			sample{f: fCurrent, v: float64(s.Current)},
			sample{f: fOldest, v: float64(s.Oldest)},
			sample{f: fRotations, v: float64(s.Turns)})
		return sketch.KindSetWindow, append(out, setSamples(s.Capacity, s.Fill, s.Tombstones, s.LongestRun, s.Adds, s.Removes)...), true
	}
	return "", nil, false
}

// setSamples are what a set and a set window report alike.
func setSamples(capacity uint64, fill float64, tombstones, run, adds, removes uint64) []sample {
	return []sample{
		{f: fSetCapacity, v: float64(capacity)},
		{f: fFill, v: fill},
		{f: fSetTombstones, v: float64(tombstones)},
		{f: fSetLongestRun, v: float64(run)},
		{f: fSetAdds, v: float64(adds)},
		{f: fSetRemoves, v: float64(removes)},
	}
}

// candidateSamples are a candidate table's, and its loudest keys'.
func candidateSamples(c *sketch.CandidateStats) []sample {
	if c == nil {
		return nil
	}
	out := []sample{{f: fCandidatesHeld, v: float64(c.Held)}, {f: fAdmissions, v: float64(c.Admissions)}}
	for i := range c.Loudest {
		out = append(out, sample{f: fHeavy, v: float64(c.Loudest[i].Estimate), lv: []string{strconv.Itoa(i + 1)}, hit: &c.Loudest[i]})
	}
	return out
}

// fileSamples are what every kind reports of its file.
func fileSamples(fs sketch.FileStats) []sample {
	return []sample{{f: fBytes, v: float64(fs.Bytes)}, {f: fFrozen, v: boolValue(fs.Frozen)}}
}

// arenaSamples are an arena's, and its lock's when it was read.
func arenaSamples(s sketch.ArenaMetricsStats) []sample {
	out := []sample{
		{f: fArenaBytes, v: float64(s.Arena.Bytes)},
		{f: fArenaUsed, v: float64(s.Arena.Used)},
		{f: fArenaFree, v: float64(s.Arena.Free)},
		{f: fArenaStructures, v: float64(s.Arena.Entries)},
		{f: fArenaMax, v: float64(s.Arena.Capacity)},
	}
	if l := s.Lock; l != nil {
		out = append(out,
			sample{f: fLockWriter, v: boolValue(l.Writer)},
			sample{f: fLockWriterDead, v: boolValue(l.Writer && !l.WriterAlive)},
			sample{f: fLockReaders, v: float64(l.Readers)},
			sample{f: fLockDeadReaders, v: float64(l.DeadReaderSlots)},
			sample{f: fLockHandles, v: float64(l.Handles)})
	}
	return out
}

// perSecond is a rate in requests a second, 0 for the zero rate (a
// closed limiter's Stats keep its rate).
func perSecond(r sketch.Rate) float64 {
	if r.Per <= 0 {
		return 0
	}
	return float64(r.Count) / r.Per.Seconds()
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
