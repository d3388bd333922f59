//go:build linux

package sketch

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestReview_ArenaSnapshotDistinct: Arena.Snapshot copies every kind an
// arena holds, the distinct count and the distinct window among them, as
// their own Snapshot copies them: the copy counts what the source counted.
// (It refused the arena with ErrInvalidArgument, "has no snapshot", for
// the two distinct kinds.)
func TestReview_ArenaSnapshotDistinct(t *testing.T) {
	a := mustOpenArena(t, tempPath(t, "arena"), 4<<20)
	d := mustIn(t, OpenDistinct, a.Place("d"), DistinctConfig{Precision: 10})
	defer d.Close()
	w := mustIn(t, OpenDistinctWindow, a.Place("w"), DistinctWindowConfig{Window: Window{Keep: 2}, Distinct: DistinctConfig{Precision: 10}})
	defer w.Close()
	for i := range 300 {
		d.AddString(fmt.Sprint("d", i))
		w.AddString(fmt.Sprint("old", i))
	}
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		w.AddString(fmt.Sprint("new", i))
	}
	wantD, wantW := d.Count(), w.Count()

	s, err := a.Snapshot(Path(filepath.Join(t.TempDir(), "snap")))
	if err != nil {
		t.Fatalf("Snapshot of an arena with a distinct count and a distinct window: %v", err)
	}
	defer s.Close()
	if got := len(s.List()); got != 2 {
		t.Fatalf("the snapshot lists %d structures, want 2: %+v", got, s.List())
	}
	sd := mustIn(t, OpenDistinct, s.Place("d"), DistinctConfig{}, ReadOnly())
	defer sd.Close()
	if got := sd.Count(); got != wantD {
		t.Errorf("the snapshot's distinct count: Count = %d, want %d", got, wantD)
	}
	sw := mustIn(t, OpenDistinctWindow, s.Place("w"), DistinctWindowConfig{}, ReadOnly())
	defer sw.Close()
	if got := sw.Count(); got != wantW {
		t.Errorf("the snapshot's distinct window: Count = %d, want %d", got, wantW)
	}
	if got, want := sw.Current(), w.Current(); got != want {
		t.Errorf("the snapshot's window: Current = %d, want %d (fixed at the copy's period)", got, want)
	}
	if err := s.Check(); err != nil {
		t.Errorf("the snapshot's Check = %v", err)
	}
}
