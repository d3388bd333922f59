package main

import (
	"path/filepath"
	"testing"
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
	recs[1].mark(fieldCountingBloom, 9)
	recs[2].mark(fieldCountingBloom, 9)
	recs[0].raise(fieldCountMin, realKeys, 1) // the control's fake add

	var tl tally
	tl[fieldBloom][3] = 1 // left from an earlier pass: sumRecords starts over
	sumRecords(recs, &tl)
	for _, c := range []struct {
		field, key int
		want       uint64
	}{
		{fieldCountMin, 0, 7},
		{fieldCountingBloom, 9, 1},
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
