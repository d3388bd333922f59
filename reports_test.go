//go:build linux

package sketch

// Tests that what a handle or an error reports is so: the handle that froze
// a file, the rate a filter was sized for, and what an open's error says.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFreeze_FreezingHandleIsReadOnly: the handle that froze a file
// reports itself read-only (ReadOnly and Stats), as the seeds' freezing
// handle does; another read-write handle of the same file does not (it
// did not ask to be a reader), though its mutators refuse with ErrFrozen
// as well.
func TestFreeze_FreezingHandleIsReadOnly(t *testing.T) {
	type frozenable interface {
		Freeze() error
		ReadOnly() bool
		Close() error
	}
	dir := t.TempDir()
	type freezeCase struct {
		name  string
		open  func(path string) (frozenable, error)
		stats func(h frozenable) bool // Stats().ReadOnly
		add   func(h frozenable) error
	}
	var cases []freezeCase
	for _, k := range testKinds {
		cases = append(cases, freezeCase{string(k.kind),
			func(p string) (frozenable, error) { return k.open(Path(p), 0) },
			func(h frozenable) bool { return fileStatsOf(t, h.(testStructure)).ReadOnly },
			func(h frozenable) error { return k.add(h.(testStructure), []byte("k")) }})
	}
	cases = append(cases, freezeCase{"arena",
		func(p string) (frozenable, error) { return OpenArena(Path(p), ArenaConfig{Size: 1 << 20}) },
		func(h frozenable) bool { return h.(*Arena).Stats().ReadOnly },
		func(h frozenable) error {
			_, err := OpenCountMin(h.(*Arena).Place("new"), CountMinConfig{Rows: 1, Width: 8})
			return err
		}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			h, err := tc.open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			other, err := tc.open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if h.ReadOnly() || tc.stats(h) {
				t.Fatalf("a new read-write handle reports itself read-only")
			}
			if err := h.Freeze(); err != nil {
				t.Fatal(err)
			}
			if !h.ReadOnly() || !tc.stats(h) {
				t.Errorf("after Freeze: ReadOnly() = %v, Stats().ReadOnly = %v; want both true", h.ReadOnly(), tc.stats(h))
			}
			if other.ReadOnly() || tc.stats(other) {
				t.Errorf("another handle of the frozen file: ReadOnly() = %v, Stats().ReadOnly = %v; want false", other.ReadOnly(), tc.stats(other))
			}
			for _, x := range []frozenable{h, other} {
				if err := tc.add(x); !errors.Is(err, ErrFrozen) {
					t.Errorf("add after Freeze = %v, want ErrFrozen", err)
				}
			}
			if err := h.Freeze(); !errors.Is(err, ErrFrozen) {
				t.Errorf("second Freeze = %v, want ErrFrozen", err)
			}
		})
	}
}

// TestFilters_FPRate: both filters and the Bloom window say the rate they
// were sized for, as their Stats do, also on a handle that attached with a
// zero config.
func TestFilters_FPRate(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBloom(Path(filepath.Join(dir, "b")), BloomConfig{Capacity: 1000, FPRate: 0.002})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ba, err := OpenBloom(Path(filepath.Join(dir, "b")), BloomConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer ba.Close()
	c, err := OpenCountingBloom(Path(filepath.Join(dir, "c")), CountingBloomConfig{Capacity: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := OpenBloomWindow(Path(filepath.Join(dir, "w")), BloomWindowConfig{Window: Window{Keep: 2}, Bloom: BloomConfig{Capacity: 1000, FPRate: 0.03}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, tt := range []struct {
		name       string
		got, stats float64
		want       float64
	}{
		{"bloom", b.Config().FPRate, b.Stats().FPRate, 0.002},
		{"bloom attached with a zero config", ba.Config().FPRate, ba.Stats().FPRate, 0.002},
		{"counting bloom (default rate)", c.Config().FPRate, c.Stats().FPRate, DefaultFPRate},
		{"bloom window", w.Config().Bloom.FPRate, w.Stats().FPRate, 0.03},
		{"zero Bloom", (&Bloom{}).Config().FPRate, 0, 0},
	} {
		if tt.got != tt.want || tt.stats != tt.want {
			t.Errorf("%s: FPRate() = %v, Stats().FPRate = %v, want %v", tt.name, tt.got, tt.stats, tt.want)
		}
	}
}

// TestErrors_SayWhatIsSo: an empty file opened with a config that cannot
// create is there (not fs.ErrNotExist); a read-only arena refuses to create
// with ErrReadOnly (the name is still missing); a file of the other byte
// order says which order each side has.
func TestErrors_SayWhatIsSo(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenBloom(Path(empty), BloomConfig{})
	if !errors.Is(err, ErrInvalidConfig) || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "empty or all zero") {
		t.Errorf("OpenBloom of an empty file with a zero config = %v, want ErrInvalidConfig saying the file is empty, not fs.ErrNotExist", err)
	}
	if _, err := OpenBloom(Path(filepath.Join(dir, "missing")), BloomConfig{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenBloom of a missing file with a zero config = %v, want fs.ErrNotExist", err)
	}

	arenaPath := filepath.Join(dir, "arena")
	a, err := OpenArena(Path(arenaPath), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	ro, err := OpenArena(Path(arenaPath), ArenaConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = OpenCountMin(ro.Place("new"), CountMinConfig{Rows: 1, Width: 8})
	if !errors.Is(err, ErrReadOnly) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only arena asked to create = %v, want ErrReadOnly and fs.ErrNotExist", err)
	}

	_, valid := otMakeFile(t, otCfg)
	foreign := filepath.Join(dir, "foreign")
	if err := os.WriteFile(foreign, otConvert(valid, native, otOther), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenCountMin(Path(foreign), CountMinConfig{})
	want := fmt.Sprintf("the file is %s, this machine %s", otherByteOrderName(), byteOrderName())
	if !errors.Is(err, ErrByteOrder) || !strings.Contains(err.Error(), want) {
		t.Errorf("OpenCountMin of a file of the other byte order = %v, want ErrByteOrder saying %q", err, want)
	}
}
