// Package prom exports the sketch package's structures to Prometheus:
// an ArenaCollector over every structure of an arena (Arena.Metrics), and
// NewCollector over one structure.
//
//	metrics := arena.Metrics()
//	defer metrics.Close()
//	prometheus.MustRegister(prom.NewArenaCollector(metrics))
//	http.Handle("/metrics", promhttp.Handler())
//
// Every structure's series are labelled with its name ("structure") and
// its kind ("kind"):
//
//	sketch_adds_total              counter  Count-Min sketch, Bloom and counting Bloom filters, and their windows (every period)
//	sketch_distinct_changes_total  counter  distinct window: adds that raised a register (its RegisterChanges)
//	sketch_adds_present_total      counter  Bloom filter: adds of keys already present
//	sketch_counted                 gauge    Count-Min sketch and window: what estimates cover
//	sketch_error_bound             gauge    Count-Min sketch and window
//	sketch_fill_ratio              gauge    filters (a Bloom window's current period); exact sets: keys held over capacity
//	sketch_estimated_items         gauge    filters (a Bloom window's current period)
//	sketch_false_positive_ratio    gauge    Bloom window, over the periods it covers
//	sketch_window_current_period   gauge    windows
//	sketch_window_oldest_period    gauge    windows
//	sketch_window_rotations_total  counter  windows: turns by Rotate or by the clock
//	sketch_bytes, sketch_frozen    gauge    every kind
//	sketch_candidates_held         gauge    a candidate table's keys
//	sketch_candidate_admissions_total counter  keys taken into a candidate table
//	sketch_heavy_hitter_estimate   gauge    a candidate table's 10 loudest keys, labelled rank and key
//	sketch_distinct_estimate       gauge    distinct count and window (never sum it across hosts: below)
//	sketch_distinct_relative_standard_error  gauge  distinct count and window
//	sketch_rate_limit_decisions_total      counter  rate limiter: decisions, labelled outcome (allowed or refused)
//	sketch_rate_limit_allowed_cost_total   counter  rate limiter: what the allowed decisions cost
//	sketch_rate_limit_busy_cells           gauge    rate limiter: cells holding a time in the future
//	sketch_rate_limit_busy_ratio           gauge    rate limiter: busy cells over all of them
//	sketch_rate_limit_requests_per_second  gauge    rate limiter: its rate
//	sketch_rate_limit_burst                gauge    rate limiter: its burst
//	sketch_counts_total            counter  counters structure: each counter, labelled with its name
//	sketch_set_keys                gauge    exact set and set window: keys held (a window's: of the periods it covers)
//	sketch_set_held_keys           gauge    set window: keys its table holds, expired ones included
//	sketch_set_capacity            gauge    exact set and set window: the most keys held at once
//	sketch_set_tombstones          gauge    exact set and set window: removed keys' slots
//	sketch_set_longest_run_slots   gauge    exact set and set window: the most slots a lookup reads
//	sketch_set_adds_total          counter  exact set and set window: adds of a new key, since made
//	sketch_set_removes_total       counter  exact set and set window: removes of a key held, since made
//
// Names and keys come from the file, and whoever writes it chooses them:
// a label value is the name or key as it is when it is printable UTF-8,
// else quoted with Go's escapes ("\xff\xfe"; one that begins with a
// double quote is quoted too, so two never share a value), and a key its
// table keeps as a prefix is cut before a character the cut fell inside,
// quoted and followed by its length, as sketch top shows it
// ("vvv"... (81 bytes)), so that a key that is another's first bytes has
// a label of its own; no file makes a scrape fail or a collector panic.
// Each loud key is a series of its own, so clients that choose their keys
// choose how many series a scrape makes over time (at most the 10 loudest
// a structure at once); WithoutKeys bounds them.
//
// The key label of sketch_heavy_hitter_estimate is a client's key as it
// was added (an address, an e-mail, a session id): whoever reads the
// metrics, or the time series database for as long as it keeps them,
// reads those keys. WithHashedKeys labels each with a keyed hash
// (HashKey) instead, and WithoutKeys leaves the label empty (rank and
// estimate stay); both collectors take them.
//
// A distinct estimate is per host: a key seen by two hosts is in both
// counts, so sum(sketch_distinct_estimate) over hosts overcounts (12,725
// for 9,647 distinct clients in one measured two-host fleet), and
// dividing does not repair it. The fleet's distinct count is a union of
// the hosts' registers: each host pushes Distinct.ExportRedis (a window:
// DistinctWindow.ExportRedisCovered) and Redis's PFCOUNT over the hosts'
// keys, or PFMERGE, counts the union.
//
// An arena's own series have no labels: sketch_arena_bytes,
// sketch_arena_used_bytes, sketch_arena_free_bytes,
// sketch_arena_structures, sketch_arena_max_structures, and its file's
// lock (Inspect): sketch_lock_writer, sketch_lock_writer_dead,
// sketch_lock_readers, sketch_lock_dead_reader_slots, sketch_lock_handles.
//
// Hosts each serve their own /metrics, and PromQL sums them: requests a
// second per structure across a fleet is
//
//	sum by (structure) (rate(sketch_adds_total[1m]))
package prom
