//go:build linux

package sketch

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestBloom_OpenAttach: the first open creates, the next attach with the
// same config or the zero config; another size or seed is refused; a
// descriptor and a memfd attach; a read-only view sees the writers' keys
// and refuses every mutator.
func TestBloom_OpenAttach(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bloom")
	cfg := BloomConfig{Capacity: 5000, FPRate: 0.001, Seed: 77}
	if _, err := OpenBloom(Path(path), BloomConfig{}); err == nil {
		t.Fatal("OpenBloom with the zero config created a file")
	}
	w, err := OpenBloom(Path(path), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.AddString("k")
	for _, c := range []BloomConfig{cfg, {}, {Capacity: 5000, FPRate: 0.001}} {
		b, err := OpenBloom(Path(path), c)
		if err != nil {
			t.Fatalf("OpenBloom(%+v) of an existing filter: %v", c, err)
		}
		if !b.ContainsString("k") || b.Config().Capacity != 5000 || b.Bits() != w.Bits() {
			t.Errorf("OpenBloom(%+v) does not see the filter: %v", c, b)
		}
		b.Close()
	}
	for _, c := range []BloomConfig{{Capacity: 50_000, FPRate: 0.001}, {Capacity: 5000, FPRate: 0.01}, {Capacity: 5000, FPRate: 0.001, Seed: 78}} {
		if _, err := OpenBloom(Path(path), c); !errors.Is(err, ErrIncompatible) {
			t.Errorf("OpenBloom(%+v) = %v, want ErrIncompatible", c, err)
		}
	}
	f, err := w.File()
	if err != nil {
		t.Fatal(err)
	}
	a, err := OpenBloom(Inherited(f.Fd()), BloomConfig{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !a.ContainsString("k") || a.Path() != "" {
		t.Errorf("AttachBloom: Check(k) = %v, Path() = %q", a.ContainsString("k"), a.Path())
	}
	a.Close()
	mf, err := OpenBloom(Memfd("m"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mf.AddString("m")
	if !mf.ContainsString("m") {
		t.Error("memfd filter lost its key")
	}
	mf.Close()
	if _, err := OpenBloom(Memfd("m"), cfg, WithReadOnly()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewBloomMemfd(WithReadOnly) = %v, want ErrInvalidConfig", err)
	}

	r, err := OpenBloom(Path(path), BloomConfig{}, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.AddString("later")
	if !r.ReadOnly() || !r.ContainsString("k") || !r.ContainsString("later") {
		t.Errorf("read-only view: ReadOnly() = %v, misses keys", r.ReadOnly())
	}
	if st := r.Stats(); !st.ReadOnly || st.Adds-st.AddsPresent != 2 {
		t.Errorf("read-only Stats() = %+v", st)
	}
	_, addErr := r.AddString("x")
	for name, err := range map[string]error{"Add": addErr, "AddBatch": r.AddBatch([][]byte{[]byte("x")}, nil),
		"Reset": r.Reset(), "Freeze": r.Freeze(), "Merge": r.Merge(w)} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("read-only %s = %v, want ErrReadOnly", name, err)
		}
	}
	if err := w.Freeze(); err != nil {
		t.Fatal(err)
	}
	if err := w.Freeze(); !errors.Is(err, ErrFrozen) {
		t.Errorf("second Freeze = %v, want ErrFrozen", err)
	}
	_, addErr = w.AddString("x")
	for name, err := range map[string]error{"Add": addErr, "AddBatch": w.AddBatch([][]byte{[]byte("x")}, nil), "Reset": w.Reset()} {
		if !errors.Is(err, ErrFrozen) {
			t.Errorf("frozen %s = %v, want ErrFrozen", name, err)
		}
	}
	if !r.Frozen() || !r.Stats().Frozen {
		t.Error("the read-only view does not see the seal")
	}
}
