//go:build linux

package sketch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Remove takes a valid sketch file of any kind, or an arena, away from its
// path; handles keep working. Anything else stays, and says why.
func TestRemove(t *testing.T) {
	dir := t.TempDir()
	cmsPath := filepath.Join(dir, "cms")
	c, err := OpenCountMin(Path(cmsPath), CountMinConfig{Rows: 2, Width: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Add([]byte("k"))
	arenaPath := filepath.Join(dir, "arena")
	a, err := OpenArena(Path(arenaPath), ArenaConfig{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	frozenPath := filepath.Join(dir, "frozen")
	f, err := OpenBloom(Path(frozenPath), BloomConfig{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Freeze(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chmod(frozenPath, 0o400); err != nil { // read permission is enough
		t.Fatal(err)
	}
	for _, p := range []string{cmsPath, arenaPath, frozenPath} {
		if err := Remove(p); err != nil {
			t.Errorf("Remove(%s) = %v", p, err)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there after Remove: %v", p, err)
		}
	}
	if got := c.Estimate([]byte("k")); got != 1 {
		t.Errorf("the open handle estimates %d after Remove, want 1", got)
	}
	if err := Remove(cmsPath); err != nil {
		t.Errorf("Remove of a path with no file = %v, want nil", err)
	}

	// What is not a valid sketch file stays.
	notSketch := filepath.Join(dir, "notes.txt")
	os.WriteFile(notSketch, []byte("not a sketch, but long enough to be mistaken for a header if nobody checked the magic at all............................................................................................................................................................................................................................................................"), 0o600)
	interrupted := filepath.Join(dir, "interrupted")
	os.WriteFile(interrupted, make([]byte, 1<<16), 0o600)
	target := filepath.Join(dir, "target")
	tc, err := OpenCountMin(Path(target), CountMinConfig{Rows: 1, Width: 8})
	if err != nil {
		t.Fatal(err)
	}
	tc.Close()
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	for _, tt := range []struct {
		path string
		want error
	}{
		{notSketch, ErrCorrupt},
		{interrupted, ErrInterruptedCreate},
		{link, ErrSymlink},
		{dir, ErrCorrupt},
		{"/proc/self/fd/0", ErrInvalidArgument},
		{"", ErrInvalidArgument},
	} {
		if err := Remove(tt.path); !errors.Is(err, tt.want) {
			t.Errorf("Remove(%q) = %v, want %v", tt.path, err, tt.want)
		}
		if tt.path != "" {
			if _, err := os.Lstat(tt.path); err != nil {
				t.Errorf("%s was removed: %v", tt.path, err)
			}
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the symlink's target was removed: %v", err)
	}

	// A file that replaces the judged one at the path stays.
	racy := filepath.Join(dir, "racy")
	rc, err := OpenCountMin(Path(racy), CountMinConfig{Rows: 1, Width: 8})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	testHookBeforeUnlinkRename = func() {
		os.Remove(racy)
		os.WriteFile(racy, []byte("a newer file"), 0o600)
	}
	defer func() { testHookBeforeUnlinkRename = nil }()
	if err := Remove(racy); err != nil {
		t.Errorf("Remove with the file replaced meanwhile = %v", err)
	}
	if b, err := os.ReadFile(racy); err != nil || string(b) != "a newer file" {
		t.Errorf("the replacement is gone or changed: %q, %v", b, err)
	}
}
