// Command torture reruns the library's reliability figures: it kills
// processes of both backends, a cgo build and a pure-Go build of this
// program, while they write the same files, and checks that nothing that
// returned is lost. make torture builds both and runs it; docs/RELIABILITY.md
// holds a run.
//
// The kill storm: workers add to one Count-Min sketch, one Bloom filter, one
// counting Bloom filter, one Count-Min window and one Bloom window (single,
// weighted and batch adds), raising a record of their own (a small shared
// mapping that survives SIGKILL) after each call returns. The windows turn
// only on Rotate, which worker slot 0 calls now and then; a window add is
// recorded with the period it landed in (the period did not turn during the
// call). Workers also remove counting Bloom keys they added themselves and
// now and then merge a side filter into it. A worker is killed every few tens of milliseconds and restarted. A
// checker of each build reads every record and only then asks the
// structures, over and over and once more at the end: no Count-Min estimate
// below the recorded adds, no window estimate below the adds of the periods
// it certainly covers (those of every window between the period read before
// the question and the one read after), no false negative (for the counting
// Bloom filter: for a key with more adds than removes, removes read after
// the question, one killed in flight counted as done), CountMin.Check
// finding torn adds only, Inspect finding no damage. A negative control
// records adds that never happened, for keys nobody adds (for the windows,
// in their current periods); every checker must report them, so that its
// zero for the real keys means something. The storm's rate limiter is
// asked at the workers' clocks (AllowAt, AllowBatchAt) and every allowed
// decision logged with one write; the supervisor holds each key's logged
// cost over any span [a, b] to (b-a)/interval + burst+1, a control of
// burst+2 at one instant included, and calls Check (ratelimit.go).
//
// The run is a table of parts (parts.go), each in a directory of its own;
// -only runs some of them:
//
//   - storm: the kill storm above.
//   - locks: a holder is killed inside a counting Bloom Clear (write lock)
//     or a large AddBatch (read lock), with and without other processes
//     adding, and the supervisor times the kill to its own next
//     write-locked call returning.
//   - topkill: heavy hitters under kills: workers of both builds add a
//     skewed stream (loud keys among 4090 quiet ones; weights of every
//     residue mod 8, some keys an odd first weight then even ones; a
//     73-byte key whose 64-byte prefix is cut inside a rune) to a
//     Count-Min sketch and a Count-Min window (turned by the supervisor's
//     Rotate) made with Candidates, recording what returned as the storm's
//     workers do; checkers of both builds hold every Top listing to it (no
//     estimate below the key's returned adds, over the periods covered for
//     the window) and, once the workers are stopped, every loud key (above
//     twice total/width plus the error bound, among the K loudest by 2x,
//     with at most 7 louder) to be listed; a ghost loud key and an
//     inflated record are the negative controls (topkill.go).
//   - arena: processes of both builds race to create the same names of
//     every kind in a series of arenas while they are killed, fill small
//     arenas until ErrArenaFull, and the creator of a new arena file is
//     killed inside OpenArena (arena.go).
//   - faults: a full tmpfs (blocks and inodes), a SIGSTOPped lock holder,
//     a read-only filesystem, a process out of descriptors (faults.go;
//     mounts need root).
//   - arch: files of the s390x build refused by the native builds with
//     ErrByteOrder and the reverse; arm64 and 32-bit arm processes under
//     qemu-user sharing an arena with native ones, killed and restarted
//     (arch.go; needs -s390x, -arm64, -arm and qemu-user).
//   - mutate: mutated copies of valid files of every kind and layout opened
//     every way by both builds: no panic, hang or signal (mutate.go).
//   - metrics: crafted files (candidate tables holding keys of invalid
//     UTF-8, control and format characters and 64-byte prefixes cut inside
//     a rune, some written over a stored prefix; arenas with structure
//     names written over in the directory, two of them alike), then
//     mutated copies of them and of the mutate part's specimens, scraped
//     read-only by both builds through every metrics path of this module:
//     each structure's StatsVar, ArenaMetrics' String, inside an
//     expvar.Map, and its http.Handler with and without ?name=; and the
//     CLI's watch --json (two samples) on each file and on FILE:NAME of an
//     arena's names (built from -module). No panic, crash or hang; every
//     output valid JSON and valid UTF-8 (metrics.go). The Prometheus
//     collectors are in the prom module, which this one cannot import:
//     they have their own fuzz target there.
//   - fuzz: every Fuzz target of the module for a share of a budget
//     (fuzz.go; needs -module and the go tool).
//
// A part that cannot run on this machine says why in its row and counts no
// violation, except under CI=true.
//
// Usage:
//
//	torture -other PATH [-short] [-only PART,...] [-storm 6m] [-kills 100] [-workers 4] [-gap 30ms] [-seed N] [-dir DIR]
//	        [-module DIR] [-s390x PATH] [-arm64 PATH] [-arm PATH]
//
// It prints a table (test, runs/kills, violations, figure) and exits 1 on any
// violation, a negative control that was not caught included.
package main
