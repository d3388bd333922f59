// Command sketch creates, feeds, queries and checks shared sketch files
// from the shell, against the live file that other processes are writing.
//
//	sketch create FILE [--kind countmin|countingbloom] [--error E --confidence C | --rows R --width W | --capacity N --fp-rate P] [--mode 0600] [--seed S]
//	sketch add FILE[:NAME] [KEY...]        count keys; none or "-": one a line from standard input (--weighted: KEY<TAB>N)
//	sketch query FILE[:NAME] [KEY...]      estimates with error bars, counts; --top N of candidates from standard input
//	sketch stats FILE[:NAME]               everything Stats reports
//	sketch inspect FILE                    header, directory, lock state (--show-seed for the secret seed)
//	sketch check FILE                      verify: exit 0 sound, 1 corrupt or unreadable, 3 an operation cut short
//	sketch watch FILE[:NAME]               a live view until interrupted
//	sketch freeze FILE[:NAME]              seal for good
//	sketch reset FILE[:NAME]               forget everything
//	sketch merge DST SRC...                merge structures of one kind, shape and seed
//	sketch rm FILE                         remove a sketch file (and nothing else)
//	sketch demo                            several processes count one stream into one sketch
//	sketch version                         also --version
//
// "sketch help CMD", "sketch CMD -h" and "sketch CMD --help" print a
// command's usage with an example. Flags may come before or after the
// arguments; "--" ends them.
//
// Commands that only read (query, stats, inspect, check, watch, and the
// sources of merge) open the file read-only: they work on a file the user
// may only read, while its writers go on. FILE:NAME will address a
// structure in an arena; a file that is not one is a usage error.
//
// # Exit status
//
// 0 success; 1 failure (a missing, unreadable or corrupt file, a refused
// operation), with a message naming the file on standard error; 2 bad
// arguments, with the command's usage; 3 from check only: the file is
// sound, but an operation was cut short (a torn Count-Min add, adds that
// raced a reset, a lock held by a process that was killed).
//
// # JSON
//
// --json prints data as JSON with these field names, which are stable:
//
//   - create: {"file", "kind", "description", "bytes", "stats"}, where
//     "stats" is what stats gives for the structure.
//   - add with keys, query: JSON Lines, one object a key. A Count-Min
//     sketch: {"key", "estimate", "low"} (the true count is in [low,
//     estimate] with the sketch's confidence, and never above estimate). A
//     counting Bloom filter: {"key", "count", "present"}.
//   - add from standard input: {"file", "keys", "total", "seconds",
//     "keys_per_second"}; "total" is everything counted (Count-Min) or
//     the write operations (counting Bloom).
//   - stats: {"file", "structures": [{"name", "kind", "description",
//     "stats"}]}, one element a structure. "stats" is the library's
//     CountMinStats ("rows", "width", "bytes", "total", "adds",
//     "error_bound", "error_rate", "confidence", "frozen", "read_only",
//     "closed") or CountingBloomStats ("capacity", "fp_rate", "counters",
//     "hashes", "counters_set", "count", "fill_ratio", "ops", "bytes",
//     "frozen", "read_only", "closed").
//   - inspect: the library's FileInfo: {"path", "format_version",
//     "byte_order", "bytes", "mode", "uid", "gid", "header_bytes",
//     "data_offset", "sealed", "reader_slots", "directory_capacity",
//     "entries": [{"kind", "description", "name", "offset", "bytes",
//     "params"}], "lock": {"writer", "writer_token", "writer_alive",
//     "writers_parked", "readers_parked", "readers_turn", "slots_claimed",
//     "readers", "reader_slots", "dead_reader_slots", "handles"}}, and
//     "seed" only with --show-seed.
//   - check: {"file", "status": "ok" | "interrupted" | "corrupt",
//     "findings": [...], "exit_code"}.
//   - watch: JSON Lines, one an interval: {"time", "file", "kind",
//     "per_second", "total", "error_bound" (Count-Min) or "fill" and
//     "count" (counting Bloom), "frozen", "lock"} ("lock" as inspect's).
//   - version: {"version", "backend", "go", "format_version"}.
//
// Kinds are named "countmin" and "countingbloom".
package main
