//go:build linux

package sketch

// Tests of the files a process refuses to open for writing because of who
// may write them (trust_linux.go's checkLooseMode), however they are
// reached: by path, by a descriptor's path, by an inherited descriptor.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOpen_WorldWritableFile: an existing sketch file every user may write
// is refused read-write with ErrLooseMode, naming the fix, whoever owns it
// and however it is reached (path, arena, /proc/self/fd, an inherited
// descriptor), and left untouched; it still opens with WithReadOnly (a reader risks
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

	r, err := OpenCountMin(Path(path), CountMinConfig{}, WithReadOnly())
	if err != nil {
		t.Fatalf("OpenCountMin(WithReadOnly) = %v, want a reader", err)
	}
	if got := r.EstimateString("a"); got != 2 {
		t.Errorf("read-only Estimate(a) = %d, want 2", got)
	}
	r.Close()

	apath := tempPath(t, "arena")
	a, err := OpenArena(Path(apath), ArenaConfig{Size: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := os.Chmod(apath, 0o646); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenArena(Path(apath), ArenaConfig{Size: 1 << 16}); !errors.Is(err, ErrLooseMode) {
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

var _ = role("flockhold", childFlockHold)

// childFlockHold opens the file at envPath for reading, holds a shared
// flock on it and says "held", until stdin closes; or says "denied" when
// it may not open the file.
func childFlockHold() error {
	f, err := os.Open(os.Getenv(envPath))
	if errors.Is(err, os.ErrPermission) {
		fmt.Println("denied")
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		return err
	}
	fmt.Println("held")
	_, err = io.Copy(io.Discard, os.Stdin)
	return err
}

// TestOpen_ReaderLockBlocksAdoption: another user (nobody) who may read an
// empty file prepared for the caller holds its flock, which would keep
// every adoption waiting for good. Such a file (every user may open it) is
// refused at once with ErrLooseMode, naming the fix, and left as it was;
// prepared with mode 0600, nobody cannot open it, and it is adopted with
// the requested mode.
func TestOpen_ReaderLockBlocksAdoption(t *testing.T) {
	requireRoot(t)
	requireReexec(t)
	dir := crossDir(t)
	// hold starts nobody on path and returns the call that lets it go
	// and waits for it (before the test's context ends, which kills it).
	hold := func(t *testing.T, path, want string) (release func()) {
		t.Helper()
		h, in, out := startAsNobody(t, childContext(t), dir, "flockhold", envPath+"="+path)
		line, err := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != want {
			t.Fatalf("nobody said %q (%v), want %q", line, err, want)
		}
		return func() { in.Close(); h.wait(t) }
	}

	t.Run("0644", func(t *testing.T) {
		path := filepath.Join(dir, "open.cms")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		defer hold(t, path, "held")()
		// Waiting for the flock would end in ErrTimeout, however long.
		err := otOpenErr(t, path, otCfg, WithMode(0o644), WithWaitTimeout(5*time.Second))
		otWantErr(t, err, path, ErrLooseMode)
		for _, want := range []string{"0644", "flock", "0600"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 || fi.Mode() != 0o644 {
			t.Errorf("the refused file changed: %v, %v", fi, err)
		}
	})
	t.Run("0600", func(t *testing.T) {
		path := filepath.Join(dir, "private.cms")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		defer hold(t, path, "denied")()
		c := mustOpen(t, path, otCfg, WithMode(0o644))
		otWorks(t, c)
		if m := otMode(t, path); m != 0o644 {
			t.Errorf("mode of the adopted file = %v, want 0644", m)
		}
	})
}
