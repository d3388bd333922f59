//go:build linux

package sketch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBloom_Corrupt: damaged Bloom entries are refused with the sentinel
// that says what is wrong, naming the file.
func TestBloom_Corrupt(t *testing.T) {
	valid := bloomMakeFile(t)
	param := func(i int, v uint64) func(b []byte) {
		return func(b []byte) { native.PutUint64(b[otDirOff+entParams+8*i:], v); otResum(b) }
	}
	blocks := native.Uint64(valid[otDirOff+entParams+16:])
	for _, tc := range []struct {
		name string
		edit func(b []byte)
		want error
	}{
		{"capacity zero", param(0, 0), ErrCorrupt},
		{"rate one", param(1, 0x3ff0000000000000), ErrCorrupt},
		{"rate zero", param(1, 0), ErrCorrupt},
		{"rate NaN", param(1, 0x7ff8000000000001), ErrCorrupt},
		{"no blocks", param(2, 0), ErrCorrupt},
		{"blocks past the region", param(2, blocks+1), ErrCorrupt},
		{"blocks fewer than the region", param(2, blocks-1), ErrCorrupt},
		{"blocks past any file", param(2, 1<<62), ErrCorrupt},
		{"no hashes", param(3, 0), ErrCorrupt},
		{"too many hashes", param(3, 33), ErrCorrupt},
		{"unknown parameter", param(7, 1), ErrCorrupt},
		{"entry checksum", func(b []byte) { b[otDirOff+entParams+16] ^= 1 }, ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(valid)
			tc.edit(data)
			path := filepath.Join(t.TempDir(), "bloom")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, opts := range [][]Option{nil, {ReadOnly()}} {
				_, err := OpenBloom(Path(path), BloomConfig{}, opts...)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
					t.Errorf("OpenBloom(%d options) = %v, want %v naming the file", len(opts), err, tc.want)
				}
			}
		})
	}
	// Other kinds are not Bloom filters, and the reverse.
	path, _ := otMakeFile(t, otCfg)
	if _, err := OpenBloom(Path(path), BloomConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenBloom of a Count-Min file = %v, want ErrIncompatible", err)
	}
	bpath := filepath.Join(t.TempDir(), "bloom")
	if err := os.WriteFile(bpath, valid, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCountMin(Path(bpath), CountMinConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountMin of a Bloom file = %v, want ErrIncompatible", err)
	}
	if _, err := OpenCountingBloom(Path(bpath), CountingBloomConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountingBloom of a Bloom file = %v, want ErrIncompatible", err)
	}
}

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
	if _, err := OpenBloom(Memfd("m"), cfg, ReadOnly()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewBloomMemfd(ReadOnly) = %v, want ErrInvalidConfig", err)
	}

	r, err := OpenBloom(Path(path), BloomConfig{}, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.AddString("later")
	if !r.ReadOnly() || !r.ContainsString("k") || !r.ContainsString("later") {
		t.Errorf("read-only view: ReadOnly() = %v, misses keys", r.ReadOnly())
	}
	if st := r.Stats(); !st.ReadOnly || st.Added != 2 {
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
