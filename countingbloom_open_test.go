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

// TestCountingBloom_Corrupt: damaged counting Bloom entries are refused
// with the sentinel that says what is wrong.
func TestCountingBloom_Corrupt(t *testing.T) {
	valid := cbfMakeFile(t)
	for _, tc := range []struct {
		name string
		edit func(b []byte)
		want error
	}{
		{"capacity zero", func(b []byte) { native.PutUint64(b[otDirOff+entParams:], 0); otResum(b) }, ErrCorrupt},
		{"rate out of range", func(b []byte) { native.PutUint64(b[otDirOff+entParams+8:], 0x3ff0000000000000); otResum(b) }, ErrCorrupt},
		{"counters not a power of two", func(b []byte) { native.PutUint64(b[otDirOff+entParams+16:], 1000); otResum(b) }, ErrCorrupt},
		{"too many hashes", func(b []byte) { native.PutUint64(b[otDirOff+entParams+24:], 33); otResum(b) }, ErrCorrupt},
		{"region too small", func(b []byte) { native.PutUint64(b[otDirOff+entParams+16:], 1<<20); otResum(b) }, ErrCorrupt},
		{"entry checksum", func(b []byte) { b[otDirOff+entParams] ^= 1 }, ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Clone(valid)
			tc.edit(data)
			path := filepath.Join(t.TempDir(), "cbf")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := OpenCountingBloom(Path(path), CountingBloomConfig{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("OpenCountingBloom = %v, want %v naming the file", err, tc.want)
			}
		})
	}
	// A Count-Min file is not a counting Bloom filter, and the reverse.
	path, _ := otMakeFile(t, otCfg)
	if _, err := OpenCountingBloom(Path(path), CountingBloomConfig{}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("OpenCountingBloom of a Count-Min file = %v, want ErrIncompatible", err)
	}
}
