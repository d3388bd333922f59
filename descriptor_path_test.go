//go:build linux

package sketch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestDescriptorPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/proc/self/fd/3":          true,
		"/proc/thread-self/fd/12":  true,
		"/proc/4242/fd/7":          true,
		"/dev/fd/0":                true,
		"/proc/self/fd/":           false,
		"/proc/self/fd/3/":         false,
		"/proc/self/fd/3x":         false,
		"/proc/self/fd/../fd/3":    false,
		"/proc/self/cwd/x":         false,
		"/proc/42x/fd/3":           false,
		"/proc//fd/3":              false,
		"proc/self/fd/3":           false,
		"/tmp/proc/self/fd/3":      false,
		"/proc/self/fd/3/../../x":  false,
		"/proc/self/fdinfo/3":      false,
		"/proc/self/task/1/fd/3":   false,
		"/dev/fd/3/x":              false,
		"/dev/fd":                  false,
		"":                         false,
		"/proc/1/fd/2/../../1/fd/": false,
	} {
		if got := descriptorPath(path); got != want {
			t.Errorf("descriptorPath(%q) = %v, want %v", path, got, want)
		}
	}
}

// A descriptor handed over as a path (/proc/self/fd/N, /proc/PID/fd/N,
// /dev/fd/N) opens the file it holds, a file or a memfd, read-write or
// read-only: the one link followed. It is never created, and keeps no path
// to Unlink. A symlink planted anywhere else is still refused.
func TestOpen_DescriptorPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cms")
	// Wide enough that the three keys never share a counter in every row
	// (at 2 x 64, about one run in 2000 estimated 2).
	c, err := OpenCountMin(Path(path), CountMinConfig{Rows: 4, Width: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mem, err := OpenCountMin(Memfd("handed"), CountMinConfig{Rows: 4, Width: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for _, src := range []*CountMin{c, mem} {
		f, err := src.File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fd := f.Fd()
		for _, p := range []string{
			fmt.Sprintf("/proc/self/fd/%d", fd),
			fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd),
			fmt.Sprintf("/dev/fd/%d", fd),
		} {
			d, err := OpenCountMin(Path(p), CountMinConfig{})
			if err != nil {
				t.Fatalf("open %s (of %s): %v", p, src.m.name, err)
			}
			if _, err := d.Add([]byte(p)); err != nil {
				t.Fatal(err)
			}
			if got := src.Estimate([]byte(p)); got != 1 {
				t.Errorf("%s: the original handle estimates %d after an add through it, want 1", p, got)
			}
			if d.Path() != "" {
				t.Errorf("%s: Path() = %q, want \"\" (a descriptor's path names no entry to unlink)", p, d.Path())
			}
			if err := d.Unlink(); err != nil {
				t.Errorf("%s: Unlink = %v, want nil (nothing to do)", p, err)
			}
			d.Close()
			r, err := OpenCountMin(Path(p), CountMinConfig{}, WithReadOnly())
			if err != nil {
				t.Fatalf("open %s read-only: %v", p, err)
			}
			if got := r.Estimate([]byte(p)); got != 1 {
				t.Errorf("%s read-only: estimate %d, want 1", p, got)
			}
			r.Close()
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file behind the descriptor is gone after Unlink through its descriptor's path: %v", err)
	}

	// A descriptor not open is not created.
	missing := "/proc/self/fd/999999"
	if _, err := OpenCountMin(Path(missing), CountMinConfig{Rows: 2, Width: 64}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open %s = %v, want fs.ErrNotExist", missing, err)
	}

	// A planted symlink, to the file or to a descriptor's path, is refused.
	for i, target := range []string{path, fmt.Sprintf("/proc/self/fd/%d", 0)} {
		link := filepath.Join(dir, fmt.Sprintf("link%d", i))
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenCountMin(Path(link), CountMinConfig{}); !errors.Is(err, ErrSymlink) {
			t.Errorf("open %s -> %s = %v, want ErrSymlink", link, target, err)
		}
		if _, err := OpenCountMin(Path(link), CountMinConfig{}, WithReadOnly()); !errors.Is(err, ErrSymlink) {
			t.Errorf("open %s -> %s read-only = %v, want ErrSymlink", link, target, err)
		}
	}
}
