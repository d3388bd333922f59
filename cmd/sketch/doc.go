// Command sketch creates, feeds, queries and checks shared sketch files
// from the shell, against the live file that other processes are writing.
//
//	sketch create FILE[:NAME] [--kind countmin|bloom|countingbloom|countminwindow|bloomwindow|distinct|distinctwindow|gcra|counters|set|setwindow|arena] [SIZING] [--mode 0600] [--seed-file FILE|- | --seed-from OTHER]
//	    SIZING: --error E --confidence C | --rows R --width W (countmin, countminwindow);
//	    --capacity N --fp-rate P (bloom, countingbloom, bloomwindow: each period's);
//	    --capacity N [--key-bytes B] (set, setwindow: the most keys held at once, the longest key);
//	    --period D --keep K (countminwindow, bloomwindow, distinctwindow, setwindow); --error E | --precision P, --redis | --postgresql (distinct, distinctwindow);
//	    --rate R [--burst B] [--keys N | --rows R --width W] (gcra: R as nginx writes it, 10/s, 10r/s, 30r/m, 1/h);
//	    --names A,B,C | --name X ... (counters: their names, fixed at create; --name for one that holds a comma);
//	    --size N (arena); --candidates K [--candidate-key-bytes B] (countmin, countminwindow: a table of the K loudest keys)
//	sketch add FILE[:NAME] [KEY...]        count keys (counters: add 1, or -n N, to each named counter); none or "-": one a line from standard input (--weighted: KEY<TAB>N; --if-absent: a counting Bloom filter's key once); a set's: new or present
//	sketch del FILE[:NAME] KEY...          take one copy of each key out of a counting Bloom filter; a key out of a set (removed or absent)
//	sketch allow [--cost N] FILE[:NAME] KEY...   decide a request a key on a rate limiter (gcra; exit 4: refused)
//	sketch allow --limit N FILE[:NAME] KEY...    count a request a key and decide it against a limit (a Count-Min window; exit 4: refused)
//	sketch query FILE[:NAME] [KEY...]      estimates with error bars, presence, counts; a distinct count's or window's count; a rate limiter's peek; counters' values (no KEY: every counter); a set's present or absent; --top N of candidates from standard input (none there: exit 2)
//	sketch list FILE[:NAME]                every key a set holds (a set window: of the periods it covers), one a line, quoted as top quotes them (--json)
//	sketch top FILE[:NAME]                 the loudest keys of a candidate table (-n N, --json)
//	sketch stats FILE[:NAME]               everything Stats reports; an arena's, a row a structure
//	sketch inspect FILE                    header, directory, lock state (--show-seed for the secret seed)
//	sketch check FILE                      verify: exit 0 sound, 1 corrupt or unreadable, 3 an operation cut short
//	sketch watch FILE[:NAME]               a live view until interrupted; an arena's FILE: a line a structure
//	sketch freeze FILE[:NAME]              seal for good (an arena whole)
//	sketch snapshot SRC DST                copy a live structure into the new frozen file DST while writers go on (a window: one sketch of its periods)
//	sketch reset FILE[:NAME]               forget everything
//	sketch rotate FILE[:NAME]              turn a window's period now
//	sketch merge DST SRC...                merge structures of one kind, shape and seed
//	sketch export --format redis|postgresql FILE[:NAME] [-o OUT]   a distinct count or window as Redis's HyperLogLog (SET, PFMERGE, PFCOUNT) or PostgreSQL's hll
//	sketch rm FILE[:NAME]                  remove a sketch file or an arena (and nothing else); FILE:NAME a structure from an arena
//	sketch demo                            several processes serve one stream into one shared arena
//	sketch version                         also --version
//
// "sketch help CMD", "sketch CMD -h" and "sketch CMD --help" print a
// command's usage with an example. Flags may come before or after the
// arguments, and "--" ends them, except in the commands that take keys
// (add, del, allow, query): there every argument after FILE is a key, as
// it is, even one that begins with "-" or is "--", and their flags go
// before FILE. A key taken from a client ("--limit=1000000",
// "--owner=65534") is so counted as that key and never changes the
// command: sketch allow --limit 2 FILE alice --limit=1000000 decides the
// key "--limit=1000000" against the limit 2. A key that reads as one of
// the command's flags gets a note on standard error.
//
// FILE:NAME addresses the structure NAME in the arena FILE ("sketch create
// FILE --kind arena --size 64M" makes one, "sketch create FILE:NAME --kind
// ..." a structure in it); FILE:NAME on a file that is not an arena, and an
// arena's FILE alone where a structure is needed, are usage errors. stats,
// freeze, snapshot, check, inspect and rm take a whole arena as FILE. A file whose
// own name has a colon is named whole. When both readings exist (a file
// x.arena:banned beside the file x.arena), the owner rule decides: whoever
// may write a shared directory such as /dev/shm can plant x.arena:banned,
// but the planted file is the planter's, so a command takes the reading
// whose file is owned by a user it trusts (the caller, root, or a user
// named with --owner; a symlink by its owner and its target's) when the
// other's is not. When both or neither are trusted, every command refuses,
// naming both; a planted file beside a trusted arena is reached by
// renaming it.
// A structure's name is printed as it is when made of letters, digits and
// "._-/", and quoted in Go syntax otherwise, so that no byte of a name
// reaches the terminal raw; --json gives names as they are, JSON-escaped.
// create refuses a new name that does not print. Keys are printed the
// same way wherever a command echoes one (add, del, allow, query, top):
// as they are when they are printable text without spaces, quoted in Go
// syntax otherwise ("\x1b[2J", "\xff"), since keys come from clients and
// a log line may hold escape sequences; --json gives keys JSON-escaped,
// with bytes that are not UTF-8 as U+FFFD.
//
// Where a window's periods are printed (stats, watch), the current
// period shows when it started on the local clock, "since 14:03:20": period
// q of a window of Period P started q×P after the Unix epoch, while only
// the clock turns it. A window turned by rotate, or rotated even once, has
// no clock times, and says so.
//
// Commands that only read (query, top, stats, inspect, check, watch, and the
// sources of merge and snapshot) open the file read-only: they work on a file the user
// may only read, while its writers go on (query on a rate limiter peeks:
// the library's Allow of cost 0, which a read-only handle answers).
//
// Exact counters (--kind counters, the library's Counters) take their
// counters' names where other kinds take keys: add adds to the counters
// named and query prints their values, every counter's when it names
// none. A name the structure does not have is a bad argument (exit 2,
// naming it), found before anything is added or printed. Their names are
// fixed at create (--names a,b,c, or --name X once a name, which may then
// hold a comma); inspect lists them, watch shows each counter's rate,
// and merge adds counters of the same names in the same order (their
// seed, which they hash nothing with, need not match). top, allow, del,
// rotate and export refuse them.
//
// Exact sets (--kind set, the library's Set, sized by --capacity and
// --key-bytes) hold each key once and answer exactly both ways: add
// prints "new" or "present" (of any number of processes adding one key
// at once, exactly one is told new), query "present" or "absent", del
// "removed" or "absent", and list prints every key held. A new key past
// the capacity is refused (exit 1, "set is full"): nothing is evicted. A
// set window (--kind setwindow, with --period and --keep) does the same
// for the periods it covers: its keys leave with their period, on the
// clock or on rotate. merge unites two sets of one seed; top, allow and
// export refuse them, and a set window refuses reset and merge.
//
// The library refuses a sketch file owned by a user other than the caller
// and root, who could truncate it under the command (sketch.ErrNotOwner);
// every command that opens files takes --owner UID to trust one more user
// (repeat it, or give a comma list).
//
// # Seeds
//
// A file's hash seed is a secret: whoever knows it can craft keys that
// collide. create draws a random one unless --seed-file gives it: from a
// file (one number, decimal or 0x hexadecimal; refused when every user may
// read the file) or, as "--seed-file -", from standard input. There is no
// --seed VALUE: a command line is readable by every local user
// (/proc/PID/cmdline), so create refuses it and says to use --seed-file.
// Files to be merged need the same seed; inspect --show-seed prints one,
// and create --seed-from OTHER copies OTHER's without printing it.
// --seed-file and --seed-from take a seed only from a file owned by the
// caller, root or a user named with --owner (the owner rule), which not
// every user may write: whoever owns or may write the file chose the
// seed, knows it, and could aim keys at the new file.
//
// Whoever may read a sketch file reads its seed with it, and can then
// craft keys that share another key's counters: have a client's requests
// refused, or hide a loud key among others. create warns on standard error
// when every user may read the file it made (or the arena it made a
// structure in), and when --seed-from copies the seed of such a file; give
// the readers a group instead (--mode 0640, chgrp). A distinct count
// hashed as Redis or PostgreSQL's hll extension does (--redis,
// --postgresql) has no secret seed, and no warning.
//
// # Exit status
//
// 0 success; 1 failure (a missing, unreadable or corrupt file, a refused
// operation), with a message naming the file on standard error; 2 bad
// arguments, with the command's usage (a sizing or mode that create's
// library refuses among them: --error 2, --keep 300, --mode 0666); 3 from check only: the file is
// sound, but an operation was cut short (a torn Count-Min add, adds that
// raced a reset, a lock held by a process that was killed); 4 from allow
// only: a key was refused; 5 from check only: counters or registers hold
// what no add, even one cut short, can leave (a Count-Min row above its
// add count by more than 2^28 adds of the largest weight the file
// recorded, a counter far past saturation, a distinct count's register
// past the largest rank): damage, which merge and Redis exports refuse.
//
// # JSON
//
// --json prints data as JSON with these field names, which are stable.
// Wherever a line has "key", a key whose bytes are not UTF-8 (which JSON
// strings cannot carry: each bad byte reads as U+FFFD there) has its exact
// bytes in "key_base64" too; the field is absent for keys that are text.
//
//   - create: {"file", "kind", "description", "bytes", "stats"}, where
//     "stats" is what stats gives for the structure, "bytes" the file's
//     size, or the region's of a structure in an arena. An arena's "stats"
//     is the library's ArenaStats ("bytes", "used", "free", "entries",
//     "capacity", "removed", "removed_bytes", "reusable", "frozen",
//     "read_only", "closed").
//   - add with keys, query: JSON Lines, one object a key. A Count-Min
//     sketch or window: {"key", "estimate", "low"} (the true count is in
//     [low, estimate] with the sketch's confidence, and never above
//     estimate; a window's over the periods it covers). A Bloom filter or
//     window: {"key", "present"} (false is exact; a window's over the
//     periods it covers), and from add "already" (every bit was set
//     before, in a window's current period or one it covers: probably
//     added before). A counting Bloom filter: {"key", "count", "present"}.
//     A distinct count or window: query FILE prints one object, {"count",
//     "std_error", "low", "high"} (the count, its relative standard error
//     and its 95% range); add prints it after each key.
//   - add from standard input: {"file", "keys", "total", "seconds",
//     "keys_per_second"}; "total" is watch's. add --if-absent: {"key",
//     "added"} a key, or from standard input {"file", "keys", "added"}.
//   - del: {"key", "removed", "count"} a key, "count" after the removal.
//   - allow: on a Count-Min window {"key", "allowed", "counted",
//     "estimate", "low", "turns", "retry_after", "period"} a key: the
//     library's Decision, "retry_after" in nanoseconds. On a rate limiter
//     (and query's peek of one) {"key", "allowed", "cost", "remaining",
//     "retry_after", "reset_after"} a key: the library's RateDecision,
//     the durations in nanoseconds, "cost" 0 for a peek. Counters: add
//     and query {"name", "value"} a counter (the library's NamedValue),
//     add's the value just after the add.
//   - stats: {"file", "structures": [{"name", "kind", "description",
//     "stats"}]}, one element a structure (every structure of an arena),
//     and for an arena "arena", its ArenaStats. "stats" is the library's
//     CountMinStats ("rows", "width", "bytes", "total", "adds",
//     "error_bound", "error_rate", "confidence", "frozen", "read_only",
//     "closed"), BloomStats ("bits", "hashes", "capacity", "fp_rate",
//     "set", "fill", "estimated", "adds", "adds_present", "bytes", "frozen",
//     "read_only", "closed"), CountingBloomStats ("capacity", "fp_rate",
//     "counters", "hashes", "set", "fill", "estimated", "adds",
//     "bytes", "frozen", "read_only", "closed"), CountMinWindowStats
//     ("rows", "width", "period" in nanoseconds, "keep", "current",
//     "oldest", "start", "rotations", "turns", "adds", "total",
//     "error_bound", "slots":
//     [{"state", "period", "total"}], "bytes", "frozen",
//     "read_only", "closed") or BloomWindowStats ("bits", "hashes",
//     "capacity", "fp_rate", each period's filter's, "period" in
//     nanoseconds, "keep", "current", "oldest", "start", "rotations",
//     "turns", "adds", "fp_rate_now", "slots": [{"state", "period", "set", "fill",
//     "estimated", "rate", "adds", "adds_present"}], "bytes", "frozen",
//     "read_only", "closed") or DistinctStats ("precision", "registers",
//     "redis", "postgresql", "estimate", "std_error", "zero", "register_changes", "bytes",
//     "frozen", "read_only", "closed") or GCRAStats ("rate": {"count",
//     "per" in nanoseconds}, "burst", "rows", "width", "allowed",
//     "refused", "cost", "busy", "busy_rate", "bytes", "frozen",
//     "read_only", "closed") or CountersStats ("names", "counters":
//     [{"name", "value"}], "bytes", "frozen", "read_only", "closed"). A
//     structure's "bytes" is its whole file's.
//   - inspect: the library's FileInfo: {"path", "format_version",
//     "byte_order", "bytes", "mode", "uid", "gid", "header_bytes",
//     "data_offset", "sealed", "arena", "reader_slots",
//     "directory_capacity", "entries": [{"kind", "description", "name",
//     "offset", "bytes", "params", and "config" for a counters structure:
//     its CountersConfig, {"names", "seed"}, whose "seed" is always 0,
//     the file's never printed there}], "removed", "lock": {"writer", "writer_token",
//     "writer_alive", "writers_parked", "readers_parked", "readers_turn",
//     "slots_claimed", "readers", "reader_slots", "dead_reader_slots",
//     "handles"}}, and "seed" only with --show-seed.
//   - check: {"file", "status": "ok" | "interrupted" | "corrupt",
//     "findings": [...], "exit_code"}.
//   - watch: JSON Lines, one an interval: {"time", "file", "kind",
//     "per_second", "total", "frozen", "lock"} ("lock" as inspect's) and
//     what the kind has of "error_bound" (Count-Min sketch and window),
//     "fill" and "count" (Bloom and counting Bloom filters; a Bloom
//     window's current period), "current" and "oldest" (a window's
//     periods), "start" (when the current period started, while only the
//     clock has turned the window), "refused" and "busy_rate" (a rate
//     limiter's refusals and the share of its cells busy, its "total"
//     being its decisions), "counters" (a counters structure's, [{"name",
//     "value", "per_second"}], its "total" their sum). "total" is everything counted
//     (Count-Min), the adds (Bloom and counting Bloom filters), or what
//     the periods a window covers counted (a Bloom window's adds). An arena's FILE: {"time", "file", "arena" (its
//     ArenaStats), "lock", "structures": [{"name", "kind", "per_second",
//     ...}]}, a structure's fields as above, "per_second" absent the
//     first time a structure shows, and "error" in place of them for one
//     that does not open.
//   - snapshot: {"file", "source", "kind", "description", "bytes",
//     "seconds"}, and "oldest" and "current", the periods a window's
//     snapshot covers; "kind" is the snapshot's ("countmin" for a
//     Count-Min window's, "bloom" for a Bloom window's, "distinct" for a
//     distinct window's, "gcra", "counters", "arena").
//   - version: {"version", "backend", "go", "format_version"}.
//
// Kinds are named "countmin", "bloom", "countingbloom", "countminwindow",
// "bloomwindow", "distinct", "distinctwindow", "gcra" (a rate
// limiter) and "counters" (exact named counters); create also makes an
// "arena".
package main
