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
// zero for the real keys means something.
//
// Lock recovery: a holder is killed inside a counting Bloom Clear (write
// lock) or a large AddMany (read lock), with and without other processes
// adding, and the supervisor times the kill to its own next write-locked
// call returning.
//
// Usage:
//
//	torture -other PATH [-short] [-only PART,...] [-storm 8m] [-kills 100] [-workers 4] [-gap 30ms] [-seed N] [-dir DIR]
//
// It prints a table (test, runs/kills, violations, figure) and exits 1 on any
// violation, a negative control that was not caught included.
package main
