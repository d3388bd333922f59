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
//	sketch_adds_total              counter  Count-Min sketch, Bloom filter, and their windows (every period)
//	sketch_distinct_changes_total  counter  distinct window: adds that raised a register
//	sketch_adds_present_total      counter  Bloom filter: adds of keys already present
//	sketch_writes_total            counter  counting Bloom filter: adds, removes, resets
//	sketch_counted                 gauge    Count-Min sketch and window: what estimates cover
//	sketch_error_bound             gauge    Count-Min sketch and window
//	sketch_fill_ratio              gauge    filters (a Bloom window's current period)
//	sketch_estimated_items         gauge    filters (a Bloom window's current period)
//	sketch_false_positive_ratio    gauge    Bloom window, over the periods it covers
//	sketch_window_current_period   gauge    windows
//	sketch_window_oldest_period    gauge    windows
//	sketch_window_rotations_total  counter  windows: turns by Rotate or by the clock
//	sketch_bytes, sketch_frozen    gauge    every kind
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
