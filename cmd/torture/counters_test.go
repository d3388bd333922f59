package main

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJudgeCounter: a counter is its adds done plus a subset of those in
// flight, each whole; anything else is a violation.
func TestJudgeCounter(t *testing.T) {
	tally := counterTally{done: 100, inFlight: []uint64{5, 7}}
	for _, tt := range []struct {
		value uint64
		want  bool
	}{
		{100, true}, {105, true}, {107, true}, {112, true},
		{99, false},  // an add done was lost
		{101, false}, // part of an add
		{106, false}, // no subset of {5, 7} makes 6
		{113, false}, // more than every add in flight
	} {
		if got := judgeCounter(tt.value, tally); got != tt.want {
			t.Errorf("judgeCounter(%d, done 100, in flight 5 and 7) = %v, want %v", tt.value, got, tt.want)
		}
	}
	if !judgeCounter(0, counterTally{}) || judgeCounter(1, counterTally{}) {
		t.Errorf("a counter nobody added to: 0 must pass, 1 must not")
	}
}

// TestReadCounterLogs: an intent without its done, whether a new life
// follows it or the log ends, is in flight; a torn last entry is
// dropped; a done without its intent is an error.
func TestReadCounterLogs(t *testing.T) {
	dir := t.TempDir()
	l, err := openCounterLog(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	ok := func() error { return nil }
	l.add(1, 10, ok)
	l.add(1, 20, ok)
	l.write(counterEntry{counter: 2, n: 3, seq: 3}) // killed after the intent
	l.seq = 0                                       // a new life
	l.add(2, 4, ok)
	l.write(counterEntry{counter: 1, n: 9, seq: 2}) // killed again
	l.f.Write([]byte{counterMagic, 1, 2})           // a torn write
	l.f.Close()
	got, entries, err := readCounterLogs(dir, 2) // slot 1 has no log
	if err != nil {
		t.Fatal(err)
	}
	want := make([]counterTally, len(stormCounterNames))
	want[1] = counterTally{done: 30, inFlight: []uint64{9}}
	want[2] = counterTally{done: 4, inFlight: []uint64{3}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(counterTally{})); diff != "" || entries != 8 {
		t.Errorf("readCounterLogs: %d entries, want 8 (-want +got):\n%s", entries, diff)
	}

	bad := t.TempDir()
	l, err = openCounterLog(bad, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.write(counterEntry{done: true, counter: 0, n: 1, seq: 1})
	l.f.Close()
	if _, _, err := readCounterLogs(bad, 1); err == nil {
		t.Errorf("readCounterLogs of a done without its intent: no error")
	}
	if err := os.WriteFile(counterLogPath(bad, 0), make([]byte, counterEntryBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readCounterLogs(bad, 1); err == nil {
		t.Errorf("readCounterLogs of an entry without the magic byte: no error")
	}
}
