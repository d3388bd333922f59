package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shmsketch/sketch"
)

// family is one metric name, its help and its type.
type family struct {
	name, help string
	typ        prometheus.ValueType
}

// The families of a structure, labelled with its name and kind. Counters
// go back to zero when a structure is reset; rate() takes that for a
// restart.
var (
	fAdds = &family{"sketch_adds_total",
		"Adds that returned, in every process since the last reset (a Count-Min sketch's counts, n for AddN; a Bloom filter's keys).", prometheus.CounterValue}
	fAddsPresent = &family{"sketch_adds_present_total",
		"A Bloom filter's adds that found the key probably present already (every bit set): repeats, or false positives.", prometheus.CounterValue}
	fWrites = &family{"sketch_writes_total",
		"A counting Bloom filter's write calls (adds, removes, resets, merges), in every process.", prometheus.CounterValue}
	fCounted = &family{"sketch_counted",
		"Everything counted that estimates answer for: a Count-Min sketch's total since its reset, a window's over the periods it covers.", prometheus.GaugeValue}
	fErrorBound = &family{"sketch_error_bound",
		"The absolute error bound at the counted total: an estimate is at most this much high, with the sketch's confidence.", prometheus.GaugeValue}
	fFill = &family{"sketch_fill_ratio",
		"A filter's bits or counters set over all of them (a Bloom window's current period): near 0.5 at capacity for a Bloom filter.", prometheus.GaugeValue}
	fItems = &family{"sketch_estimated_items",
		"Distinct keys a filter holds, estimated from its fill (a Bloom window's current period).", prometheus.GaugeValue}
	fFalsePositive = &family{"sketch_false_positive_ratio",
		"A Bloom window's modelled rate of finding a key never added, over the periods it covers.", prometheus.GaugeValue}
	fCurrent = &family{"sketch_window_current_period",
		"The period a window's adds go to now.", prometheus.GaugeValue}
	fOldest = &family{"sketch_window_oldest_period",
		"The oldest period a window's answers cover.", prometheus.GaugeValue}
	fRotations = &family{"sketch_window_rotations_total",
		"Times Rotate turned a window's period, in every process.", prometheus.CounterValue}
	fBytes = &family{"sketch_bytes",
		"Bytes of the structure's file, or of its region in an arena.", prometheus.GaugeValue}
	fFrozen = &family{"sketch_frozen",
		"1 once the structure's file is sealed (Freeze), else 0.", prometheus.GaugeValue}
)

// structureFamilies are every family samples may return, for Describe.
var structureFamilies = []*family{fAdds, fAddsPresent, fWrites, fCounted, fErrorBound, fFill, fItems, fFalsePositive, fCurrent, fOldest, fRotations, fBytes, fFrozen}

// The families of an arena and of its file's lock, without labels.
var (
	fArenaBytes = &family{"sketch_arena_bytes",
		"Bytes of the arena's file.", prometheus.GaugeValue}
	fArenaUsed = &family{"sketch_arena_used_bytes",
		"Bytes of the arena's file in use: header, directory and structures.", prometheus.GaugeValue}
	fArenaFree = &family{"sketch_arena_free_bytes",
		"Bytes of the arena's file left for new structures.", prometheus.GaugeValue}
	fArenaStructures = &family{"sketch_arena_structures",
		"Structures in the arena.", prometheus.GaugeValue}
	fArenaMax = &family{"sketch_arena_max_structures",
		"The most structures the arena's directory holds.", prometheus.GaugeValue}
	fLockWriter = &family{"sketch_lock_writer",
		"1 while a writer holds the file's lock or waits for its readers, else 0.", prometheus.GaugeValue}
	fLockWriterDead = &family{"sketch_lock_writer_dead",
		"1 while the lock is held by a writer whose handle is gone (the next contender recovers it within about 10 ms), else 0.", prometheus.GaugeValue}
	fLockReaders = &family{"sketch_lock_readers",
		"Read locks held on the file, in every process.", prometheus.GaugeValue}
	fLockDeadReaders = &family{"sketch_lock_dead_reader_slots",
		"Reader slots of the lock held by handles that are gone (the next writer clears them).", prometheus.GaugeValue}
	fLockHandles = &family{"sketch_lock_handles",
		"Read-write handles on the file that hold a lock token, in every process.", prometheus.GaugeValue}
)

var arenaFamilies = []*family{fArenaBytes, fArenaUsed, fArenaFree, fArenaStructures, fArenaMax, fLockWriter, fLockWriterDead, fLockReaders, fLockDeadReaders, fLockHandles}

// Stats is every kind's Stats type that the collectors export: a
// structure's Stats method is the function NewCollector takes.
type Stats interface {
	sketch.CountMinStats | sketch.BloomStats | sketch.CountingBloomStats | sketch.CountMinWindowStats | sketch.BloomWindowStats
}

// sample is one value of a structure.
type sample struct {
	f *family
	v float64
}

// samplesOf returns the kind a Stats value describes and its samples, or
// false for a value that is no kind's Stats. A new kind is one case here
// and one type in Stats.
func samplesOf(stats any) (sketch.Kind, []sample, bool) {
	switch s := stats.(type) {
	case sketch.CountMinStats:
		return sketch.KindCountMin, append(fileSamples(s.FileStats),
			sample{fAdds, float64(s.Adds)},
			sample{fCounted, float64(s.Total)},
			sample{fErrorBound, float64(s.ErrorBound)}), true
	case sketch.BloomStats:
		return sketch.KindBloom, append(fileSamples(s.FileStats),
			sample{fAdds, float64(s.Added) + float64(s.Seen)},
			sample{fAddsPresent, float64(s.Seen)},
			sample{fFill, s.Fill},
			sample{fItems, s.Estimated}), true
	case sketch.CountingBloomStats:
		return sketch.KindCountingBloom, append(fileSamples(s.FileStats),
			sample{fWrites, float64(s.Ops)},
			sample{fFill, s.FillRatio},
			sample{fItems, s.Count}), true
	case sketch.CountMinWindowStats:
		return sketch.KindCountMinWindow, append(fileSamples(s.FileStats),
			sample{fCounted, float64(s.Total)},
			sample{fErrorBound, float64(s.ErrorBound)},
			sample{fCurrent, float64(s.Current)},
			sample{fOldest, float64(s.Oldest)},
			sample{fRotations, float64(s.Rotations)}), true
	case sketch.BloomWindowStats:
		out := append(fileSamples(s.FileStats),
			sample{fFalsePositive, s.CheckRate},
			sample{fCurrent, float64(s.Current)},
			sample{fOldest, float64(s.Oldest)},
			sample{fRotations, float64(s.Rotations)})
		// No slot holds the current period before its first add: it is
		// empty then.
		fill, items := 0.0, 0.0
		for _, slot := range s.Slots {
			if slot.State == "current" && slot.Period == s.Current {
				fill, items = slot.Fill, slot.Estimated
			}
		}
		return sketch.KindBloomWindow, append(out, sample{fFill, fill}, sample{fItems, items}), true
	}
	return "", nil, false
}

// fileSamples are what every kind reports of its file.
func fileSamples(fs sketch.FileStats) []sample {
	return []sample{{fBytes, float64(fs.Bytes)}, {fFrozen, boolValue(fs.Frozen)}}
}

// arenaSamples are an arena's, and its lock's when it was read.
func arenaSamples(s sketch.ArenaMetricsStats) []sample {
	out := []sample{
		{fArenaBytes, float64(s.Arena.Bytes)},
		{fArenaUsed, float64(s.Arena.Used)},
		{fArenaFree, float64(s.Arena.Free)},
		{fArenaStructures, float64(s.Arena.Entries)},
		{fArenaMax, float64(s.Arena.Capacity)},
	}
	if l := s.Lock; l != nil {
		out = append(out,
			sample{fLockWriter, boolValue(l.Writer)},
			sample{fLockWriterDead, boolValue(l.Writer && !l.WriterAlive)},
			sample{fLockReaders, float64(l.Readers)},
			sample{fLockDeadReaders, float64(l.DeadReaderSlots)},
			sample{fLockHandles, float64(l.Handles)})
	}
	return out
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
