//go:build linux

package sketch

// Tests of the files a process refuses to open for writing because of who
// may write them (trust_linux.go's checkLooseMode), however they are
// reached: by path, by a descriptor's path, by an inherited descriptor.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestOpen_WorldWritableFile: an existing sketch file every user may write
// is refused read-write with ErrLooseMode, naming the fix, whoever owns it
// and however it is reached (path, arena, /proc/self/fd, an inherited
// descriptor), and left untouched; it still opens ReadOnly (a reader risks
// only itself), and opens read-write once o+w is taken away.
func TestOpen_WorldWritableFile(t *testing.T) {
	path, tmpl := otMakeFile(t, otCfg)
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	err := otOpenErr(t, path, otCfg)
	otWantErr(t, err, path, ErrLooseMode)
	for _, want := range []string{"0666", "every user", "chmod o-w"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, tmpl) {
		t.Errorf("a refused file was changed")
	}

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fdPath := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if _, err := os.Stat(fdPath); err == nil {
		_, err := OpenCountMin(Path(fdPath), otCfg)
		if !errors.Is(err, ErrLooseMode) {
			t.Errorf("OpenCountMin(%s) = %v, want ErrLooseMode", fdPath, err)
		}
	}
	if _, err := OpenCountMin(Inherited(f.Fd()), otCfg); !errors.Is(err, ErrLooseMode) {
		t.Errorf("OpenCountMin(Inherited) = %v, want ErrLooseMode", err)
	}

	r, err := OpenCountMin(Path(path), CountMinConfig{}, ReadOnly())
	if err != nil {
		t.Fatalf("OpenCountMin(ReadOnly) = %v, want a reader", err)
	}
	if got := r.EstimateString("a"); got != 2 {
		t.Errorf("read-only Estimate(a) = %d, want 2", got)
	}
	r.Close()

	apath := tempPath(t, "arena")
	a, err := OpenArena(Path(apath), 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := os.Chmod(apath, 0o646); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenArena(Path(apath), 1<<16); !errors.Is(err, ErrLooseMode) {
		t.Errorf("OpenArena(mode 0646) = %v, want ErrLooseMode", err)
	}

	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	otWorks(t, mustOpen(t, path, otCfg))
}

// TestOpen_WorldWritableFileOfTrustedUser: trusting a file's owner
// (WithOwner) does not vouch for every other user who may write it.
func TestOpen_WorldWritableFileOfTrustedUser(t *testing.T) {
	requireRoot(t)
	path := tempPath(t, "requests.cms")
	otGiveAway(t, path)
	otWorks(t, mustOpen(t, path, otCfg, WithOwner(nobodyUID)))
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	otWantErr(t, otOpenErr(t, path, otCfg, WithOwner(nobodyUID)), path, ErrLooseMode)
}
