package main

import (
	"path/filepath"
	"testing"
	"time"
)

func TestRecord_SurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record")
	r, err := openRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	r.raise(fieldCountMin, 5, 3)
	r.mark(fieldBloom, 5)
	r.returned()
	// A killed worker never closes: the next one maps the same file.
	again, err := openRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	again.raise(fieldCountMin, 5, 4)
	again.mark(fieldBloom, 5)
	again.returned()
	if got := r.load(fieldCountMin, 5); got != 7 {
		t.Errorf("count-min word = %d, want 7", got)
	}
	if got := r.load(fieldBloom, 5); got != 1 {
		t.Errorf("bloom word = %d, want 1 (a mark is a flag, not a count)", got)
	}
	if got := r.calls(); got != 2 {
		t.Errorf("calls = %d, want 2", got)
	}
	r.close()
	again.close()
}

func TestSumRecords(t *testing.T) {
	dir := t.TempDir()
	var recs []*record
	for slot := -1; slot < 2; slot++ {
		r, err := openRecord(recordPath(dir, slot))
		if err != nil {
			t.Fatal(err)
		}
		defer r.close()
		recs = append(recs, r)
	}
	recs[1].raise(fieldCountMin, 0, 2)
	recs[2].raise(fieldCountMin, 0, 5)
	recs[1].raise(fieldCountingBloom, 9, 1)
	recs[2].raise(fieldCountingBloom, 9, 1)
	recs[0].raise(fieldCountMin, realKeys, 1) // the control's fake add

	var tl tally
	tl[fieldBloom][3] = 1 // left from an earlier pass: sumRecords starts over
	sumRecords(recs, &tl)
	for _, c := range []struct {
		field, key int
		want       uint64
	}{
		{fieldCountMin, 0, 7},
		{fieldCountingBloom, 9, 2}, // counting Bloom adds add up, for removes to cancel
		{fieldCountMin, realKeys, 1},
		{fieldBloom, 3, 0},
		{fieldBloom, 9, 0},
	} {
		if got := tl[c.field][c.key]; got != c.want {
			t.Errorf("tally[%s][%d] = %d, want %d", fieldNames[c.field], c.key, got, c.want)
		}
	}
}

func TestKeys_ControlApart(t *testing.T) {
	seen := map[string]bool{}
	for i, k := range keyTable {
		if seen[string(k)] {
			t.Fatalf("key %d (%q) repeats", i, k)
		}
		seen[string(k)] = true
	}
	if isControl(realKeys-1) || !isControl(realKeys) || !isControl(allKeys-1) {
		t.Errorf("isControl: control keys must be exactly [%d, %d)", realKeys, allKeys)
	}
}

// A window word keeps the weight of one period per ring place: adds of the
// same period add up, a later period starts afresh, an earlier one is
// ignored, and landed sums only the periods asked about.
func TestRecord_WindowRing(t *testing.T) {
	r, err := openRecord(filepath.Join(t.TempDir(), "record"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	r.raiseWindow(fieldCountMinWindow, 3, 7, 2)
	r.raiseWindow(fieldCountMinWindow, 3, 7, 5)
	r.raiseWindow(fieldCountMinWindow, 3, 8, 1)
	r.raiseWindow(fieldCountMinWindow, 3, 7+windowRing, 4) // replaces period 7
	r.raiseWindow(fieldCountMinWindow, 3, 7, 100)          // older: ignored
	r.raiseWindow(fieldBloomWindow, 3, 8, 1)
	var ws windowSnap
	ws.read([]*record{r})
	tests := []struct {
		field  int
		lo, hi uint64
		want   uint64
	}{
		{fieldCountMinWindow, 7, 7, 0},
		{fieldCountMinWindow, 8, 8, 1},
		{fieldCountMinWindow, 8, 7 + windowRing, 5},
		{fieldCountMinWindow, 0, 100, 5},
		{fieldBloomWindow, 8, 8, 1},
		{fieldBloomWindow, 9, 20, 0},
	}
	for _, tt := range tests {
		if got := ws.landed(tt.field, 3, tt.lo, tt.hi); got != tt.want {
			t.Errorf("landed(%s, periods %d-%d) = %d, want %d", fieldNames[tt.field], tt.lo, tt.hi, got, tt.want)
		}
	}
	if got := ws.landed(fieldCountMinWindow, 4, 0, 100); got != 0 {
		t.Errorf("landed(another key) = %d, want 0", got)
	}
}

// An answer asked between reads of the period c0 and c1 certainly covers
// c1-Keep+1 to c0, and nothing when the period turned Keep times.
func TestCovered(t *testing.T) {
	keep := uint64(stormWindow.Keep)
	tests := []struct{ c0, c1, lo, hi uint64 }{
		{0, 0, 0, 0},
		{10, 10, 10 - keep + 1, 10},
		{10, 11, 11 - keep + 1, 10},
		{10, 10 + keep, 11, 10}, // empty
	}
	for _, tt := range tests {
		if lo, hi := covered(tt.c0, tt.c1); lo != tt.lo || hi != tt.hi {
			t.Errorf("covered(%d, %d) = %d-%d, want %d-%d", tt.c0, tt.c1, lo, hi, tt.lo, tt.hi)
		}
	}
}

// A clock window's periods are Unix time / Period, far past a Rotate
// count: the window word keeps them whole, and a weight that outgrows its
// bits saturates instead of spilling into the period.
func TestRecord_WindowRingClockPeriods(t *testing.T) {
	r, err := openRecord(filepath.Join(t.TempDir(), "record"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	p := uint64(time.Now().UnixNano() / int64(stormClockWindow.Period))
	r.raiseWindow(fieldCountMinClock, 3, p, 9)
	r.raiseWindow(fieldBloomClock, 3, p+1, 1)
	r.raiseWindow(fieldCountMinClock, 5, p, maxWeight)
	r.raiseWindow(fieldCountMinClock, 5, p, 2)
	var ws windowSnap
	ws.read([]*record{r})
	tests := []struct {
		field, key int
		lo, hi     uint64
		want       uint64
	}{
		{fieldCountMinClock, 3, p, p, 9},
		{fieldCountMinClock, 3, p + 1, p + 4, 0},
		{fieldBloomClock, 3, p - 3, p + 1, 1},
		{fieldBloomClock, 3, p, p, 0},
		{fieldCountMinClock, 5, p, p, maxWeight},
		{fieldCountMinWindow, 3, 0, p + 4, 0}, // the Rotate window's field is apart
	}
	for _, tt := range tests {
		if got := ws.landed(tt.field, tt.key, tt.lo, tt.hi); got != tt.want {
			t.Errorf("landed(%s, key %d, periods %d-%d) = %d, want %d", fieldNames[tt.field], tt.key, tt.lo, tt.hi, got, tt.want)
		}
	}
}
