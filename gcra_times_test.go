package sketch

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGCRA_ExportTimesMerge: a limiter that merges another's busy times
// refuses what the other would, and its keys keep their own times; an
// idle grid exports only its header.
func TestGCRA_ExportTimesMerge(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 2, Rows: 3, Width: 1 << 14, Seed: 11}
	a, b := mustGCRA(t, cfg), mustGCRA(t, cfg)
	if x, err := a.ExportTimes(); err != nil || len(x) != gcraTimesHead {
		t.Fatalf("an idle limiter exports %d bytes (%v), want the %d of its header", len(x), err, gcraTimesHead)
	}
	for i := range 50 {
		b.AllowString(fmt.Sprint("b-", i), 3) // each b-i's whole burst
	}
	a.AllowString("a-own", 1)
	x, err := b.ExportTimes()
	if err != nil {
		t.Fatal(err)
	}
	if len(x) > gcraTimesHead+50*3*12 {
		t.Errorf("50 busy keys export %d bytes", len(x))
	}
	if err := a.MergeTimes(x); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if d, _ := a.AllowString(fmt.Sprint("b-", i), 1); d.Allowed {
			t.Fatalf("b-%d is allowed after the merge of b's times, which refuse it", i)
		}
	}
	if d, _ := a.AllowString("a-own", 0); d.Remaining != 2 {
		t.Errorf("a-own has %d left after the merge, want its own 2", d.Remaining)
	}
	if err := a.MergeTimes(x); err != nil {
		t.Errorf("merging the same times again: %v", err)
	}
}

// TestGCRA_MergeTimesRefuses: times of another shape or rate, and cut or
// crafted exports, change nothing.
func TestGCRA_MergeTimesRefuses(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{1, time.Hour}, Burst: 2, Rows: 2, Width: 64}
	a := mustGCRA(t, cfg)
	other := mustGCRA(t, GCRAConfig{Rate: Rate{2, time.Hour}, Burst: 2, Rows: 2, Width: 64})
	other.AllowString("k", 1)
	ox, _ := other.ExportTimes()
	if err := a.MergeTimes(ox); !errors.Is(err, ErrIncompatible) {
		t.Errorf("times of another rate: %v, want ErrIncompatible", err)
	}
	same := mustGCRA(t, cfg)
	same.AllowString("k", 1)
	sx, _ := same.ExportTimes()
	before := gcraCells(a)
	for name, bad := range map[string][]byte{
		"empty":       nil,
		"magic":       append([]byte("XXGCRAT1"), sx[8:]...),
		"cut index":   append(append([]byte(nil), sx[:gcraTimesHead]...), 0x80),
		"cut time":    append(append([]byte(nil), sx[:gcraTimesHead]...), 1),
		"past grid":   append(append([]byte(nil), sx[:gcraTimesHead]...), 128, 1, 5),
		"zero step":   append(append([]byte(nil), sx[:gcraTimesHead]...), 1, 5, 0, 5),
		"header only": sx[:gcraTimesHead-1],
	} {
		if err := a.MergeTimes(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if diff := cmp.Diff(before, gcraCells(a)); diff != "" {
		t.Errorf("a refused merge changed cells (-before +after)\n%s", diff)
	}
}

// TestGCRA_MergeTimesClampsTheFuture: a time further ahead than any
// decision leaves (a clock far ahead, or a crafted export) is taken as
// now plus the window: a key is never blocked past one window.
func TestGCRA_MergeTimesClampsTheFuture(t *testing.T) {
	cfg := GCRAConfig{Rate: Rate{1, time.Second}, Burst: 1, Rows: 1, Width: 4}
	a := mustGCRA(t, cfg)
	x := make([]byte, gcraTimesHead)
	copy(x, gcraTimesMagic)
	for i, v := range []uint64{1, 4, uint64(time.Second), uint64(2 * time.Second), uint64(time.Now().Add(24 * time.Hour).UnixNano())} {
		putLE64(x[8+8*i:], v)
	}
	x = append(x, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f) // cell 0, far ahead
	x = append(x, 1, 1, 1, 1, 1, 1)                                        // cells 1-3, a nanosecond after
	if err := a.MergeTimes(x); err != nil {
		t.Fatal(err)
	}
	limit := uint64(time.Now().Add(2 * time.Second).UnixNano())
	for i, v := range gcraCells(a) {
		if v > limit {
			t.Errorf("cell %d holds %d, past now plus the window (%d)", i, v, limit)
		}
	}
}

func putLE64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// FuzzGCRA_MergeTimes: any bytes merge or are refused; none panics, and
// no cell ends past now plus the window.
func FuzzGCRA_MergeTimes(f *testing.F) {
	cfg := GCRAConfig{Rate: Rate{10, time.Second}, Burst: 3, Rows: 2, Width: 16}
	src, err := OpenGCRA(Memory(), cfg)
	if err != nil {
		f.Fatal(err)
	}
	src.AllowString("x", 2)
	x, _ := src.ExportTimes()
	src.Close()
	f.Add(x)
	f.Add(x[:gcraTimesHead])
	f.Fuzz(func(t *testing.T, b []byte) {
		g := mustGCRA(t, cfg)
		g.MergeTimes(b)
		limit := uint64(time.Now().UnixNano()) + uint64(400*time.Millisecond)
		for i, v := range gcraCells(g) {
			if v > limit {
				t.Fatalf("cell %d at %d, past now plus the window", i, v)
			}
		}
	})
}
