package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shmsketch/sketch"
)

// refuseCreate's verdicts, with kinds that fail the way a library might:
// no root or tmpfs needed.
func TestRefuseCreate_Verdicts(t *testing.T) {
	noSpace := func(path string) error {
		return fmt.Errorf("sketch: open %s: %w: 1 bytes: %w", path, sketch.ErrNoSpace, syscall.ENOSPC)
	}
	tests := []struct {
		name string
		open func(path string) error
		want int
	}{
		{"ErrNoSpace naming the file", noSpace, 0},
		{"a bare ENOSPC", func(path string) error { return fmt.Errorf("sketch: open %s: %w", path, syscall.ENOSPC) }, 1},
		{"not naming the file", func(string) error { return sketch.ErrNoSpace }, 1},
		{"a temporary file left", func(path string) error {
			os.WriteFile(filepath.Join(filepath.Dir(path), ".sketch-tmp"), nil, 0o600)
			return noSpace(path)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			k := faultKind{name: "fake", open: func(path string, _ uint64, _ ...sketch.Option) (*faultHandle, error) {
				return nil, tt.open(path)
			}}
			r := newFaultReport()
			refuseCreate(r, dir, k, 1, nil)
			// The test's directory is on a shared filesystem, whose free
			// space moves on its own: those findings are left out.
			var got []string
			for _, p := range r.Problems {
				if !strings.Contains(p, "bytes free before") {
					got = append(got, p)
				}
			}
			if len(got) != tt.want {
				t.Errorf("problems = %d, want %d: %q", len(got), tt.want, got)
			}
		})
	}
}

func TestMustRefuse_Verdicts(t *testing.T) {
	path := "/ro/cm.live"
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"ErrReadOnly naming the file", fmt.Errorf("sketch: add %s: %w", path, sketch.ErrReadOnly), 0},
		{"no error", nil, 1},
		{"a panic", guarded(func() error { panic("nil map") }), 1},
		{"not naming the file", sketch.ErrReadOnly, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFaultReport()
			mustRefuse(r, path, "Add", tt.err)
			if r.Bad != tt.want {
				t.Errorf("problems = %d, want %d: %q", r.Bad, tt.want, r.Problems)
			}
		})
	}
}

// The read-only fault counts on every kind's handle to refuse its
// mutators when opened with WithReadOnly: a live file of each kind, on any
// filesystem, must refuse them all and answer as before.
func TestFaultKinds_ReadOnlyHandlesRefuseMutators(t *testing.T) {
	dir := t.TempDir()
	for _, k := range faultKinds {
		t.Run(k.name, func(t *testing.T) {
			path := filepath.Join(dir, k.name)
			h, err := k.open(path, 256<<10)
			if err != nil {
				t.Fatal(err)
			}
			want := reference{}
			if err := addKeys(h, want, "k", 100); err != nil {
				t.Fatal(err)
			}
			h.close()
			ro, err := k.open(path, 256<<10, sketch.WithReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			defer ro.close()
			r := newFaultReport()
			for _, m := range ro.mutators {
				if m.name == "Unlink" || m.name == "arena Unlink" {
					continue // it would remove the file on a writable filesystem
				}
				mustRefuse(r, path, m.name, guarded(m.call))
			}
			verify(r, ro, want)
			if r.Bad != 0 {
				t.Errorf("%d problems: %q", r.Bad, r.Problems)
			}
		})
	}
}
